"""IncrementalAlterConfigs (API key 44): request and response schemas.

``config_operation``: 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT (the last two for list configs)."""

from __future__ import annotations

from ..schema import Array, Message
from ..schema import Field as F

IncrementalAlterConfigsRequest = Message("IncrementalAlterConfigsRequest", 44, "0-1", "1+", [
    F("resources", Array([
        F("resource_type", "int8"),
        F("resource_name", "string"),
        F("configs", Array([
            F("name", "string"),
            F("config_operation", "int8"),
            F("value", "string", nullable="0+"),
        ])),
    ])),
    F("validate_only", "bool"),
])
IncrementalAlterConfigsResponse = Message("IncrementalAlterConfigsResponse", 44, "0-1", "1+", [
    F("throttle_time_ms", "int32"),
    F("responses", Array([
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+"),
        F("resource_type", "int8"),
        F("resource_name", "string"),
    ])),
])
