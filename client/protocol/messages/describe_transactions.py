"""DescribeTransactions (API key 65): request and response schemas (flexible from v0)."""

from __future__ import annotations

from ..schema import Array, Message
from ..schema import Field as F

DescribeTransactionsRequest = Message("DescribeTransactionsRequest", 65, "0", "0+", [
    F("transactional_ids", Array("string")),
])
DescribeTransactionsResponse = Message("DescribeTransactionsResponse", 65, "0", "0+", [
    F("throttle_time_ms", "int32"),
    F("transaction_states", Array([
        F("error_code", "int16"),
        F("transactional_id", "string"),
        F("transaction_state", "string"),
        F("transaction_timeout_ms", "int32"),
        F("transaction_start_time_ms", "int64"),
        F("producer_id", "int64"),
        F("producer_epoch", "int16"),
        F("topics", Array([
            F("topic", "string"),
            F("partitions", Array("int32")),
        ])),
    ])),
])
