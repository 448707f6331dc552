"""ShareGroupHeartbeat (76), v1: share-group membership (see broker/share/group.py)."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..request_context import RequestContext

API_KEY = ApiKey.SHARE_GROUP_HEARTBEAT
AUTHORIZATION = "READ on the group"


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request["group_id"]):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "error_message": None,
                "member_id": None, "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}
    body = ctx.state.share_groups.heartbeat(request, ctx.client_id or "", "/" + ctx.client_host)
    return {"throttle_time_ms": 0, **body}
