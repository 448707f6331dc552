"""CreateAcls (30), v0-3: SECURITY_DISABLED for every creation, as a broker without an
authorizer answers (see acls.py); nothing is stored."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey

from ..request_context import RequestContext
from .acls import NO_AUTHORIZER, SECURITY_DISABLED

API_KEY = ApiKey.CREATE_ACLS


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "results": [{"error_code": SECURITY_DISABLED, "error_message": NO_AUTHORIZER}
                                               for _ in request["creations"]]}
