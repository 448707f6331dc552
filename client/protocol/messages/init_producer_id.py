"""InitProducerId (API key 22): request and response schemas, v0-6.

v2+: flexible; v3+: producer_id / producer_epoch of a producer asking to bump its epoch
(KIP-360); v4 and v5 change only the errors a client may see (PRODUCER_FENCED,
TRANSACTION_ABORTABLE); v6 (KIP-939, two-phase commit): ``enable2_pc`` and
``keep_prepared_txn`` in the request, the open transaction's producer id and epoch in the
response."""

from __future__ import annotations

from ..schema import Field as F
from ..schema import Message

InitProducerIdRequest = Message("InitProducerIdRequest", 22, "0-6", "2+", [
    F("transactional_id", "string", nullable="0+"),
    F("transaction_timeout_ms", "int32"),
    F("producer_id", "int64", "3+", default=-1),
    F("producer_epoch", "int16", "3+", default=-1),
    F("enable2_pc", "bool", "6+", default=False),
    F("keep_prepared_txn", "bool", "6+", default=False),
])
InitProducerIdResponse = Message("InitProducerIdResponse", 22, "0-6", "2+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("producer_id", "int64", default=-1),
    F("producer_epoch", "int16"),
    F("ongoing_txn_producer_id", "int64", "6+", default=-1),
    F("ongoing_txn_producer_epoch", "int16", "6+", default=-1),
])
