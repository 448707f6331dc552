"""DescribeProducers (API key 61): request and response schemas (flexible from v0)."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

DescribeProducersRequest = Message("DescribeProducersRequest", 61, "0", "0+", [
    F("topics", Array([
        F("name", "string"),
        F("partition_indexes", Array("int32")),
    ])),
])
DescribeProducersResponse = Message("DescribeProducersResponse", 61, "0", "0+", [
    F("throttle_time_ms", "int32"),
    F("topics", Array([
        F("name", "string"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=NULL),
            F("active_producers", Array([
                F("producer_id", "int64"),
                F("producer_epoch", "int32"),
                F("last_sequence", "int32", default=-1),
                F("last_timestamp", "int64", default=-1),
                F("coordinator_epoch", "int32"),
                F("current_txn_start_offset", "int64", default=-1),
            ])),
        ])),
    ])),
])
