"""Admin: create, delete, list and describe topics; list offsets; describe and alter configs;
(``client/admin_cluster.py``) partitions, records, log dirs, leaders, reassignments, producers;
(``client/admin_txn.py``) transactions: list, describe, abort a hanging one;
(``client/admin_scram.py``) users' SCRAM credentials: describe, create, replace, delete;
(``client/admin_acls.py``) ACLs: create, describe, delete (structs in ``client.acl``);
(``client/admin_quotas.py``) client quotas: describe, alter; and
consumer groups (``client.group.admin``: list, describe, delete, committed offsets with lag, reset).

::

    async with Admin(bootstrap_servers="127.0.0.1:9092") as admin:
        await admin.create_topic("events", num_partitions=3, configs={"retention.ms": "3600000"})
        print(await admin.list_topics())
        desc = (await admin.describe_topics(["events"]))["events"]
        offsets = await admin.list_offsets({("events", 0): OffsetSpec.LATEST})

Requests go where Kafka sends them: CreateTopics and DeleteTopics to the controller, ListOffsets
to each partition's leader, Metadata to any broker, DescribeConfigs / AlterConfigs /
IncrementalAlterConfigs of a topic to any broker and of a broker to that broker. Broker errors are raised
as the ``KafkaError`` subclass of their code (``client.errors``: TopicAlreadyExistsError,
UnknownTopicOrPartitionError, InvalidTopicExceptionError, InvalidPartitionsError,
InvalidConfigError, ...) with the broker's message when it sent one. A request that names
several topics is processed by the broker for all of them; the first failure is raised.
"""

from __future__ import annotations

import asyncio
import enum
import ssl
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from client.acl import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from client.admin_acls import AclAdmin
from client.admin_cluster import (
    BrokerInfo,
    ClusterAdmin,
    ClusterDescription,
    ElectionType,
    EpochEndOffset,
    LogDirDescription,
    PartitionReassignment,
    ProducerState,
    ReplicaInfo,
)
from client.admin_quotas import (
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilter,
    ClientQuotaFilterComponent,
    QuotaAdmin,
)
from client.admin_scram import (
    ScramAdmin,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
    UserScramCredentialUpsertion,
)
from client.admin_txn import TransactionAdmin, TransactionDescription, TransactionListing
from client.cluster import Cluster, TopicMetadata
from client.conn import BrokerConnection
from client.errors import KafkaConnectionError, KafkaError, error_for_code
from client.group.admin import GroupAdmin, GroupDescription, GroupListing, GroupOffset, MemberDescription
from client.group.share_admin import ShareGroupAdmin, ShareGroupDescription, ShareGroupOffset
from client.protocol.api import ApiKey, ErrorCode, error_name
from client.security.config import SecurityConfig, TokenProvider
from client.structs import OffsetAndTimestamp, OffsetSpec, TopicPartition

__all__ = ["Admin", "NewTopic", "TopicDescription", "PartitionInfo", "ConfigEntry", "ConfigResourceType",
           "ConfigSource", "ConfigSynonym", "AlterConfigOp", "AlterConfigOpType", "OffsetSpec", "OffsetAndTimestamp",
           "TopicPartition", "BrokerInfo", "ClusterDescription", "LogDirDescription", "ReplicaInfo",
           "PartitionReassignment", "ProducerState", "EpochEndOffset", "ElectionType",
           "GroupListing", "GroupDescription", "MemberDescription", "GroupOffset", "ShareGroupDescription",
           "ShareGroupOffset", "TransactionListing",
           "TransactionDescription", "ScramMechanism", "ScramCredentialInfo", "UserScramCredentialsDescription",
           "UserScramCredentialUpsertion", "UserScramCredentialDeletion", "ResourceType", "PatternType", "AclOperation",
           "AclPermissionType", "ResourcePattern", "ResourcePatternFilter", "AccessControlEntry",
           "AccessControlEntryFilter", "AclBinding", "AclBindingFilter", "ClientQuotaEntity", "ClientQuotaFilter",
           "ClientQuotaFilterComponent", "ClientQuotaAlteration"]


class NewTopic(NamedTuple):
    """A topic to create. ``num_partitions``/``replication_factor`` -1 = the broker's default
    (``num.partitions``; minibroker has one replica); ``configs`` are topic-level overrides with
    Kafka's names (``retention.ms``, ``max.message.bytes``, ...)."""

    name: str
    num_partitions: int = 1
    replication_factor: int = 1
    configs: Mapping[str, str] | None = None


class PartitionInfo(NamedTuple):
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


class ConfigSource(enum.IntEnum):
    """Kafka's DescribeConfigs config source (v1+)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6


class ConfigResourceType(enum.IntEnum):
    TOPIC = 2
    BROKER = 4


class ConfigSynonym(NamedTuple):
    name: str
    value: str | None
    source: ConfigSource


class ConfigEntry(NamedTuple):
    """One config of a resource. ``synonyms`` (when asked for): the settings that could give
    it its value, highest precedence first; ``config_type``: Kafka's ConfigType id (1 boolean,
    2 string, 3 int, 5 long, 6 double, 7 list; 0 unknown or not told); ``documentation`` when
    asked for."""

    name: str
    value: str | None
    source: ConfigSource
    is_default: bool
    read_only: bool
    is_sensitive: bool
    synonyms: tuple[ConfigSynonym, ...] = ()
    config_type: int = 0
    documentation: str | None = None


class AlterConfigOpType(enum.IntEnum):
    SET = 0
    DELETE = 1
    APPEND = 2    # list configs: add items
    SUBTRACT = 3  # list configs: remove items


class AlterConfigOp(NamedTuple):
    """One change of ``incremental_alter_configs``."""

    name: str
    value: str | None = None
    op: AlterConfigOpType = AlterConfigOpType.SET


class TopicDescription(NamedTuple):
    """A topic's partitions (by partition id order) and its effective configs (name -> value)."""

    name: str
    partitions: list[PartitionInfo]
    configs: dict[str, str | None]
    internal: bool = False


def _err(code: int, what: str, message: str | None = None) -> KafkaError:
    name = error_name(code)
    return error_for_code(code, f"{what}: {message or name}")


def _source(src: int | None, is_default: bool) -> ConfigSource:
    if src is None or src < 0:  # v0: only is_default
        return ConfigSource.DEFAULT_CONFIG if is_default else ConfigSource.UNKNOWN
    return ConfigSource(src) if src in ConfigSource._value2member_map_ else ConfigSource.UNKNOWN


def _resource(resource_type: ConfigResourceType | int | str, name: str | int) -> tuple[ConfigResourceType, str]:
    if isinstance(resource_type, str):
        resource_type = ConfigResourceType[resource_type.upper()]
    return ConfigResourceType(resource_type), str(name)


class Admin(ClusterAdmin, ShareGroupAdmin, GroupAdmin, TransactionAdmin, ScramAdmin, AclAdmin, QuotaAdmin):
    """Asyncio admin client. Options: ``client_id``, ``request_timeout_ms`` (default 30000),
    ``connect_timeout_ms`` (10000), ``retry_backoff_ms`` (100)."""

    def __init__(self, bootstrap_servers: str | Iterable[str] = "127.0.0.1:9092", *,
                 client_id: str = "minibroker-python-admin", request_timeout_ms: int = 30000,
                 connect_timeout_ms: int = 10000, retry_backoff_ms: int = 100,
                 metadata_max_age_ms: int = 300000,
                 security_protocol: str = "PLAINTEXT",
                 ssl_context: ssl.SSLContext | None = None,
                 sasl_mechanism: str = "PLAIN",
                 sasl_plain_username: str | None = None,
                 sasl_plain_password: str | None = None,
                 sasl_oauth_token_provider: TokenProvider | None = None) -> None:
        self.request_timeout_ms = request_timeout_ms
        self._cluster = Cluster(bootstrap_servers, client_id=client_id, request_timeout_ms=request_timeout_ms,
                                connect_timeout_ms=connect_timeout_ms, retry_backoff_ms=retry_backoff_ms,
                                metadata_max_age_ms=metadata_max_age_ms, allow_auto_create_topics=False,
                                security=SecurityConfig(security_protocol, ssl_context, sasl_mechanism, sasl_plain_username,
                                  sasl_plain_password, sasl_oauth_token_provider))
        self._started = False

    async def start(self) -> None:
        """Connect to a bootstrap server (KafkaConnectionError after ``connect_timeout_ms``)."""
        if not self._started:
            await self._cluster.start()
            self._started = True

    async def close(self) -> None:
        await self._cluster.close()
        self._started = False

    async def __aenter__(self) -> Admin:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _request(self, conn_getter: Any, api_key: ApiKey, body: dict[str, Any]) -> dict[str, Any]:
        """One request; a broken connection is retried once on a fresh one."""
        if not self._started:
            await self.start()
        for attempt in (0, 1):
            conn: BrokerConnection = await conn_getter()
            try:
                return await conn.request(api_key, conn.pick_version(api_key), body)
            except KafkaConnectionError:
                if attempt:
                    raise
                await asyncio.sleep(self._cluster.retry_backoff_ms / 1000)
        raise AssertionError("unreachable")  # pragma: no cover

    # ------------------------------------------------------------------ topics

    async def create_topics(self, topics: Iterable[NewTopic | str], *, validate_only: bool = False,
                            timeout_ms: int | None = None) -> None:
        """Create topics (``NewTopic`` or plain names with the NewTopic defaults).
        ``validate_only``: check everything, create nothing."""
        items = [NewTopic(t) if isinstance(t, str) else t for t in topics]
        if not items:
            return
        body = {
            "topics": [{"name": t.name, "num_partitions": t.num_partitions,
                        "replication_factor": t.replication_factor, "assignments": [],
                        "configs": [{"name": k, "value": None if v is None else str(v)}
                                    for k, v in (t.configs or {}).items()]} for t in items],
            "timeout_ms": timeout_ms if timeout_ms is not None else self.request_timeout_ms,
            "validate_only": validate_only,
        }
        resp = await self._request(self._cluster.controller_connection, ApiKey.CREATE_TOPICS, body)
        for t in resp["topics"]:
            if t["error_code"]:
                raise _err(t["error_code"], f"cannot create topic {t['name']!r}", t.get("error_message"))
        self._cluster.invalidate()

    async def create_topic(self, name: str, num_partitions: int = 1, replication_factor: int = 1,
                           configs: Mapping[str, str] | None = None, *, validate_only: bool = False) -> None:
        """Create one topic; TopicAlreadyExistsError, InvalidTopicExceptionError, ... on failure."""
        await self.create_topics([NewTopic(name, num_partitions, replication_factor, configs)],
                                 validate_only=validate_only)

    async def delete_topics(self, names: Iterable[str], *, timeout_ms: int | None = None) -> None:
        """Delete topics; UnknownTopicOrPartitionError for one that does not exist (the others
        named are deleted all the same)."""
        names = list(names)
        if not names:
            return
        body = {"topic_names": names, "topics": [{"name": n} for n in names],  # v0-5 / v6+
                "timeout_ms": timeout_ms if timeout_ms is not None else self.request_timeout_ms}
        resp = await self._request(self._cluster.controller_connection, ApiKey.DELETE_TOPICS, body)
        for name in names:
            self._cluster.topics.pop(name, None)
        for r in resp["responses"]:
            if r["error_code"]:
                raise _err(r["error_code"], f"cannot delete topic {r['name']!r}")

    async def delete_topic(self, name: str) -> None:
        await self.delete_topics([name])

    async def _metadata(self, names: list[str] | None) -> dict[str, Any]:
        async def conn() -> BrokerConnection:
            return await self._cluster.any_connection()
        c = await conn()
        version = c.pick_version(ApiKey.METADATA)
        if names is None:
            topics: list[dict[str, str]] | None = None if version >= 1 else []
        else:
            topics = [{"name": n} for n in names]
        return await self._request(conn, ApiKey.METADATA, {"topics": topics, "allow_auto_topic_creation": False})

    async def list_topics(self, *, include_internal: bool = False) -> list[str]:
        """Names of the topics, sorted."""
        resp = await self._metadata(None)
        return sorted(t["name"] for t in resp["topics"]
                      if t["error_code"] == 0 and (include_internal or not t["is_internal"]))

    async def describe_topics(self, names: Iterable[str] | None = None, *,
                              include_configs: bool = True) -> dict[str, TopicDescription]:
        """Partitions (leader, replicas, ISR) and effective configs of topics (all when None).
        UnknownTopicOrPartitionError for a topic that does not exist."""
        wanted = None if names is None else list(names)
        resp = await self._metadata(wanted)
        out: dict[str, TopicDescription] = {}
        for t in resp["topics"]:
            if t["error_code"]:
                raise _err(t["error_code"], f"cannot describe topic {t['name']!r}")
            parts = sorted((PartitionInfo(p["partition_index"], p["leader_id"], tuple(p["replica_nodes"]),
                                          tuple(p["isr_nodes"])) for p in t["partitions"]), key=lambda p: p.partition)
            out[t["name"]] = TopicDescription(t["name"], parts, {}, bool(t["is_internal"]))
        if include_configs and out:
            configs = await self._describe_configs([(ConfigResourceType.TOPIC, n, None) for n in out])
            for (_, name), entries in configs.items():
                out[name].configs.update((e.name, e.value) for e in entries.values())
        return out

    async def _topic(self, name: str) -> TopicMetadata:
        """Leaders of a topic's partitions: UnknownTopicOrPartitionError at once for a topic
        that does not exist; other retriable errors (LEADER_NOT_AVAILABLE just after creation
        on a real cluster) are retried until ``request_timeout_ms``."""
        if not self._started:
            await self.start()
        deadline = asyncio.get_running_loop().time() + self.request_timeout_ms / 1000
        while True:
            got = (await self._cluster.refresh_metadata([name])).get(name)
            code = got.error_code if got is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            if got is not None and code == 0 and got.partitions:
                return got
            err = _err(code or ErrorCode.LEADER_NOT_AVAILABLE, f"topic {name!r}")
            if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION or not err.retriable \
                    or asyncio.get_running_loop().time() >= deadline:
                raise err
            await asyncio.sleep(self._cluster.retry_backoff_ms / 1000)

    # ------------------------------------------------------------------ configs

    async def describe_configs(self, resource_type: ConfigResourceType | int | str, name: str | int = "",
                               keys: Iterable[str] | None = None, *, include_synonyms: bool = False,
                               include_documentation: bool = False) -> dict[str, ConfigEntry]:
        """Configs of one resource: ``("topic", "events")`` or ``("broker", 0)`` (``("broker",
        "")``: the cluster-wide dynamic defaults); ``keys`` limits the answer to those names.
        Returns name -> ConfigEntry."""
        rt, rname = _resource(resource_type, name)
        result = await self._describe_configs([(rt, rname, None if keys is None else list(keys))],
                                              include_synonyms, include_documentation)
        return next(iter(result.values()))

    async def _describe_configs(self, resources: list[tuple[ConfigResourceType, str, list[str] | None]],
                                include_synonyms: bool = False, include_documentation: bool = False
                                ) -> dict[tuple[ConfigResourceType, str], dict[str, ConfigEntry]]:
        body = {"resources": [{"resource_type": int(rt), "resource_name": n, "configuration_keys": k}
                              for rt, n, k in resources],
                "include_synonyms": include_synonyms, "include_documentation": include_documentation}
        broker = next((n for rt, n, _ in resources if rt == ConfigResourceType.BROKER and n), None)
        resp = await self._request(self._config_connection(broker), ApiKey.DESCRIBE_CONFIGS, body)
        out: dict[tuple[ConfigResourceType, str], dict[str, ConfigEntry]] = {}
        for r in resp["results"]:
            rt = ConfigResourceType(r["resource_type"])
            if r["error_code"]:
                raise _err(r["error_code"], f"cannot describe configs of {rt.name.lower()} {r['resource_name']!r}",
                           r.get("error_message"))
            entries = {}
            for c in r["configs"]:
                source = _source(c.get("config_source"), bool(c.get("is_default")))
                synonyms = tuple(ConfigSynonym(s["name"], s["value"], _source(s["source"], False))
                                 for s in c.get("synonyms") or ())
                entries[c["name"]] = ConfigEntry(c["name"], c["value"], source,
                                                 source == ConfigSource.DEFAULT_CONFIG or bool(c.get("is_default")),
                                                 bool(c["read_only"]), bool(c["is_sensitive"]), synonyms,
                                                 c.get("config_type") or 0, c.get("documentation"))
            out[(rt, r["resource_name"])] = entries
        return out

    def _config_connection(self, broker: str | None) -> Any:
        """A broker resource's configs are asked of that broker; the rest of any broker."""
        if broker is not None and broker.lstrip("-").isdigit():
            node = int(broker)
            return lambda: self._cluster.node_connection(node)
        return self._cluster.any_connection

    async def alter_configs(self, resource_type: ConfigResourceType | int | str, name: str | int,
                            configs: Mapping[str, str], *, validate_only: bool = False) -> None:
        """Replace a resource's whole set of configs (AlterConfigs: configs left out go back to
        their defaults). Prefer ``incremental_alter_configs``, which touches only what it names."""
        rt, rname = _resource(resource_type, name)
        body = {"resources": [{"resource_type": int(rt), "resource_name": rname,
                               "configs": [{"name": k, "value": str(v)} for k, v in configs.items()]}],
                "validate_only": validate_only}
        await self._alter(ApiKey.ALTER_CONFIGS, body, rt, rname)

    async def incremental_alter_configs(self, resource_type: ConfigResourceType | int | str, name: str | int,
                                        ops: Iterable[AlterConfigOp] | Mapping[str, str | None], *,
                                        validate_only: bool = False) -> None:
        """Change some configs of a resource: ``AlterConfigOp(name, value, op)`` items, or a
        mapping where a value sets the config and None deletes it (back to its default)."""
        rt, rname = _resource(resource_type, name)
        if isinstance(ops, Mapping):
            ops = [AlterConfigOp(k, v, AlterConfigOpType.SET if v is not None else AlterConfigOpType.DELETE)
                   for k, v in ops.items()]
        body = {"resources": [{"resource_type": int(rt), "resource_name": rname,
                               "configs": [{"name": o.name, "config_operation": int(o.op),
                                            "value": None if o.value is None else str(o.value)} for o in ops]}],
                "validate_only": validate_only}
        await self._alter(ApiKey.INCREMENTAL_ALTER_CONFIGS, body, rt, rname)

    async def _alter(self, api_key: ApiKey, body: dict[str, Any], rt: ConfigResourceType, rname: str) -> None:
        conn = self._config_connection(rname if rt == ConfigResourceType.BROKER else None)
        resp = await self._request(conn, api_key, body)
        for r in resp["responses"]:
            if r["error_code"]:
                raise _err(r["error_code"], f"cannot alter configs of {rt.name.lower()} {r['resource_name']!r}",
                           r.get("error_message"))

    # ------------------------------------------------------------------ offsets

    async def list_offsets(self, specs: Mapping[TopicPartition | tuple[str, int], OffsetSpec | int], *,
                           isolation_level: str = "read_uncommitted") -> dict[TopicPartition, OffsetAndTimestamp]:
        """Look up offsets: ``OffsetSpec.EARLIEST`` (log start), ``LATEST`` (log end = next
        offset), ``MAX_TIMESTAMP``, or a timestamp in ms (the first offset whose record timestamp
        is >= it; ``OffsetAndTimestamp(-1, -1)`` when no record is that recent). Requests go to
        each partition's leader. With ``isolation_level="read_committed"`` LATEST is the last
        stable offset (the first offset of the oldest open transaction), what a read_committed
        consumer can read up to."""
        if isolation_level not in ("read_uncommitted", "read_committed"):
            raise ValueError(f"isolation_level must be read_uncommitted or read_committed, not {isolation_level!r}")
        by_leader: dict[int, dict[str, list[dict[str, int]]]] = {}
        for tp, spec in specs.items():
            topic, partition = tp
            tm = await self._topic(topic)
            leader = tm.partitions.get(partition)
            if leader is None:
                raise _err(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{partition}", "partition does not exist")
            by_leader.setdefault(leader, {}).setdefault(topic, []).append(
                {"partition_index": partition, "timestamp": int(spec)})
        out: dict[TopicPartition, OffsetAndTimestamp] = {}

        async def ask(leader: int, topics: dict[str, list[dict[str, int]]]) -> None:
            body = {"replica_id": -1, "isolation_level": 1 if isolation_level == "read_committed" else 0,
                    "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
            resp = await self._request(lambda: self._cluster.node_connection(leader), ApiKey.LIST_OFFSETS, body)
            for t in resp["topics"]:
                for p in t["partitions"]:
                    if p["error_code"]:
                        raise _err(p["error_code"], f"cannot list offsets of {t['name']}-{p['partition_index']}")
                    out[TopicPartition(t["name"], p["partition_index"])] = OffsetAndTimestamp(p["offset"], p["timestamp"])

        await asyncio.gather(*(ask(leader, topics) for leader, topics in by_leader.items()))
        return out

    async def topic_offsets(self, topic: str, spec: OffsetSpec | int = OffsetSpec.LATEST) -> dict[int, int]:
        """``partition -> offset`` of every partition of ``topic`` for one spec (a shortcut for
        ``list_offsets``)."""
        tm = await self._topic(topic)
        res = await self.list_offsets({TopicPartition(topic, p): spec for p in tm.partitions})
        return {tp.partition: o.offset for tp, o in sorted(res.items())}
