"""SyncGroup (API key 14): request and response schemas."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

SyncGroupRequest = Message("SyncGroupRequest", 14, "0-5", "4+", [
    F("group_id", "string"),
    F("generation_id", "int32"),
    F("member_id", "string"),
    F("group_instance_id", "string", "3+", nullable="3+", default=NULL),
    F("protocol_type", "string", "5+", nullable="5+", default=NULL),
    F("protocol_name", "string", "5+", nullable="5+", default=NULL),
    F("assignments", Array([
        F("member_id", "string"),
        F("assignment", "bytes"),
    ])),
])
SyncGroupResponse = Message("SyncGroupResponse", 14, "0-5", "4+", [
    F("throttle_time_ms", "int32", "1+"),
    F("error_code", "int16"),
    F("protocol_type", "string", "5+", nullable="5+", default=NULL),
    F("protocol_name", "string", "5+", nullable="5+", default=NULL),
    F("assignment", "bytes"),
])
