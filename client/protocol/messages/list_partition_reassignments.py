"""ListPartitionReassignments (API key 46): request and response schemas (flexible from v0)."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

ListPartitionReassignmentsRequest = Message("ListPartitionReassignmentsRequest", 46, "0", "0+", [
    F("timeout_ms", "int32", default=60000),
    F("topics", Array([
        F("name", "string"),
        F("partition_indexes", Array("int32")),
    ]), nullable="0+", default=NULL),
])
ListPartitionReassignmentsResponse = Message("ListPartitionReassignmentsResponse", 46, "0", "0+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+"),
    F("topics", Array([
        F("name", "string"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("replicas", Array("int32")),
            F("adding_replicas", Array("int32")),
            F("removing_replicas", Array("int32")),
        ])),
    ])),
])
