"""DeleteAcls (31), v0-3: SECURITY_DISABLED for every filter, as a broker without an authorizer
answers (see acls.py); nothing matches."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey

from ..request_context import RequestContext
from .acls import NO_AUTHORIZER, SECURITY_DISABLED

API_KEY = ApiKey.DELETE_ACLS


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "filter_results": [
        {"error_code": SECURITY_DISABLED, "error_message": NO_AUTHORIZER, "matching_acls": []}
        for _ in request["filters"]]}
