"""DescribeGroups (15), v0-5: state, protocol and members of each group; an unknown group is
described as "Dead" with no error. Member metadata and assignments are filled in Stable only
(as Kafka). Authorized operations are not computed (no ACLs): the field keeps its "not
requested" value."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey

from ..request_context import RequestContext

API_KEY = ApiKey.DESCRIBE_GROUPS


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    state = ctx.state
    coordinator = state.groups.coordinator
    return {"throttle_time_ms": 0, "groups": [coordinator.describe_group(g) for g in request["groups"]]}
