"""DeleteAcls (API key 31): request and response schemas (v0-3, flexible from v2; v1 adds the
pattern type, v3 the User resource type)."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F
from .describe_acls import ACL_FILTER, LITERAL

DeleteAclsRequest = Message("DeleteAclsRequest", 31, "0-3", "2+", [
    F("filters", Array(ACL_FILTER)),
])
DeleteAclsResponse = Message("DeleteAclsResponse", 31, "0-3", "2+", [
    F("throttle_time_ms", "int32"),
    F("filter_results", Array([
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=NULL),
        F("matching_acls", Array([
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=NULL),
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("pattern_type", "int8", "1+", default=LITERAL),
            F("principal", "string"),
            F("host", "string"),
            F("operation", "int8"),
            F("permission_type", "int8"),
        ])),
    ])),
])
