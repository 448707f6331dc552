"""SaslHandshake (API key 17): request and response schemas (v0-1, never flexible). v1 says the
SASL tokens follow in SaslAuthenticate requests (v0: as raw frames, which minibroker does not
speak); the response lists the mechanisms the listener enables."""

from __future__ import annotations

from ..schema import Array, Message
from ..schema import Field as F

SaslHandshakeRequest = Message("SaslHandshakeRequest", 17, "0-1", "none", [
    F("mechanism", "string"),
])
SaslHandshakeResponse = Message("SaslHandshakeResponse", 17, "0-1", "none", [
    F("error_code", "int16"),
    F("mechanisms", Array("string")),
])
