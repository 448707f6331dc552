"""Heartbeat (12), v0-4: keeps a member's session alive; REBALANCE_IN_PROGRESS tells it to rejoin."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey

from ..request_context import RequestContext

API_KEY = ApiKey.HEARTBEAT


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    state = ctx.state
    return {"throttle_time_ms": 0, "error_code": state.groups.coordinator.heartbeat(request)}
