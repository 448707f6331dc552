"""The client's SASL mechanisms, sans-IO: PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER as Kafka's
clients speak them. The connection (``client.conn``) carries their bytes in SaslAuthenticate
requests and knows nothing of their formats.

Every mechanism has one interface (``SaslClientMechanism``):

- ``first()`` -> the client's initial response, sent in the first SaslAuthenticate request;
- ``step(challenge)`` -> the next bytes to send for the server's ``auth_bytes``, or None once
  the exchange is over (``complete`` is then True);
- a failure the client itself detects (a forged SCRAM server signature, a server ``e=``
  attribute) raises ``SaslAuthenticationFailedError`` with the reason.

Formats (``\\x01`` is the byte 0x01):

- PLAIN (RFC 4616): one message ``authzid \\0 username \\0 password`` with an empty authzid,
  answered by empty ``auth_bytes``.
- SCRAM (RFC 5802, RFC 7677): ``n,,n=<saslname>,r=<client nonce>``; the server's
  ``r=<client nonce + server nonce>,s=<base64 salt>,i=<iterations>``; then
  ``c=biws,r=<nonce>,p=<base64 proof>`` (``biws`` is base64 of the GS2 header ``n,,``); the
  server's ``v=<base64 server signature>`` is checked before the exchange counts as done, or its
  ``e=<error>`` raised. Passwords are used as UTF-8 without SASLprep, as Kafka's clients do.
  Iterations below 4096 are refused, as Kafka's client refuses them.
- OAUTHBEARER (RFC 7628 with Kafka's SASL extensions):
  ``n,,\\x01auth=Bearer <token>\\x01[key=value\\x01]...\\x01``, answered by empty
  ``auth_bytes``. A server that rejects the token sends a JSON error challenge instead; the
  client answers ``\\x01`` (RFC 7628 §3.2.3) and the server then fails the exchange with its
  error message. Extension keys are letters (``[A-Za-z]+``, not ``auth``), values printable
  ASCII, space, tab, CR or LF.

Nothing here logs or puts a password or token in an exception message.
"""

from __future__ import annotations

import base64
import hmac
import re
import secrets
from collections.abc import Mapping

from client.errors import SaslAuthenticationFailedError
from client.security import scram

__all__ = ["SaslClientMechanism", "PlainClient", "ScramClient", "OAuthBearerClient", "MECHANISMS"]

#: The mechanism names this client speaks (the ``sasl_mechanism`` option's values).
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


class SaslClientMechanism:
    """One SASL exchange from the client's side (a fresh object per (re-)authentication)."""

    name: str = ""

    def __init__(self) -> None:
        self.complete = False

    def first(self) -> bytes:
        """The initial response (the first SaslAuthenticate's ``auth_bytes``)."""
        raise NotImplementedError

    def step(self, challenge: bytes) -> bytes | None:
        """The answer to the server's ``auth_bytes``, or None when the exchange is complete."""
        raise NotImplementedError


class PlainClient(SaslClientMechanism):
    """PLAIN: ``\\0username\\0password`` in one message."""

    name = "PLAIN"

    def __init__(self, username: str, password: str) -> None:
        super().__init__()
        if not username or "\0" in username or "\0" in password:
            raise ValueError("PLAIN needs a non-empty username, and no NUL byte in the username or password")
        self._message = b"\0" + username.encode() + b"\0" + password.encode()

    def __repr__(self) -> str:  # no password in reprs
        return f"PlainClient(complete={self.complete})"

    def first(self) -> bytes:
        return self._message

    def step(self, challenge: bytes) -> bytes | None:
        # The server answers the one message with empty bytes (or an error code).
        self.complete = True
        return None


def _nonce() -> str:
    """A printable client nonce without ``,`` (RFC 5802 ``c-nonce``): 32 url-safe base64 chars."""
    return secrets.token_urlsafe(24)


class ScramClient(SaslClientMechanism):
    """SCRAM-SHA-256 or SCRAM-SHA-512; ``nonce`` is injectable for tests (RFC 7677's example)."""

    _GS2_HEADER = "n,,"

    def __init__(self, mechanism: str, username: str, password: str, *, nonce: str | None = None) -> None:
        super().__init__()
        if mechanism not in scram.MECHANISMS:
            raise ValueError(f"unknown SCRAM mechanism {mechanism!r}; expected one of {sorted(scram.MECHANISMS)}")
        if not username:
            raise ValueError(f"{mechanism} needs a username")
        self.name = mechanism
        self._digest = scram.digest_of(mechanism)
        self._password = password.encode()
        self._nonce = nonce if nonce is not None else _nonce()
        if not self._nonce or "," in self._nonce:
            raise ValueError("a SCRAM nonce is non-empty and has no ','")
        self._first_bare = f"n={scram.saslname_escape(username)},r={self._nonce}"
        self._state = "first"
        self._auth_message = b""
        self._server_key = b""

    def __repr__(self) -> str:
        return f"ScramClient({self.name}, state={self._state})"

    def first(self) -> bytes:
        if self._state != "first":
            raise ValueError("first() called twice")
        self._state = "server-first"
        return (self._GS2_HEADER + self._first_bare).encode()

    def step(self, challenge: bytes) -> bytes | None:
        if self._state == "server-first":
            return self._client_final(challenge)
        if self._state == "server-final":
            self._verify_server_final(challenge)
            return None
        raise SaslAuthenticationFailedError(f"{self.name}: unexpected challenge in state {self._state}")

    def _attributes(self, challenge: bytes) -> dict[str, str]:
        try:
            attrs = scram.parse_attributes(bytes(challenge).decode())
        except (UnicodeDecodeError, ValueError) as e:
            raise SaslAuthenticationFailedError(f"{self.name}: invalid server message: {e}") from None
        if "e" in attrs:
            raise SaslAuthenticationFailedError(f"{self.name}: the server refused: {attrs['e']}")
        return attrs

    def _client_final(self, challenge: bytes) -> bytes:
        attrs = self._attributes(challenge)
        nonce, salt_b64, iterations_s = attrs.get("r"), attrs.get("s"), attrs.get("i")
        if nonce is None or salt_b64 is None or iterations_s is None:
            raise SaslAuthenticationFailedError(f"{self.name}: server-first message lacks r, s or i")
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise SaslAuthenticationFailedError(f"{self.name}: the server's nonce does not extend the client's")
        try:
            salt = base64.b64decode(salt_b64, validate=True)
            iterations = int(iterations_s)
        except ValueError:
            raise SaslAuthenticationFailedError(f"{self.name}: invalid salt or iteration count") from None
        if iterations < scram.MIN_ITERATIONS:
            raise SaslAuthenticationFailedError(
                f"{self.name}: {iterations} iterations is below the minimum {scram.MIN_ITERATIONS}")
        salted = scram.salted_password(self._digest, self._password, salt, iterations)
        ckey = scram.client_key(self._digest, salted)
        without_proof = f"c={base64.b64encode(self._GS2_HEADER.encode()).decode()},r={nonce}"
        self._auth_message = f"{self._first_bare},{bytes(challenge).decode()},{without_proof}".encode()
        signature = scram.hmac_of(self._digest, scram.stored_key(self._digest, ckey), self._auth_message)
        proof = scram.xor(ckey, signature)
        self._server_key = scram.server_key(self._digest, salted)
        self._state = "server-final"
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def _verify_server_final(self, challenge: bytes) -> None:
        attrs = self._attributes(challenge)
        if "v" not in attrs:
            raise SaslAuthenticationFailedError(f"{self.name}: server-final message lacks v")
        try:
            got = base64.b64decode(attrs["v"], validate=True)
        except ValueError:
            raise SaslAuthenticationFailedError(f"{self.name}: invalid server signature") from None
        expected = scram.hmac_of(self._digest, self._server_key, self._auth_message)
        if not hmac.compare_digest(got, expected):
            raise SaslAuthenticationFailedError(f"{self.name}: the server's signature is wrong (not the real server?)")
        self._state = "done"
        self.complete = True


_EXTENSION_KEY = re.compile(r"[A-Za-z]+")
_EXTENSION_VALUE = re.compile(r"[\x21-\x7E \t\r\n]+")
_TOKEN = re.compile(r"[-_~+/.a-zA-Z0-9]+=*")  # RFC 6750's b64token, which Kafka's server checks


def validate_extensions(extensions: Mapping[str, str]) -> None:
    """ValueError unless every key is ``[A-Za-z]+`` other than ``auth`` and every value is
    ``[\\x21-\\x7E \\t\\r\\n]+`` (Kafka's OAuthBearerClientInitialResponse.validateExtensions)."""
    for key, value in extensions.items():
        if key == "auth" or not _EXTENSION_KEY.fullmatch(key):
            raise ValueError(f"invalid SASL extension name {key!r}: letters only, not 'auth'")
        if not _EXTENSION_VALUE.fullmatch(value):
            raise ValueError(f"invalid value for SASL extension {key!r}: printable ASCII, space, tab, CR or LF")


class OAuthBearerClient(SaslClientMechanism):
    """OAUTHBEARER with a token already obtained (the connection awaits the token provider)."""

    name = "OAUTHBEARER"

    def __init__(self, token: str, extensions: Mapping[str, str] | None = None) -> None:
        super().__init__()
        if not _TOKEN.fullmatch(token):
            raise ValueError("an OAUTHBEARER token is a non-empty b64token ([-_~+/.a-zA-Z0-9]+=*)")
        validate_extensions(extensions or {})
        kv = "".join(f"{k}={v}\x01" for k, v in (extensions or {}).items())
        self._message = f"n,,\x01auth=Bearer {token}\x01{kv}\x01".encode()
        #: the server's JSON error challenge, if it sent one (RFC 7628 §3.2.2)
        self.error_challenge: str | None = None

    def __repr__(self) -> str:  # no token in reprs
        return f"OAuthBearerClient(complete={self.complete})"

    def first(self) -> bytes:
        return self._message

    def step(self, challenge: bytes) -> bytes | None:
        if challenge:
            if self.error_challenge is not None:
                raise SaslAuthenticationFailedError(f"OAUTHBEARER: the server refused: {self.error_challenge}")
            # The server's error JSON ({"status": "invalid_token", ...}); RFC 7628 has the
            # client answer with one 0x01 byte, and the server then fails the exchange.
            self.error_challenge = bytes(challenge).decode(errors="replace")
            return b"\x01"
        self.complete = True
        return None
