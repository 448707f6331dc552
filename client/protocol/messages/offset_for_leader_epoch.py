"""OffsetForLeaderEpoch (API key 23): request and response schemas."""

from __future__ import annotations

from ..schema import Array, Message
from ..schema import Field as F

OffsetForLeaderEpochRequest = Message("OffsetForLeaderEpochRequest", 23, "0-4", "4+", [
    F("replica_id", "int32", "3+", default=-2),
    F("topics", Array([
        F("topic", "string"),
        F("partitions", Array([
            F("partition", "int32"),
            F("current_leader_epoch", "int32", "2+", default=-1),
            F("leader_epoch", "int32"),
        ])),
    ])),
])
OffsetForLeaderEpochResponse = Message("OffsetForLeaderEpochResponse", 23, "0-4", "4+", [
    F("throttle_time_ms", "int32", "2+"),
    F("topics", Array([
        F("topic", "string"),
        F("partitions", Array([
            F("error_code", "int16"),
            F("partition", "int32"),
            F("leader_epoch", "int32", "1+", default=-1),
            F("end_offset", "int64", default=-1),
        ])),
    ])),
])
