"""Admin operations on transactions (``Admin`` inherits them): list_transactions,
describe_transactions and abort_transaction — what ``kafka-transactions.sh`` (``minibroker
transactions``) needs, with ``describe_producers`` (client/admin_cluster.py), to find and end
hanging transactions.

Requests go where Kafka's Java admin sends them: ListTransactions to every broker,
DescribeTransactions to each transactional id's coordinator (FindCoordinator, key type 1),
WriteTxnMarkers to the partition's leader. The coordinator errors (COORDINATOR_LOAD_IN_PROGRESS,
COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR) are retried until the request timeout; other broker
errors are raised as the ``KafkaError`` subclass of their code.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, NamedTuple

from client.cluster import Cluster, TopicMetadata
from client.errors import error_for_code
from client.protocol.api import ApiKey, ErrorCode, error_name
from client.structs import TopicPartition

__all__ = ["TransactionAdmin", "TransactionListing", "TransactionDescription"]

#: FindCoordinator's key type of a transactional id
TRANSACTION_KEY = 1
_RETRY = {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR}


class TransactionListing(NamedTuple):
    """One transactional id a coordinator knows: ``state`` is Kafka's name (``Ongoing``,
    ``CompleteCommit``, ...); ``coordinator_id`` the broker that listed it."""

    transactional_id: str
    producer_id: int
    state: str
    coordinator_id: int


class TransactionDescription(NamedTuple):
    """A transactional id's state at its coordinator. ``start_time_ms`` is -1 when no
    transaction is open; ``partitions`` are those of the open (or ending) transaction."""

    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_time_ms: int
    partitions: tuple[TopicPartition, ...]


class TransactionAdmin(ABC):
    """The transaction operations of ``Admin``, which provides the connection plumbing."""

    _cluster: Cluster
    request_timeout_ms: int

    @abstractmethod
    async def start(self) -> None:
        """Connect (``Admin.start``)."""

    @abstractmethod
    async def _topic(self, name: str) -> TopicMetadata:
        """The topic's metadata (refreshed when unknown)."""

    async def _retrying(self, call: Callable[[], Awaitable[tuple[int, Any]]]) -> Any:
        """``call()`` -> (error code, result) until the code is not a coordinator error that
        clears up (loading, moved) or the request timeout has passed; raises a non-zero code."""
        deadline = time.monotonic() + self.request_timeout_ms / 1000
        while True:
            code, result = await call()
            if code in _RETRY and time.monotonic() < deadline:
                await asyncio.sleep(self._cluster.retry_backoff_ms / 1000)
                continue
            return code, result

    async def list_transactions(self, *, states: Iterable[str] = (), producer_ids: Iterable[int] = (),
                                duration_ms: int = -1) -> list[TransactionListing]:
        """The transactional ids every broker's coordinator knows, sorted by id; filtered by
        state names, producer ids and (ListTransactions v1+) transactions running longer than
        ``duration_ms`` (-1: no filter)."""
        await self.start()
        if not self._cluster.brokers:
            await self._cluster.refresh_metadata([])
        body = {"state_filters": list(states), "producer_id_filters": list(producer_ids),
                "duration_filter": duration_ms}
        out: list[TransactionListing] = []
        for node in sorted(self._cluster.brokers):
            async def ask(node: int = node) -> tuple[int, dict[str, Any]]:
                conn = await self._cluster.node_connection(node)
                resp = await conn.request(ApiKey.LIST_TRANSACTIONS, conn.pick_version(ApiKey.LIST_TRANSACTIONS), body)
                return resp["error_code"], resp

            code, resp = await self._retrying(ask)
            if code:
                raise error_for_code(code, f"cannot list the transactions of broker {node}: {error_name(code)}")
            out += [TransactionListing(s["transactional_id"], s["producer_id"], s["transaction_state"], node)
                    for s in resp["transaction_states"]]
        return sorted(out)

    async def describe_transactions(self, transactional_ids: Iterable[str]) -> dict[str, TransactionDescription]:
        """Each id's state at its coordinator; raises the first error (an id the coordinator
        does not know: TransactionalIdNotFoundError)."""
        await self.start()
        out: dict[str, TransactionDescription] = {}
        for txn_id in transactional_ids:
            async def ask(txn_id: str = txn_id) -> tuple[int, tuple[int, dict[str, Any]]]:
                found = await self._cluster.find_coordinator(txn_id, TRANSACTION_KEY)
                conn = await self._cluster.coordinator_connection(*found)
                resp = await conn.request(ApiKey.DESCRIBE_TRANSACTIONS,
                                          conn.pick_version(ApiKey.DESCRIBE_TRANSACTIONS),
                                          {"transactional_ids": [txn_id]})
                (s,) = resp["transaction_states"]
                return s["error_code"], (found[0], s)

            code, (node, s) = await self._retrying(ask)
            if code:
                raise error_for_code(code, f"cannot describe transactional id {txn_id!r}: {error_name(code)}")
            out[txn_id] = TransactionDescription(
                node, s["transaction_state"], s["producer_id"], s["producer_epoch"], s["transaction_timeout_ms"],
                s["transaction_start_time_ms"],
                tuple(TopicPartition(t["topic"], p) for t in s["topics"] for p in t["partitions"]))
        return out

    async def abort_transaction(self, partition: TopicPartition | tuple[str, int], producer_id: int,
                                producer_epoch: int, coordinator_epoch: int) -> None:
        """Write an ABORT marker for ``producer_id`` to ``partition`` (WriteTxnMarkers to its
        leader), ending the transaction it has open there — Kafka's ``Admin.abortTransaction``,
        for a hanging transaction its coordinator will never end. The epochs are those
        DescribeProducers shows (a coordinator epoch of -1 is sent as 0, as Kafka's tool does).
        Raises InvalidProducerEpochError / TransactionCoordinatorFencedError if the partition
        has seen a newer producer or coordinator epoch."""
        tp = partition if isinstance(partition, TopicPartition) else TopicPartition(*partition)
        leader = (await self._topic(tp.topic)).partitions.get(tp.partition)
        if leader is None:
            raise error_for_code(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp.topic}-{tp.partition}: no such partition")
        body = {"markers": [{"producer_id": producer_id, "producer_epoch": producer_epoch,
                             "transaction_result": False, "coordinator_epoch": max(coordinator_epoch, 0),
                             "topics": [{"name": tp.topic, "partition_indexes": [tp.partition]}]}]}
        conn = await self._cluster.node_connection(leader)
        resp = await conn.request(ApiKey.WRITE_TXN_MARKERS, conn.pick_version(ApiKey.WRITE_TXN_MARKERS), body)
        codes = [p["error_code"] for m in resp["markers"] for t in m["topics"] for p in t["partitions"]]
        if len(codes) != 1:
            raise error_for_code(ErrorCode.UNKNOWN_SERVER_ERROR, f"unexpected WriteTxnMarkers answer: {resp}")
        if codes[0]:
            raise error_for_code(codes[0], f"cannot abort the transaction of producer id {producer_id} on"
                                           f" {tp.topic}-{tp.partition}: {error_name(codes[0])}")


