"""ShareAcknowledge (79), v1-2: acknowledgements of acquired records, answered once the
share-partitions' new states are durable (see broker/share/manager.py)."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..request_context import RequestContext

API_KEY = ApiKey.SHARE_ACKNOWLEDGE
AUTHORIZATION = "READ on the group"


async def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request["group_id"] or ""):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "error_message": None,
                "acquisition_lock_timeout_ms": 0, "responses": [], "node_endpoints": []}
    body = await ctx.state.shares.share_acknowledge(request, ctx.api_version)
    return {"throttle_time_ms": 0, **body}
