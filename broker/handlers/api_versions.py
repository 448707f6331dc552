"""ApiVersions (18), v0-4: the APIs and version ranges this broker serves.

A request for a version above 4 never reaches this handler: the server answers it with a v0
body carrying UNSUPPORTED_VERSION and our ApiVersions range (the KIP-511 fallback)."""

from __future__ import annotations

from typing import Any

from client.protocol.api import SUPPORTED_VERSIONS, ApiKey

from ..request_context import RequestContext

API_KEY = ApiKey.API_VERSIONS
AUTHORIZATION = "none (answered before or without authorization, as in Kafka)"

_KEYS = [{"api_key": int(k), "min_version": lo, "max_version": hi}
         for k, (lo, hi) in sorted(SUPPORTED_VERSIONS.items())]


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    return {"error_code": 0, "api_keys": _KEYS, "throttle_time_ms": 0}
