"""RequestContext: what a handler knows about one request besides its body — who sent it, over
which listener, and the broker state it acts on (Kafka's RequestContext).

Every handler is ``handle(ctx, request)``: ``request`` is the decoded body (a dict shaped by the
API's schema), ``ctx`` this context. The socket server makes one per request from the request
header and its connection's ``Session`` (the peer, the listener, and the principal its TLS
handshake or SASL login established): per connection, the session is made once; per request,
the context costs one small object.

Fields:
- ``state``: the ``BrokerState`` the handlers share (logs, coordinators, configs).
- ``api_key``, ``api_version``, ``correlation_id``, ``client_id``: the request header's
  (``client_id`` is "" when the header's is null).
- ``session``: the connection's ``Session`` — ``principal`` (``User:ANONYMOUS`` on a PLAINTEXT
  listener or an SSL one without a client certificate; ``User:<name>`` after a SASL login or
  from a client certificate), ``client_host`` (the peer's address, no port), ``client_port``,
  ``listener_name`` (``PLAINTEXT``, ``SASL_SSL``, a custom name) and ``security_protocol``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .security.principal import ANONYMOUS, KafkaPrincipal

if TYPE_CHECKING:
    from .state import BrokerState

__all__ = ["KafkaPrincipal", "ANONYMOUS", "Session", "RequestContext"]


class Session:
    """One connection's identity, fixed once the connection is accepted (and, with SASL, once it
    has authenticated)."""

    __slots__ = ("principal", "client_host", "client_port", "listener_name", "security_protocol")

    def __init__(self, client_host: str, client_port: int, *, principal: KafkaPrincipal = ANONYMOUS,
                 listener_name: str = "PLAINTEXT", security_protocol: str = "PLAINTEXT") -> None:
        self.principal = principal
        self.client_host = client_host
        self.client_port = client_port
        self.listener_name = listener_name
        self.security_protocol = security_protocol

    @property
    def peer(self) -> str:
        """``host:port`` of the client, as log lines name it."""
        return f"{self.client_host}:{self.client_port}"

    def __repr__(self) -> str:
        return f"Session({self.principal}, {self.peer}, {self.listener_name})"


class RequestContext:
    """One request's header fields, its connection's session and the broker state."""

    __slots__ = ("state", "api_key", "api_version", "correlation_id", "client_id", "session")

    def __init__(self, state: BrokerState, api_key: int, api_version: int, correlation_id: int, client_id: str,
                 session: Session) -> None:
        self.state = state
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id
        self.session = session

    @property
    def principal(self) -> KafkaPrincipal:
        return self.session.principal

    @property
    def client_host(self) -> str:
        return self.session.client_host

    def __repr__(self) -> str:
        return (f"RequestContext(api_key={self.api_key}, v{self.api_version}, correlation_id={self.correlation_id},"
                f" client_id={self.client_id!r}, {self.session!r})")
