"""BrokerConfig: ``server.properties``-style settings with Kafka's property names and defaults.

Sources, later wins: built-in defaults, a properties file (``--config``), ``--override k=v``.
Defaults are Kafka's except ``listeners`` (``PLAINTEXT://127.0.0.1:9092``) and ``log.dirs``
(``./data``). Topic-level defaults (``log.segment.bytes`` ...) become the LogManager's default
LogConfig (storage/config.py). Unknown names are kept and logged, as Kafka does.

Properties file syntax (the subset of java.util.Properties that configs use): one
``key=value`` (or ``key: value``) per line, ``#``/``!`` comments, blank lines ignored,
surrounding whitespace stripped.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from .authorizer.standard_authorizer import AUTHORIZER_CLASS_NAME
from .security.listener_security import ListenerSecurity, SecurityConfigError
from .security.listeners import DEFAULT_PROTOCOL_MAP, EndPoint, ListenerError, parse_endpoints, parse_protocol_map
from .storage.config import BROKER_SYNONYMS, TOPIC_CONFIGS, LogConfig
from .storage.errors import InvalidConfigError

__all__ = ["BrokerConfig", "parse_properties", "parse_listener", "ConfigError"]

logger = logging.getLogger(__name__)


class ConfigError(ValueError):
    pass


#: Broker properties minibroker knows, with Kafka's defaults (ours where marked).
BROKER_DEFAULTS: dict[str, str] = {
    "listeners": "PLAINTEXT://127.0.0.1:9092",  # ours (Kafka: PLAINTEXT://:9092)
    "advertised.listeners": "",
    "listener.security.protocol.map": DEFAULT_PROTOCOL_MAP,
    # TLS (broker/security/ssl_factory.py); each may be set per listener: listener.name.<name>.<property>
    "ssl.keystore.type": "JKS",  # Kafka's default; a PEM or PKCS12 file is recognised by its content
    "ssl.keystore.location": "",
    "ssl.keystore.password": "",
    "ssl.key.password": "",
    "ssl.keystore.key": "",
    "ssl.keystore.certificate.chain": "",
    "ssl.truststore.type": "JKS",
    "ssl.truststore.location": "",
    "ssl.truststore.password": "",
    "ssl.truststore.certificates": "",
    "ssl.client.auth": "none",
    "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
    "ssl.protocol": "TLSv1.3",
    "ssl.cipher.suites": "",
    "ssl.principal.mapping.rules": "DEFAULT",
    "ssl.endpoint.identification.algorithm": "https",
    # SASL (broker/security/authenticator.py)
    "sasl.enabled.mechanisms": "GSSAPI",  # Kafka's default; GSSAPI itself is refused at start-up
    "sasl.server.max.receive.size": "524288",
    "connections.max.reauth.ms": "0",
    "connection.failed.authentication.delay.ms": "100",
    "sasl.oauthbearer.jwks.endpoint.url": "",
    "sasl.oauthbearer.expected.audience": "",
    "sasl.oauthbearer.expected.issuer": "",
    "sasl.oauthbearer.scope.claim.name": "scope",
    "sasl.oauthbearer.sub.claim.name": "sub",
    "sasl.oauthbearer.clock.skew.seconds": "30",
    # ours: a connection must finish its TLS handshake and SASL login within this, or it is closed
    "connections.authentication.timeout.ms": "10000",
    "log.dirs": "./data",  # ours (Kafka: /tmp/kafka-logs)
    "node.id": "0",
    "broker.id": "",
    "num.partitions": "1",
    "auto.create.topics.enable": "true",
    "delete.topic.enable": "true",
    "socket.request.max.bytes": "104857600",
    "log.retention.check.interval.ms": "300000",
    "log.flush.scheduler.interval.ms": str(2**63 - 1),
    "log.flush.offset.checkpoint.interval.ms": "60000",
    "log.flush.start.offset.checkpoint.interval.ms": "60000",
    "default.replication.factor": "1",
    "queued.max.requests": "500",
    # Kafka's authorizer: none by default; AUTHORIZER_CLASS_NAME switches the StandardAuthorizer on
    "authorizer.class.name": "",
    "super.users": "",
    "allow.everyone.if.no.acl.found": "false",
    # ours: what inflating producers' compressed batches may cost (storage/inflation.py)
    "message.max.decompressed.bytes": str(64 << 20),
    "request.max.decompressed.bytes": str(128 << 20),
    "broker.max.decompressed.bytes": str(256 << 20),
    "max.connections": "2147483647",
    "max.connections.per.ip": "2147483647",
    "connections.max.idle.ms": "600000",
    # incremental fetch sessions (broker/fetch_session.py)
    "max.incremental.fetch.session.cache.slots": "1000",
    "min.incremental.fetch.session.eviction.ms": "120000",
    "max.request.partition.size.limit": "2000",  # DescribeTopicPartitions' page
    # client quotas (broker/quota/): the samples and sample length of the rates measured
    "quota.window.num": "11",
    "quota.window.size.seconds": "1",
    "controller.quota.window.num": "11",
    "controller.quota.window.size.seconds": "1",
    "producer.id.expiration.ms": "86400000",
    "producer.id.expiration.check.interval.ms": "600000",
    # the group coordinator (broker/group)
    "offsets.topic.num.partitions": "50",
    "offsets.topic.segment.bytes": "104857600",
    "offsets.topic.replication.factor": "1",  # ours (Kafka: 3); one node can hold one replica
    "offsets.retention.minutes": "10080",
    "offsets.retention.check.interval.ms": "600000",
    "offsets.load.buffer.size": "5242880",
    "offset.metadata.max.bytes": "4096",
    "group.min.session.timeout.ms": "6000",
    "group.max.session.timeout.ms": "1800000",
    "group.max.size": "2147483647",
    "group.initial.rebalance.delay.ms": "3000",  # broker/testing starts test brokers with 0
    # KIP-848 consumer groups (broker/group/consumer_coordinator.py)
    "group.coordinator.rebalance.protocols": "classic,consumer",
    "group.consumer.session.timeout.ms": "45000",
    "group.consumer.min.session.timeout.ms": "45000",
    "group.consumer.max.session.timeout.ms": "60000",
    "group.consumer.heartbeat.interval.ms": "5000",
    "group.consumer.min.heartbeat.interval.ms": "5000",
    "group.consumer.max.heartbeat.interval.ms": "15000",
    "group.consumer.max.size": "2147483647",
    "group.consumer.assignors": "uniform,range",
    "group.consumer.migration.policy": "bidirectional",
    # minibroker's own: groups this large run their assignor off the request path
    "group.consumer.assignment.offload.min.members": "100",
    # share groups (broker/share/)
    "group.share.session.timeout.ms": "45000",
    "group.share.heartbeat.interval.ms": "5000",
    "group.share.max.size": "200",
    "group.share.record.lock.duration.ms": "30000",
    "group.share.delivery.count.limit": "5",
    "group.share.partition.max.record.locks": "2000",
    "group.share.max.share.sessions": "2000",
    # the transaction coordinator (broker/txn)
    "transaction.state.log.num.partitions": "50",
    "transaction.state.log.segment.bytes": "104857600",
    "transaction.state.log.replication.factor": "1",  # ours (Kafka: 3); one node can hold one replica
    "transaction.state.log.load.buffer.size": "5242880",
    "transaction.max.timeout.ms": "900000",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "10000",
    "transactional.id.expiration.ms": "604800000",
    "transaction.remove.expired.transaction.cleanup.interval.ms": "3600000",
    # the share coordinator's durable state (broker/share/): Kafka's names and defaults
    "share.coordinator.state.topic.num.partitions": "50",
    "share.coordinator.state.topic.segment.bytes": "104857600",
    "share.coordinator.state.topic.replication.factor": "1",  # ours (Kafka: 3); one node can hold one replica
    "share.coordinator.snapshot.update.records.per.snapshot": "500",
    "share.coordinator.load.buffer.size": "5242880",
    # the log cleaner (broker/storage/cleaner/): Kafka's names and defaults
    "log.cleaner.enable": "true",
    "log.cleaner.threads": "1",
    "log.cleaner.dedupe.buffer.size": "134217728",
    "log.cleaner.io.buffer.size": "524288",
    "log.cleaner.io.buffer.load.factor": "0.9",
    "log.cleaner.io.max.bytes.per.second": "1.7976931348623157E308",
    "log.cleaner.backoff.ms": "15000",
    "log.cleaner.mode": "process",  # ours: where cleanings run, "process" or "thread" (storage/cleaner/)
    # ours: the opt-in HTTP listeners (broker/http_listener.py); empty = off
    "metrics.listeners": "",  # http://127.0.0.1:9404 -> GET /metrics (Prometheus), GET /healthz
    "metrics.group.partition.series.max": "10000",  # committed partitions exported one by one (metrics.py)
    "metrics.connections.max": "64",  # HTTP connections at once; a new one closes the oldest idle one
    "metrics.connections.max.idle.ms": "5000",  # an HTTP connection that sent nothing this long is closed
    "metrics.request.timeout.ms": "30000",  # to send a whole HTTP request, and again to read the reply
    "fault.injection.listener": "",  # http://127.0.0.1:PORT -> /faults (tests only; loopback only)
    # ours: the built-in schema registry (broker/schema_registry/), Confluent's REST API; empty = off
    "schema.registry.listeners": "",  # http://127.0.0.1:8081 (serve --schema-registry)
    "schema.registry.authentication": "none",  # basic: HTTP Basic against the SCRAM users (schema_registry/auth.py)
}
_INT_MAX = 2**31 - 1
_LONG_MAX = 2**63 - 1

#: Kafka's type and validator of each broker property (its ConfigDef): (type, at least, at most);
#: None = no bound. Every property is checked at start-up, so a bad value is one clear line and
#: exit status 2, never a hang, a busy loop or a traceback later. ``log.*`` topic defaults are
#: checked by their own table (storage/config.py).
BROKER_TYPES: dict[str, tuple[str, int | None, int | None]] = {
    "node.id": ("int", None, None),
    "broker.id": ("int", None, None),
    "num.partitions": ("int", 1, None),
    "auto.create.topics.enable": ("bool", None, None),
    "delete.topic.enable": ("bool", None, None),
    "allow.everyone.if.no.acl.found": ("bool", None, None),
    "socket.request.max.bytes": ("int", 1, None),
    "queued.max.requests": ("int", 1, None),
    "message.max.decompressed.bytes": ("long", 1, None),
    "request.max.decompressed.bytes": ("long", 1, None),
    "broker.max.decompressed.bytes": ("long", 1, None),
    "log.retention.check.interval.ms": ("long", 1, None),
    "log.flush.scheduler.interval.ms": ("long", None, None),
    "log.flush.offset.checkpoint.interval.ms": ("int", 0, None),
    "log.flush.start.offset.checkpoint.interval.ms": ("int", 0, None),
    "default.replication.factor": ("int", None, None),
    "max.connections": ("int", 0, None),
    "max.connections.per.ip": ("int", 0, None),
    "connections.max.idle.ms": ("long", None, None),  # negative: no idle timeout, as Kafka
    "max.incremental.fetch.session.cache.slots": ("int", 0, None),
    "min.incremental.fetch.session.eviction.ms": ("int", 0, None),
    "max.request.partition.size.limit": ("int", 1, None),
    "quota.window.num": ("int", 1, None),
    "quota.window.size.seconds": ("int", 1, None),
    "controller.quota.window.num": ("int", 1, None),
    "controller.quota.window.size.seconds": ("int", 1, None),
    "producer.id.expiration.ms": ("int", 1, None),
    "producer.id.expiration.check.interval.ms": ("int", 1, None),
    "offsets.topic.num.partitions": ("int", 1, None),
    "offsets.topic.segment.bytes": ("int", 1, None),
    "offsets.topic.replication.factor": ("int", 1, 1),
    "offsets.retention.minutes": ("int", 1, None),
    "offsets.retention.check.interval.ms": ("long", 1, None),
    "offsets.load.buffer.size": ("int", 1, None),
    "offset.metadata.max.bytes": ("int", None, None),
    "group.min.session.timeout.ms": ("int", None, None),
    "group.max.session.timeout.ms": ("int", None, None),
    "group.max.size": ("int", 1, None),
    "group.initial.rebalance.delay.ms": ("int", None, None),
    "group.consumer.session.timeout.ms": ("int", 1, None),
    "group.consumer.min.session.timeout.ms": ("int", 1, None),
    "group.consumer.max.session.timeout.ms": ("int", 1, None),
    "group.consumer.heartbeat.interval.ms": ("int", 1, None),
    "group.consumer.min.heartbeat.interval.ms": ("int", 1, None),
    "group.consumer.max.heartbeat.interval.ms": ("int", 1, None),
    "group.consumer.max.size": ("int", 1, None),
    "group.consumer.assignment.offload.min.members": ("int", 1, None),
    "group.share.session.timeout.ms": ("int", 1, None),
    "group.share.heartbeat.interval.ms": ("int", 1, None),
    "group.share.max.size": ("int", 1, 1000),
    "group.share.record.lock.duration.ms": ("int", 1000, 3_600_000),
    "group.share.delivery.count.limit": ("int", 2, 10),
    "group.share.partition.max.record.locks": ("int", 100, 10_000),
    "group.share.max.share.sessions": ("int", 1, None),
    "transaction.state.log.num.partitions": ("int", 1, None),
    "transaction.state.log.segment.bytes": ("int", 1, None),
    "transaction.state.log.replication.factor": ("int", 1, 1),
    "transaction.state.log.load.buffer.size": ("int", 1, None),
    "transaction.max.timeout.ms": ("int", 1, None),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": ("int", 1, None),
    "transactional.id.expiration.ms": ("int", 1, None),
    "transaction.remove.expired.transaction.cleanup.interval.ms": ("int", 1, None),
    "share.coordinator.state.topic.num.partitions": ("int", 1, None),
    "share.coordinator.state.topic.segment.bytes": ("int", 1, None),
    "share.coordinator.state.topic.replication.factor": ("int", 1, 1),
    "share.coordinator.snapshot.update.records.per.snapshot": ("int", 0, 500),
    "share.coordinator.load.buffer.size": ("int", 1, None),
    "log.cleaner.enable": ("bool", None, None),
    "log.cleaner.threads": ("int", 0, None),
    "log.cleaner.dedupe.buffer.size": ("long", None, None),
    "log.cleaner.io.buffer.size": ("int", 0, None),
    "log.cleaner.io.buffer.load.factor": ("double", None, None),
    "log.cleaner.io.max.bytes.per.second": ("double", None, None),
    "log.cleaner.backoff.ms": ("long", 0, None),
    "metrics.group.partition.series.max": ("int", 0, None),
    "metrics.connections.max": ("int", 1, None),
    "metrics.connections.max.idle.ms": ("int", 1, None),
    "metrics.request.timeout.ms": ("int", 1, None),
    "sasl.server.max.receive.size": ("int", 1, None),
    "connections.max.reauth.ms": ("long", 0, None),
    "connection.failed.authentication.delay.ms": ("int", 0, None),
    "sasl.oauthbearer.clock.skew.seconds": ("int", 0, None),
    "connections.authentication.timeout.ms": ("int", 1, None),
}

#: minibroker's floor (ms) for the properties that set the period of one of its timers or loops
#: (broker.py's periodic tasks, the idle-connection check of socket_server.py, the cleaner
#: threads' backoff): Kafka's own lower bound (above: 0 or 1) lets through a period of a
#: millisecond or none, and such a timer keeps a core busy while the broker is idle (Kafka's
#: cleaner spins at log.cleaner.backoff.ms=0 too). A value below the floor is refused at start
#: like any other bad value. ``off``: the values Kafka gives another meaning, allowed below
#: the floor: "negative" (connections.max.idle.ms < 0: no idle timeout, as Kafka's Selector)
#: or "zero" (a checkpoint interval of 0: no periodic checkpoint, as Kafka's scheduler runs a
#: task of period 0 only once).
PERIOD_FLOORS: dict[str, tuple[int, str | None]] = {
    "connections.max.idle.ms": (100, "negative"),  # the check runs every tenth of it
    "log.retention.check.interval.ms": (10, None),
    "log.flush.offset.checkpoint.interval.ms": (10, "zero"),
    "producer.id.expiration.check.interval.ms": (10, None),
    "offsets.retention.check.interval.ms": (10, None),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": (10, None),
    "transaction.remove.expired.transaction.cleanup.interval.ms": (10, None),
    "log.cleaner.backoff.ms": (10, None),
}

_OFF_WORDS = {"negative": "or negative for no idle timeout", "zero": "or 0 for no periodic checkpoint"}


def check_period_floor(key: str, value: str) -> None:
    """Raise ConfigError unless ``value`` (already a valid number for ``key``) is at least
    ``key``'s PERIOD_FLOORS floor, or one of the values Kafka gives another meaning."""
    floor, off = PERIOD_FLOORS[key]
    n = int(value.strip())
    if n >= floor or (off == "negative" and n < 0) or (off == "zero" and n == 0):
        return
    allowed = f"at least {floor}" + (f", {_OFF_WORDS[off]}" if off else "")
    raise ConfigError(f"Invalid value {value} for configuration {key}: Value must be {allowed} (minibroker's"
                      f" floor: a shorter period would keep a core busy while the broker is idle)")


#: Properties that take one of a few strings (Kafka's ValidString), checked at start-up too.
BROKER_CHOICES: dict[str, tuple[str, ...]] = {
    "log.cleaner.mode": ("process", "thread"),
    "schema.registry.authentication": ("none", "basic"),
    "ssl.client.auth": ("none", "requested", "required"),
    "group.consumer.migration.policy": ("disabled", "upgrade", "downgrade", "bidirectional"),
}

#: the server-side assignors of KIP-848 groups (broker/group/assignors.py), by their names and
#: Kafka's class names
CONSUMER_ASSIGNORS = {"uniform": "uniform", "range": "range",
                      "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
                      "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range"}


def check_consumer_group_configs(props: dict[str, str]) -> None:
    """Kafka's cross-checks of the ``group.consumer.*`` settings and the rebalance protocols."""
    def num(k: str) -> int:
        return int(props[k])
    for name in ("session.timeout.ms", "heartbeat.interval.ms"):
        lo, value, hi = num(f"group.consumer.min.{name}"), num(f"group.consumer.{name}"), num(f"group.consumer.max.{name}")
        if value < lo:
            raise ConfigError(f"group.consumer.{name} must be greater than or equal to group.consumer.min.{name}")
        if value > hi:
            raise ConfigError(f"group.consumer.{name} must be less than or equal to group.consumer.max.{name}")
    if num("group.consumer.heartbeat.interval.ms") >= num("group.consumer.session.timeout.ms"):
        raise ConfigError("group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms")
    protocols = [p.strip().lower() for p in props["group.coordinator.rebalance.protocols"].split(",") if p.strip()]
    unknown = [p for p in protocols if p not in ("classic", "consumer", "share", "streams")]
    if unknown or "classic" not in protocols:
        raise ConfigError(f"Invalid value {props['group.coordinator.rebalance.protocols']} for configuration "
                          "group.coordinator.rebalance.protocols: the list must contain classic and only "
                          "classic, consumer, share, streams")
    assignors = [a.strip() for a in props["group.consumer.assignors"].split(",") if a.strip()]
    bad = [a for a in assignors if a not in CONSUMER_ASSIGNORS]
    if bad or not assignors:
        raise ConfigError(f"Invalid value {props['group.consumer.assignors']} for configuration "
                          f"group.consumer.assignors: unknown assignor {', '.join(bad) or '(none)'}; "
                          f"minibroker has {', '.join(sorted(CONSUMER_ASSIGNORS))}")


def check_value(key: str, value: str, kind: str, lower: int | None, upper: int | None) -> None:
    """Raise ConfigError, worded as Kafka's ConfigException, unless ``value`` is a ``kind``
    ("int", "long", "bool") within [lower, upper], or a positive "double"."""
    text = value.strip()
    if kind == "double":
        try:
            number = float(text)
        except ValueError:
            raise ConfigError(f"Invalid value {value} for configuration {key}: Not a number of type DOUBLE") from None
        if number != number or number <= 0:
            raise ConfigError(f"Invalid value {value} for configuration {key}: Value must be above 0")
        return
    if kind == "bool":
        if text.lower() not in ("true", "false"):
            raise ConfigError(f"Invalid value {value} for configuration {key}: Expected value to be either true or false")
        return
    try:
        n = int(text)
    except ValueError:
        raise ConfigError(f"Invalid value {value} for configuration {key}: Not a number of type {kind.upper()}") from None
    if not -(_INT_MAX + 1 if kind == "int" else _LONG_MAX + 1) <= n <= (_INT_MAX if kind == "int" else _LONG_MAX):
        raise ConfigError(f"Invalid value {value} for configuration {key}: Not a number of type {kind.upper()}")
    if lower is not None and n < lower:
        raise ConfigError(f"Invalid value {value} for configuration {key}: Value must be at least {lower}")
    if upper is not None and n > upper:
        raise ConfigError(f"Invalid value {value} for configuration {key}: Value must be no more than {upper}")


_LOG_PROPS = set(BROKER_SYNONYMS)


def parse_properties(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        seps = [i for i in (line.find("="), line.find(":")) if i >= 0]
        if not seps:
            raise ConfigError(f"line {lineno}: expected key=value, got {raw!r}")
        i = min(seps)
        out[line[:i].strip()] = line[i + 1 :].strip()
    return out


def parse_listener(value: str, name: str, scheme: str = "PLAINTEXT", default_host: str = "0.0.0.0") -> tuple[str, int]:
    """The first listener of ``value`` (``SCHEME://host:port``, the scheme optional) as (host,
    port); ConfigError (a ValueError) for another scheme or a missing or bad port."""
    first = value.split(",")[0].strip()
    if "://" not in first:
        first = f"{scheme}://{first}"
    try:
        u = urlsplit(first)
    except ValueError as e:  # "Invalid IPv6 URL": an unbalanced [
        raise ConfigError(f"{name}: invalid listener {first!r}: {e}") from None
    if u.scheme.lower() != scheme.lower():
        raise ConfigError(f"{name}: only {scheme} listeners are supported, got {first!r}")
    try:
        port = u.port
    except ValueError:
        raise ConfigError(f"{name}: invalid port in {first!r}") from None
    if port is None:
        raise ConfigError(f"{name}: missing port in {first!r}")
    return (u.hostname or default_host), port


@dataclass
class BrokerConfig:
    props: dict[str, str]
    #: names set by the properties file, ``--override`` or ``extra`` (not left at a default):
    #: DescribeConfigs reports these as STATIC_BROKER_CONFIG, the rest as DEFAULT_CONFIG
    explicit: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def load(cls, path: str | None = None, overrides: Iterable[str] = (),
             extra: Mapping[str, str] | None = None) -> BrokerConfig:
        given: dict[str, str] = {}
        if path:
            with open(path, "rb") as f:
                raw = f.read()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ConfigError(f"{path}: not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start})") from None
            given.update(parse_properties(text))
        for item in overrides:
            if "=" not in item:
                raise ConfigError(f"--override expects key=value, got {item!r}")
            k, v = item.split("=", 1)
            given[k.strip()] = v.strip()
        given.update(extra or {})
        cfg = cls({**BROKER_DEFAULTS, **given}, frozenset(given))
        cfg.validate()
        return cfg

    def validate(self) -> None:
        for k in self.props:
            if k not in BROKER_DEFAULTS and k not in _LOG_PROPS and not k.startswith("listener.name."):
                logger.warning("The configuration '%s' was supplied but isn't a known config.", k)
        if not self.log_dir:
            raise ConfigError("At least one log directory must be defined via log.dirs or log.dir.")
        _ = self.advertised_endpoints  # validates listeners and advertised.listeners
        for k, (kind, lower, upper) in BROKER_TYPES.items():
            value = self.props.get(k, "")
            if value.strip() or k != "broker.id":  # broker.id may be left empty (node.id then)
                check_value(k, value, kind, lower, upper)
        for k in PERIOD_FLOORS:
            check_period_floor(k, self.props[k])
        for k, allowed in BROKER_CHOICES.items():
            if self.props.get(k, "").strip().lower() not in allowed:
                raise ConfigError(f"Invalid value {self.props.get(k, '')} for configuration {k}:"
                                  f" String must be one of: {', '.join(allowed)}")
        check_consumer_group_configs(self.props)
        _ = self.authorizer_enabled  # an unknown class name refuses start-up
        _ = self.metrics_listener, self.fault_injection_listener, self.schema_registry_listener
        _ = self.log_config  # validates the log.* properties
        for endpoint in self.endpoints:  # TLS material readable, SASL mechanisms usable, per listener
            try:
                ListenerSecurity(self.props, endpoint)
            except SecurityConfigError as e:
                raise ConfigError(str(e)) from None

    def get(self, key: str) -> str:
        return self.props[key]

    def set(self, key: str, value: str) -> None:
        """Set ``key`` as given by the operator (command-line flags such as ``--port``)."""
        self.props[key] = value
        self.explicit = self.explicit | {key}

    def describe(self) -> dict[str, str]:
        """Every broker property with its effective value, including the ``log.*`` topic
        defaults not set (Kafka's DescribeConfigs lists them all)."""
        out = dict(self.props)
        log_config = self.log_config
        for d in TOPIC_CONFIGS.values():
            if d.broker_name not in out:
                v = log_config.get(d.name)
                out[d.broker_name] = str(v).lower() if isinstance(v, bool) else str(v)
        return dict(sorted(out.items()))

    def int(self, key: str) -> builtins.int:
        try:
            return int(self.props[key])
        except ValueError:
            raise ConfigError(f"Invalid value {self.props[key]} for configuration {key}: Not a number") from None

    def bool(self, key: str) -> bool:
        v = self.props[key].strip().lower()
        if v not in ("true", "false"):
            raise ConfigError(f"Invalid value {self.props[key]} for configuration {key}: expected true or false")
        return v == "true"

    @property
    def endpoints(self) -> list[EndPoint]:
        """``listeners``, each with its security protocol (security/listeners.py); ConfigError
        for a bad entry, a name without a protocol, a name or a port used twice."""
        try:
            protocols = parse_protocol_map(self.props["listener.security.protocol.map"])
            out = parse_endpoints(self.props["listeners"], "listeners", protocols, "0.0.0.0")
        except ListenerError as e:
            raise ConfigError(str(e)) from None
        ports = [e.port for e in out if e.port != 0]
        if len(ports) != len(set(ports)):
            raise ConfigError(f"listeners: each listener must have a different port, got {self.props['listeners']!r}")
        return out

    @property
    def advertised_endpoints(self) -> dict[str, EndPoint]:
        """Per listener name, the endpoint clients that came in on it are told about:
        ``advertised.listeners``' entry for that name, else the listener's own address
        (127.0.0.1 for a wildcard host). A port of 0 is filled in once the listener is bound."""
        endpoints = self.endpoints
        out = {e.name: e._replace(host="127.0.0.1" if e.host in ("0.0.0.0", "", "::") else e.host)
               for e in endpoints}
        given = self.props.get("advertised.listeners", "").strip()
        if given:
            try:
                protocols = {e.name: e.security_protocol for e in endpoints}
                advertised = parse_endpoints(given, "advertised.listeners", protocols, "127.0.0.1")
            except ListenerError as e:
                raise ConfigError(str(e).replace("add it to listener.security.protocol.map",
                                                 "every advertised listener must be one of listeners")) from None
            for ep in advertised:
                out[ep.name] = ep
        return out

    @property
    def listener(self) -> tuple[str, builtins.int]:
        """The first listener's (host, port)."""
        first = self.endpoints[0]
        return first.host, first.port

    @property
    def advertised_listener(self) -> tuple[str, builtins.int]:
        """What the first listener advertises, (host, port)."""
        first = self.advertised_endpoints[self.endpoints[0].name]
        return first.host, first.port

    @property
    def authorizer_enabled(self) -> builtins.bool:
        """Whether ``authorizer.class.name`` switches the StandardAuthorizer on: empty is off,
        Kafka's KRaft class name is on, anything else refuses start-up (ConfigError) rather
        than run without the ACLs the operator asked for."""
        value = self.props.get("authorizer.class.name", "").strip()
        if not value:
            return False
        if value != AUTHORIZER_CLASS_NAME:
            raise ConfigError(f"authorizer.class.name={value}: unknown authorizer (the only one is"
                              f" {AUTHORIZER_CLASS_NAME})")
        return True

    @property
    def metrics_listener(self) -> tuple[str, builtins.int] | None:
        """``metrics.listeners`` as (host, port), or None when metrics are off."""
        return self._http_listener("metrics.listeners")

    @property
    def fault_injection_listener(self) -> tuple[str, builtins.int] | None:
        """``fault.injection.listener`` as (host, port), or None (the default: no fault
        injection). Loopback addresses only: it lets its caller break the broker's answers."""
        hp = self._http_listener("fault.injection.listener")
        if hp is not None and hp[0] not in ("127.0.0.1", "::1", "localhost"):
            raise ConfigError(f"fault.injection.listener must be on a loopback address, got {hp[0]!r}")
        return hp

    @property
    def schema_registry_listener(self) -> tuple[str, builtins.int] | None:
        """``schema.registry.listeners`` as (host, port), or None (the default: no registry)."""
        return self._http_listener("schema.registry.listeners")

    def _http_listener(self, key: str) -> tuple[str, builtins.int] | None:
        value = self.props.get(key, "").strip()
        return parse_listener(value, key, "http", "127.0.0.1") if value else None

    @property
    def node_id(self) -> builtins.int:
        return int(self.props["broker.id"]) if self.props.get("broker.id") else self.int("node.id")

    @property
    def log_dir(self) -> str:
        return self.props["log.dirs"].split(",")[0].strip()

    @property
    def log_config(self) -> LogConfig:
        try:
            return LogConfig.from_broker_properties(self.props)
        except (ValueError, InvalidConfigError) as e:
            raise ConfigError(str(e)) from None
