"""ShareFetch (78), v1-2: records acquired for a share-group member, acknowledgements
piggy-backed (see broker/share/manager.py)."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..request_context import RequestContext

API_KEY = ApiKey.SHARE_FETCH
AUTHORIZATION = "READ on the group; READ on each topic (others TOPIC_AUTHORIZATION_FAILED)"


async def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    group = request["group_id"] or ""
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, group):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "error_message": None,
                "acquisition_lock_timeout_ms": 0, "responses": [], "node_endpoints": []}
    denied = []
    if ctx.state.authorizer is not None:
        kept = []
        for t in request["topics"]:
            name = ctx.state.logs.topic_name(t["topic_id"])
            if name is not None and not ctx.authorize(AclOperation.READ, ResourceType.TOPIC, name):
                denied.append({"topic_id": t["topic_id"], "partitions": [
                    {"partition_index": p["partition_index"], "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                     "error_message": None, "acknowledge_error_code": 0, "acknowledge_error_message": None,
                     "current_leader": {"leader_id": ctx.state.node_id, "leader_epoch": 0}, "records": b"",
                     "acquired_records": []} for p in t["partitions"]]})
            else:
                kept.append(t)
        request = {**request, "topics": kept}
    body = await ctx.state.shares.share_fetch(request, ctx.api_version)
    body["responses"] = body["responses"] + denied
    return {"throttle_time_ms": 0, **body}
