"""ListOffsets (API key 2): request and response schemas."""

from __future__ import annotations

from ..schema import Array, Message
from ..schema import Field as F

ListOffsetsRequest = Message("ListOffsetsRequest", 2, "1-2", "6+", [
    # The spec gives no default (0 = broker 0, a follower); a client codec means a consumer (-1).
    F("replica_id", "int32", default=-1),
    F("isolation_level", "int8", "2+"),
    F("topics", Array([
        F("name", "string"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("timestamp", "int64"),
        ])),
    ])),
])
ListOffsetsResponse = Message("ListOffsetsResponse", 2, "1-2", "6+", [
    F("throttle_time_ms", "int32", "2+"),
    F("topics", Array([
        F("name", "string"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("error_code", "int16"),
            F("timestamp", "int64", "1+", default=-1),
            F("offset", "int64", "1+", default=-1),
        ])),
    ])),
])
