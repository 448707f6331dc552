"""SaslAuthenticate (API key 36): request and response schemas (v0-2, flexible from v2; v1 adds
the session lifetime, KIP-368: after it the client must re-authenticate on the connection)."""

from __future__ import annotations

from ..schema import Field as F
from ..schema import Message

SaslAuthenticateRequest = Message("SaslAuthenticateRequest", 36, "0-2", "2+", [
    F("auth_bytes", "bytes"),
])
SaslAuthenticateResponse = Message("SaslAuthenticateResponse", 36, "0-2", "2+", [
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+"),
    F("auth_bytes", "bytes"),
    F("session_lifetime_ms", "int64", "1+", default=0),
])
