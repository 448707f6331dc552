"""What one listener asks of its connections, built once from the broker's properties:
``ListenerSecurity`` (its endpoint, TLS server context, principal mapping, SASL mechanisms and
session limits).

SASL mechanisms (``sasl.enabled.mechanisms``, per listener as
``listener.name.<name>.sasl.enabled.mechanisms``): PLAIN, SCRAM-SHA-256, SCRAM-SHA-512,
OAUTHBEARER. GSSAPI (Kerberos; Kafka's default) cannot be served and is refused at start-up
with how to choose another. The JAAS entry of mechanism M on listener L is
``listener.name.<l>.<m>.sasl.jaas.config`` (lower case; as Kafka, also ``<m>.sasl.jaas.config``
without the listener): PLAIN needs one (its users), OAUTHBEARER may have one (the unsecured
validator's options), SCRAM needs none (its credentials are the broker's SCRAM store).

Limits (Kafka's names): ``sasl.server.max.receive.size`` bounds a frame before authentication
(so an unauthenticated peer holds little memory); ``connections.max.reauth.ms`` (0: sessions do
not expire) bounds a session, and a client re-authenticates (KIP-368) on the same connection;
``connection.failed.authentication.delay.ms`` delays the answer to a failed login, and the
close after it (KIP-306); ``connections.authentication.timeout.ms`` (ours) closes a connection
whose TLS handshake and SASL login are not done in time.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Callable, Mapping

from client.security.scram import MECHANISMS as SCRAM_MECHANISMS

from .jaas import JaasError, parse_jaas_config
from .listeners import EndPoint, listener_prefix, listener_property
from .oauthbearer import JwksValidator, OAuthBearerServer, TokenValidator, UnsecuredValidator, load_jwks
from .plain import PlainServer, plain_users
from .principal import PrincipalMappingError, SslPrincipalMapper
from .sasl_mechanism import SaslServerMechanism
from .scram_server import ScramCredentialSource, ScramServer
from .ssl_factory import SslConfigError, server_context

__all__ = ["ListenerSecurity", "SecurityConfigError", "SUPPORTED_MECHANISMS"]

SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


class SecurityConfigError(ValueError):
    """A listener's security properties cannot be used (the message names the property)."""


class _NoCredentials:
    def get(self, user: str, mechanism: str) -> None:
        return None


class ListenerSecurity:
    """One listener's security; ``new_mechanism(name)`` makes a mechanism's server for one login."""

    def __init__(self, props: Mapping[str, str], endpoint: EndPoint,
                 scram_credentials: ScramCredentialSource | None = None) -> None:
        self.endpoint = endpoint
        self.name = endpoint.name
        self.props = props

        def get(key: str) -> str:
            return listener_property(props, endpoint.name, key)

        self.max_receive_size = int(get("sasl.server.max.receive.size"))
        self.reauth_ms = int(get("connections.max.reauth.ms"))
        self.failed_delay_ms = int(get("connection.failed.authentication.delay.ms"))
        self.auth_timeout_ms = int(get("connections.authentication.timeout.ms"))
        self.ssl_context: ssl.SSLContext | None = None
        try:
            self.principal_mapper = SslPrincipalMapper(get("ssl.principal.mapping.rules") or "DEFAULT")
            if endpoint.tls:
                self.ssl_context = server_context(props, endpoint.name)
        except (SslConfigError, PrincipalMappingError) as e:
            raise SecurityConfigError(f"listener {endpoint.name}: {e}") from None
        self.mechanisms: list[str] = []
        self._factories: dict[str, Callable[[], SaslServerMechanism]] = {}
        if endpoint.sasl:
            self._configure_sasl(get("sasl.enabled.mechanisms"), scram_credentials or _NoCredentials())

    def _jaas(self, mechanism: str) -> dict[str, str] | None:
        m = mechanism.lower()
        value = self.props.get(f"{listener_prefix(self.name)}{m}.sasl.jaas.config") or \
            self.props.get(f"{m}.sasl.jaas.config")
        if not value:
            return None
        try:
            return parse_jaas_config(value).options
        except JaasError as e:
            raise SecurityConfigError(f"{listener_prefix(self.name)}{m}.sasl.jaas.config: {e}") from None

    def _configure_sasl(self, enabled: str, credentials: ScramCredentialSource) -> None:
        names = [m.strip().upper() for m in enabled.split(",") if m.strip()]
        if not names:
            raise SecurityConfigError(f"listener {self.name}: sasl.enabled.mechanisms is empty on a"
                                      f" {self.endpoint.security_protocol} listener")
        for name in names:
            if name not in SUPPORTED_MECHANISMS:
                hint = " (Kafka's default; Kerberos is not available here)" if name == "GSSAPI" else ""
                raise SecurityConfigError(f"listener {self.name}: SASL mechanism {name}{hint} is not supported: set"
                                          f" sasl.enabled.mechanisms to some of {', '.join(SUPPORTED_MECHANISMS)}")
            options = self._jaas(name)
            if name == "PLAIN":
                if options is None:
                    raise SecurityConfigError(
                        f"listener {self.name}: PLAIN needs its users: set {listener_prefix(self.name)}plain.sasl.jaas"
                        '.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="...";')
                self._factories[name] = functools.partial(PlainServer, plain_users(options))
            elif name in SCRAM_MECHANISMS:
                self._factories[name] = functools.partial(ScramServer, name, credentials)
            else:
                self._factories[name] = functools.partial(OAuthBearerServer, self._oauth_validator(options or {}))
        self.mechanisms = names

    def _oauth_validator(self, options: Mapping[str, str]) -> TokenValidator:
        def get(key: str) -> str:
            return listener_property(self.props, self.name, key)

        try:
            url = get("sasl.oauthbearer.jwks.endpoint.url")
            if not url:
                return UnsecuredValidator.from_options(options)
            audience = [a.strip() for a in get("sasl.oauthbearer.expected.audience").split(",") if a.strip()]
            return JwksValidator(load_jwks(url), audience, get("sasl.oauthbearer.expected.issuer"),
                                 get("sasl.oauthbearer.sub.claim.name") or "sub",
                                 get("sasl.oauthbearer.scope.claim.name") or "scope",
                                 int(get("sasl.oauthbearer.clock.skew.seconds")) * 1000)
        except ValueError as e:
            raise SecurityConfigError(f"listener {self.name}: {e}") from None

    def new_mechanism(self, name: str) -> SaslServerMechanism | None:
        """A fresh server for one login with ``name``, or None if it is not enabled here."""
        factory = self._factories.get(name)
        return factory() if factory is not None else None

    def reload_ssl(self, props: Mapping[str, str]) -> None:
        """Build the server context again (a new keystore set at run time); connections already
        open keep theirs. SecurityConfigError leaves the current one in place."""
        try:
            self.ssl_context = server_context(props, self.name)
        except SslConfigError as e:
            raise SecurityConfigError(f"listener {self.name}: {e}") from None
        self.props = props
