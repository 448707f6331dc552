"""ListGroups (16), v0-5: every group, optionally only those in the given states (v4+,
case-insensitive) or of the given types (v5+: "classic", "consumer" (KIP-848), "share" (KIP-932))."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey

from ..authorizer.acl import CLUSTER_NAME, AclOperation, ResourceType
from ..request_context import RequestContext

API_KEY = ApiKey.LIST_GROUPS
AUTHORIZATION = "DESCRIBE on the cluster, else the groups answered are those with DESCRIBE on the group"


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    state = ctx.state
    states = {s.lower() for s in request.get("states_filter") or ()}
    types = {t.lower() for t in request.get("types_filter") or ()}
    groups = state.groups.coordinator.list_groups(states, types)
    groups += [g for g in state.share_groups.list_groups()
               if (not states or g["group_state"].lower() in states) and (not types or "share" in types)]
    if state.authorizer is not None and not ctx.authorize(AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        groups = [g for g in groups if ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, g["group_id"])]
    return {"throttle_time_ms": 0, "error_code": 0, "groups": groups}
