"""InitProducerId (API key 22): request and response schemas, v0-5 (Kafka 4.2's brokers serve
these; v6, KIP-939's two-phase commit, is unstable there and not advertised).

v2+: flexible; v3+: producer_id / producer_epoch of a producer asking to bump its epoch
(KIP-360); v4 and v5 change only the errors a client may see (PRODUCER_FENCED,
TRANSACTION_ABORTABLE)."""

from __future__ import annotations

from ..schema import Field as F
from ..schema import Message

InitProducerIdRequest = Message("InitProducerIdRequest", 22, "0-5", "2+", [
    F("transactional_id", "string", nullable="0+"),
    F("transaction_timeout_ms", "int32"),
    F("producer_id", "int64", "3+", default=-1),
    F("producer_epoch", "int16", "3+", default=-1),
])
InitProducerIdResponse = Message("InitProducerIdResponse", 22, "0-5", "2+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("producer_id", "int64", default=-1),
    F("producer_epoch", "int16"),
])
