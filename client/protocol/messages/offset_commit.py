"""OffsetCommit (API key 8): request and response schemas."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

OffsetCommitRequest = Message("OffsetCommitRequest", 8, "0-9", "8+", [
    F("group_id", "string"),
    F("generation_id_or_member_epoch", "int32", "1+", default=-1),
    F("member_id", "string", "1+"),
    F("group_instance_id", "string", "7+", nullable="7+", default=NULL),
    F("retention_time_ms", "int64", "2-4", default=-1),
    F("topics", Array([
        F("name", "string"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("committed_offset", "int64"),
            F("committed_leader_epoch", "int32", "6+", default=-1),
            F("commit_timestamp", "int64", "1", default=-1),
            F("committed_metadata", "string", nullable="0+"),
        ])),
    ])),
])
OffsetCommitResponse = Message("OffsetCommitResponse", 8, "0-9", "8+", [
    F("throttle_time_ms", "int32", "3+"),
    F("topics", Array([
        F("name", "string"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("error_code", "int16"),
        ])),
    ])),
])
