"""Heartbeat (API key 12): request and response schemas."""

from __future__ import annotations

from ..schema import NULL, Message
from ..schema import Field as F

HeartbeatRequest = Message("HeartbeatRequest", 12, "0-4", "4+", [
    F("group_id", "string"),
    F("generation_id", "int32"),
    F("member_id", "string"),
    F("group_instance_id", "string", "3+", nullable="3+", default=NULL),
])
HeartbeatResponse = Message("HeartbeatResponse", 12, "0-4", "4+", [
    F("throttle_time_ms", "int32", "1+"),
    F("error_code", "int16"),
])
