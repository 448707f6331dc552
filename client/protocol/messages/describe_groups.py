"""DescribeGroups (API key 15): request and response schemas, v0-6.

v1+: throttle_time_ms; v3+: authorized operations; v4+: members' group_instance_id; v5+:
flexible; v6+ (KIP-1043): a group that does not exist is answered GROUP_ID_NOT_FOUND with an
error message (before, a "Dead" group without an error)."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

DescribeGroupsRequest = Message("DescribeGroupsRequest", 15, "0-6", "5+", [
    F("groups", Array("string")),
    F("include_authorized_operations", "bool", "3+"),
])
DescribeGroupsResponse = Message("DescribeGroupsResponse", 15, "0-6", "5+", [
    F("throttle_time_ms", "int32", "1+"),
    F("groups", Array([
        F("error_code", "int16"),
        F("error_message", "string", "6+", nullable="6+", default=NULL),
        F("group_id", "string"),
        F("group_state", "string"),
        F("protocol_type", "string"),
        F("protocol_data", "string"),
        F("members", Array([
            F("member_id", "string"),
            F("group_instance_id", "string", "4+", nullable="4+", default=NULL),
            F("client_id", "string"),
            F("client_host", "string"),
            F("member_metadata", "bytes"),
            F("member_assignment", "bytes"),
        ])),
        F("authorized_operations", "int32", "3+", default=-2147483648),
    ])),
])
