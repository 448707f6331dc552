"""AlterReplicaLogDirs (API key 34): request and response schemas (v0-2, flexible from v2; v1 is
v0)."""

from __future__ import annotations

from ..schema import Array, Message
from ..schema import Field as F

AlterReplicaLogDirsRequest = Message("AlterReplicaLogDirsRequest", 34, "0-2", "2+", [
    F("dirs", Array([
        F("path", "string"),
        F("topics", Array([
            F("name", "string"),
            F("partitions", Array("int32")),
        ])),
    ])),
])
AlterReplicaLogDirsResponse = Message("AlterReplicaLogDirsResponse", 34, "0-2", "2+", [
    F("throttle_time_ms", "int32"),
    F("results", Array([
        F("topic_name", "string"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("error_code", "int16"),
        ])),
    ])),
])
