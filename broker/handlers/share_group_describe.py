"""ShareGroupDescribe (77), v1: share groups with their members' assignments."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..request_context import RequestContext

API_KEY = ApiKey.SHARE_GROUP_DESCRIBE
AUTHORIZATION = "DESCRIBE on each group (its authorized operations when asked)"


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    groups = []
    for group_id in request["group_ids"]:
        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            groups.append({"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "error_message": None,
                           "group_id": group_id, "group_state": "", "group_epoch": 0, "assignment_epoch": 0,
                           "assignor_name": "", "members": [], "authorized_operations": -2**31})
            continue
        d = ctx.state.share_groups.describe(group_id)
        if request["include_authorized_operations"] and d["error_code"] == 0:
            d["authorized_operations"] = ctx.authorized_operations(ResourceType.GROUP, group_id)
        groups.append(d)
    return {"throttle_time_ms": 0, "groups": groups}
