"""DeleteShareGroupOffsets (92), v0: forget an empty share group's state of whole topics (see
broker/share/offsets.py): GROUP_ID_NOT_FOUND for an unknown group, NON_EMPTY_GROUP while it
has members, UNKNOWN_TOPIC_OR_PARTITION for a topic it has no state of. The next ShareFetch
of such a topic starts by ``share.auto.offset.reset``. Answered once the tombstones are
durable."""

from __future__ import annotations

import uuid
from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..request_context import RequestContext
from ..share.offsets import delete_offsets
from .authz import may_read_topic

API_KEY = ApiKey.DELETE_SHARE_GROUP_OFFSETS
AUTHORIZATION = "DELETE on the group; READ on each topic (others TOPIC_AUTHORIZATION_FAILED)"


async def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    group_id = request["group_id"]
    if not ctx.authorize(AclOperation.DELETE, ResourceType.GROUP, group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "error_message": None,
                "responses": []}
    allowed, denied = [], []
    for t in request["topics"]:
        name = t["topic_name"]
        if ctx.state.authorizer is not None and not may_read_topic(ctx, name):
            denied.append({"topic_name": name, "topic_id": ctx.state.logs.topic_id(name) or uuid.UUID(int=0),
                           "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "error_message": None})
        else:
            allowed.append(name)
    code, message, results = await delete_offsets(ctx.state, group_id, allowed)
    if code:
        return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "responses": []}
    responses = [{"topic_name": name, "topic_id": tid, "error_code": c, "error_message": m}
                 for name, tid, c, m in results]
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "responses": responses + denied}
