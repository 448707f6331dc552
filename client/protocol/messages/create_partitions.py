"""CreatePartitions (API key 37): request and response schemas."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

CreatePartitionsRequest = Message("CreatePartitionsRequest", 37, "0-3", "2+", [
    F("topics", Array([
        F("name", "string"),
        F("count", "int32"),
        F("assignments", Array([
            F("broker_ids", Array("int32")),
        ]), nullable="0+"),
    ])),
    F("timeout_ms", "int32"),
    F("validate_only", "bool"),
])
CreatePartitionsResponse = Message("CreatePartitionsResponse", 37, "0-3", "2+", [
    F("throttle_time_ms", "int32"),
    F("results", Array([
        F("name", "string"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=NULL),
    ])),
])
