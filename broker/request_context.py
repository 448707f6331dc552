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

``authorize(operation, resource_type, name)`` is the one question a handler asks about ACLs
(``authorized_operations`` the bit field some responses carry); handlers never read ACLs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .authorizer.acl import SUPPORTED_OPERATIONS, AclOperation, ResourceType
from .security.principal import ANONYMOUS, KafkaPrincipal

if TYPE_CHECKING:
    from .state import BrokerState

__all__ = ["KafkaPrincipal", "ANONYMOUS", "Session", "RequestContext"]


class Session:
    """One connection's identity, fixed once the connection is accepted (and, with SASL, once it
    has authenticated)."""

    __slots__ = ("_principal", "principal_name", "client_host", "client_port", "listener_name", "security_protocol")

    def __init__(self, client_host: str, client_port: int, *, principal: KafkaPrincipal = ANONYMOUS,
                 listener_name: str = "PLAINTEXT", security_protocol: str = "PLAINTEXT") -> None:
        self.principal = principal
        self.client_host = client_host
        self.client_port = client_port
        self.listener_name = listener_name
        self.security_protocol = security_protocol

    @property
    def principal(self) -> KafkaPrincipal:
        return self._principal

    @principal.setter
    def principal(self, value: KafkaPrincipal) -> None:
        self._principal = value
        #: ``User:alice``, made once per login: what the authorizer is asked with
        self.principal_name = str(value)

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

    def authorize(self, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        """Whether this request's principal, from its host, may do ``operation`` on the resource
        (Kafka's ``AuthHelper.authorize``): True without an authorizer, at the cost of one
        attribute test; with one, a cached decision (a dict lookup) in the common case."""
        authorizer = self.state.authorizer
        if authorizer is None:
            return True
        session = self.session
        return authorizer.authorize(session.principal_name, session.client_host, operation, resource_type, name)

    def authorized_operations(self, resource_type: ResourceType, name: str) -> int:
        """The ``authorized_operations`` bit field for the resource: every operation its type
        supports without an authorizer (as Kafka), else those the authorizer allows."""
        authorizer = self.state.authorizer
        if authorizer is None:
            bits = 0
            for op in SUPPORTED_OPERATIONS.get(resource_type, ()):
                bits |= 1 << int(op)
            return bits
        return authorizer.authorized_operations(self.session.principal_name, self.session.client_host,
                                                resource_type, name)

    def __repr__(self) -> str:
        return (f"RequestContext(api_key={self.api_key}, v{self.api_version}, correlation_id={self.correlation_id},"
                f" client_id={self.client_id!r}, {self.session!r})")
