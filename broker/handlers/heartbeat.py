"""Heartbeat (12), v0-4: keeps a member's session alive; REBALANCE_IN_PROGRESS tells it to rejoin."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey

API_KEY = ApiKey.HEARTBEAT


def handle(request: dict[str, Any], version: int, state: Any) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": state.groups.coordinator.heartbeat(request)}
