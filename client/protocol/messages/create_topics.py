"""CreateTopics (API key 19): request and response schemas."""

from __future__ import annotations

from ..schema import Array, Message
from ..schema import Field as F

CreateTopicsRequest = Message("CreateTopicsRequest", 19, "0-3", "5+", [
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
CreateTopicsResponse = Message("CreateTopicsResponse", 19, "0-3", "5+", [
    F("throttle_time_ms", "int32", "2+"),
    F("topics", Array([
        F("name", "string"),
        F("error_code", "int16"),
        F("error_message", "string", "1+", nullable="0+"),
    ])),
])
