"""DescribeAcls (API key 29): request and response schemas (v0-3, flexible from v2; v1 adds the
pattern type, v3 the User resource type)."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

#: PatternType LITERAL: the default of the pattern type fields before v1
LITERAL = 3

#: an ACL filter: DescribeAcls' request, and each of DeleteAcls' filters
ACL_FILTER = [
    F("resource_type_filter", "int8"),
    F("resource_name_filter", "string", nullable="0+", default=NULL),
    F("pattern_type_filter", "int8", "1+", default=LITERAL),
    F("principal_filter", "string", nullable="0+", default=NULL),
    F("host_filter", "string", nullable="0+", default=NULL),
    F("operation", "int8"),
    F("permission_type", "int8"),
]

DescribeAclsRequest = Message("DescribeAclsRequest", 29, "0-3", "2+", ACL_FILTER)
DescribeAclsResponse = Message("DescribeAclsResponse", 29, "0-3", "2+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+", default=NULL),
    F("resources", Array([
        F("resource_type", "int8"),
        F("resource_name", "string"),
        F("pattern_type", "int8", "1+", default=LITERAL),
        F("acls", Array([
            F("principal", "string"),
            F("host", "string"),
            F("operation", "int8"),
            F("permission_type", "int8"),
        ])),
    ])),
])
