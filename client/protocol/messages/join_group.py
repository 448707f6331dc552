"""JoinGroup (API key 11): request and response schemas."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

JoinGroupRequest = Message("JoinGroupRequest", 11, "0-9", "6+", [
    F("group_id", "string"),
    F("session_timeout_ms", "int32"),
    F("rebalance_timeout_ms", "int32", "1+", default=-1),
    F("member_id", "string"),
    F("group_instance_id", "string", "5+", nullable="5+", default=NULL),
    F("protocol_type", "string"),
    F("protocols", Array([
        F("name", "string"),
        F("metadata", "bytes"),
    ])),
    F("reason", "string", "8+", nullable="8+", default=NULL),
])
JoinGroupResponse = Message("JoinGroupResponse", 11, "0-9", "6+", [
    F("throttle_time_ms", "int32", "2+"),
    F("error_code", "int16"),
    F("generation_id", "int32", default=-1),
    F("protocol_type", "string", "7+", nullable="7+", default=NULL),
    F("protocol_name", "string", nullable="7+"),
    F("leader", "string"),
    F("skip_assignment", "bool", "9+"),
    F("member_id", "string"),
    F("members", Array([
        F("member_id", "string"),
        F("group_instance_id", "string", "5+", nullable="5+", default=NULL),
        F("metadata", "bytes"),
    ])),
])
