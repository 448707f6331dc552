"""AlterConfigs (33), v0-2: replace the whole set of a resource's configs (the legacy API:
configs left out go back to their defaults). Resources: a topic (its overrides) or this broker
(its dynamic configs; resource name "" = the cluster-wide defaults). See config_change.py."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..request_context import RequestContext
from .config_change import Change, RequestError, alter

API_KEY = ApiKey.ALTER_CONFIGS
AUTHORIZATION = "ALTER_CONFIGS on each topic (the cluster for the broker)"


def _change(resource: dict[str, Any]) -> Change:
    for c in resource["configs"]:
        if c["value"] is None:
            raise RequestError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {c['name']}")
    values = {c["name"]: c["value"] for c in resource["configs"]}
    return lambda current, rtype: dict(values)


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    return alter(request, ctx, _change)
