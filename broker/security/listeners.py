"""Listeners as Kafka configures them: ``listeners``, ``advertised.listeners``,
``listener.security.protocol.map`` and the per-listener ``listener.name.<name>.<property>``.

``listeners`` is a comma-separated list of ``NAME://host:port``. ``NAME`` is a listener name;
its security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) comes from
``listener.security.protocol.map`` (``NAME:PROTOCOL,...``; by default each protocol maps to
itself, so ``SASL_SSL://:9094`` is a SASL_SSL listener). Names are unique and case-insensitive
(upper-cased, as Kafka's ListenerName.normalised); an empty host listens on every interface;
port 0 asks for a free port. Two listeners on the same port are refused.

``advertised.listeners`` names, per listener, the ``host:port`` clients are told to connect to
(Metadata, FindCoordinator, DescribeCluster answer with the endpoint of the listener the request
came in on); a listener not named there advertises its own address (``127.0.0.1`` for a
wildcard host: ours, Kafka would use the machine's canonical name).

A property ``P`` can be set for one listener as ``listener.name.<name in lower case>.P``;
``listener_property`` looks there first, then at ``P`` itself. SASL's JAAS configuration and
server callbacks are per listener *and mechanism*:
``listener.name.<name>.<mechanism in lower case>.sasl.jaas.config``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple
from urllib.parse import urlsplit

__all__ = ["SENSITIVE_PROPERTIES", "is_sensitive", "unprefixed", "SECURITY_PROTOCOLS", "DEFAULT_PROTOCOL_MAP", "EndPoint", "ListenerError", "parse_protocol_map",
           "parse_endpoints", "listener_property", "listener_prefix"]

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: Kafka's default listener.security.protocol.map
DEFAULT_PROTOCOL_MAP = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"


class ListenerError(ValueError):
    """A listener property that cannot be used (the message names the property)."""


class EndPoint(NamedTuple):
    """One listener: its name, where it listens (or what it advertises), and its protocol."""

    name: str
    host: str
    port: int
    security_protocol: str

    @property
    def tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


def parse_protocol_map(value: str) -> dict[str, str]:
    """``NAME:PROTOCOL,...`` -> {NAME: PROTOCOL} (names upper-cased)."""
    out: dict[str, str] = {}
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        protocol = protocol.strip().upper()
        if not sep or not name.strip():
            raise ListenerError(f"listener.security.protocol.map: expected NAME:PROTOCOL, got {item!r}")
        if protocol not in SECURITY_PROTOCOLS:
            raise ListenerError(f"listener.security.protocol.map: unknown security protocol {protocol!r} for"
                                f" listener {name.strip()} (one of {', '.join(SECURITY_PROTOCOLS)})")
        out[name.strip().upper()] = protocol
    return out


def parse_endpoints(value: str, prop: str, protocols: Mapping[str, str], default_host: str = "") -> list[EndPoint]:
    """The endpoints of ``value`` (``NAME://host:port,...``); a bare ``host:port`` is a
    PLAINTEXT listener. ListenerError names ``prop`` for a bad entry, a listener name without a
    protocol, or a name used twice."""
    out: list[EndPoint] = []
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        if "://" not in item:
            item = f"PLAINTEXT://{item}"
        name = item.split("://", 1)[0].strip().upper()
        try:
            u = urlsplit("x" + item[item.index("://"):])
            port = u.port
        except ValueError as e:  # "Invalid IPv6 URL", a port out of range
            raise ListenerError(f"{prop}: invalid listener {item!r}: {e}") from None
        if port is None:
            raise ListenerError(f"{prop}: missing port in {item!r}")
        if not name or not all(c.isalnum() or c in "_-" for c in name):
            raise ListenerError(f"{prop}: invalid listener name in {item!r}")
        protocol = protocols.get(name)
        if protocol is None:
            raise ListenerError(f"{prop}: no security protocol defined for listener {name}"
                                " (add it to listener.security.protocol.map)")
        if any(e.name == name for e in out):
            raise ListenerError(f"{prop}: each listener must have a different name, {name} is used twice")
        out.append(EndPoint(name, u.hostname or default_host, port, protocol))
    if not out:
        raise ListenerError(f"{prop}: no listener given")
    return out


#: Kafka's PASSWORD-typed properties: DescribeConfigs answers them with a null value and
#: is_sensitive, and they never reach a log line (listener- and mechanism-prefixed forms included)
SENSITIVE_PROPERTIES = frozenset({"ssl.keystore.password", "ssl.key.password", "ssl.truststore.password",
                                  "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.truststore.certificates",
                                  "sasl.jaas.config"})


def unprefixed(name: str) -> str:
    """``listener.name.<l>.[<mechanism>.]<property>`` -> ``<property>`` (other names unchanged)."""
    if name.startswith("listener.name."):
        name = name.split(".", 3)[3] if name.count(".") >= 3 else name
    if name.endswith(".sasl.jaas.config"):
        return "sasl.jaas.config"
    return name


def is_sensitive(name: str) -> bool:
    return unprefixed(name) in SENSITIVE_PROPERTIES


def listener_prefix(name: str) -> str:
    """``listener.name.<name>.``, the prefix of a listener's own properties."""
    return f"listener.name.{name.lower()}."


def listener_property(props: Mapping[str, str], listener: str, key: str, default: str = "") -> str:
    """``listener.name.<listener>.<key>`` if set, else ``key``, else ``default``."""
    value = props.get(listener_prefix(listener) + key)
    if value is None:
        value = props.get(key)
    return default if value is None else value
