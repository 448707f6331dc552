"""InitProducerId (API key 22): request and response schemas."""

from __future__ import annotations

from ..schema import Field as F
from ..schema import Message

InitProducerIdRequest = Message("InitProducerIdRequest", 22, "0-1", "2+", [
    F("transactional_id", "string", nullable="0+"),
    F("transaction_timeout_ms", "int32"),
])
InitProducerIdResponse = Message("InitProducerIdResponse", 22, "0-1", "2+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("producer_id", "int64", default=-1),
    F("producer_epoch", "int16"),
])
