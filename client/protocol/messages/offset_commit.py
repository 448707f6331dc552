"""OffsetCommit (API key 8): request and response schemas, v0-10 (Kafka 4.2; Kafka 4 dropped
v0-1, served here still). v9 may answer GROUP_ID_NOT_FOUND and STALE_MEMBER_EPOCH (KIP-848);
v10 names topics by ``topic_id`` instead of ``name`` (KIP-848's topic ids), in the request and
the response, and may answer UNKNOWN_TOPIC_ID."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

OffsetCommitRequest = Message("OffsetCommitRequest", 8, "0-10", "8+", [
    F("group_id", "string"),
    F("generation_id_or_member_epoch", "int32", "1+", default=-1),
    F("member_id", "string", "1+"),
    F("group_instance_id", "string", "7+", nullable="7+", default=NULL),
    F("retention_time_ms", "int64", "2-4", default=-1),
    F("topics", Array([
        F("name", "string", "0-9"),
        F("topic_id", "uuid", "10+"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("committed_offset", "int64"),
            F("committed_leader_epoch", "int32", "6+", default=-1),
            F("commit_timestamp", "int64", "1", default=-1),
            F("committed_metadata", "string", nullable="0+"),
        ])),
    ])),
])
OffsetCommitResponse = Message("OffsetCommitResponse", 8, "0-10", "8+", [
    F("throttle_time_ms", "int32", "3+"),
    F("topics", Array([
        F("name", "string", "0-9"),
        F("topic_id", "uuid", "10+"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("error_code", "int16"),
        ])),
    ])),
])
