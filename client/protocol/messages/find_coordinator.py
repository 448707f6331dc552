"""FindCoordinator (API key 10): request and response schemas."""

from __future__ import annotations

from ..schema import NULL, Message
from ..schema import Field as F

FindCoordinatorRequest = Message("FindCoordinatorRequest", 10, "0-1", "3+", [
    F("key", "string"),
    F("key_type", "int8", "1+"),
])
FindCoordinatorResponse = Message("FindCoordinatorResponse", 10, "0-1", "3+", [
    F("throttle_time_ms", "int32", "1+"),
    F("error_code", "int16"),
    F("error_message", "string", "1+", nullable="1+", default=NULL),
    F("node_id", "int32"),
    F("host", "string"),
    F("port", "int32"),
])
