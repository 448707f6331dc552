"""DeleteTopics (API key 20): request and response schemas, v0-6 (Kafka 3.9).

v4+: flexible; v5+: error_message; v6+: topics by name or by id (KIP-516)."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

DeleteTopicsRequest = Message("DeleteTopicsRequest", 20, "0-6", "4+", [
    F("topics", Array([
        F("name", "string", nullable="6+", default=NULL),
        F("topic_id", "uuid"),
    ]), "6+"),
    F("topic_names", Array("string"), "0-5"),
    F("timeout_ms", "int32"),
])
DeleteTopicsResponse = Message("DeleteTopicsResponse", 20, "0-6", "4+", [
    F("throttle_time_ms", "int32", "1+"),
    F("responses", Array([
        F("name", "string", nullable="6+"),
        F("topic_id", "uuid", "6+"),
        F("error_code", "int16"),
        F("error_message", "string", "5+", nullable="5+", default=NULL),
    ])),
])
