"""TransactionRuntime: the transaction coordinator (coordinator.py, a sans-IO state machine)
bound to the broker — its records written to ``__transaction_state`` and waited on, the
COMMIT/ABORT markers that end each transaction, its periodic work and the topic's loading.

A request runs as: the state machine's ``prepare_*`` validates it and returns a ``Transition``
(or raises CoordinatorError, the answer), which ``_run`` begins (the id is ``pending``), writes
(after the id's previous markers are fsync'd, for a durable write), waits on, applies and ends.
A transition that ends a transaction (``complete``) then has its markers written in the
background, then Complete*:

- **markers** (``_complete``): a marker is appended to every partition of the transaction
  (``Log.append(from_coordinator=True)``); on ``__consumer_offsets`` the group coordinator then
  settles the producer's pending offsets (``on_offsets_marker``). A marker that cannot be
  written is retried every ``MARKER_RETRY_S`` until it is: the transaction must end. Neither the
  markers nor Complete* are waited for: the next transaction of the id may begin at once, and
  its first durable state write waits for these markers' fsync (``_flush_markers``). A crash
  that loses them (a power loss; a SIGKILL loses nothing written) leaves Prepare* on disk, whose
  markers are written again at start-up, or Complete* with partitions whose transaction is still
  open, which the start-up repair closes (``repair_dangling``).
- **periodic**: ``abort_timed_out`` fences and aborts the transactions older than their
  timeout; ``expire_transactional_ids`` writes tombstones for ids idle past
  ``transactional.id.expiration.ms``.
- **loading**: ``__transaction_state`` is replayed in the background by the shared loader;
  until it is done every request answers COORDINATOR_LOAD_IN_PROGRESS. Then the transactions
  left in Prepare* are completed and lost markers repaired.
- **transactions V2 adds** (``add_for_v2``): the partitions a V2 producer's batch or offset
  commit brings are added at its epoch; CONCURRENT_TRANSACTIONS (the previous transaction's
  markers still being written) is retried every ``ADD_RETRY_BACKOFF_S`` for up to
  ``ADD_RETRY_MAX_S``, as Kafka's brokers do (``add.partitions.to.txn.retry.backoff.ms`` 20,
  ``add.partitions.to.txn.retry.backoff.max.ms`` 100). ``produce_gate`` keeps one producer's
  V2 produce requests in arrival order while one of them waits for its add.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Iterable
from typing import Any

from client.clock import now_ms
from client.protocol.api import ErrorCode as E
from client.protocol.primitives import DecodeError
from client.records.control import build_control_batch
from client.records.record import build_batch

from ..coordinator.internal_topic import CoordinatorHost, InternalTopic
from ..group.records import CONSUMER_OFFSETS
from ..storage.log import Log
from ..storage.record_reader import LoggedRecord
from .coordinator import (
    COORDINATOR_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TV0,
    TV2,
    CoordinatorError,
    TransactionCoordinator,
    TransactionMetadata,
    Transition,
    TxnConfig,
)
from .records import (
    TRANSACTION_STATE,
    TxnLogValue,
    TxnState,
    decode_txn_key,
    decode_txn_value,
    encode_txn_key,
    encode_txn_value,
)

__all__ = ["TransactionRuntime", "MARKER_RETRY_S", "ADD_RETRY_BACKOFF_S", "ADD_RETRY_MAX_S"]

logger = logging.getLogger("broker.txn")

#: seconds between attempts to write a marker that failed (a full disk, a closed log)
MARKER_RETRY_S = 0.5
#: Kafka's add.partitions.to.txn.retry.backoff.ms and add.partitions.to.txn.retry.backoff.max.ms
#: defaults: how a transactions V2 add answered CONCURRENT_TRANSACTIONS is retried
ADD_RETRY_BACKOFF_S = 0.02
ADD_RETRY_MAX_S = 0.1


class TransactionRuntime:
    """The transaction coordinator on ``host`` (see the module docstring). ``next_producer_id``
    hands out producer ids; ``on_offsets_marker(partition, producer id, commit)`` is called
    after a marker is written to ``__consumer_offsets``."""

    def __init__(self, host: CoordinatorHost, next_producer_id: Callable[[], int],
                 on_offsets_marker: Callable[[int, int, bool], None], clock: Callable[[], int] = now_ms,
                 transaction_version: Callable[[], int] = lambda: TV0) -> None:
        self.host = host
        config = TxnConfig(host.config)
        self.coordinator = TransactionCoordinator(config, next_producer_id, clock, transaction_version)
        self.topic = InternalTopic(host, TRANSACTION_STATE, config.num_partitions, config.segment_bytes,
                                   config.load_buffer_size, "transaction.state.log.num.partitions")
        self.on_offsets_marker = on_offsets_marker
        self._tasks: set[asyncio.Future[Any]] = set()
        #: transactional id -> the last of its V2 produce requests waiting to append (``produce_gate``)
        self._produce_tails: dict[str, asyncio.Future[None]] = {}

    @property
    def loading(self) -> bool:
        return self.coordinator.loading

    @property
    def txns(self) -> dict[str, TransactionMetadata]:
        return self.coordinator.txns

    def ensure_topic(self) -> None:
        """Create ``__transaction_state`` unless it exists (a StorageError if it cannot)."""
        self.topic.ensure()

    # ------------------------------------------------------------------ requests

    async def init_producer_id(self, transactional_id: str, timeout_ms: int, expected_pid: int = -1,
                               expected_epoch: int = -1) -> tuple[int, int, int]:
        """(error, producer id, epoch) for a transactional producer."""
        try:
            t = self.coordinator.prepare_init(transactional_id, timeout_ms, expected_pid, expected_epoch)
            await self._run(t)
        except CoordinatorError as e:
            return e.error_code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if t.error:
            return t.error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        m = t.metadata
        logger.info("initialized transactional id %s with producer id %d and epoch %d", transactional_id,
                    m.producer_id, m.producer_epoch)
        return 0, m.producer_id, m.producer_epoch

    async def add_partitions(self, txn_id: str, producer_id: int, epoch: int,
                             partitions: Iterable[tuple[str, int]], client_tv: int = TV0) -> int:
        """AddPartitionsToTxn / AddOffsetsToTxn: error code (0 when added)."""
        try:
            t = self.coordinator.prepare_add_partitions(txn_id, producer_id, epoch, partitions, client_tv)
            if t is not None:
                await self._run(t)
        except CoordinatorError as e:
            return e.error_code
        return 0

    async def add_for_v2(self, txn_id: str, producer_id: int, epoch: int, partitions: Iterable[tuple[str, int]]
                         ) -> int:
        """The partitions of a transactions V2 produce or offset commit join the transaction
        (Kafka's AddPartitionsToTxnManager with ``verify_only`` false): the coordinator's error
        code, CONCURRENT_TRANSACTIONS retried for up to ``ADD_RETRY_MAX_S``."""
        wanted = list(partitions)
        deadline = asyncio.get_running_loop().time() + ADD_RETRY_MAX_S
        while True:
            code = await self.add_partitions(txn_id, producer_id, epoch, wanted, TV2)
            if code != E.CONCURRENT_TRANSACTIONS or asyncio.get_running_loop().time() + ADD_RETRY_BACKOFF_S > deadline:
                return code
            await asyncio.sleep(ADD_RETRY_BACKOFF_S)

    def verify_partitions(self, txn_id: str, producer_id: int, epoch: int,
                          partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        return self.coordinator.verify_partitions(txn_id, producer_id, epoch, partitions)

    async def end_txn(self, txn_id: str, producer_id: int, epoch: int, commit: bool, client_tv: int = TV0
                      ) -> tuple[int, int, int]:
        """EndTxn: Prepare* made durable and answered; the markers and Complete* follow.
        (error, producer id, epoch): for a transactions V2 client the identity to go on with
        (the bumped epoch, or a new producer id at 0), else -1, -1 (Kafka's answer before V2)."""
        try:
            t = self.coordinator.prepare_end(txn_id, producer_id, epoch, commit, client_tv)
            if t is not None:
                await self._run(t)
        except CoordinatorError as e:
            return e.error_code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if client_tv < TV2:
            return 0, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        m = self.txns[txn_id]
        if t is None:  # a retry of an EndTxn that completed: the identity as it is
            return 0, m.producer_id, m.producer_epoch
        pid, epoch = self.coordinator.next_identity(m)
        return 0, pid, epoch

    def client_tv(self, tv2_request: bool) -> int:
        return self.coordinator.client_tv(tv2_request)

    def in_transaction(self, txn_id: str | None, producer_id: int, epoch: int, topic: str, partition: int) -> bool:
        return self.coordinator.in_transaction(txn_id, producer_id, epoch, topic, partition)

    def produce_busy(self, txn_id: str) -> bool:
        """A V2 produce request of ``txn_id`` is waiting for its add: later ones queue behind it."""
        return txn_id in self._produce_tails

    def produce_gate(self, txn_id: str, work: Callable[[], Coroutine[Any, Any, Any]]) -> asyncio.Task[Any]:
        """Run ``work`` after the V2 produce requests of ``txn_id`` that arrived before it: a
        request that waits for its partitions' add must not be overtaken by the producer's
        next one (its sequences follow). The place in line is taken now, while the request is
        dispatched (a later request of the same read must see it); ``work`` runs in a task of
        its own, which frees the place however it ends, even cancelled before it started."""
        previous = self._produce_tails.get(txn_id)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._produce_tails[txn_id] = done

        async def run() -> Any:
            if previous is not None:
                await previous
            return await work()

        def release(_task: asyncio.Future[Any]) -> None:
            if not done.done():
                done.set_result(None)
            if self._produce_tails.get(txn_id) is done:
                del self._produce_tails[txn_id]

        task = asyncio.ensure_future(run())
        task.add_done_callback(release)
        return task

    def verify_produce(self, txn_id: str | None, producer_id: int, epoch: int, topic: str, partition: int,
                       version: int) -> int:
        return self.coordinator.verify_produce(txn_id, producer_id, epoch, topic, partition, version)

    # ------------------------------------------------------------------ writing

    async def _run(self, t: Transition) -> None:
        """Write ``t`` and apply it (CoordinatorError COORDINATOR_NOT_AVAILABLE when it cannot be
        written); a transition that ends a transaction then completes it in the background."""
        m = t.metadata
        t.begin()
        try:
            if t.durable:
                await self._flush_markers(m)
            await self._persist(m.transactional_id, t.record, t.durable)
            t.apply()
        finally:
            t.end()
        if t.complete is not None:
            if t.fence:
                logger.info("aborting the open transaction of %s under epoch %d (fencing producer id %d)",
                            m.transactional_id, m.producer_epoch, m.producer_id)
            elif t.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                logger.info("%s transaction of %s (producer id %d, epoch %d) on %d partitions",
                            "committing" if t.complete else "aborting", m.transactional_id, m.producer_id,
                            m.producer_epoch, len(m.partitions))
            self._spawn(self._complete(m, t.complete))

    async def _persist(self, txn_id: str, value: TxnLogValue | None, durable: bool) -> None:
        """Append ``value`` (None: a tombstone) as ``txn_id``'s record and (``durable``) wait for
        its fsync; CoordinatorError (COORDINATOR_NOT_AVAILABLE) if it cannot be written."""
        encoded = None if value is None else encode_txn_value(value, self.coordinator.log_value_version())
        batch = build_batch([(encode_txn_key(txn_id), encoded)])
        partition = self.coordinator.partition_for(txn_id)
        try:
            if durable:
                await self.topic.append_durable(partition, batch)
            else:
                self.topic.append(partition, batch)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # the client retries COORDINATOR_NOT_AVAILABLE
            logger.error("cannot write the state of transactional id %s: %s", txn_id, e)
            raise CoordinatorError(E.COORDINATOR_NOT_AVAILABLE) from e

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _complete(self, m: TransactionMetadata, commit: bool) -> None:
        """Append the marker to every partition of the transaction (retried until written), then,
        in the same step of the event loop, write Complete* (see the module docstring)."""
        m.pending = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        try:
            for topic, partition in sorted(m.partitions):
                while True:
                    written = self._write_marker(topic, partition, m.producer_id, m.producer_epoch, commit,
                                                 m.transactional_id)
                    if written is not False:
                        break
                    await asyncio.sleep(MARKER_RETRY_S)
                if written is not True:
                    m.unflushed_markers.append(written)
        finally:
            m.pending = None
        if m.unflushed_markers:
            self._spawn(self._flush_markers(m, quiet=True))
        while True:
            try:
                await self._run(self.coordinator.prepare_complete(m, commit))
                return
            except CoordinatorError:
                await asyncio.sleep(MARKER_RETRY_S)

    async def _flush_markers(self, m: TransactionMetadata, quiet: bool = False) -> None:
        """Wait until the last transaction's markers are fsync'd. Every durable state write of
        the id waits for this first, so that no later state (a new epoch, a new transaction)
        can outlive, after a power loss, markers that a repair would have to guess."""
        while m.unflushed_markers:
            log, offset = m.unflushed_markers[0]
            try:
                await self.host.durable(log, offset)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                if quiet:
                    return  # the next state write waits (and reports) instead
                logger.error("cannot fsync a transaction marker of %s: %s", m.transactional_id, e)
                raise CoordinatorError(E.COORDINATOR_NOT_AVAILABLE) from e
            if m.unflushed_markers and m.unflushed_markers[0] == (log, offset):
                m.unflushed_markers.pop(0)

    def _write_marker(self, topic: str, partition: int, producer_id: int, epoch: int, commit: bool,
                      transactional_id: str) -> bool | tuple[Log, int]:
        """Append a COMMIT/ABORT marker to ``topic-partition``: (log, offset after it), True if
        the partition is gone (nothing to mark), False if it must be retried."""
        log = self.host.logs.get_log(topic, partition)
        if log is None:  # deleted since: nothing to mark
            return True
        try:
            info = log.append(build_control_batch(producer_id, epoch, commit, COORDINATOR_EPOCH,
                                                  self.coordinator.clock()), from_coordinator=True)
        except Exception as e:  # noqa: BLE001 - retried: the transaction must end
            logger.error("cannot write the %s marker of %s to %s-%d (retrying): %s",
                         "COMMIT" if commit else "ABORT", transactional_id, topic, partition, e)
            return False
        if topic == CONSUMER_OFFSETS:
            self.on_offsets_marker(partition, producer_id, commit)
        self.host.notify_append(topic, partition)
        return log, info.last_offset + 1

    def repair_dangling(self) -> int:
        """Write the markers a crash lost (``TransactionCoordinator.dangling``); returns how many
        were written."""
        n = 0
        found = self.coordinator.dangling(
            (tp, log.producer_state) for tp, log in list(self.host.logs.logs.items()))
        for d in found:
            logger.warning("%s-%d: transaction of producer id %d (%s) is open but its coordinator state has"
                           " ended: writing the lost %s marker", d.topic, d.partition, d.producer_id,
                           d.transactional_id, "COMMIT" if d.commit else "ABORT")
            if self._write_marker(d.topic, d.partition, d.producer_id, d.producer_epoch, d.commit,
                                  d.transactional_id) is not False:
                n += 1
        return n

    # ------------------------------------------------------------------ periodic work

    def abort_timed_out(self) -> int:
        """Fence and abort the Ongoing transactions older than their timeout."""
        fences = self.coordinator.timed_out()
        now = self.coordinator.clock()
        for t in fences:
            m = t.metadata
            logger.info("transaction of %s (producer id %d, epoch %d) timed out after %d ms: aborting it",
                        m.transactional_id, m.producer_id, m.producer_epoch, now - m.start_ms)
            t.begin()  # no other change of the id until the fence is written (``_run`` ends it)
            self._spawn(self._run_quietly(t))
        return len(fences)

    async def _run_quietly(self, t: Transition) -> None:
        try:
            await self._run(t)
        except CoordinatorError:
            pass  # logged by _persist; the next round tries again

    async def expire_transactional_ids(self) -> int:
        """Remove ids idle (Empty or Complete*) for ``transactional.id.expiration.ms`` (a tombstone)."""
        gone = self.coordinator.expirable()
        removed = 0
        for m in gone:
            try:
                await self._persist(m.transactional_id, None, durable=False)
            except CoordinatorError:
                continue
            self.coordinator.txns.pop(m.transactional_id, None)
            removed += 1
        if removed:
            logger.info("expired %d transactional ids (transactional.id.expiration.ms)", removed)
        return removed

    # ------------------------------------------------------------------ loading

    def start_loading(self) -> asyncio.Task[None] | None:
        """Replay ``__transaction_state`` in the background (if it exists)."""
        partitions = self.topic.adopt_existing()
        if partitions is None:
            return None
        self.coordinator.config.num_partitions = partitions
        self.coordinator.loading = True
        task = asyncio.ensure_future(self._load_all())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _load_all(self) -> None:
        summary = await self.topic.load(_decode, self._replay_chunk)
        damaged = f"; {summary.skipped_batches} damaged batches skipped" if summary.skipped_batches else ""
        logger.info("loaded %d transactional ids (%d records) from %s in %.3f s%s", len(self.txns), summary.records,
                    TRANSACTION_STATE, summary.seconds, damaged)
        self.on_loaded()

    def _replay_chunk(self, _partition: int, items: list[tuple[str, TxnLogValue | None]]) -> None:
        for txn_id, value in items:
            self.coordinator.replay(txn_id, value)

    def on_loaded(self) -> None:
        """Finish what the last run left half-done: lost markers are written, transactions in
        Prepare* get their markers (again); Ongoing ones are left to their producer or timeout."""
        self.coordinator.loading = False
        self.repair_dangling()
        for m, commit in self.coordinator.left_prepared():
            logger.info("completing the %s of %s left by the last run", m.state.kafka_name, m.transactional_id)
            self._spawn(self._complete(m, commit))

    async def close(self) -> None:
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)
        for t in list(self._tasks):
            t.cancel()


def _decode(partition: int, chunk: list[LoggedRecord]) -> list[tuple[str, TxnLogValue | None]]:
    """(transactional id, value or None for a tombstone) of a chunk's records, in the loader's
    worker thread; markers and undecodable records are skipped (the latter logged)."""
    out: list[tuple[str, TxnLogValue | None]] = []
    for _, _, is_control, record in chunk:
        if is_control or record.key is None:
            continue
        try:
            out.append((decode_txn_key(record.key),
                        decode_txn_value(record.value) if record.value is not None else None))
        except DecodeError as e:
            logger.warning("%s-%d: skipping undecodable record at offset %d: %s", TRANSACTION_STATE, partition,
                           record.offset, e)
    return out
