"""DeleteGroups (API key 42): request and response schemas."""

from __future__ import annotations

from ..schema import Array, Message
from ..schema import Field as F

DeleteGroupsRequest = Message("DeleteGroupsRequest", 42, "0-2", "2+", [
    F("groups_names", Array("string")),
])
DeleteGroupsResponse = Message("DeleteGroupsResponse", 42, "0-2", "2+", [
    F("throttle_time_ms", "int32"),
    F("results", Array([
        F("group_id", "string"),
        F("error_code", "int16"),
    ])),
])
