"""OffsetDelete (47), v0: delete committed offsets of a group: any partition of an Empty
group, or of topics an active consumer group is not subscribed to (GROUP_SUBSCRIBED_TO_TOPIC
for the others); NON_EMPTY_GROUP for an active group of another protocol type,
GROUP_ID_NOT_FOUND for an unknown group."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey

from ..request_context import RequestContext

API_KEY = ApiKey.OFFSET_DELETE


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    state = ctx.state
    wanted = [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in request["topics"]]
    code, result = state.groups.coordinator.offsets.delete_offsets(request["group_id"], wanted)
    return {"error_code": code, "throttle_time_ms": 0, "topics": [
        {"name": topic, "partitions": [{"partition_index": p, "error_code": e} for p, e in parts]}
        for topic, parts in result]}
