"""OffsetDelete (API key 47): request and response schemas."""

from __future__ import annotations

from ..schema import Array, Message
from ..schema import Field as F

OffsetDeleteRequest = Message("OffsetDeleteRequest", 47, "0", "none", [
    F("group_id", "string"),
    F("topics", Array([
        F("name", "string"),
        F("partitions", Array([F("partition_index", "int32")])),
    ])),
])
OffsetDeleteResponse = Message("OffsetDeleteResponse", 47, "0", "none", [
    F("error_code", "int16"),
    F("throttle_time_ms", "int32"),
    F("topics", Array([
        F("name", "string"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("error_code", "int16"),
        ])),
    ])),
])
