"""One connection's SASL login on a SASL listener, sans-IO (Kafka's SaslServerAuthenticator).

States and what each accepts (anything else closes the connection, as Kafka does: "Unexpected
Kafka request of type ... during SASL handshake."):

    HANDSHAKE_OR_VERSIONS  ApiVersions (served as usual; the state moves to HANDSHAKE), SaslHandshake
    HANDSHAKE              SaslHandshake
    AUTHENTICATE           SaslAuthenticate (v1 handshake) or a raw token frame (v0 handshake)
    COMPLETE               every request; a SaslHandshake starts a re-authentication (KIP-368)
                           when sessions expire (connections.max.reauth.ms > 0)
    FAILED                 nothing: the connection closes after the failure's delay

SaslHandshake v0 means the tokens that follow are raw frames (a 4-byte size, the token, no
Kafka header), answered the same way; v1 means they come in SaslAuthenticate requests.
``handshake`` answers UNSUPPORTED_SASL_MECHANISM (with the enabled mechanisms) for a mechanism
not enabled on this listener, and the connection fails. ``authenticate`` answers the
mechanism's challenge, or raises ``AuthenticationFailed`` holding the SASL_AUTHENTICATION_FAILED
answer (Kafka's message). On success the principal is ``User:<authorization id>`` and, when
sessions expire, the session lasts ``min(connections.max.reauth.ms, the credential's own
lifetime)`` (SaslAuthenticate v1+ tells the client, so it re-authenticates in time). A
re-authentication must end with the same principal.
"""

from __future__ import annotations

import enum
import time
from typing import Any

from client.protocol.api import ErrorCode

from .listener_security import ListenerSecurity
from .principal import KafkaPrincipal
from .sasl_mechanism import SaslAuthenticationError, SaslServerMechanism

__all__ = ["SaslAuthenticator", "AuthenticationFailed", "State"]


class State(enum.Enum):
    HANDSHAKE_OR_VERSIONS = 1
    HANDSHAKE = 2
    AUTHENTICATE = 3
    COMPLETE = 4
    FAILED = 5


class AuthenticationFailed(Exception):
    """The login failed: ``response`` is the answer to send (None after a raw token: the
    connection just closes), ``str(self)`` the reason for the broker's log."""

    def __init__(self, reason: str, response: dict[str, Any] | None) -> None:
        super().__init__(reason)
        self.response = response


class SaslAuthenticator:
    def __init__(self, security: ListenerSecurity, clock: Any = time.monotonic) -> None:
        self.security = security
        self.clock = clock
        self.state = State.HANDSHAKE_OR_VERSIONS
        self.raw = False  # SaslHandshake v0: raw token frames
        self.mechanism: SaslServerMechanism | None = None
        self.mechanism_name = ""
        self.principal: KafkaPrincipal | None = None
        #: clock() after which the session has expired (None: never)
        self.expires_at: float | None = None
        self.reauthenticating = False
        #: the client sent SaslAuthenticate v1+ (it knows session lifetimes and re-authenticates)
        self.reauth_capable = False

    @property
    def complete(self) -> bool:
        return self.state is State.COMPLETE

    def saw_api_versions(self) -> None:
        if self.state is State.HANDSHAKE_OR_VERSIONS:
            self.state = State.HANDSHAKE

    def accepts(self, api_key: int) -> bool:
        """Whether a request of ``api_key`` may come now (before the login completes)."""
        if self.state is State.HANDSHAKE_OR_VERSIONS:
            return api_key in (18, 17)  # ApiVersions, SaslHandshake
        if self.state is State.HANDSHAKE:
            return api_key == 17
        if self.state is State.AUTHENTICATE:
            return api_key == 36 and not self.raw
        return self.state is State.COMPLETE

    def can_reauthenticate(self) -> bool:
        return self.state is State.COMPLETE and self.security.reauth_ms > 0

    def begin_reauthentication(self) -> None:
        self.state = State.HANDSHAKE
        self.reauthenticating = True

    def handshake(self, version: int, mechanism: str) -> dict[str, Any]:
        """SaslHandshake: the answer; AuthenticationFailed for a mechanism not enabled here."""
        enabled = self.security.mechanisms
        server = self.security.new_mechanism(mechanism)
        if server is None:
            self.state = State.FAILED
            raise AuthenticationFailed(f"unsupported SASL mechanism {mechanism!r} (enabled: {', '.join(enabled)})",
                                       {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "mechanisms": enabled})
        if self.reauthenticating and mechanism != self.mechanism_name:
            self.state = State.FAILED
            raise AuthenticationFailed(f"re-authentication with {mechanism} after {self.mechanism_name}",
                                       {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": enabled})
        self.mechanism, self.mechanism_name = server, mechanism
        self.raw = version == 0
        self.state = State.AUTHENTICATE
        return {"error_code": 0, "mechanisms": enabled}

    def _evaluate(self, token: bytes) -> bytes:
        assert self.mechanism is not None
        try:
            challenge = self.mechanism.evaluate(token)
            if self.mechanism.complete:
                self._complete()
        except SaslAuthenticationError:
            self.state = State.FAILED
            raise
        return challenge

    def authenticate(self, version: int, auth_bytes: bytes) -> dict[str, Any]:
        """SaslAuthenticate: the answer with the mechanism's challenge; AuthenticationFailed
        holds the SASL_AUTHENTICATION_FAILED answer."""
        self.reauth_capable = version >= 1
        try:
            challenge = self._evaluate(auth_bytes)
        except SaslAuthenticationError as e:
            raise AuthenticationFailed(self._reason(e), {"error_code": ErrorCode.SASL_AUTHENTICATION_FAILED,
                                                         "error_message": str(e), "auth_bytes": b"",
                                                         "session_lifetime_ms": 0}) from None
        lifetime = 0
        if self.complete and self.expires_at is not None:
            lifetime = max(1, int((self.expires_at - self.clock()) * 1000))
        return {"error_code": 0, "error_message": None, "auth_bytes": challenge, "session_lifetime_ms": lifetime}

    def raw_token(self, token: bytes) -> bytes:
        """A raw token frame (after SaslHandshake v0): the challenge to send back raw."""
        try:
            return self._evaluate(token)
        except SaslAuthenticationError as e:
            raise AuthenticationFailed(self._reason(e), None) from None

    def _reason(self, e: SaslAuthenticationError) -> str:
        detail = getattr(self.mechanism, "reason", "") or (str(e.__cause__) if e.__cause__ else "")
        return f"{self.mechanism_name}: {e}" + (f" ({detail})" if detail else "")

    def _complete(self) -> None:
        assert self.mechanism is not None
        principal = KafkaPrincipal("User", self.mechanism.authorization_id)
        if self.reauthenticating and principal != self.principal:
            self.state = State.FAILED
            raise SaslAuthenticationError(f"Cannot change principals during re-authentication from {self.principal}:"
                                          f" {principal}")
        self.principal = principal
        self.state = State.COMPLETE
        self.expires_at = None
        if self.security.reauth_ms > 0:
            lifetime_ms = self.security.reauth_ms
            if self.mechanism.lifetime_ms is not None:
                lifetime_ms = min(lifetime_ms, self.mechanism.lifetime_ms)
            self.expires_at = self.clock() + lifetime_ms / 1000

    def expired(self) -> bool:
        return self.expires_at is not None and self.clock() >= self.expires_at
