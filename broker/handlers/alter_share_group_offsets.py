"""AlterShareGroupOffsets (91), v0: set an empty share group's start offsets (see
broker/share/offsets.py): NON_EMPTY_GROUP while it has members; each share-partition starts
again at its new offset, its state epoch bumped and nothing in flight. Answered once the new
states are durable."""

from __future__ import annotations

import uuid
from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..request_context import RequestContext
from ..share.offsets import alter_offsets
from .authz import may_read_topic

API_KEY = ApiKey.ALTER_SHARE_GROUP_OFFSETS
AUTHORIZATION = "READ on the group; READ on each topic (others TOPIC_AUTHORIZATION_FAILED)"


async def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    group_id = request["group_id"]
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "error_message": None,
                "responses": []}
    allowed, denied = [], []
    for t in request["topics"]:
        parts = [(p["partition_index"], p["start_offset"]) for p in t["partitions"]]
        if ctx.state.authorizer is not None and not may_read_topic(ctx, t["topic_name"]):
            denied.append({"topic_name": t["topic_name"],
                           "topic_id": ctx.state.logs.topic_id(t["topic_name"]) or uuid.UUID(int=0),
                           "partitions": [{"partition_index": p, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                           "error_message": None} for p, _ in parts]})
        else:
            allowed.append((t["topic_name"], parts))
    code, message, results = await alter_offsets(ctx.state, group_id, allowed)
    if code:
        return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "responses": []}
    responses = [{"topic_name": name, "topic_id": tid, "partitions": [
        {"partition_index": p, "error_code": c, "error_message": m} for p, c, m in parts]}
        for name, tid, parts in results]
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "responses": responses + denied}
