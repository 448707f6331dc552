"""CreateTopics (API key 19): request and response schemas, v0-7 (Kafka 3.9).

v1+: validate_only and error_message; v5+: flexible, and the created topic's partitions,
replication factor and configs in the answer; v7+: its topic id."""

from __future__ import annotations

from ..schema import Array, Message
from ..schema import Field as F

CreateTopicsRequest = Message("CreateTopicsRequest", 19, "0-7", "5+", [
    F("topics", Array([
        F("name", "string"),
        F("num_partitions", "int32"),
        F("replication_factor", "int16"),
        F("assignments", Array([
            F("partition_index", "int32"),
            F("broker_ids", Array("int32")),
        ])),
        F("configs", Array([
            F("name", "string"),
            F("value", "string", nullable="0+"),
        ])),
    ])),
    F("timeout_ms", "int32", default=60000),
    F("validate_only", "bool", "1+"),
])
CreateTopicsResponse = Message("CreateTopicsResponse", 19, "0-7", "5+", [
    F("throttle_time_ms", "int32", "2+"),
    F("topics", Array([
        F("name", "string"),
        F("topic_id", "uuid", "7+"),
        F("error_code", "int16"),
        F("error_message", "string", "1+", nullable="0+"),
        F("topic_config_error_code", "int16", "5+", tag=0),
        F("num_partitions", "int32", "5+", default=-1),
        F("replication_factor", "int16", "5+", default=-1),
        F("configs", Array([
            F("name", "string"),
            F("value", "string", nullable="5+"),
            F("read_only", "bool"),
            F("config_source", "int8", default=-1),
            F("is_sensitive", "bool"),
        ]), "5+", nullable="5+"),
    ])),
])
