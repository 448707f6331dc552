"""AlterConfigs (API key 33): request and response schemas."""

from __future__ import annotations

from ..schema import Array, Message
from ..schema import Field as F

AlterConfigsRequest = Message("AlterConfigsRequest", 33, "0-2", "2+", [
    F("resources", Array([
        F("resource_type", "int8"),
        F("resource_name", "string"),
        F("configs", Array([
            F("name", "string"),
            F("value", "string", nullable="0+"),
        ])),
    ])),
    F("validate_only", "bool"),
])
AlterConfigsResponse = Message("AlterConfigsResponse", 33, "0-2", "2+", [
    F("throttle_time_ms", "int32"),
    F("responses", Array([
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+"),
        F("resource_type", "int8"),
        F("resource_name", "string"),
    ])),
])
