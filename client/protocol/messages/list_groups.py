"""ListGroups (API key 16): request and response schemas."""

from __future__ import annotations

from ..schema import Array, Message
from ..schema import Field as F

ListGroupsRequest = Message("ListGroupsRequest", 16, "0-5", "3+", [
    F("states_filter", Array("string"), "4+"),
    F("types_filter", Array("string"), "5+"),
])
ListGroupsResponse = Message("ListGroupsResponse", 16, "0-5", "3+", [
    F("throttle_time_ms", "int32", "1+"),
    F("error_code", "int16"),
    F("groups", Array([
        F("group_id", "string"),
        F("protocol_type", "string"),
        F("group_state", "string", "4+"),
        F("group_type", "string", "5+"),
    ])),
])
