"""SaslHandshake (17), v0-1, once a connection is past its login: ILLEGAL_SASL_STATE, as Kafka's
request handler answers (on a PLAINTEXT or SSL listener, or a second handshake when sessions do
not expire). During a login, the socket server hands the request to the connection's
authenticator instead (broker/security/authenticator.py), and it never reaches here."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..request_context import RequestContext

API_KEY = ApiKey.SASL_HANDSHAKE
AUTHORIZATION = "none (answered before or without authorization, as in Kafka)"


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}
