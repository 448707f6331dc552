"""LeaveGroup (API key 13): request and response schemas. v0-2 name one member
(``member_id``); v3+ a batch of ``members`` with a result each (KIP-345)."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

LeaveGroupRequest = Message("LeaveGroupRequest", 13, "0-5", "4+", [
    F("group_id", "string"),
    F("member_id", "string", "0-2"),
    F("members", Array([
        F("member_id", "string", "3+"),
        F("group_instance_id", "string", "3+", nullable="3+", default=NULL),
        F("reason", "string", "5+", nullable="5+", default=NULL),
    ]), "3+"),
])
LeaveGroupResponse = Message("LeaveGroupResponse", 13, "0-5", "4+", [
    F("throttle_time_ms", "int32", "1+"),
    F("error_code", "int16"),
    F("members", Array([
        F("member_id", "string", "3+"),
        F("group_instance_id", "string", "3+", nullable="3+"),
        F("error_code", "int16", "3+"),
    ]), "3+"),
])
