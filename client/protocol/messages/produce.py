"""Produce (API key 0): request and response schemas."""

from __future__ import annotations

from ..schema import Array, Message
from ..schema import Field as F

ProduceRequest = Message("ProduceRequest", 0, "0-7", "9+", [
    F("transactional_id", "string", "3+", nullable="0+"),
    F("acks", "int16"),
    F("timeout_ms", "int32"),
    F("topic_data", Array([
        F("name", "string"),
        F("partition_data", Array([
            F("index", "int32"),
            F("records", "records", nullable="0+"),
        ])),
    ])),
])
ProduceResponse = Message("ProduceResponse", 0, "0-7", "9+", [
    F("responses", Array([
        F("name", "string"),
        F("partition_responses", Array([
            F("index", "int32"),
            F("error_code", "int16"),
            F("base_offset", "int64"),
            F("log_append_time_ms", "int64", "2+", default=-1),
            F("log_start_offset", "int64", "5+", default=-1),
        ])),
    ])),
    F("throttle_time_ms", "int32", "1+"),
])
