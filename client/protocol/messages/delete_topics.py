"""DeleteTopics (API key 20): request and response schemas."""

from __future__ import annotations

from ..schema import Array, Message
from ..schema import Field as F

DeleteTopicsRequest = Message("DeleteTopicsRequest", 20, "0-1", "4+", [
    F("topic_names", Array("string")),
    F("timeout_ms", "int32"),
])
DeleteTopicsResponse = Message("DeleteTopicsResponse", 20, "0-1", "4+", [
    F("throttle_time_ms", "int32", "1+"),
    F("responses", Array([
        F("name", "string"),
        F("error_code", "int16"),
    ])),
])
