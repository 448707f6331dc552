"""DescribeGroups (15), v0-5: state, protocol and members of each group; an unknown group is
described as "Dead" with no error. Member metadata and assignments are filled in Stable only
(as Kafka). Authorized operations are not computed (no ACLs): the field keeps its "not
requested" value."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..request_context import RequestContext

API_KEY = ApiKey.DESCRIBE_GROUPS
AUTHORIZATION = "DESCRIBE on each group (its authorized operations when asked)"


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    state = ctx.state
    coordinator = state.groups.coordinator
    if state.authorizer is None:
        return {"throttle_time_ms": 0, "groups": [coordinator.describe_group(g) for g in request["groups"]]}
    groups = []
    for g in request["groups"]:
        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, g):
            groups.append({"group_id": g, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "group_state": "",
                           "protocol_type": "", "protocol_data": "", "members": [],
                           "authorized_operations": -2**31})
            continue
        d = coordinator.describe_group(g)
        if request.get("include_authorized_operations"):
            d["authorized_operations"] = ctx.authorized_operations(ResourceType.GROUP, g)
        groups.append(d)
    return {"throttle_time_ms": 0, "groups": groups}
