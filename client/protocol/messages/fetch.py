"""Fetch (API key 1): request and response schemas."""

from __future__ import annotations

from ..schema import Array, Message
from ..schema import Field as F

FetchRequest = Message("FetchRequest", 1, "4-11", "12+", [
    F("replica_id", "int32", default=-1),
    F("max_wait_ms", "int32"),
    F("min_bytes", "int32"),
    F("max_bytes", "int32", "3+", default=0x7FFFFFFF),
    F("isolation_level", "int8", "4+"),
    F("session_id", "int32", "7+"),
    F("session_epoch", "int32", "7+", default=-1),
    F("topics", Array([
        F("topic", "string"),
        F("partitions", Array([
            F("partition", "int32"),
            F("current_leader_epoch", "int32", "9+", default=-1),
            F("fetch_offset", "int64"),
            F("log_start_offset", "int64", "5+", default=-1),
            F("partition_max_bytes", "int32"),
        ])),
    ])),
    F("forgotten_topics_data", Array([
        F("topic", "string"),
        F("partitions", Array("int32")),
    ]), "7+"),
    F("rack_id", "string", "11+"),
])
FetchResponse = Message("FetchResponse", 1, "4-11", "12+", [
    F("throttle_time_ms", "int32", "1+"),
    F("error_code", "int16", "7+"),
    F("session_id", "int32", "7+"),
    F("responses", Array([
        F("topic", "string"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("error_code", "int16"),
            F("high_watermark", "int64"),
            F("last_stable_offset", "int64", "4+", default=-1),
            F("log_start_offset", "int64", "5+", default=-1),
            F("aborted_transactions", Array([
                F("producer_id", "int64"),
                F("first_offset", "int64"),
            ]), "4+", nullable="4+"),
            F("preferred_read_replica", "int32", "11+", default=-1),
            F("records", "records", nullable="0+"),
        ])),
    ])),
])
