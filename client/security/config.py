"""How a client secures its connections: the options Producer, Consumer and Admin take, with
aiokafka's names and defaults, checked once and handed down to every ``BrokerConnection``.

- ``security_protocol``: ``PLAINTEXT`` (default), ``SSL``, ``SASL_PLAINTEXT`` or ``SASL_SSL``
  (Kafka's listener protocols).
- ``ssl_context``: an ``ssl.SSLContext``, required by ``SSL`` and ``SASL_SSL`` as aiokafka
  requires it (``client.security.properties`` builds one from Kafka's ``ssl.*`` properties).
- ``sasl_mechanism``: ``PLAIN`` (default), ``SCRAM-SHA-256``, ``SCRAM-SHA-512`` or
  ``OAUTHBEARER``; ``sasl_plain_username`` and ``sasl_plain_password`` serve PLAIN and SCRAM.
- ``sasl_oauth_token_provider``: for OAUTHBEARER, an object with ``async token() -> str`` and
  optionally ``extensions() -> dict[str, str]`` (aiokafka's AbstractTokenProvider); asked
  again at every (re-)authentication, so a provider that refreshes its token is honoured.

A bad value raises ValueError naming the valid ones. The password is not part of the repr.
"""

from __future__ import annotations

import inspect
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from client.security.sasl import MECHANISMS, OAuthBearerClient, PlainClient, SaslClientMechanism, ScramClient

__all__ = ["SecurityConfig", "TokenProvider", "SECURITY_PROTOCOLS", "SASL_MECHANISMS"]

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = MECHANISMS


@runtime_checkable
class TokenProvider(Protocol):
    """An OAUTHBEARER token source (aiokafka's AbstractTokenProvider's shape). ``extensions``
    is optional and may be a plain or an async method."""

    async def token(self) -> str: ...


@dataclass(frozen=True)
class SecurityConfig:
    """The checked security options; ``SecurityConfig()`` is PLAINTEXT."""

    security_protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    sasl_mechanism: str = "PLAIN"
    sasl_plain_username: str | None = None
    sasl_plain_password: str | None = field(default=None, repr=False)
    sasl_oauth_token_provider: Any = None

    def __post_init__(self) -> None:
        if self.security_protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"invalid security_protocol {self.security_protocol!r}; expected one of "
                             + ", ".join(SECURITY_PROTOCOLS))
        if self.use_ssl:
            if self.ssl_context is None:
                raise ValueError(f"security_protocol={self.security_protocol} needs an ssl_context")
            if not isinstance(self.ssl_context, ssl.SSLContext):
                raise ValueError("ssl_context must be an ssl.SSLContext")
        if not self.use_sasl:
            return
        if self.sasl_mechanism not in SASL_MECHANISMS:
            raise ValueError(f"invalid sasl_mechanism {self.sasl_mechanism!r}; expected one of "
                             + ", ".join(SASL_MECHANISMS))
        if self.sasl_mechanism == "OAUTHBEARER":
            if not callable(getattr(self.sasl_oauth_token_provider, "token", None)):
                raise ValueError("sasl_mechanism=OAUTHBEARER needs a sasl_oauth_token_provider with async token()")
        elif not self.sasl_plain_username or self.sasl_plain_password is None:
            raise ValueError(f"sasl_mechanism={self.sasl_mechanism} needs sasl_plain_username and "
                             "sasl_plain_password")

    @property
    def use_ssl(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def use_sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    async def new_mechanism(self) -> SaslClientMechanism:
        """A fresh mechanism for one (re-)authentication (OAUTHBEARER asks its provider now)."""
        if self.sasl_mechanism == "PLAIN":
            return PlainClient(self.sasl_plain_username or "", self.sasl_plain_password or "")
        if self.sasl_mechanism.startswith("SCRAM-"):
            return ScramClient(self.sasl_mechanism, self.sasl_plain_username or "", self.sasl_plain_password or "")
        provider = self.sasl_oauth_token_provider
        token = await provider.token()
        extensions: Any = {}
        if callable(getattr(provider, "extensions", None)):
            extensions = provider.extensions()
            if inspect.isawaitable(extensions):
                extensions = await extensions
        if not isinstance(token, str):
            raise ValueError("the token provider's token() must return a str")
        if not isinstance(extensions or {}, Mapping):
            raise ValueError("the token provider's extensions() must return a dict")
        return OAuthBearerClient(token, dict(extensions or {}))
