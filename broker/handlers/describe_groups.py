"""DescribeGroups (15), v0-6: state, protocol and members of each group. An unknown group is
described as "Dead" with no error up to v5 and answered GROUP_ID_NOT_FOUND ("Group g not
found.") from v6 (KIP-1043). Member metadata and assignments are filled in Stable only (as
Kafka). ``authorized_operations`` is computed when the request asks for it. A consumer (KIP-848)
or share (KIP-932) group answers GROUP_ID_NOT_FOUND, "Group g is not a classic group.", as
Kafka does."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..request_context import RequestContext
from ..share.offsets import is_share_group

API_KEY = ApiKey.DESCRIBE_GROUPS
AUTHORIZATION = "DESCRIBE on each group (its authorized operations when asked)"


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    coordinator = ctx.state.groups.coordinator
    groups = []
    for g in request["groups"]:
        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, g):
            groups.append(_empty(g, ErrorCode.GROUP_AUTHORIZATION_FAILED))
            continue
        d = coordinator.describe_group(g)
        if d["error_code"] == 0 and d["group_state"] == "Dead" and is_share_group(ctx.state, g):
            groups.append({**_empty(g, ErrorCode.GROUP_ID_NOT_FOUND), "error_message": f"Group {g} is not a classic group."})
            continue
        if ctx.api_version >= 6 and d["error_code"] == 0 and d["group_state"] == "Dead":
            groups.append({**_empty(g, ErrorCode.GROUP_ID_NOT_FOUND), "error_message": f"Group {g} not found."})
            continue
        if request.get("include_authorized_operations"):
            d["authorized_operations"] = ctx.authorized_operations(ResourceType.GROUP, g)
        groups.append(d)
    return {"throttle_time_ms": 0, "groups": groups}


def _empty(group_id: str, error_code: int) -> dict[str, Any]:
    return {"group_id": group_id, "error_code": error_code, "group_state": "", "protocol_type": "",
            "protocol_data": "", "members": [], "authorized_operations": -2**31}
