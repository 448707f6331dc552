"""The server side of a SASL mechanism, sans-IO: tokens in, challenges out.

``evaluate(token) -> bytes`` is called with each token the client sends (SaslAuthenticate's
``auth_bytes``, or a raw frame after SaslHandshake v0) and returns the challenge to send back;
``complete`` is True once the client is authenticated, with ``authorization_id`` its name.
A failed login raises ``SaslAuthenticationError`` whose message is sent to the client (Kafka's
wording; it never contains the password or the token). ``lifetime_ms`` is what the credential
allows (an OAuth token's expiry), or None.
"""

from __future__ import annotations

import hmac

__all__ = ["SaslServerMechanism", "SaslAuthenticationError", "constant_time_equal"]


class SaslAuthenticationError(Exception):
    """A failed login; ``str(e)`` is what the client is told."""


def constant_time_equal(a: bytes, b: bytes) -> bool:
    return hmac.compare_digest(a, b)


class SaslServerMechanism:
    name = ""

    def __init__(self) -> None:
        self.complete = False
        self.authorization_id = ""
        self.lifetime_ms: int | None = None

    def evaluate(self, token: bytes) -> bytes:
        raise NotImplementedError
