"""OffsetFetch (API key 9): request and response schemas, v0-10 (Kafka 4.2; Kafka 4 dropped
v0). v0-7 ask for one group; v8+ for several (``groups``), each with its own topics and error;
v9 adds the KIP-848 member fields; v10 names topics by ``topic_id`` instead of ``name``, in
the request and the response, and may answer UNKNOWN_TOPIC_ID."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

_PARTITION_V8 = [
    F("partition_index", "int32"),
    F("committed_offset", "int64"),
    F("committed_leader_epoch", "int32", default=-1),
    F("metadata", "string", nullable="0+"),
    F("error_code", "int16"),
]

OffsetFetchRequest = Message("OffsetFetchRequest", 9, "0-10", "6+", [
    F("group_id", "string", "0-7"),
    F("topics", Array([
        F("name", "string"),
        F("partition_indexes", Array("int32")),
    ]), "0-7", nullable="2-7"),
    F("groups", Array([
        F("group_id", "string"),
        F("member_id", "string", "9+", nullable="9+", default=NULL),
        F("member_epoch", "int32", "9+", default=-1),
        F("topics", Array([
            F("name", "string", "8-9"),
            F("topic_id", "uuid", "10+"),
            F("partition_indexes", Array("int32")),
        ]), nullable="8+"),
    ]), "8+"),
    F("require_stable", "bool", "7+"),
])
OffsetFetchResponse = Message("OffsetFetchResponse", 9, "0-10", "6+", [
    F("throttle_time_ms", "int32", "3+"),
    F("topics", Array([
        F("name", "string"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("committed_offset", "int64"),
            F("committed_leader_epoch", "int32", "5-7", default=-1),
            F("metadata", "string", nullable="0-7"),
            F("error_code", "int16"),
        ])),
    ]), "0-7"),
    F("error_code", "int16", "2-7"),
    F("groups", Array([
        F("group_id", "string"),
        F("topics", Array([
            F("name", "string", "8-9"),
            F("topic_id", "uuid", "10+"),
            F("partitions", Array(_PARTITION_V8)),
        ])),
        F("error_code", "int16"),
    ]), "8+"),
])
