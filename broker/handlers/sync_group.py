"""SyncGroup (14), v0-5: the leader hands in the assignment, every member gets its part once
it is stored (see broker/group/coordinator.py)."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..request_context import RequestContext
from .common import reply_when_ready

API_KEY = ApiKey.SYNC_GROUP
AUTHORIZATION = "READ on the group"


def handle(ctx: RequestContext, request: dict[str, Any]) -> Any:
    state = ctx.state
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request["group_id"]):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "protocol_type": None,
                "protocol_name": None, "assignment": b""}
    def start(respond: Any) -> None:
        state.groups.coordinator.sync_group(request, lambda body: respond({"throttle_time_ms": 0, **body}))

    return reply_when_ready(start)
