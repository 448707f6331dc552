"""Dynamic broker configs, and DescribeConfigs' view of every config (sources, synonyms, types).

Broker configs changed at run time (AlterConfigs / IncrementalAlterConfigs on the BROKER
resource) come in two scopes, as in Kafka: this broker (resource name ``"0"``, its node id) and
the cluster-wide default (resource name ``""``). Precedence, highest first: a topic override,
the per-broker dynamic value, the cluster-wide dynamic value, the properties file /
``--override`` (static), Kafka's default. The configs that can change this way are the broker
defaults of topic configs (``log.retention.ms``, ``log.segment.bytes``, ``message.max.bytes``,
``log.cleanup.policy``, ``compression.type``, ``min.insync.replicas`` ... the first broker
synonym of each topic config, Kafka's DynamicLogConfig set); a change reaches every topic
without an override of its own at once. Other broker properties are read-only (changing them
needs a restart), and altering one is refused with INVALID_REQUEST; so is a bad value (Kafka's
ConfigException there becomes INVALID_REQUEST too), the message worded as for a topic.

Persistence: ``<log.dir>/dynamic-broker-configs.json`` (minibroker's own; Kafka keeps these in
its metadata log), ``{"version": 1, "broker": {...}, "default": {...}}``, replaced atomically.

Config sources (Kafka's ConfigSource ids): 1 DYNAMIC_TOPIC_CONFIG, 2 DYNAMIC_BROKER_CONFIG,
3 DYNAMIC_DEFAULT_BROKER_CONFIG, 4 STATIC_BROKER_CONFIG, 5 DEFAULT_CONFIG. A config's source is
that of the first of its synonyms that has a value, synonyms being listed by source (dynamic
per-broker, dynamic default, static, Kafka's default) and, within one source, by precedence
(``log.retention.ms``, ``.minutes``, ``.hours``). As Kafka does, the list is cut before the
first entry with the described name itself: a topic's ``retention.ms`` follows
``log.retention.ms`` only, so with only ``log.retention.hours`` set its source is
DEFAULT_CONFIG with no synonyms (its value is still the one ``log.retention.hours`` gives). A
property that only follows from another (``broker.id`` from ``node.id``, ``advertised.listeners``
left unset: null) is DEFAULT_CONFIG.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping
from typing import NamedTuple

from .config import BROKER_DEFAULTS, BROKER_TYPES, BrokerConfig
from .security.listeners import is_sensitive, unprefixed
from .security.ssl_factory import KEYSTORE_PROPERTIES, SslConfigError, server_context
from .storage.config import BROKER_SYNONYMS, TOPIC_CONFIGS, LogConfig, parse_value
from .storage.errors import InvalidConfigError, StorageError
from .storage.fileutil import atomic_write

__all__ = ["DynamicBrokerConfig", "DynamicConfigError", "Entry", "ConfigSourceId", "DYNAMIC_BROKER_CONFIGS",
           "CONFIG_TYPES"]

logger = logging.getLogger(__name__)

FILE = "dynamic-broker-configs.json"


class ConfigSourceId:
    TOPIC = 1
    DYNAMIC_BROKER = 2
    DYNAMIC_DEFAULT_BROKER = 3
    STATIC_BROKER = 4
    DEFAULT = 5


#: DescribeConfigs v3+ config_type ids by our kinds
CONFIG_TYPES = {"bool": 1, "str": 2, "int": 3, "long": 5, "double": 6, "list": 7}

#: Broker properties that can be changed at run time: the first broker synonym of each topic config.
DYNAMIC_BROKER_CONFIGS = frozenset(d.broker_name for d in TOPIC_CONFIGS.values() if d.broker_name)

#: Kafka's default of the broker properties minibroker has (None: no default, i.e. null).
_NULL_DEFAULTS = {"advertised.listeners", "broker.id", "metrics.listeners", "fault.injection.listener"}

_BROKER_DOCS = {
    "listeners": "Where the broker listens: NAME://host:port, comma-separated (PLAINTEXT, SSL, SASL_PLAINTEXT,"
                 " SASL_SSL, or a name of listener.security.protocol.map).",
    "advertised.listeners": "Per listener, the address given to its clients in metadata; unset: the listener's.",
    "listener.security.protocol.map": "Each listener name's security protocol: NAME:PROTOCOL, comma-separated.",
    "ssl.keystore.type": "PEM or PKCS12 (a JKS file is refused; a PEM or PKCS12 file is recognised by its content).",
    "ssl.keystore.location": "The broker's key and certificate chain (PEM file, or PKCS12 with"
                             " ssl.keystore.password); per listener or changed at run time with the"
                             " listener.name.<name>. prefix.",
    "ssl.keystore.password": "The PKCS12 keystore's password.",
    "ssl.key.password": "The password of an encrypted private key.",
    "ssl.keystore.key": "The private key as inline PEM (with ssl.keystore.certificate.chain).",
    "ssl.keystore.certificate.chain": "The certificate chain as inline PEM (with ssl.keystore.key).",
    "ssl.truststore.type": "PEM or PKCS12: the CAs that client certificates must chain to.",
    "ssl.truststore.location": "The truststore file; unset: the system's CAs.",
    "ssl.truststore.password": "The PKCS12 truststore's password.",
    "ssl.truststore.certificates": "The trusted CAs as inline PEM.",
    "ssl.client.auth": "none, requested or required: whether a client certificate is asked for, or needed.",
    "ssl.enabled.protocols": "TLS versions accepted: TLSv1.2, TLSv1.3.",
    "ssl.protocol": "Kafka's SSLContext protocol; the versions are set by ssl.enabled.protocols.",
    "ssl.cipher.suites": "TLS 1.2 cipher suites (IANA or OpenSSL names); empty: the defaults.",
    "ssl.principal.mapping.rules": "Rules mapping a client certificate's subject to the principal name.",
    "ssl.endpoint.identification.algorithm": "A client setting (host name checking); the broker does not use it.",
    "sasl.enabled.mechanisms": "SASL mechanisms of SASL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512,"
                               " OAUTHBEARER (Kafka's default GSSAPI is refused).",
    "sasl.server.max.receive.size": "The largest frame accepted before a SASL login completes.",
    "connections.max.reauth.ms": "Sessions last at most this long, then clients re-authenticate (0: for ever).",
    "connection.failed.authentication.delay.ms": "Delay before a failed login's answer and close.",
    "sasl.oauthbearer.jwks.endpoint.url": "A file: URL of the JWKS whose keys sign OAUTHBEARER tokens; unset:"
                                          " unsecured tokens (tests only).",
    "sasl.oauthbearer.expected.audience": "Audiences a signed token must name (comma-separated); empty: any.",
    "sasl.oauthbearer.expected.issuer": "The issuer a signed token must name; empty: any.",
    "sasl.oauthbearer.scope.claim.name": "The claim holding a signed token's scopes.",
    "sasl.oauthbearer.sub.claim.name": "The claim holding a signed token's principal.",
    "sasl.oauthbearer.clock.skew.seconds": "Clock skew allowed when checking a signed token's times.",
    "connections.authentication.timeout.ms": "minibroker's own: close a connection whose TLS handshake and SASL"
                                             " login are not done within this.",
    "log.dirs": "The data directory (the first entry of the list).",
    "node.id": "This broker's id.",
    "broker.id": "This broker's id; follows node.id when unset.",
    "num.partitions": "Partitions of topics created without a count (auto-created ones included).",
    "auto.create.topics.enable": "Create a topic on a Metadata request or produce to an unknown one.",
    "authorizer.class.name": "The authorizer: empty (none: every request is allowed and the ACL APIs answer"
                             " SECURITY_DISABLED) or org.apache.kafka.metadata.authorizer.StandardAuthorizer"
                             " (ACLs enforced on every API); any other value refuses start-up.",
    "super.users": "Principals allowed everything whatever the ACLs, separated by semicolons"
                   " (User:admin;User:ops).",
    "allow.everyone.if.no.acl.found": "Allow a request on a resource no ACL applies to (false: deny it).",
    "delete.topic.enable": "Whether DeleteTopics is allowed.",
    "socket.request.max.bytes": "The largest request accepted.",
    "log.retention.check.interval.ms": "How often retention runs over every partition.",
    "log.flush.offset.checkpoint.interval.ms": "How often the recovery-point checkpoint is written.",
    "log.flush.start.offset.checkpoint.interval.ms": "How often the log-start-offset checkpoint is written.",
    "default.replication.factor": "Replicas of auto-created topics (one broker: 1).",
    "queued.max.requests": "Replies that may wait per connection before it is no longer read.",
    "max.connections": "Client connections accepted at once.",
    "max.connections.per.ip": "Client connections accepted at once from one address.",
    "connections.max.idle.ms": "Close connections idle this long (negative: never).",
    "max.incremental.fetch.session.cache.slots": "The most incremental fetch sessions kept (KIP-227).",
    "min.incremental.fetch.session.eviction.ms": "A fetch session idle this long may be evicted for a new one.",
    "max.request.partition.size.limit": "The most partitions a DescribeTopicPartitions response holds (a"
                                        " client's smaller response_partition_limit wins).",
    "producer.id.expiration.ms": "Forget an idempotent producer's state after this long without a write.",
    "producer.id.expiration.check.interval.ms": "How often expired producer ids are removed.",
    "metrics.listeners": "minibroker's own: where /metrics and /healthz are served; unset: off.",
    "metrics.group.partition.series.max": "minibroker's own: the most committed consumer-group partitions exported"
                                          " one by one (kafka_consumergroup_lag); other groups only as _sum.",
    "metrics.connections.max": "minibroker's own: HTTP connections to the metrics listener at once; a new one"
                               " closes the oldest that has not sent its request yet.",
    "metrics.connections.max.idle.ms": "minibroker's own: close a metrics connection that sent nothing this long.",
    "metrics.request.timeout.ms": "minibroker's own: time to send a whole request to the metrics listener, and"
                                  " again to read its reply.",
    "fault.injection.listener": "minibroker's own, for tests: where /faults is served; unset: off.",
    "message.max.decompressed.bytes": "minibroker's own: the most one compressed batch inflates to (and at most 64 x"
                                      " the topic's max.message.bytes); above it MESSAGE_TOO_LARGE.",
    "request.max.decompressed.bytes": "minibroker's own: the most the compressed batches of one Produce request"
                                      " inflate to in all; a partition past it gets MESSAGE_TOO_LARGE.",
    "broker.max.decompressed.bytes": "minibroker's own: the buffers of every batch being inflated at once; a batch"
                                     " waits up to 1 s for room, then REQUEST_TIMED_OUT.",
    "offsets.topic.num.partitions": "Partitions of __consumer_offsets, fixed when it is created.",
    "offsets.topic.segment.bytes": "segment.bytes of __consumer_offsets.",
    "offsets.topic.replication.factor": "Replicas of __consumer_offsets (one broker: 1).",
    "offsets.retention.minutes": "Committed offsets expire this long after their group became empty.",
    "offsets.retention.check.interval.ms": "How often expired offsets are removed.",
    "offsets.load.buffer.size": "Bytes read per chunk when __consumer_offsets is loaded at start-up.",
    "offset.metadata.max.bytes": "The largest metadata string an offset commit may carry.",
    "group.min.session.timeout.ms": "The shortest session timeout a member may ask for.",
    "group.max.session.timeout.ms": "The longest session timeout a member may ask for.",
    "group.max.size": "The most members a group may have.",
    "group.initial.rebalance.delay.ms": "How long a group leaving Empty waits for more members before its first"
                                        " generation (longer while more arrive).",
    "transaction.state.log.num.partitions": "Partitions of __transaction_state, fixed when it is created.",
    "transaction.state.log.segment.bytes": "segment.bytes of __transaction_state.",
    "transaction.state.log.replication.factor": "Replicas of __transaction_state (one broker: 1).",
    "transaction.state.log.load.buffer.size": "Bytes read per chunk when __transaction_state is loaded at start-up.",
    "transaction.max.timeout.ms": "The longest transaction.timeout.ms a producer may ask for.",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "How often transactions open longer than their"
                                                                   " timeout are aborted.",
    "transactional.id.expiration.ms": "A transactional id idle this long is removed.",
    "transaction.remove.expired.transaction.cleanup.interval.ms": "How often expired transactional ids are removed.",
    "log.cleaner.enable": "Whether compacted topics are cleaned.",
    "log.cleaner.threads": "Cleaner threads (each with its worker process in process mode).",
    "log.cleaner.dedupe.buffer.size": "Memory for the cleaners' key -> offset maps, over all threads.",
    "log.cleaner.io.buffer.size": "The size of a cleaner thread's read and write buffers.",
    "log.cleaner.io.buffer.load.factor": "How full a cleaner's offset map may get.",
    "log.cleaner.io.max.bytes.per.second": "The cleaners' read plus write rate, over all threads.",
    "log.cleaner.backoff.ms": "How long a cleaner thread sleeps when no log needs cleaning.",
    "log.cleaner.mode": "minibroker's own: where cleanings run: process (a worker process per cleaner thread) or"
                        " thread (in the broker's cleaner thread).",
}


class DynamicConfigError(StorageError):
    """An AlterConfigs of the broker resource that cannot be applied: ``error_code`` is
    INVALID_REQUEST, as in Kafka, whatever the cause (not a dynamic config, an unknown broker
    id, a bad value: Kafka answers INVALID_CONFIG for a topic's bad value only)."""

    def __init__(self, message: str, error_code: int) -> None:
        super().__init__(message)
        self.error_code = error_code


class Entry(NamedTuple):
    """One config of a DescribeConfigs answer."""

    name: str
    value: str | None
    source: int
    read_only: bool
    synonyms: list[tuple[str, str | None, int]]
    config_type: int
    documentation: str


def _all_synonym_names(name: str) -> list[str]:
    """Kafka's brokerConfigSynonyms: the broker properties that set the same thing, by precedence."""
    d = BROKER_SYNONYMS.get(name)
    if d is None or len(d.synonyms) == 1:
        return [name]
    return [s.name for s in d.synonyms]


class DynamicBrokerConfig:
    """The static broker config plus the dynamic per-broker and cluster-wide values."""

    def __init__(self, static: BrokerConfig, log_dir: str) -> None:
        self.static = static
        self.path = os.path.join(log_dir, FILE)
        self.per_broker: dict[str, str] = {}
        self.cluster_default: dict[str, str] = {}
        #: called with the effective properties once a per-broker keystore change is applied
        #: (the broker gives its TLS listeners a new server context)
        self.on_keystore_change: Callable[[Mapping[str, str]], None] | None = None
        self._load()

    def _load(self) -> None:
        try:
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
            self.per_broker = {k: str(v) for k, v in data.get("broker", {}).items()
                               if k in DYNAMIC_BROKER_CONFIGS or is_keystore_config(k)}
            self.cluster_default = {k: str(v) for k, v in data.get("default", {}).items()
                                    if k in DYNAMIC_BROKER_CONFIGS}
            self.log_config()  # still valid?
        except FileNotFoundError:
            pass
        except (OSError, ValueError, AttributeError, InvalidConfigError) as e:
            logger.error("ignoring %s (%s): no dynamic broker configs", self.path, e)
            self.per_broker, self.cluster_default = {}, {}

    def _persist(self) -> None:
        atomic_write(self.path, json.dumps({"version": 1, "broker": self.per_broker, "default": self.cluster_default},
                                           sort_keys=True, indent=1).encode())

    # ------------------------------------------------------------------ effective values

    def effective_props(self) -> dict[str, str]:
        return {**self.static.props, **self.cluster_default, **self.per_broker}

    def log_config(self, per_broker: Mapping[str, str] | None = None,
                   cluster_default: Mapping[str, str] | None = None) -> LogConfig:
        """The topic defaults the broker properties give (with the dynamic values given, or the
        current ones)."""
        props = {**self.static.props,
                 **(self.cluster_default if cluster_default is None else cluster_default),
                 **(self.per_broker if per_broker is None else per_broker)}
        return LogConfig.from_broker_properties(props)

    # ------------------------------------------------------------------ altering

    def check_resource(self, name: str) -> bool:
        """True for the per-broker resource (this node id), False for the cluster default
        (""); DynamicConfigError (INVALID_REQUEST) for another broker or a bad name."""
        if name == "":
            return False
        try:
            node = int(name)
        except ValueError:
            raise DynamicConfigError(f"Node id must be an integer, but it is: {name}", 42) from None
        if node != self.static.node_id:
            raise DynamicConfigError(f"Unexpected broker id, expected {self.static.node_id}, but received {name}", 42)
        return True

    def current(self, per_broker: bool) -> dict[str, str]:
        return dict(self.per_broker if per_broker else self.cluster_default)

    def prepare(self, per_broker: bool, values: Mapping[str, str]) -> LogConfig:
        """Check that ``values`` (the resource's whole new set of dynamic configs) may replace
        the current one: every name dynamic, every value valid. Returns the topic defaults they
        give. Raises DynamicConfigError."""
        resource = f"ConfigResource(type=BROKER, name='{self.static.node_id if per_broker else ''}')"
        fixed = sorted(k for k in values if k not in DYNAMIC_BROKER_CONFIGS
                       and not (per_broker and is_keystore_config(k)))
        if fixed:
            raise DynamicConfigError(f"Invalid config value for resource {resource}: Cannot update these configs"
                                     f" dynamically: Set({', '.join(fixed)})", 42)
        if per_broker and (self._keystore_values(values) or self.per_broker.keys() != values.keys()):
            props = {**self.static.props, **self.cluster_default, **values}
            for endpoint in self.static.endpoints:  # the new keystore must load, or nothing changes
                if endpoint.tls:
                    try:
                        server_context(props, endpoint.name)
                    except SslConfigError as e:
                        raise DynamicConfigError(f"Invalid config value for resource {resource}: Validation of"
                                                 f" dynamic config update of SSLFactory failed: {e}", 42) from None
        try:
            for k, v in values.items():
                if k in BROKER_SYNONYMS:  # a topic default (keystore properties were checked above)
                    parse_value(BROKER_SYNONYMS[k], v, k)
            if per_broker:
                return self.log_config(per_broker=values)
            return self.log_config(cluster_default=values)
        except InvalidConfigError as e:
            # INVALID_REQUEST, not INVALID_CONFIG: Kafka turns every failed validation of a broker
            # resource's configs into INVALID_REQUEST (its KAFKA-13609, kept for compatibility)
            raise DynamicConfigError(str(e), 42) from None

    def apply(self, per_broker: bool, values: Mapping[str, str]) -> LogConfig:
        """``prepare``, then make ``values`` the resource's dynamic configs and persist them."""
        config = self.prepare(per_broker, values)
        # a keystore named again is read again (Kafka reloads a rewritten file at the same path)
        keystore_changed = per_broker and (bool(self._keystore_values(values)) or
                                           self._keystore_values(values) != self._keystore_values(self.per_broker))
        if per_broker:
            self.per_broker = dict(values)
        else:
            self.cluster_default = dict(values)
        self._persist()
        logger.info("dynamic %s configs are now %s", "broker" if per_broker else "cluster-wide default",
                    {k: "[hidden]" if is_sensitive(k) else v for k, v in values.items()} or "empty")
        if keystore_changed and self.on_keystore_change is not None:
            self.on_keystore_change(self.effective_props())
        return config

    @staticmethod
    def _keystore_values(values: Mapping[str, str]) -> dict[str, str]:
        return {k: v for k, v in values.items() if is_keystore_config(k)}

    # ------------------------------------------------------------------ describing

    def _static_default(self, name: str) -> str | None:
        if name in _NULL_DEFAULTS:
            return None
        if name in BROKER_DEFAULTS:
            return BROKER_DEFAULTS[name]
        d = BROKER_SYNONYMS.get(name)
        if d is not None:
            return next(s.default for s in d.synonyms if s.name == name)
        return None

    def _synonyms(self, name: str, per_broker: bool = True) -> list[tuple[str, str | None, int]]:
        names = _all_synonym_names(name)
        static = {k: self.static.props[k] for k in self.static.explicit if k in self.static.props}
        out: list[tuple[str, str | None, int]] = []
        for source, values in ((ConfigSourceId.DYNAMIC_BROKER, self.per_broker),
                               (ConfigSourceId.DYNAMIC_DEFAULT_BROKER, self.cluster_default),
                               (ConfigSourceId.STATIC_BROKER, static)):
            out += [(n, values[n], source) for n in names if n in values]
        for n in names:
            default = self._static_default(n)
            if default is not None:
                out.append((n, default, ConfigSourceId.DEFAULT))
        if not per_broker:
            out = [s for s in out if s[2] == ConfigSourceId.DYNAMIC_DEFAULT_BROKER]
        while out and out[0][0] != name:
            out.pop(0)
        return out

    def describe_topic(self, overrides: Mapping[str, str], config: LogConfig) -> list[Entry]:
        """Every topic config of a topic with ``overrides`` and effective ``config``."""
        out = []
        for name, value in config.to_properties().items():
            d = TOPIC_CONFIGS[name]
            synonyms = self._synonyms(d.broker_name) if d.broker_name else []
            if name in overrides:
                synonyms.insert(0, (name, value, ConfigSourceId.TOPIC))
            source = synonyms[0][2] if synonyms else ConfigSourceId.DEFAULT
            out.append(Entry(name, value, source, False, synonyms, CONFIG_TYPES[d.kind], d.doc))
        return out

    def _broker_value(self, name: str) -> str | None:
        if name == "broker.id":
            return str(self.static.node_id)
        props = self.effective_props()
        if name in props and not (name in _NULL_DEFAULTS and props[name] == ""):
            return props[name]
        return self._static_default(name)

    def describe_broker(self, per_broker: bool) -> list[Entry]:
        """The per-broker resource: every broker property. The cluster-default resource: the
        cluster-wide dynamic configs only."""
        names = sorted(set(BROKER_DEFAULTS) | set(BROKER_SYNONYMS) | set(self.static.props) | set(self.per_broker)) \
            if per_broker \
            else sorted(self.cluster_default)
        out = []
        for name in names:
            value = self._broker_value(name) if per_broker else self.cluster_default[name]
            synonyms = self._synonyms(name, per_broker)
            source = synonyms[0][2] if synonyms else ConfigSourceId.DEFAULT
            if is_sensitive(name):  # Kafka's PASSWORD type: never shown
                value, synonyms = None, [(n, None, s) for n, _, s in synonyms]
            out.append(Entry(name, value, source, name not in DYNAMIC_BROKER_CONFIGS and not is_keystore_config(name),
                             synonyms, _broker_type(name), _broker_doc(name)))
        return out


def is_keystore_config(name: str) -> bool:
    """A TLS keystore property (plain or listener-prefixed): changeable per broker at run time."""
    return unprefixed(name) in KEYSTORE_PROPERTIES


def _broker_type(name: str) -> int:
    if is_sensitive(name):
        return 9  # PASSWORD
    if name in BROKER_TYPES:
        return CONFIG_TYPES[BROKER_TYPES[name][0]]
    d = BROKER_SYNONYMS.get(name)
    if d is not None:
        factor = next(s.factor for s in d.synonyms if s.name == name)
        return CONFIG_TYPES["int" if factor != 1 else d.kind]
    return CONFIG_TYPES["str"] if name in BROKER_DEFAULTS else 0


def _broker_doc(name: str) -> str:
    d = BROKER_SYNONYMS.get(name)
    if d is not None:
        return f"The default of topic config {d.name}. {d.doc}"
    return _BROKER_DOCS.get(name, "")

