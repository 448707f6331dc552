"""SaslAuthenticate (36), v0-2, outside a login: ILLEGAL_SASL_STATE with Kafka's message (a
login's SaslAuthenticate requests go to the connection's authenticator in the socket server)."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..request_context import RequestContext

API_KEY = ApiKey.SASL_AUTHENTICATE
AUTHORIZATION = "none (answered before or without authorization, as in Kafka)"


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    return {"error_code": ErrorCode.ILLEGAL_SASL_STATE,
            "error_message": "SaslAuthenticate request received after successful authentication",
            "auth_bytes": b"", "session_lifetime_ms": 0}
