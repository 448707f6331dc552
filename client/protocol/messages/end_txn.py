"""EndTxn (API key 26): request and response schemas, v0-5 (v2 adds PRODUCER_FENCED, v3 is
flexible, v4 adds TRANSACTION_ABORTABLE, v5 is transactions V2 (KIP-890 part 2): the
coordinator bumps the producer epoch at every transaction end and answers the producer id and
epoch to use next)."""

from __future__ import annotations

from ..schema import Field as F
from ..schema import Message

EndTxnRequest = Message("EndTxnRequest", 26, "0-5", "3+", [
    F("transactional_id", "string"),
    F("producer_id", "int64"),
    F("producer_epoch", "int16"),
    F("committed", "bool"),
])
EndTxnResponse = Message("EndTxnResponse", 26, "0-5", "3+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("producer_id", "int64", "5+", default=-1),
    F("producer_epoch", "int16", "5+", default=-1),
])
