"""Produce (API key 0): request and response schemas, v0-13 (Kafka 4.2; Kafka 4 dropped v0-2,
served here still).

v3+: transactional_id; v8+: per-batch record_errors and error_message; v9+: flexible; v10+:
the KIP-951 leader hints (tagged: the partition's current_leader, the node_endpoints of the
leaders named), sent by Kafka only with NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH; v11 may
answer TRANSACTION_ABORTABLE (KIP-890); v12 is v11 on the wire (KIP-890 part 2: with
transaction.version 2 a transactional produce adds its partition to the transaction); v13
names topics by id (KIP-516) in the request and the response, and may answer
UNKNOWN_TOPIC_ID."""

from __future__ import annotations

from ..schema import NULL, Array, Message, Struct
from ..schema import Field as F

ProduceRequest = Message("ProduceRequest", 0, "0-13", "9+", [
    F("transactional_id", "string", "3+", nullable="3+", default=NULL),
    F("acks", "int16"),
    F("timeout_ms", "int32"),
    F("topic_data", Array([
        F("name", "string", "0-12"),
        F("topic_id", "uuid", "13+"),
        F("partition_data", Array([
            F("index", "int32"),
            F("records", "records", nullable="0+"),
        ])),
    ])),
])
ProduceResponse = Message("ProduceResponse", 0, "0-13", "9+", [
    F("responses", Array([
        F("name", "string", "0-12"),
        F("topic_id", "uuid", "13+"),
        F("partition_responses", Array([
            F("index", "int32"),
            F("error_code", "int16"),
            F("base_offset", "int64"),
            F("log_append_time_ms", "int64", "2+", default=-1),
            F("log_start_offset", "int64", "5+", default=-1),
            F("record_errors", Array([
                F("batch_index", "int32"),
                F("batch_index_error_message", "string", nullable="8+", default=NULL),
            ]), "8+"),
            F("error_message", "string", "8+", nullable="8+", default=NULL),
            F("current_leader", Struct([
                F("leader_id", "int32", default=-1),
                F("leader_epoch", "int32", default=-1),
            ]), "10+", tag=0),
        ])),
    ])),
    F("throttle_time_ms", "int32", "1+"),
    F("node_endpoints", Array([
        F("node_id", "int32"),
        F("host", "string"),
        F("port", "int32"),
        F("rack", "string", nullable="10+", default=NULL),
    ]), "10+", tag=0),
])
