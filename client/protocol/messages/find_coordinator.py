"""FindCoordinator (API key 10): request and response schemas. v4+ asks for several keys at
once (``coordinator_keys``) and answers one ``coordinators`` entry per key; v6 (Kafka 3.9) adds
key type 2, share groups (KIP-932)."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

FindCoordinatorRequest = Message("FindCoordinatorRequest", 10, "0-6", "3+", [
    F("key", "string", "0-3"),
    F("key_type", "int8", "1+"),
    F("coordinator_keys", Array("string"), "4+"),
])
FindCoordinatorResponse = Message("FindCoordinatorResponse", 10, "0-6", "3+", [
    F("throttle_time_ms", "int32", "1+"),
    F("error_code", "int16", "0-3"),
    F("error_message", "string", "1-3", nullable="1-3", default=NULL),
    F("node_id", "int32", "0-3"),
    F("host", "string", "0-3"),
    F("port", "int32", "0-3"),
    F("coordinators", Array([
        F("key", "string", "4+"),
        F("node_id", "int32", "4+"),
        F("host", "string", "4+"),
        F("port", "int32", "4+"),
        F("error_code", "int16", "4+"),
        F("error_message", "string", "4+", nullable="4+", default=NULL),
    ]), "4+"),
])
