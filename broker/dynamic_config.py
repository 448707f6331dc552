"""Dynamic broker configs, and DescribeConfigs' view of every config (sources, synonyms, types).

Broker configs changed at run time (AlterConfigs / IncrementalAlterConfigs on the BROKER
resource) come in two scopes, as in Kafka: this broker (resource name ``"0"``, its node id) and
the cluster-wide default (resource name ``""``). Precedence, highest first: a topic override,
the per-broker dynamic value, the cluster-wide dynamic value, the properties file /
``--override`` (static), Kafka's default.

Which configs are dynamic: Kafka's (DynamicBrokerConfig.AllDynamicConfigs and its broker quota
configs), as far as minibroker knows them (KAFKA_DYNAMIC):

- the broker defaults of topic configs (``log.retention.ms``, ``log.segment.bytes``,
  ``message.max.bytes``, ``log.cleanup.policy``, ``compression.type``, ``min.insync.replicas``
  ... the first broker synonym of each topic config, Kafka's DynamicLogConfig set); a change
  reaches every topic without an override of its own at once;
- the key and trust stores (``ssl.keystore.location``, ``.password``, ``.type``, ``.key``,
  ``.certificate.chain``, ``ssl.key.password``, ``ssl.truststore.*``: Kafka's
  SslConfigs.RECONFIGURABLE_CONFIGS), per broker and only with a listener prefix
  (``listener.name.<l>.ssl.keystore.location``); unprefixed they are refused as Kafka refuses
  them ("These security configs can be dynamically updated only per-listener using the listener
  prefix"). Acted on: the new stores are loaded and checked first, then new connections of each
  TLS listener use them (a store named again is read again); the listener's other TLS
  settings stay as they were, as Kafka's SslFactory keeps them;
- Kafka's other listener configs (DynamicListenerConfig): ``listeners``,
  ``listener.security.protocol.map``, ``principal.builder.class``, the other ``ssl.*``
  (``ssl.client.auth``, ``ssl.cipher.suites``, ``ssl.enabled.protocols``, ``ssl.protocol`` ...),
  ``sasl.enabled.mechanisms``, ``sasl.jaas.config``, ``sasl.mechanism.inter.broker.protocol``,
  ``sasl.kerberos.*``, ``sasl.login.refresh.*``, unprefixed or with a listener (and for SASL
  login settings, mechanism) prefix; per broker only ("Cannot update these configs at default
  cluster level, broker id must be specified"). A change is checked by building every listener
  from the new properties, as the next start will (GSSAPI, a JAAS entry that does not parse,
  an unreadable store are refused). The listeners themselves cannot change (Kafka in KRaft
  mode refuses a change of a broker's registered endpoints: "Advertised listeners cannot be
  altered when using a Raft-based metadata quorum."; a listener's security protocol: "Security
  protocol cannot be updated for existing listener"). Stored and described, used from the next
  start (as Kafka, which does not rebuild an existing listener's channel for them): ``ssl.*``
  other than the stores, ``sasl.enabled.mechanisms``, JAAS entries. Stored and described only,
  minibroker has no use for them: ``sasl.kerberos.*`` (no Kerberos), ``sasl.login.refresh.*``
  and ``sasl.mechanism.inter.broker.protocol`` (the broker logs in to no other broker),
  ``principal.builder.class``, ``ssl.provider``, ``ssl.keymanager.algorithm``,
  ``ssl.trustmanager.algorithm``, ``ssl.secure.random.implementation``,
  ``ssl.engine.factory.class`` (Java classes and providers);
- cluster-wide or per broker: ``max.connections`` and ``max.connections.per.ip`` (acted on: new
  connections are counted against the new limits; a listener-prefixed ``max.connections`` is
  stored only, minibroker counts all listeners together); stored and described only:
  ``max.connection.creation.rate``, ``max.connections.per.ip.overrides``, the thread pools
  (``num.io.threads``, ``num.network.threads``, ``num.replica.fetchers``,
  ``num.recovery.threads.per.data.dir``, ``background.threads``: minibroker has one event loop;
  a new count must still be at least half and at most double the current one, Kafka's
  DynamicThreadPool rule), ``metric.reporters``, ``transaction.partition.verification.enable``,
  the replication quotas (``leader.replication.throttled.rate`` ...).

Other broker properties are read-only (INVALID_REQUEST "Cannot update these configs
dynamically"), among them some that Kafka can change and minibroker reads only at start:
``log.cleaner.*`` (Kafka restarts its cleaner threads), ``producer.id.expiration.ms``; and Kafka's
remote-storage ones (``remote.log.manager.*``, ``remote.fetch.max.wait.ms`` ...), which
minibroker does not have. Kafka accepts names it does
not know (custom configs); minibroker refuses them. A bad value is refused with INVALID_REQUEST
too (Kafka's ConfigException there becomes INVALID_REQUEST: its KAFKA-13609), the message
worded as Kafka's (``Invalid value x for configuration y: Not a number of type LONG``; of a
listener-prefixed name, the unprefixed one is named, as Kafka validates it so). Messages are
prefixed ``Invalid config value for resource ConfigResource(type=BROKER, name='0'):``.

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
left unset: null) is DEFAULT_CONFIG. A listener's own value
(``listener.name.<l>.<config>``) has the config it overrides as its next synonyms. Sensitive
values (Kafka's PASSWORD type: passwords, private keys, certificates given inline, JAAS entries,
prefixed forms included) are described as null and never logged. ``read_only`` is Kafka's: a
config is read-only unless its (unprefixed) name is one of the dynamic ones, so a
listener-prefixed name is described read-only though it can be changed, and ``listeners`` is
not though a change of its value is refused.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

from .config import BROKER_DEFAULTS, BROKER_TYPES, BrokerConfig, ConfigError, check_value
from .security.listener_security import ListenerSecurity, SecurityConfigError
from .security.listeners import is_sensitive
from .security.ssl_factory import SslConfigError, server_context
from .storage.config import BROKER_SYNONYMS, TOPIC_CONFIGS, LogConfig, parse_value
from .storage.errors import InvalidConfigError, StorageError
from .storage.fileutil import atomic_write

__all__ = ["DynamicBrokerConfig", "DynamicConfigError", "Entry", "ConfigSourceId", "DYNAMIC_BROKER_CONFIGS",
           "CONFIG_TYPES", "SSL_STORE_CONFIGS", "KAFKA_DYNAMIC", "listener_base", "list_default", "with_new_stores"]

logger = logging.getLogger(__name__)

FILE = "dynamic-broker-configs.json"


class ConfigSourceId:
    TOPIC = 1
    DYNAMIC_BROKER = 2
    DYNAMIC_DEFAULT_BROKER = 3
    STATIC_BROKER = 4
    DEFAULT = 5


#: DescribeConfigs v3+ config_type ids by our kinds
CONFIG_TYPES = {"bool": 1, "str": 2, "int": 3, "short": 4, "long": 5, "double": 6, "list": 7, "class": 8,
                "password": 9}


class DynamicDef(NamedTuple):
    """One of Kafka's dynamic broker configs other than the topic defaults."""

    kind: str  # a CONFIG_TYPES key
    default: str | None  # Kafka's default (None: null), for the names BROKER_DEFAULTS does not have
    per_broker: bool  # Kafka's PerBrokerConfigs: refused at the cluster default
    at_least: int | None = None  # Kafka's Range.atLeast


_INT_MAX, _LONG_MAX = str(2**31 - 1), str(2**63 - 1)

#: Kafka's SslConfigs.RECONFIGURABLE_CONFIGS (its DynamicSecurityConfigs): the key and trust
#: stores, changeable only per listener (``listener.name.<l>.<name>``) and per broker.
SSL_STORE_CONFIGS = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password", "ssl.keystore.key",
    "ssl.keystore.certificate.chain", "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.truststore.certificates"})

#: Kafka's dynamic broker configs besides the topic defaults (DynamicBrokerConfig.AllDynamicConfigs
#: and the broker quota configs), with their types and Kafka's defaults; see the module docstring
#: for what minibroker does with each.
KAFKA_DYNAMIC: dict[str, DynamicDef] = {
    # the stores (SslConfigs.RECONFIGURABLE_CONFIGS)
    "ssl.keystore.type": DynamicDef("str", "JKS", True),
    "ssl.keystore.location": DynamicDef("str", None, True),
    "ssl.keystore.password": DynamicDef("password", None, True),
    "ssl.key.password": DynamicDef("password", None, True),
    "ssl.keystore.key": DynamicDef("password", None, True),
    "ssl.keystore.certificate.chain": DynamicDef("password", None, True),
    "ssl.truststore.type": DynamicDef("str", "JKS", True),
    "ssl.truststore.location": DynamicDef("str", None, True),
    "ssl.truststore.password": DynamicDef("password", None, True),
    "ssl.truststore.certificates": DynamicDef("password", None, True),
    # DynamicListenerConfig.ReconfigurableConfigs: listeners, TLS, SASL (per broker);
    # advertised.listeners is not among them in Kafka 4 (KRaft), which describes it read-only
    "listeners": DynamicDef("str", None, True),
    "listener.security.protocol.map": DynamicDef("str", None, True),
    "principal.builder.class": DynamicDef(
        "class", "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder", True),
    "ssl.protocol": DynamicDef("str", "TLSv1.3", True),
    "ssl.provider": DynamicDef("str", None, True),
    "ssl.cipher.suites": DynamicDef("list", "", True),
    "ssl.enabled.protocols": DynamicDef("list", "TLSv1.2,TLSv1.3", True),
    "ssl.keymanager.algorithm": DynamicDef("str", "SunX509", True),
    "ssl.trustmanager.algorithm": DynamicDef("str", "PKIX", True),
    "ssl.endpoint.identification.algorithm": DynamicDef("str", "https", True),
    "ssl.secure.random.implementation": DynamicDef("str", None, True),
    "ssl.client.auth": DynamicDef("str", "none", True),
    "ssl.engine.factory.class": DynamicDef("class", None, True),
    "sasl.mechanism.inter.broker.protocol": DynamicDef("str", "GSSAPI", True),
    "sasl.jaas.config": DynamicDef("password", None, True),
    "sasl.enabled.mechanisms": DynamicDef("list", "GSSAPI", True),
    "sasl.kerberos.service.name": DynamicDef("str", None, True),
    "sasl.kerberos.kinit.cmd": DynamicDef("str", "/usr/bin/kinit", True),
    "sasl.kerberos.ticket.renew.window.factor": DynamicDef("double", "0.8", True),
    "sasl.kerberos.ticket.renew.jitter": DynamicDef("double", "0.05", True),
    "sasl.kerberos.min.time.before.relogin": DynamicDef("long", "60000", True),
    "sasl.kerberos.principal.to.local.rules": DynamicDef("list", "DEFAULT", True),
    "sasl.login.refresh.window.factor": DynamicDef("double", "0.8", True),
    "sasl.login.refresh.window.jitter": DynamicDef("double", "0.05", True),
    "sasl.login.refresh.min.period.seconds": DynamicDef("short", "60", True),
    "sasl.login.refresh.buffer.seconds": DynamicDef("short", "300", True),
    # the listener configs Kafka allows at the cluster default too (ClusterLevelListenerConfigs)
    "max.connections": DynamicDef("int", _INT_MAX, False, 0),
    "max.connection.creation.rate": DynamicDef("int", _INT_MAX, False, 0),
    "num.network.threads": DynamicDef("int", "3", False, 1),
    # SocketServer.ReconfigurableConfigs
    "max.connections.per.ip": DynamicDef("int", _INT_MAX, False, 0),
    "max.connections.per.ip.overrides": DynamicDef("str", "", False),
    # DynamicThreadPool.ReconfigurableConfigs
    "num.io.threads": DynamicDef("int", "8", False, 1),
    "num.replica.fetchers": DynamicDef("int", "1", False),
    "num.recovery.threads.per.data.dir": DynamicDef("int", "1", False, 1),
    "background.threads": DynamicDef("int", "10", False, 1),
    # DynamicMetricsReporters, DynamicProducerStateManagerConfig, the broker quotas
    "metric.reporters": DynamicDef("list", "", False),
    "transaction.partition.verification.enable": DynamicDef("bool", "true", False),
    "leader.replication.throttled.rate": DynamicDef("long", _LONG_MAX, False, 0),
    "follower.replication.throttled.rate": DynamicDef("long", _LONG_MAX, False, 0),
    "replica.alter.log.dirs.io.max.bytes.per.second": DynamicDef("long", _LONG_MAX, False, 0),
}

#: Broker properties that can be changed at run time (unprefixed names): the first broker
#: synonym of each topic config, and KAFKA_DYNAMIC.
DYNAMIC_BROKER_CONFIGS = frozenset([d.broker_name for d in TOPIC_CONFIGS.values() if d.broker_name]
                                   + list(KAFKA_DYNAMIC))

#: Kafka's DynamicThreadPool configs (and num.network.threads): a new value must be at least half
#: the current one and at most double it
_THREAD_COUNTS = ("num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir",
                  "background.threads", "num.network.threads")
#: listener configs Kafka allows at the cluster default, with a listener prefix too
_CLUSTER_LEVEL_LISTENER_CONFIGS = frozenset({"max.connections", "max.connection.creation.rate",
                                             "num.network.threads"})
#: Kafka's ListenerMechanismConfigs: ``listener.name.<l>.<mechanism>.<config>``
_MECHANISM_CONFIGS = ("sasl.jaas.config", "sasl.login.callback.handler.class", "sasl.login.class",
                      "sasl.server.callback.handler.class", "connections.max.reauth.ms")
_LISTENER_CONFIG = re.compile(r"listener\.name\.[^.]*\.(.*)", re.DOTALL)
#: what the broker builds its listeners from: a change of one of these is checked by building them
_LISTENER_NAMES = frozenset({"listeners", "advertised.listeners", "listener.security.protocol.map"})

#: Kafka's default of the broker properties minibroker has (None: no default, i.e. null).
_NULL_DEFAULTS = {"advertised.listeners", "broker.id", "metrics.listeners", "fault.injection.listener",
                  "schema.registry.listeners"}

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
    "quota.window.num": "The number of samples a client quota's rate (producer_byte_rate, consumer_byte_rate,"
                        " request_percentage, connection_creation_rate) is measured over.",
    "quota.window.size.seconds": "The time span of each sample of a client quota's rate.",
    "controller.quota.window.num": "The number of samples of a controller_mutation_rate quota (its burst is"
                                   " samples x window x rate).",
    "controller.quota.window.size.seconds": "The time span of each sample of a controller_mutation_rate quota.",
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
    "schema.registry.listeners": "minibroker's own: where the built-in schema registry (Confluent's REST API,"
                                 " state in _schemas) is served, http://host:port; unset: off.",
    "schema.registry.authentication": "minibroker's own: none, or basic: every registry request needs HTTP Basic"
                                      " credentials of a SCRAM user of the broker (Confluent's"
                                      " authentication.method=BASIC).",
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
    "group.coordinator.rebalance.protocols": "The group protocols served: classic, and consumer (KIP-848's"
                                             " ConsumerGroupHeartbeat).",
    "group.consumer.session.timeout.ms": "A KIP-848 member not heard from for this long is fenced.",
    "group.consumer.min.session.timeout.ms": "The lowest group.consumer.session.timeout.ms allowed.",
    "group.consumer.max.session.timeout.ms": "The highest group.consumer.session.timeout.ms allowed.",
    "group.consumer.heartbeat.interval.ms": "How often KIP-848 members are told to heartbeat.",
    "group.consumer.min.heartbeat.interval.ms": "The lowest group.consumer.heartbeat.interval.ms allowed.",
    "group.consumer.max.heartbeat.interval.ms": "The highest group.consumer.heartbeat.interval.ms allowed.",
    "group.consumer.max.size": "The most members a KIP-848 consumer group may have.",
    "group.consumer.assignors": "The server-side assignors (uniform, range); the first is the default.",
    "group.consumer.assignment.offload.min.members": "minibroker's own: a KIP-848 group with this many members"
    " or more computes its target assignment in a worker thread instead of in the heartbeat that needs it.",
    "group.share.session.timeout.ms": "A share-group member not heard from for this long is removed.",
    "group.share.heartbeat.interval.ms": "How often share-group members are told to heartbeat.",
    "group.share.max.size": "The most members a share group may have.",
    "group.share.record.lock.duration.ms": "How long a record a share consumer acquired stays locked to it.",
    "group.share.delivery.count.limit": "Deliveries of a record after which it is archived instead of delivered again.",
    "group.share.partition.max.record.locks": "The most records in flight (acquired or not yet done with) per"
                                              " share-partition.",
    "group.share.max.share.sessions": "The most share sessions (ShareFetch) the broker keeps.",
    "group.consumer.migration.policy": "Which online migrations between the classic and consumer protocols are"
                                       " allowed: bidirectional, upgrade, downgrade or disabled.",
    "transaction.state.log.num.partitions": "Partitions of __transaction_state, fixed when it is created.",
    "transaction.state.log.segment.bytes": "segment.bytes of __transaction_state.",
    "transaction.state.log.replication.factor": "Replicas of __transaction_state (one broker: 1).",
    "transaction.state.log.load.buffer.size": "Bytes read per chunk when __transaction_state is loaded at start-up.",
    "share.coordinator.state.topic.num.partitions": "Partitions of __share_group_state (share groups' delivery"
                                                    " state), fixed when it is created.",
    "share.coordinator.state.topic.segment.bytes": "segment.bytes of __share_group_state.",
    "share.coordinator.state.topic.replication.factor": "Replicas of __share_group_state (one broker: 1).",
    "share.coordinator.snapshot.update.records.per.snapshot": "ShareUpdate records written for a share-partition"
                                                              " between two ShareSnapshot records (0-500).",
    "share.coordinator.load.buffer.size": "Bytes read per chunk when __share_group_state is loaded at start-up.",
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


#: the documentation of Kafka's dynamic configs that minibroker stores and describes but does not use
_KAFKA_ONLY_DOC = "Kafka's; minibroker stores and describes it (dynamic) but does not use it."
_KAFKA_ONLY_DOCS = {
    "sasl.kerberos.min.time.before.relogin": "Kafka's login thread's wait between refresh attempts (Kerberos);"
                                             " minibroker has no Kerberos: stored and described only.",
    "sasl.kerberos.service.name": "Kafka's Kerberos principal name; minibroker has no Kerberos: stored and described"
                                  " only.",
    "sasl.kerberos.kinit.cmd": "Kafka's Kerberos kinit command; minibroker has no Kerberos: stored and described only.",
    "sasl.kerberos.ticket.renew.window.factor": "Kafka's Kerberos ticket renewal point; minibroker has no Kerberos:"
                                                " stored and described only.",
    "sasl.kerberos.ticket.renew.jitter": "Kafka's Kerberos renewal jitter; minibroker has no Kerberos: stored and"
                                         " described only.",
    "sasl.kerberos.principal.to.local.rules": "Kafka's Kerberos principal mapping; minibroker has no Kerberos: stored"
                                              " and described only.",
    "sasl.login.refresh.window.factor": "Kafka's refresh point of the broker's own login (OAUTHBEARER); minibroker"
                                        " logs in to no one: stored and described only.",
    "sasl.login.refresh.window.jitter": "Kafka's jitter of the broker's own login refresh; stored and described only.",
    "sasl.login.refresh.min.period.seconds": "Kafka's minimum wait between refreshes of the broker's own login;"
                                             " stored and described only.",
    "sasl.login.refresh.buffer.seconds": "Kafka's buffer before the broker's own credential expires; stored and"
                                         " described only.",
    "sasl.mechanism.inter.broker.protocol": "Kafka's SASL mechanism between brokers; minibroker is one broker: stored"
                                            " and described only.",
    "sasl.jaas.config": "A JAAS login entry; the broker reads listener.name.<l>.<mechanism>.sasl.jaas.config (PLAIN"
                        " users, OAUTHBEARER options) at start.",
    "background.threads": "Kafka's background thread pool; minibroker's tasks share its event loop: stored and"
                          " described only.",
    "num.io.threads": "Kafka's request handler threads; minibroker handles requests on its event loop: stored and"
                      " described only.",
    "num.network.threads": "Kafka's network threads per listener; minibroker has one event loop: stored and described"
                           " only.",
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


def listener_base(name: str) -> str | None:
    """The config a ``listener.name.<l>.[<mechanism>.]<config>`` name sets for one listener
    (Kafka's ListenerConfigRegex and ListenerMechanismConfigs), or None for another name."""
    m = _LISTENER_CONFIG.fullmatch(name)
    if m is None:
        return None
    base = m.group(1)
    return next((c for c in _MECHANISM_CONFIGS if base.endswith(c)), base)


def _is_dynamic(name: str) -> bool:
    """Kafka accepts ``name`` in a dynamic broker config change (minibroker: only names it
    knows; a listener-prefixed name of a listener, TLS, SASL or connection config)."""
    if name in DYNAMIC_BROKER_CONFIGS:
        return True
    base = listener_base(name)
    return base is not None and base in KAFKA_DYNAMIC


def _is_per_broker(name: str) -> bool:
    """Kafka's perBrokerConfigs: refused at the cluster default."""
    base = listener_base(name)
    if base is not None:
        return base not in _CLUSTER_LEVEL_LISTENER_CONFIGS
    d = KAFKA_DYNAMIC.get(name)
    return d is not None and d.per_broker


def _is_store(name: str) -> bool:
    return listener_base(name) in SSL_STORE_CONFIGS


def _is_listener_config(name: str) -> bool:
    """A change that the listeners are built again from, to check it (the next start builds them so)."""
    base = listener_base(name) or name
    return base in KAFKA_DYNAMIC and KAFKA_DYNAMIC[base].per_broker


def list_default(name: str) -> str | None:
    """Kafka's default of a LIST-typed dynamic broker config (for APPEND and SUBTRACT), None
    for a config of another type."""
    base = listener_base(name) or name
    d = KAFKA_DYNAMIC.get(base)
    if d is None or d.kind != "list":
        return None
    return BROKER_DEFAULTS.get(base, d.default or "")


def _check_type(name: str, value: str) -> None:
    """Kafka's ConfigDef parse of a dynamic config's value (``name`` unprefixed); ConfigError."""
    if name in BROKER_TYPES:
        check_value(name, value, *BROKER_TYPES[name])
        return
    d = KAFKA_DYNAMIC.get(name)
    if d is None:
        return
    if d.kind == "double":
        try:
            float(value.strip())
        except ValueError:
            raise ConfigError(f"Invalid value {value} for configuration {name}: Not a number of type DOUBLE") from None
    elif d.kind in ("bool", "int", "long"):
        check_value(name, value, d.kind, d.at_least, None)
    elif d.kind == "short":
        try:
            n = int(value.strip())
        except ValueError:
            n = None
        if n is None or not -(1 << 15) <= n < (1 << 15):
            raise ConfigError(f"Invalid value {value} for configuration {name}: Not a number of type SHORT")


def _kafka_set(names: Iterable[str]) -> str:
    return f"Set({', '.join(sorted(names))})"


def _all_synonym_names(name: str) -> list[str]:
    """Kafka's brokerConfigSynonyms: the broker properties that set the same thing, by
    precedence (a listener's own config, then the config it overrides)."""
    base = listener_base(name)
    if base is not None:
        return [name, base]
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
        #: called with the effective properties once a per-broker key or trust store change is
        #: applied (the broker gives its TLS listeners a new server context)
        self.on_keystore_change: Callable[[Mapping[str, str]], None] | None = None
        #: called with the effective properties after every change (the broker applies
        #: max.connections and max.connections.per.ip)
        self.on_change: Callable[[Mapping[str, str]], None] | None = None
        self._load()

    def _load(self) -> None:
        try:
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
            per_broker = {k: str(v) for k, v in data.get("broker", {}).items()}
            cluster_default = {k: str(v) for k, v in data.get("default", {}).items()}
        except FileNotFoundError:
            return
        except (OSError, ValueError, AttributeError) as e:
            logger.error("ignoring %s (%s): no dynamic broker configs", self.path, e)
            return
        # as Kafka (fromPersistentProps): what is no longer valid is dropped, one by one
        self.per_broker = self._valid_part(per_broker, True)
        self.cluster_default = self._valid_part(cluster_default, False)

    def _valid_part(self, values: dict[str, str], per_broker: bool) -> dict[str, str]:
        kept: dict[str, str] = {}
        for k, v in values.items():
            try:
                self._check_names_and_types(per_broker, {k: v})
                if k in BROKER_SYNONYMS:
                    parse_value(BROKER_SYNONYMS[k], v, k)
            except (ConfigError, InvalidConfigError) as e:
                logger.error("ignoring the dynamic %s config %s of %s: %s", "broker" if per_broker else "default", k,
                             self.path, e)
                continue
            kept[k] = v
        try:
            self.log_config(**{"per_broker" if per_broker else "cluster_default": kept})
        except InvalidConfigError as e:
            logger.error("ignoring the dynamic %s configs of %s (%s)", "broker" if per_broker else "default",
                         self.path, e)
            return {}
        return kept

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

    @staticmethod
    def _check_names_and_types(per_broker: bool, values: Mapping[str, str]) -> None:
        """Kafka's DynamicBrokerConfig.validateConfigs, in its order; ConfigError."""
        fixed = [k for k in values if not _is_dynamic(k)]
        if fixed:
            raise ConfigError(f"Cannot update these configs dynamically: {_kafka_set(fixed)}")
        unprefixed_stores = [k for k in values if k in SSL_STORE_CONFIGS]
        if unprefixed_stores:
            raise ConfigError("These security configs can be dynamically updated only per-listener using the"
                              f" listener prefix: {_kafka_set(unprefixed_stores)}")
        for k, v in values.items():
            _check_type(listener_base(k) or k, v)
        if not per_broker:
            broker_only = [k for k in values if _is_per_broker(k)]
            if broker_only:
                raise ConfigError("Cannot update these configs at default cluster level, broker id must be specified:"
                                  f" {_kafka_set(broker_only)}")

    def prepare(self, per_broker: bool, values: Mapping[str, str]) -> LogConfig:
        """Check that ``values`` (the resource's whole new set of dynamic configs) may replace
        the current one: every name dynamic (and allowed at this level), every value valid,
        the listeners still buildable from them. Returns the topic defaults they give. Raises
        DynamicConfigError (INVALID_REQUEST, whatever the cause: Kafka's KAFKA-13609)."""
        resource = f"ConfigResource(type=BROKER, name='{self.static.node_id if per_broker else ''}')"
        try:
            self._check_names_and_types(per_broker, values)
            for k, v in values.items():
                if k in BROKER_SYNONYMS:
                    parse_value(BROKER_SYNONYMS[k], v, k)
            config = self.log_config(**{"per_broker" if per_broker else "cluster_default": values})
            current = self.effective_props()
            new = {**self.static.props, **self.cluster_default, **values} if per_broker \
                else {**self.static.props, **values, **self.per_broker}
            self._check_thread_counts(current, new)
            old = self.per_broker if per_broker else self.cluster_default
            changed = {k for k in set(values) | set(old) if values.get(k) != old.get(k)}
            if any(_is_listener_config(k) for k in changed) or any(_is_store(k) for k in values):
                self._check_listeners(new)
            return config
        except (ConfigError, InvalidConfigError) as e:
            raise DynamicConfigError(f"Invalid config value for resource {resource}: {e}", 42) from None

    @staticmethod
    def _check_thread_counts(current: Mapping[str, str], new: Mapping[str, str]) -> None:
        def count(props: Mapping[str, str], k: str) -> int:
            try:
                return int(props.get(k, "").strip())
            except ValueError:  # unset (or a static value minibroker never read): Kafka's default
                return int(KAFKA_DYNAMIC[k].default or "0")

        for k in _THREAD_COUNTS:
            old_value, new_value = count(current, k), count(new, k)
            if new_value == old_value:
                continue
            error = f"Dynamic thread count update validation failed for {k}={new_value}"
            if new_value <= 0:
                raise ConfigError(f"{error}, value should be at least 1")
            if new_value < old_value // 2:
                raise ConfigError(f"{error}, value should be at least half the current value {old_value}")
            if new_value > old_value * 2:
                raise ConfigError(f"{error}, value should not be greater than double the current value {old_value}")

    def _check_listeners(self, props: Mapping[str, str]) -> None:
        """The listeners stay the same (Kafka in KRaft mode cannot change a broker's registration),
        and each one's security builds from ``props`` (what the next start builds); a changed
        store loads as the running listener will load it (its other TLS settings unchanged)."""
        new = BrokerConfig(dict(props))
        try:
            endpoints, advertised = new.endpoints, new.advertised_endpoints
        except ConfigError as e:
            raise ConfigError(f"Invalid dynamic configuration: {e}") from None
        old = {o.name: o for o in self.static.endpoints}
        for n in endpoints:
            if n.name in old and n.security_protocol != old[n.name].security_protocol:
                raise ConfigError(f"Security protocol cannot be updated for existing listener {n.name}")
        if advertised != self.static.advertised_endpoints or {n.name: n for n in endpoints} != old:
            raise ConfigError("Advertised listeners cannot be altered when using a Raft-based metadata quorum.")
        running = with_new_stores(self.effective_props(), props)
        for endpoint in self.static.endpoints:
            try:
                ListenerSecurity(props, endpoint)
                if endpoint.tls:
                    server_context(running, endpoint.name)
            except (SecurityConfigError, SslConfigError) as e:
                raise ConfigError(f"Invalid dynamic configuration: {e}") from None

    def apply(self, per_broker: bool, values: Mapping[str, str]) -> LogConfig:
        """``prepare``, then make ``values`` the resource's dynamic configs and persist them."""
        config = self.prepare(per_broker, values)
        # a store named again is read again (Kafka reloads a rewritten file at the same path)
        old = self.per_broker if per_broker else self.cluster_default
        stores_changed = any(_is_store(k) for k in values) or \
            any(_is_store(k) for k in old if k not in values)
        if per_broker:
            self.per_broker = dict(values)
        else:
            self.cluster_default = dict(values)
        self._persist()
        logger.info("dynamic %s configs are now %s", "broker" if per_broker else "cluster-wide default",
                    {k: "[hidden]" if is_sensitive(k) else v for k, v in values.items()} or "empty")
        if stores_changed and self.on_keystore_change is not None:
            self.on_keystore_change(self.effective_props())
        if self.on_change is not None:
            self.on_change(self.effective_props())
        return config

    # ------------------------------------------------------------------ describing

    def _static_default(self, name: str) -> str | None:
        if name in _NULL_DEFAULTS:
            return None
        if name in BROKER_DEFAULTS:
            return BROKER_DEFAULTS[name]
        d = BROKER_SYNONYMS.get(name)
        if d is not None:
            return next(s.default for s in d.synonyms if s.name == name)
        if name in KAFKA_DYNAMIC:
            return KAFKA_DYNAMIC[name].default
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
        """The per-broker resource: every broker property (minibroker's, Kafka's dynamic ones,
        and those set). The cluster-default resource: the cluster-wide dynamic configs only."""
        names = sorted(set(BROKER_DEFAULTS) | set(BROKER_SYNONYMS) | set(KAFKA_DYNAMIC) | set(self.static.props)
                       | set(self.per_broker)) if per_broker else sorted(self.cluster_default)
        out = []
        for name in names:
            value = self._broker_value(name) if per_broker else self.cluster_default[name]
            synonyms = self._synonyms(name, per_broker)
            source = synonyms[0][2] if synonyms else ConfigSourceId.DEFAULT
            if is_sensitive(name):  # Kafka's PASSWORD type: never shown
                value, synonyms = None, [(n, None, s) for n, _, s in synonyms]
            # read-only as Kafka answers it: not one of its dynamic names (a listener-prefixed
            # name too, though it can be changed)
            out.append(Entry(name, value, source, name not in DYNAMIC_BROKER_CONFIGS, synonyms, _broker_type(name),
                             _broker_doc(name)))
        return out


def with_new_stores(running: Mapping[str, str], new: Mapping[str, str]) -> dict[str, str]:
    """What a running TLS listener reloads: the key and trust stores of ``new``, its other
    properties as they were (Kafka's SslFactory keeps its non-reconfigurable configs)."""
    out = {k: v for k, v in running.items() if not _is_store(k)}
    out.update((k, v) for k, v in new.items() if _is_store(k))
    return out


def _broker_type(name: str) -> int:
    if is_sensitive(name):
        return 9  # PASSWORD
    if name in BROKER_TYPES:
        return CONFIG_TYPES[BROKER_TYPES[name][0]]
    d = BROKER_SYNONYMS.get(name)
    if d is not None:
        factor = next(s.factor for s in d.synonyms if s.name == name)
        return CONFIG_TYPES["int" if factor != 1 else d.kind]
    base = listener_base(name) or name
    if base in KAFKA_DYNAMIC:
        return CONFIG_TYPES[KAFKA_DYNAMIC[base].kind]
    return CONFIG_TYPES["str"] if name in BROKER_DEFAULTS else 0


def _broker_doc(name: str) -> str:
    d = BROKER_SYNONYMS.get(name)
    if d is not None:
        return f"The default of topic config {d.name}. {d.doc}"
    doc = _BROKER_DOCS.get(name)
    if doc is None and name in KAFKA_DYNAMIC:
        doc = _KAFKA_ONLY_DOCS.get(name, _KAFKA_ONLY_DOC)
    return doc or ""

