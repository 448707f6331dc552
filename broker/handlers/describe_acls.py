"""DescribeAcls (29), v0-3: SECURITY_DISABLED, as a broker without an authorizer answers
(see acls.py)."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey

from ..request_context import RequestContext
from .acls import NO_AUTHORIZER, SECURITY_DISABLED

API_KEY = ApiKey.DESCRIBE_ACLS


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": SECURITY_DISABLED, "error_message": NO_AUTHORIZER, "resources": []}
