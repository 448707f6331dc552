"""HTTP Basic authentication of the registry against the broker's SCRAM users
(``schema.registry.authentication=basic``; Confluent's ``authentication.method=BASIC``).

A request must carry ``Authorization: Basic base64(user:password)``; the password is checked
against the user's SCRAM credential (KIP-554, broker/security/scram_credentials.py) the way a
SCRAM exchange proves it: ``StoredKey = H(HMAC(PBKDF2(password, salt, iterations), "Client
Key"))`` compared in constant time with the stored one. SCRAM-SHA-256 is tried first, then
SCRAM-SHA-512; either credential of the user admits the request. Anything else answers 401 with
Confluent's body ``{"error_code": 401, "message": "Unauthorized"}`` and ``WWW-Authenticate:
Basic realm="SchemaRegistry"``. Authentication only: every authenticated user may do everything
(the broker's ACLs are not consulted).

Cost: PBKDF2 runs 4096..16384 iterations, a few milliseconds of CPU per check, so it runs in a
worker thread (hashlib releases the GIL) and a success is remembered: ``(user, HMAC(process
secret, password))`` -> the credential it matched, valid while the store holds that same
credential (a changed or deleted credential is checked again). Failures are not remembered, so
a client guessing passwords costs the broker one derivation per guess; the alternative, a
failure cache or a rate limit, was not needed so far.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import secrets
from typing import Protocol

from client.security.scram import ScramCredential, client_key, digest_of, salted_password, stored_key

__all__ = ["BasicAuthenticator", "CredentialLookup", "REALM"]

REALM = "SchemaRegistry"
_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
_CACHE_MAX = 1024


class CredentialLookup(Protocol):
    def get(self, user: str, mechanism: str) -> ScramCredential | None: ...


def _matches(mechanism: str, password: bytes, c: ScramCredential) -> bool:
    digest = digest_of(mechanism)
    key = stored_key(digest, client_key(digest, salted_password(digest, password, c.salt, c.iterations)))
    return hmac.compare_digest(key, c.stored_key)


def parse_basic(header: str | None) -> tuple[str, str] | None:
    """(user, password) of an ``Authorization: Basic ...`` header, or None."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        text = base64.b64decode(token.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, colon, password = text.partition(":")
    return (user, password) if colon and user else None


class BasicAuthenticator:
    def __init__(self, credentials: CredentialLookup) -> None:
        self.credentials = credentials
        self._secret = secrets.token_bytes(32)
        self._verified: dict[tuple[str, bytes], ScramCredential] = {}

    async def authenticate(self, header: str | None) -> str | None:
        """The user the header proves to be, or None."""
        parsed = parse_basic(header)
        if parsed is None:
            return None
        user, password = parsed
        pw = password.encode("utf-8")
        key = (user, hmac.new(self._secret, pw, hashlib.sha256).digest())
        for mechanism in _MECHANISMS:
            c = self.credentials.get(user, mechanism)
            if c is None:
                continue
            if self._verified.get(key) == c:
                return user
            if await asyncio.to_thread(_matches, mechanism, pw, c):
                if len(self._verified) >= _CACHE_MAX:
                    self._verified.clear()
                self._verified[key] = c
                return user
        return None
