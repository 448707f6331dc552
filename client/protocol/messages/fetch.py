"""Fetch (API key 1): request and response schemas, v0-18 (Kafka 3.9's v0-17 and Kafka 4.2's
v4-18; Kafka 4 removed v0-3).

v1+: throttle_time_ms; v2+: magic 1 message sets (v0-1: magic 0; the broker down-converts);
v3+: max_bytes (KIP-74); v4+: isolation_level, last_stable_offset and aborted_transactions,
RecordBatch v2; v5+: log_start_offset; v7+: fetch sessions (KIP-227); v9+: current_leader_epoch; v11+: rack_id
and preferred_read_replica; v12+: flexible, last_fetched_epoch, the tagged diverging_epoch /
current_leader / snapshot_id; v13+: topics by id (KIP-516); v15+: replica_state replaces
replica_id; v16+: node_endpoints (KIP-951); v17+: replica_directory_id; v18+: a follower's
high_watermark (KIP-1166; consumers leave it at its default). The broker writes its
responses by hand (handlers/fetch.py, for sendfile); this table decodes requests and is what
clients (and the broker's tests) decode responses with."""

from __future__ import annotations

from ..schema import NULL, Array, Message, Struct
from ..schema import Field as F

FetchRequest = Message("FetchRequest", 1, "0-18", "12+", [
    F("cluster_id", "string", "12+", nullable="12+", default=NULL, tag=0),
    F("replica_id", "int32", "0-14", default=-1),
    F("replica_state", Struct([
        F("replica_id", "int32", default=-1),
        F("replica_epoch", "int64", default=-1),
    ]), "15+", tag=1),
    F("max_wait_ms", "int32"),
    F("min_bytes", "int32"),
    F("max_bytes", "int32", "3+", default=0x7FFFFFFF),
    F("isolation_level", "int8", "4+"),
    F("session_id", "int32", "7+"),
    F("session_epoch", "int32", "7+", default=-1),
    F("topics", Array([
        F("topic", "string", "0-12"),
        F("topic_id", "uuid", "13+"),
        F("partitions", Array([
            F("partition", "int32"),
            F("current_leader_epoch", "int32", "9+", default=-1),
            F("fetch_offset", "int64"),
            F("last_fetched_epoch", "int32", "12+", default=-1),
            F("log_start_offset", "int64", "5+", default=-1),
            F("partition_max_bytes", "int32"),
            F("replica_directory_id", "uuid", "17+", tag=0),
            F("high_watermark", "int64", "18+", default=0x7FFFFFFFFFFFFFFF, tag=1),
        ])),
    ])),
    F("forgotten_topics_data", Array([
        F("topic", "string", "7-12"),
        F("topic_id", "uuid", "13+"),
        F("partitions", Array("int32")),
    ]), "7+"),
    F("rack_id", "string", "11+"),
])
FetchResponse = Message("FetchResponse", 1, "0-18", "12+", [
    F("throttle_time_ms", "int32", "1+"),
    F("error_code", "int16", "7+"),
    F("session_id", "int32", "7+"),
    F("responses", Array([
        F("topic", "string", "0-12"),
        F("topic_id", "uuid", "13+"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("error_code", "int16"),
            F("high_watermark", "int64"),
            F("last_stable_offset", "int64", "4+", default=-1),
            F("log_start_offset", "int64", "5+", default=-1),
            F("diverging_epoch", Struct([
                F("epoch", "int32", default=-1),
                F("end_offset", "int64", default=-1),
            ]), "12+", tag=0),
            F("current_leader", Struct([
                F("leader_id", "int32", default=-1),
                F("leader_epoch", "int32", default=-1),
            ]), "12+", tag=1),
            F("snapshot_id", Struct([
                F("end_offset", "int64", default=-1),
                F("epoch", "int32", default=-1),
            ]), "12+", tag=2),
            F("aborted_transactions", Array([
                F("producer_id", "int64"),
                F("first_offset", "int64"),
            ]), "4+", nullable="4+"),
            F("preferred_read_replica", "int32", "11+", default=-1),
            F("records", "records", nullable="0+"),
        ])),
    ])),
    F("node_endpoints", Array([
        F("node_id", "int32"),
        F("host", "string"),
        F("port", "int32"),
        F("rack", "string", nullable="16+", default=NULL),
    ]), "16+", tag=0),
])
