"""OffsetDelete (47), v0: delete committed offsets of a group: any partition of an Empty
group, or of topics an active consumer group is not subscribed to (GROUP_SUBSCRIBED_TO_TOPIC
for the others); NON_EMPTY_GROUP for an active group of another protocol type,
GROUP_ID_NOT_FOUND for an unknown group."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..request_context import RequestContext

API_KEY = ApiKey.OFFSET_DELETE
AUTHORIZATION = "DELETE on the group; READ on each topic"


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    state = ctx.state
    if state.authorizer is not None:
        if not ctx.authorize(AclOperation.DELETE, ResourceType.GROUP, request["group_id"]):
            return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "throttle_time_ms": 0, "topics": []}
        denied = {t["name"] for t in request["topics"]
                  if not ctx.authorize(AclOperation.READ, ResourceType.TOPIC, t["name"])}
        if denied:
            allowed = {**request, "topics": [t for t in request["topics"] if t["name"] not in denied]}
            body: dict[str, Any] = (handle_allowed(ctx, allowed) if allowed["topics"]
                                    else {"error_code": 0, "throttle_time_ms": 0, "topics": []})
            body["topics"] = list(body["topics"]) + [{"name": t["name"], "partitions": [
                {"partition_index": p["partition_index"], "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
                for p in t["partitions"]]} for t in request["topics"] if t["name"] in denied]
            return body
    return handle_allowed(ctx, request)


def handle_allowed(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    state = ctx.state
    wanted = [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in request["topics"]]
    code, result = state.groups.coordinator.offsets.delete_offsets(request["group_id"], wanted)
    return {"error_code": code, "throttle_time_ms": 0, "topics": [
        {"name": topic, "partitions": [{"partition_index": p, "error_code": e} for p, e in parts]}
        for topic, parts in result]}
