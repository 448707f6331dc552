"""Admin operations on partitions, records and the cluster (``Admin`` inherits them):
create_partitions, delete_records, describe_cluster, describe_log_dirs, elect_leaders,
list/alter_partition_reassignments, describe_producers, offset_for_leader_epoch.

Requests go where Kafka's Java admin sends them: CreatePartitions, ElectLeaders and the
reassignment APIs to the controller; DeleteRecords, DescribeProducers and OffsetForLeaderEpoch
to each partition's leader; DescribeLogDirs to every broker; DescribeCluster to any broker.
Broker errors are raised as the ``KafkaError`` subclass of their code (the first one, after the
broker has processed the whole request), except where a method says it returns them.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, NamedTuple

from client.cluster import Cluster, TopicMetadata
from client.conn import BrokerConnection
from client.errors import KafkaError, error_for_code
from client.protocol.api import ApiKey, ErrorCode, error_name
from client.structs import TopicPartition

__all__ = ["ClusterAdmin", "BrokerInfo", "ClusterDescription", "LogDirDescription", "ReplicaInfo",
           "PartitionReassignment", "ProducerState", "EpochEndOffset", "ElectionType"]

TP = TopicPartition | tuple[str, int]


class BrokerInfo(NamedTuple):
    node_id: int
    host: str
    port: int
    rack: str | None = None


class ClusterDescription(NamedTuple):
    """``authorized_operations``: Kafka's AclOperation codes allowed on the cluster, or None
    when not asked for."""

    cluster_id: str
    controller_id: int
    brokers: list[BrokerInfo]
    authorized_operations: frozenset[int] | None = None


class ReplicaInfo(NamedTuple):
    size: int          # bytes of the partition's files in this log dir
    offset_lag: int    # log end offset - high watermark (0 on a leader)
    is_future: bool    # a replica being moved into this dir


class LogDirDescription(NamedTuple):
    path: str
    error_code: int
    replicas: dict[TopicPartition, ReplicaInfo]
    total_bytes: int   # -1 when the broker does not say (DescribeLogDirs < v4)
    usable_bytes: int


class PartitionReassignment(NamedTuple):
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


class ProducerState(NamedTuple):
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int


class EpochEndOffset(NamedTuple):
    """The end offset of a leader epoch (-1, -1: the broker does not know that epoch)."""

    leader_epoch: int
    end_offset: int


class ElectionType:
    PREFERRED = 0
    UNCLEAN = 1


def _tp(tp: TP) -> TopicPartition:
    return tp if isinstance(tp, TopicPartition) else TopicPartition(*tp)


def _by_topic(partitions: Iterable[TP] | None, topic_field: str = "topic", partitions_field: str = "partitions"
              ) -> list[dict[str, Any]] | None:
    """Partitions grouped by topic as a request's topic list (None stays None: "all")."""
    if partitions is None:
        return None
    grouped: dict[str, list[int]] = {}
    for tp in map(_tp, partitions):
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return [{topic_field: t, partitions_field: ps} for t, ps in grouped.items()]


def _raise(code: int, what: str, message: str | None = None) -> None:
    if code:
        name = error_name(code)
        raise error_for_code(code, f"{what}: {message or name}")


class ClusterAdmin(ABC):
    """The operations of this module; ``Admin`` provides the connection plumbing."""

    _cluster: Cluster
    request_timeout_ms: int

    @abstractmethod
    async def _request(self, conn_getter: Callable[[], Awaitable[BrokerConnection]], api_key: ApiKey,
                       body: dict[str, Any]) -> dict[str, Any]:
        """One request on the connection ``conn_getter`` gives, answered with its body."""

    @abstractmethod
    async def _topic(self, name: str) -> TopicMetadata:
        """The topic's metadata (refreshed when unknown)."""

    async def _by_leader(self, partitions: Iterable[TopicPartition]) -> dict[int, list[TopicPartition]]:
        out: dict[int, list[TopicPartition]] = {}
        for tp in partitions:
            leader = (await self._topic(tp.topic)).partitions.get(tp.partition)
            if leader is None:
                _raise(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp.topic}-{tp.partition}", "partition does not exist")
            else:
                out.setdefault(leader, []).append(tp)
        return out

    def _leader_conn(self, leader: int) -> Callable[[], Awaitable[BrokerConnection]]:
        return lambda: self._cluster.node_connection(leader)

    # ------------------------------------------------------------------ partitions

    async def create_partitions(self, new_counts: Mapping[str, int], *, validate_only: bool = False) -> None:
        """Grow topics to the given partition counts (InvalidPartitionsError if a count is not
        an increase). ``validate_only``: check, change nothing."""
        if not new_counts:
            return
        body = {"topics": [{"name": t, "count": n, "assignments": None} for t, n in new_counts.items()],
                "timeout_ms": self.request_timeout_ms, "validate_only": validate_only}
        resp = await self._request(self._cluster.controller_connection, ApiKey.CREATE_PARTITIONS, body)
        for t in new_counts:
            self._cluster.invalidate(t)
        for r in resp["results"]:
            _raise(r["error_code"], f"cannot add partitions to topic {r['name']!r}", r["error_message"])

    async def delete_records(self, before: Mapping[TP, int]) -> dict[TopicPartition, int]:
        """Delete every record below the given offset of each partition (-1: the high
        watermark, i.e. everything): the partition's log start offset moves there. Returns each
        partition's new log start offset (its low watermark)."""
        wanted = {_tp(tp): offset for tp, offset in before.items()}
        out: dict[TopicPartition, int] = {}

        async def ask(leader: int, tps: list[TopicPartition]) -> None:
            topics: dict[str, list[dict[str, int]]] = {}
            for tp in tps:
                topics.setdefault(tp.topic, []).append({"partition_index": tp.partition, "offset": wanted[tp]})
            body = {"topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
                    "timeout_ms": self.request_timeout_ms}
            resp = await self._request(self._leader_conn(leader), ApiKey.DELETE_RECORDS, body)
            for t in resp["topics"]:
                for p in t["partitions"]:
                    _raise(p["error_code"], f"cannot delete records of {t['name']}-{p['partition_index']}")
                    out[TopicPartition(t["name"], p["partition_index"])] = p["low_watermark"]

        await asyncio.gather(*(ask(leader, tps) for leader, tps in (await self._by_leader(wanted)).items()))
        return out

    # ------------------------------------------------------------------ cluster

    async def describe_cluster(self, *, include_authorized_operations: bool = False) -> ClusterDescription:
        body = {"include_cluster_authorized_operations": include_authorized_operations, "endpoint_type": 1}
        resp = await self._request(self._cluster.any_connection, ApiKey.DESCRIBE_CLUSTER, body)
        _raise(resp["error_code"], "cannot describe the cluster", resp["error_message"])
        ops = resp["cluster_authorized_operations"]
        return ClusterDescription(
            resp["cluster_id"], resp["controller_id"],
            [BrokerInfo(b["broker_id"], b["host"], b["port"], b["rack"]) for b in resp["brokers"]],
            None if ops == -2147483648 else frozenset(i for i in range(32) if ops >> i & 1))

    async def describe_log_dirs(self, partitions: Iterable[TP] | None = None
                                ) -> dict[int, list[LogDirDescription]]:
        """Every broker's log directories and the partitions in them (all, or those given):
        ``{broker id: [LogDirDescription]}``."""
        topics = _by_topic(partitions)
        brokers = (await self.describe_cluster()).brokers
        out: dict[int, list[LogDirDescription]] = {}

        async def ask(node: int) -> None:
            resp = await self._request(self._leader_conn(node), ApiKey.DESCRIBE_LOG_DIRS, {"topics": topics})
            _raise(resp["error_code"], f"cannot describe the log dirs of broker {node}")
            out[node] = [LogDirDescription(
                r["log_dir"], r["error_code"],
                {TopicPartition(t["name"], p["partition_index"]):
                 ReplicaInfo(p["partition_size"], p["offset_lag"], p["is_future_key"])
                 for t in r["topics"] for p in t["partitions"]},
                r["total_bytes"], r["usable_bytes"]) for r in resp["results"]]

        await asyncio.gather(*(ask(b.node_id) for b in brokers))
        return out

    async def elect_leaders(self, partitions: Iterable[TP] | None = None,
                            election_type: int = ElectionType.PREFERRED) -> dict[TopicPartition, KafkaError | None]:
        """Elect leaders (preferred or unclean) for the partitions (all when None). Returns
        each partition's outcome: None (elected) or its error; ElectionNotNeededError means the
        right leader is already in place (always, on a one-broker cluster)."""
        tps = _by_topic(partitions)
        body = {"election_type": election_type, "topic_partitions": tps, "timeout_ms": self.request_timeout_ms}
        resp = await self._request(self._cluster.controller_connection, ApiKey.ELECT_LEADERS, body)
        _raise(resp["error_code"], "cannot elect leaders")
        out: dict[TopicPartition, KafkaError | None] = {}
        for t in resp["replica_election_results"]:
            for p in t["partition_result"]:
                code = p["error_code"]
                out[TopicPartition(t["topic"], p["partition_id"])] = (
                    error_for_code(code, p["error_message"] or error_name(code)) if code else None)
        return out

    async def list_partition_reassignments(self, partitions: Iterable[TP] | None = None
                                           ) -> dict[TopicPartition, PartitionReassignment]:
        """The reassignments in progress (of the partitions given, or all)."""
        topics = _by_topic(partitions, "name", "partition_indexes")
        resp = await self._request(self._cluster.controller_connection, ApiKey.LIST_PARTITION_REASSIGNMENTS,
                                   {"timeout_ms": self.request_timeout_ms, "topics": topics})
        _raise(resp["error_code"], "cannot list partition reassignments", resp["error_message"])
        return {TopicPartition(t["name"], p["partition_index"]):
                PartitionReassignment(tuple(p["replicas"]), tuple(p["adding_replicas"]), tuple(p["removing_replicas"]))
                for t in resp["topics"] for p in t["partitions"]}

    async def alter_partition_reassignments(self, targets: Mapping[TP, Iterable[int] | None]) -> None:
        """Move partitions to the given replicas (None: cancel a reassignment in progress)."""
        grouped: dict[str, list[dict[str, Any]]] = {}
        for tp, replicas in targets.items():
            t = _tp(tp)
            grouped.setdefault(t.topic, []).append(
                {"partition_index": t.partition, "replicas": None if replicas is None else list(replicas)})
        body = {"timeout_ms": self.request_timeout_ms,
                "topics": [{"name": t, "partitions": ps} for t, ps in grouped.items()]}
        resp = await self._request(self._cluster.controller_connection, ApiKey.ALTER_PARTITION_REASSIGNMENTS, body)
        _raise(resp["error_code"], "cannot alter partition reassignments", resp["error_message"])
        for t in resp["responses"]:
            for p in t["partitions"]:
                _raise(p["error_code"], f"cannot reassign {t['name']}-{p['partition_index']}", p["error_message"])

    # ------------------------------------------------------------------ producers, epochs

    async def describe_producers(self, partitions: Iterable[TP]) -> dict[TopicPartition, list[ProducerState]]:
        """The idempotent/transactional producers each partition's leader has state for."""
        out: dict[TopicPartition, list[ProducerState]] = {}

        async def ask(leader: int, tps: list[TopicPartition]) -> None:
            body = {"topics": _by_topic(tps, "name", "partition_indexes")}
            resp = await self._request(self._leader_conn(leader), ApiKey.DESCRIBE_PRODUCERS, body)
            for t in resp["topics"]:
                for p in t["partitions"]:
                    _raise(p["error_code"], f"cannot describe producers of {t['name']}-{p['partition_index']}",
                           p["error_message"])
                    out[TopicPartition(t["name"], p["partition_index"])] = [
                        ProducerState(s["producer_id"], s["producer_epoch"], s["last_sequence"], s["last_timestamp"],
                                      s["coordinator_epoch"], s["current_txn_start_offset"])
                        for s in p["active_producers"]]

        await asyncio.gather(*(ask(leader, tps) for leader, tps in
                               (await self._by_leader(map(_tp, partitions))).items()))
        return out

    async def offset_for_leader_epoch(self, epochs: Mapping[TP, int]) -> dict[TopicPartition, EpochEndOffset]:
        """The end offset of each given leader epoch (KIP-320's position check), from leaders."""
        wanted = {_tp(tp): epoch for tp, epoch in epochs.items()}
        out: dict[TopicPartition, EpochEndOffset] = {}

        async def ask(leader: int, tps: list[TopicPartition]) -> None:
            grouped: dict[str, list[dict[str, int]]] = {}
            for tp in tps:
                grouped.setdefault(tp.topic, []).append(
                    {"partition": tp.partition, "current_leader_epoch": -1, "leader_epoch": wanted[tp]})
            body = {"replica_id": -1, "topics": [{"topic": t, "partitions": ps} for t, ps in grouped.items()]}
            resp = await self._request(self._leader_conn(leader), ApiKey.OFFSET_FOR_LEADER_EPOCH, body)
            for t in resp["topics"]:
                for p in t["partitions"]:
                    _raise(p["error_code"], f"cannot look up the leader epoch of {t['topic']}-{p['partition']}")
                    out[TopicPartition(t["topic"], p["partition"])] = EpochEndOffset(p["leader_epoch"], p["end_offset"])

        await asyncio.gather(*(ask(leader, tps) for leader, tps in (await self._by_leader(wanted)).items()))
        return out
