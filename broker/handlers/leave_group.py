"""LeaveGroup (13), v0-5: v0-2 remove the one member named; v3+ a batch of members (by member
id, or by ``group_instance_id`` alone for static members), each with its own result. In v0-2
the member's error is the response's error."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..request_context import RequestContext

API_KEY = ApiKey.LEAVE_GROUP
AUTHORIZATION = "READ on the group"


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    state, version = ctx.state, ctx.api_version
    coordinator = state.groups.coordinator
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request["group_id"]):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "members": []}
    if version < 3:
        code, results = coordinator.leave_group(request["group_id"], [{"member_id": request["member_id"]}])
        if code == 0 and results:
            code = results[0]["error_code"]
        return {"throttle_time_ms": 0, "error_code": code}
    code, results = coordinator.leave_group(request["group_id"], request["members"])
    return {"throttle_time_ms": 0, "error_code": code, "members": results}
