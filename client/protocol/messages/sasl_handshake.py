"""SaslHandshake (API key 17): request and response schemas (v0-1, never flexible). v0: the
SASL tokens that follow are raw frames; v1: they come in SaslAuthenticate requests."""

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
