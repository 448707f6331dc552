"""ListTransactions (API key 66): request and response schemas, v0-2 (v1 adds the duration
filter, KIP-994; v2 the transactional id pattern, KIP-1152); flexible from v0."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

ListTransactionsRequest = Message("ListTransactionsRequest", 66, "0-2", "0+", [
    F("state_filters", Array("string")),
    F("producer_id_filters", Array("int64")),
    F("duration_filter", "int64", "1+", default=-1),
    F("transactional_id_pattern", "string", "2+", nullable="2+", default=NULL),
])
ListTransactionsResponse = Message("ListTransactionsResponse", 66, "0-2", "0+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("unknown_state_filters", Array("string")),
    F("transaction_states", Array([
        F("transactional_id", "string"),
        F("producer_id", "int64"),
        F("transaction_state", "string"),
    ])),
])
