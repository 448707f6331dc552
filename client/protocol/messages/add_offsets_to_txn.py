"""AddOffsetsToTxn (API key 25): request and response schemas, v0-4 (v2 adds PRODUCER_FENCED,
v3 is flexible, v4 adds TRANSACTION_ABORTABLE)."""

from __future__ import annotations

from ..schema import Field as F
from ..schema import Message

AddOffsetsToTxnRequest = Message("AddOffsetsToTxnRequest", 25, "0-4", "3+", [
    F("transactional_id", "string"),
    F("producer_id", "int64"),
    F("producer_epoch", "int16"),
    F("group_id", "string"),
])
AddOffsetsToTxnResponse = Message("AddOffsetsToTxnResponse", 25, "0-4", "3+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
])
