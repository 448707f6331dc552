"""CreateAcls (API key 30): request and response schemas (v0-3, flexible from v2; v1 adds the
pattern type, v3 the User resource type)."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F
from .describe_acls import LITERAL

CreateAclsRequest = Message("CreateAclsRequest", 30, "0-3", "2+", [
    F("creations", Array([
        F("resource_type", "int8"),
        F("resource_name", "string"),
        F("resource_pattern_type", "int8", "1+", default=LITERAL),
        F("principal", "string"),
        F("host", "string"),
        F("operation", "int8"),
        F("permission_type", "int8"),
    ])),
])
CreateAclsResponse = Message("CreateAclsResponse", 30, "0-3", "2+", [
    F("throttle_time_ms", "int32"),
    F("results", Array([
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=NULL),
    ])),
])
