"""TransactionCoordinator: Kafka's transaction coordinator for one node — transactional ids,
their producer ids and epochs, the partitions of each open transaction, and the COMMIT/ABORT
markers that end it.

State per transactional id (``TransactionMetadata``), persisted in ``__transaction_state``
(records.py) before any answer depends on it; the last record of an id is its state after a
restart. Transitions, as Kafka's (clients that do not bump the epoch per transaction)::

    Empty / CompleteCommit / CompleteAbort --AddPartitions/AddOffsets--> Ongoing
    Ongoing --EndTxn(commit)--> PrepareCommit --markers written--> CompleteCommit
    Ongoing --EndTxn(abort) / timeout / InitProducerId--> PrepareAbort --markers--> CompleteAbort
    Empty / Complete* --InitProducerId--> Empty with epoch + 1 (fences the previous producer)

- **InitProducerId(transactional_id)**: a new id gets a fresh producer id at epoch 0; a known
  one gets its epoch bumped (at 32766 a fresh producer id instead). A transaction still
  Ongoing is first aborted under a bumped epoch (``PrepareEpochFence``) and the caller told
  CONCURRENT_TRANSACTIONS, which it retries: the old producer (a zombie) is fenced — its
  writes get INVALID_PRODUCER_EPOCH, its transaction calls PRODUCER_FENCED. Timeouts above
  ``transaction.max.timeout.ms`` (15 min) get INVALID_TRANSACTION_TIMEOUT.
- **AddPartitionsToTxn / AddOffsetsToTxn** add partitions (AddOffsets: the group's
  ``__consumer_offsets`` partition) and make the transaction Ongoing. Wrong producer id:
  INVALID_PRODUCER_ID_MAPPING; old epoch: PRODUCER_FENCED; while a transaction is ending or a
  state write is in flight: CONCURRENT_TRANSACTIONS (retriable).
- **EndTxn**: PrepareCommit/PrepareAbort is made durable, the client answered, then a marker
  is appended to every partition of the transaction (``Log.append(from_coordinator=True)``;
  on ``__consumer_offsets`` it also settles the group's pending transactional offsets) and
  the CompleteCommit/CompleteAbort record right after, without waiting for fsyncs. A crash
  leaves a Prepare* record (markers are written again at start-up: a second marker for a
  closed transaction changes nothing), an Ongoing one (aborted at its timeout), or Complete*
  with a marker lost (a power loss): at start-up every partition's open transaction whose
  coordinator state has ended gets its marker (``repair_dangling``). A retried EndTxn after
  completion answers NONE; the opposite outcome, INVALID_TXN_STATE.
- **Timeouts**: every ``transaction.abort.timed.out.transaction.cleanup.interval.ms`` the
  Ongoing transactions older than their timeout are aborted under a bumped epoch, so a
  producer that died mid-transaction no longer holds back the partitions' last stable offset.
  Ids idle for ``transactional.id.expiration.ms`` (7 days) are removed (a tombstone).

Produce: a transactional batch is accepted only for a partition its transaction added
(``verify_produce``): else INVALID_TXN_STATE (TRANSACTION_ABORTABLE from Produce v11), as
Kafka's partition verification answers; one without a transactional id (every Produce v0-2)
is refused before it gets here (broker/handlers/produce.py).

Single node: the coordinator epoch is 0, markers are written locally (no WriteTxnMarkers; the
broker serves WriteTxnMarkers only for operators ending a hanging transaction, see
broker/handlers/write_txn_markers.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

from client.clock import now_ms
from client.protocol.api import ErrorCode as E
from client.protocol.primitives import DecodeError
from client.records.control import build_control_batch
from client.records.record import build_batch

from ..coordinator_loader import CoordinatorLoader
from ..errors import ApiError
from ..group.records import CONSUMER_OFFSETS
from ..storage.errors import TopicExistsError
from ..storage.record_reader import LoggedRecord
from .records import (
    TRANSACTION_STATE,
    TxnLogValue,
    TxnState,
    decode_txn_key,
    decode_txn_value,
    encode_txn_key,
    encode_txn_value,
    partition_for,
)

__all__ = ["TransactionCoordinator", "TransactionMetadata", "TxnConfig"]

logger = logging.getLogger("broker.txn")

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 32767
COORDINATOR_EPOCH = 0
#: seconds between attempts to write a marker that failed (a full disk, a closed log)
MARKER_RETRY_S = 0.5


class TxnConfig:
    def __init__(self, cfg: Any) -> None:
        self.num_partitions = cfg.int("transaction.state.log.num.partitions")
        self.segment_bytes = cfg.int("transaction.state.log.segment.bytes")
        self.max_timeout_ms = cfg.int("transaction.max.timeout.ms")
        self.id_expiration_ms = cfg.int("transactional.id.expiration.ms")
        self.load_buffer_size = cfg.int("transaction.state.log.load.buffer.size")


class TransactionMetadata:
    """One transactional id: its producer id and epoch (``last_epoch``: the epoch before the
    last bump, so a retried InitProducerId gets the same answer), timeout, state, the
    partitions of the open transaction and ``pending``: the state being written (no other
    change is accepted until that write is durable)."""

    __slots__ = ("transactional_id", "producer_id", "last_producer_id", "producer_epoch", "last_epoch",
                 "timeout_ms", "state", "partitions", "start_ms", "last_update_ms", "pending", "unflushed_markers")

    def __init__(self, transactional_id: str, producer_id: int, timeout_ms: int, now_ms: int) -> None:
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.last_producer_id = NO_PRODUCER_ID
        self.producer_epoch = NO_PRODUCER_EPOCH
        self.last_epoch = NO_PRODUCER_EPOCH
        self.timeout_ms = timeout_ms
        self.state = TxnState.EMPTY
        self.partitions: set[tuple[str, int]] = set()
        self.start_ms = -1
        self.last_update_ms = now_ms
        self.pending: TxnState | None = None
        #: (log, offset after the marker) of the last transaction's markers, until they are fsync'd
        self.unflushed_markers: list[tuple[Any, int]] = []

    @property
    def epoch_exhausted(self) -> bool:
        return self.producer_epoch >= MAX_EPOCH - 1

    def to_record(self, state: TxnState | None = None) -> TxnLogValue:
        s = self.state if state is None else state
        parts = tuple(sorted(self.partitions)) if s in (TxnState.ONGOING, TxnState.PREPARE_COMMIT,
                                                         TxnState.PREPARE_ABORT) else ()
        return TxnLogValue(self.producer_id, self.producer_epoch, self.timeout_ms, s, parts, self.last_update_ms,
                           self.start_ms)

    @classmethod
    def from_record(cls, transactional_id: str, v: TxnLogValue) -> TransactionMetadata:
        m = cls(transactional_id, v.producer_id, v.timeout_ms, v.last_update_timestamp_ms)
        m.producer_epoch = v.producer_epoch
        m.state = v.state
        m.partitions = set(v.partitions)
        m.start_ms = v.start_timestamp_ms
        return m

    def describe(self) -> dict[str, Any]:
        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(self.partitions):
            by_topic.setdefault(t, []).append(p)
        return {"transactional_id": self.transactional_id, "transaction_state": self.state.kafka_name,
                "transaction_timeout_ms": self.timeout_ms, "transaction_start_time_ms": self.start_ms,
                "producer_id": self.producer_id, "producer_epoch": self.producer_epoch,
                "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]}


class CoordinatorError(ApiError):
    """A transactional request's answer is this error code."""

    def __init__(self, code: int) -> None:
        super().__init__(error_code=code)


class TransactionCoordinator:
    """Bound to the broker's state: its LogManager, producer ids, durability and the group
    coordinator (pending transactional offsets). Runs on the event loop."""

    def __init__(self, state: Any, clock: Any = now_ms) -> None:
        self.state = state
        self.config = TxnConfig(state.config)
        self.clock = clock
        self.txns: dict[str, TransactionMetadata] = {}
        #: True until ``__transaction_state`` is loaded: every request answers COORDINATOR_LOAD_IN_PROGRESS
        self.loading = False
        self._tasks: set[asyncio.Future[Any]] = set()

    # ------------------------------------------------------------------ the topic

    @property
    def num_partitions(self) -> int:
        """The partition count transactional ids are placed by (``transaction.state.log.num.partitions``,
        or the existing topic's count found at start-up)."""
        return self.config.num_partitions

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.config.num_partitions)

    def ensure_topic(self) -> None:
        """Create ``__transaction_state`` unless it exists (a StorageError if it cannot)."""
        logs = self.state.logs
        if TRANSACTION_STATE in logs.partition_counts():
            return
        try:
            logs.create_topic(TRANSACTION_STATE, self.config.num_partitions, {
                "cleanup.policy": "compact", "segment.bytes": str(self.config.segment_bytes)})
        except TopicExistsError:
            pass

    async def _persist(self, m: TransactionMetadata, new: TxnLogValue, durable: bool = True) -> None:
        """Append ``new`` as ``m``'s record and (``durable``) wait for its fsync;
        CoordinatorError (COORDINATOR_NOT_AVAILABLE) if it cannot be written."""
        try:
            self.ensure_topic()
            log = self.state.logs.log_or_raise(TRANSACTION_STATE, self.partition_for(m.transactional_id))
            info = log.append(build_batch([(encode_txn_key(m.transactional_id), encode_txn_value(new))]))
            if durable:
                await self.state.durable(log, info.last_offset + 1)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - the client retries COORDINATOR_NOT_AVAILABLE
            logger.error("cannot write the state of transactional id %s: %s", m.transactional_id, e)
            raise CoordinatorError(E.COORDINATOR_NOT_AVAILABLE) from e

    async def _transit(self, m: TransactionMetadata, state: TxnState, durable: bool = True, **changes: Any) -> None:
        """Write ``m`` in ``state`` with ``changes`` applied, then apply them in memory. While
        the write is in flight ``m.pending`` is set and other changes are refused. Without
        ``durable`` the state applies once appended: the next durable write of this id (the
        same ``__transaction_state`` partition) covers it before anything depends on it."""
        m.pending = state
        try:
            if durable:
                await self._flush_markers(m)
            saved = {k: getattr(m, k) for k in changes}
            for k, v in changes.items():
                setattr(m, k, v)
            m.last_update_ms = self.clock()
            record = m.to_record(state)
            for k, v in saved.items():  # memory follows the log: restored until durable
                setattr(m, k, v)
            await self._persist(m, record, durable)
            for k, v in changes.items():
                setattr(m, k, v)
            m.state = state
        finally:
            m.pending = None

    def _check_ready(self) -> None:
        if self.loading:
            raise CoordinatorError(E.COORDINATOR_LOAD_IN_PROGRESS)

    # ------------------------------------------------------------------ InitProducerId

    async def init_producer_id(self, transactional_id: str, timeout_ms: int, expected_pid: int = -1,
                               expected_epoch: int = -1) -> tuple[int, int, int]:
        """(error, producer id, epoch) for a transactional producer."""
        try:
            return (0, *await self._init_producer_id(transactional_id, timeout_ms, expected_pid, expected_epoch))
        except CoordinatorError as e:
            return e.error_code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH

    async def _init_producer_id(self, txn_id: str, timeout_ms: int, expected_pid: int,
                                expected_epoch: int) -> tuple[int, int]:
        if txn_id == "":
            raise CoordinatorError(E.INVALID_REQUEST)
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            raise CoordinatorError(E.INVALID_TRANSACTION_TIMEOUT)
        self._check_ready()
        m = self.txns.get(txn_id)
        if m is None:
            m = self.txns[txn_id] = TransactionMetadata(txn_id, self.state.producer_ids.next_id(), timeout_ms,
                                                        self.clock())
        if m.pending is not None:
            raise CoordinatorError(E.CONCURRENT_TRANSACTIONS)
        if expected_pid >= 0 and not (m.producer_epoch == NO_PRODUCER_EPOCH or expected_pid == m.producer_id or (
                expected_pid == m.last_producer_id and expected_epoch >= MAX_EPOCH - 1)):
            raise CoordinatorError(E.PRODUCER_FENCED)
        if m.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            raise CoordinatorError(E.CONCURRENT_TRANSACTIONS)
        if m.state == TxnState.ONGOING:
            # Fence the producer of the open transaction: abort it under a bumped epoch (never
            # handed out), and have this caller retry; its retry bumps the epoch again.
            await self._fence_and_abort(m)
            raise CoordinatorError(E.CONCURRENT_TRANSACTIONS)
        if m.epoch_exhausted and (expected_epoch < 0 or expected_epoch == m.producer_epoch):
            pid, epoch, last_pid, last_epoch = self.state.producer_ids.next_id(), 0, m.producer_id, NO_PRODUCER_EPOCH
        else:
            pid, last_pid = m.producer_id, m.last_producer_id
            if expected_epoch < 0 or m.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == m.producer_epoch:
                epoch, last_epoch = m.producer_epoch + 1, (m.producer_epoch if expected_epoch >= 0 else -1)
            elif expected_epoch == m.last_epoch:  # a retry whose answer was lost: the same epoch again
                epoch, last_epoch = m.producer_epoch, m.last_epoch
            else:
                raise CoordinatorError(E.PRODUCER_FENCED)
        await self._transit(m, TxnState.EMPTY, producer_id=pid, producer_epoch=epoch, last_producer_id=last_pid,
                            last_epoch=last_epoch, timeout_ms=timeout_ms, partitions=set(), start_ms=-1)
        logger.info("initialized transactional id %s with producer id %d and epoch %d", txn_id, pid, epoch)
        return pid, epoch

    # ------------------------------------------------------------------ adding partitions

    def _validate(self, txn_id: str, producer_id: int, epoch: int) -> TransactionMetadata:
        if not txn_id:
            raise CoordinatorError(E.INVALID_REQUEST)
        self._check_ready()
        m = self.txns.get(txn_id)
        if m is None or m.producer_id != producer_id:
            raise CoordinatorError(E.INVALID_PRODUCER_ID_MAPPING)
        if m.producer_epoch != epoch:
            raise CoordinatorError(E.PRODUCER_FENCED)
        return m

    async def add_partitions(self, txn_id: str, producer_id: int, epoch: int,
                             partitions: Iterable[tuple[str, int]]) -> int:
        """AddPartitionsToTxn / AddOffsetsToTxn: error code (0 when added)."""
        wanted = set(partitions)
        try:
            m = self._validate(txn_id, producer_id, epoch)
            if m.pending is not None or m.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                raise CoordinatorError(E.CONCURRENT_TRANSACTIONS)
            if m.state == TxnState.ONGOING and wanted <= m.partitions:
                return 0
            start = m.start_ms if m.state == TxnState.ONGOING else self.clock()
            await self._transit(m, TxnState.ONGOING, partitions=m.partitions | wanted, start_ms=start)
        except CoordinatorError as e:
            return e.error_code
        return 0

    def verify_produce(self, txn_id: str | None, producer_id: int, epoch: int, topic: str, partition: int,
                       version: int) -> int:
        """The error for a transactional batch to ``topic-partition`` (0: accept). A batch of
        an older epoch is left to the log, which answers INVALID_PRODUCER_EPOCH."""
        m = self.txns.get(txn_id) if txn_id else None
        if m is None or m.producer_id != producer_id:
            return int(E.INVALID_PRODUCER_ID_MAPPING) if not self.loading else int(E.NOT_ENOUGH_REPLICAS)
        if epoch < m.producer_epoch:
            return 0
        if m.state != TxnState.ONGOING or (topic, partition) not in m.partitions:
            return int(E.TRANSACTION_ABORTABLE if version >= 11 else E.INVALID_TXN_STATE)
        return 0

    # ------------------------------------------------------------------ ending

    async def end_txn(self, txn_id: str, producer_id: int, epoch: int, commit: bool) -> int:
        try:
            m = self._validate(txn_id, producer_id, epoch)
            if m.pending is not None:
                raise CoordinatorError(E.CONCURRENT_TRANSACTIONS)
            done = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
            prepared = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
            if m.state == TxnState.ONGOING:
                await self._end(m, commit)
                return 0
            if m.state == done:
                return 0  # a retry of an EndTxn that completed
            if m.state == prepared:
                raise CoordinatorError(E.CONCURRENT_TRANSACTIONS)
            raise CoordinatorError(E.INVALID_TXN_STATE)
        except CoordinatorError as e:
            return e.error_code

    async def _end(self, m: TransactionMetadata, commit: bool) -> None:
        """Write Prepare*, then (in the background) the markers and Complete*."""
        await self._transit(m, TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT)
        logger.info("%s transaction of %s (producer id %d, epoch %d) on %d partitions",
                    "committing" if commit else "aborting", m.transactional_id, m.producer_id, m.producer_epoch,
                    len(m.partitions))
        self._spawn(self._complete(m, commit))

    async def _fence_and_abort(self, m: TransactionMetadata) -> None:
        """Bump the epoch of an Ongoing transaction and abort it under the new epoch."""
        new_epoch = m.producer_epoch + 1 if m.producer_epoch < MAX_EPOCH - 1 else m.producer_epoch
        await self._transit(m, TxnState.PREPARE_ABORT, producer_epoch=new_epoch, last_epoch=NO_PRODUCER_EPOCH)
        logger.info("aborting the open transaction of %s under epoch %d (fencing producer id %d)",
                    m.transactional_id, m.producer_epoch, m.producer_id)
        self._spawn(self._complete(m, False))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _complete(self, m: TransactionMetadata, commit: bool) -> None:
        """Append the marker to every partition of the transaction, then (in the same step of
        the event loop) write Complete*. A marker that cannot be written is retried until it is.

        Neither is waited for here: the next transaction of this id may begin at once, and its
        first durable state write waits for these markers' fsync (``_flush_markers``). A crash
        that loses them (a power loss; a SIGKILL loses nothing written) leaves Prepare* on disk,
        whose markers are written again at start-up, or Complete* (made durable by another id's
        write to the same ``__transaction_state`` partition) with partitions whose transaction
        is still open, which the start-up repair closes with the right marker
        (``repair_dangling``)."""
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
        done = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        while True:
            try:
                await self._transit(m, done, durable=False, partitions=set())
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
                await self.state.durable(log, offset)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001
                if quiet:
                    return  # the next state write waits (and reports) instead
                logger.error("cannot fsync a transaction marker of %s: %s", m.transactional_id, e)
                raise CoordinatorError(E.COORDINATOR_NOT_AVAILABLE) from e
            if m.unflushed_markers and m.unflushed_markers[0] == (log, offset):
                m.unflushed_markers.pop(0)

    def _write_marker(self, topic: str, partition: int, producer_id: int, epoch: int, commit: bool,
                      transactional_id: str) -> bool | tuple[Any, int]:
        """Append a COMMIT/ABORT marker to ``topic-partition``: (log, offset after it), True if
        the partition is gone (nothing to mark), False if it must be retried. On
        ``__consumer_offsets`` the group coordinator settles the pending offsets."""
        log = self.state.logs.get_log(topic, partition)
        if log is None:  # deleted since: nothing to mark
            return True
        try:
            info = log.append(build_control_batch(producer_id, epoch, commit, COORDINATOR_EPOCH, self.clock()),
                              from_coordinator=True)
        except Exception as e:  # noqa: BLE001 - retried: the transaction must end
            logger.error("cannot write the %s marker of %s to %s-%d (retrying): %s",
                         "COMMIT" if commit else "ABORT", transactional_id, topic, partition, e)
            return False
        if topic == CONSUMER_OFFSETS and self.state.groups is not None:
            self.state.groups.coordinator.complete_txn(partition, producer_id, commit)
        self.state.notify_append(topic, partition)
        return log, info.last_offset + 1

    def repair_dangling(self) -> int:
        """Close the transactions still open in a partition whose coordinator state says they
        ended (or knows nothing of them): a crash lost their marker. CompleteCommit gets a
        COMMIT marker, anything else an ABORT (under the partition's producer epoch, or the
        coordinator's if newer). Returns how many markers were written."""
        by_pid = {m.producer_id: m for m in self.txns.values()}
        n = 0
        for (topic, partition), log in list(self.state.logs.logs.items()):
            psm = log.producer_state
            for pid in list(psm.ongoing_txns):
                m = by_pid.get(pid)
                if m is not None and (m.state in (TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)
                                      or m.pending is not None):
                    continue  # still open, or being ended: its producer, timeout or markers end it
                entry = psm.last_entry(pid)
                epoch = entry.producer_epoch if entry is not None else 0
                commit = m is not None and m.state == TxnState.COMPLETE_COMMIT and m.producer_epoch == epoch
                if m is not None:
                    epoch = max(epoch, m.producer_epoch)
                logger.warning("%s-%d: transaction of producer id %d is open but its coordinator state is %s:"
                               " writing the lost %s marker", topic, partition, pid,
                               m.state.kafka_name if m is not None else "unknown", "COMMIT" if commit else "ABORT")
                if self._write_marker(topic, partition, pid, epoch, commit,
                                      m.transactional_id if m else str(pid)) is not False:
                    n += 1
        return n

    # ------------------------------------------------------------------ timeouts and expiry

    def abort_timed_out(self) -> int:
        """Abort (and fence) the Ongoing transactions older than their timeout."""
        if self.loading:
            return 0
        now = self.clock()
        n = 0
        for m in list(self.txns.values()):
            if m.state == TxnState.ONGOING and m.pending is None and m.start_ms + m.timeout_ms < now:
                logger.info("transaction of %s (producer id %d, epoch %d) timed out after %d ms: aborting it",
                            m.transactional_id, m.producer_id, m.producer_epoch, now - m.start_ms)
                self._spawn(self._fence_and_abort(m))
                n += 1
        return n

    async def expire_transactional_ids(self) -> int:
        """Remove ids idle (Empty or Complete*) for ``transactional.id.expiration.ms``."""
        if self.loading:
            return 0
        now = self.clock()
        gone = [m for m in self.txns.values() if m.pending is None and m.state in (
            TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
            and now - m.last_update_ms >= self.config.id_expiration_ms]
        for m in gone:
            try:
                self.ensure_topic()
                log = self.state.logs.log_or_raise(TRANSACTION_STATE, self.partition_for(m.transactional_id))
                log.append(build_batch([(encode_txn_key(m.transactional_id), None)]))
            except Exception as e:  # noqa: BLE001
                logger.error("cannot expire transactional id %s: %s", m.transactional_id, e)
                continue
            self.txns.pop(m.transactional_id, None)
        if gone:
            logger.info("expired %d transactional ids (transactional.id.expiration.ms)", len(gone))
        return len(gone)

    # ------------------------------------------------------------------ describing

    def describe(self, txn_id: str) -> dict[str, Any]:
        """DescribeTransactions' entry for ``txn_id``."""
        out: dict[str, Any] = {"transactional_id": txn_id, "error_code": 0, "transaction_state": "",
                               "transaction_timeout_ms": 0, "transaction_start_time_ms": -1, "producer_id": -1,
                               "producer_epoch": -1, "topics": []}
        m = self.txns.get(txn_id)
        if self.loading:
            out["error_code"] = int(E.COORDINATOR_LOAD_IN_PROGRESS)
        elif not txn_id:
            out["error_code"] = int(E.INVALID_REQUEST)
        elif m is None:
            out["error_code"] = int(E.TRANSACTIONAL_ID_NOT_FOUND)
        else:
            out.update(m.describe())
        return out

    def list_transactions(self, states: list[str], producer_ids: list[int], duration_ms: int
                          ) -> tuple[int, list[str], list[dict[str, Any]]]:
        """ListTransactions: (error, unknown state names, [{transactional_id, producer_id,
        transaction_state}])."""
        if self.loading:
            return int(E.COORDINATOR_LOAD_IN_PROGRESS), [], []
        by_name = {s.kafka_name: s for s in TxnState}
        unknown = [n for n in states if n not in by_name]
        wanted = {by_name[n] for n in states if n in by_name}
        pids = set(producer_ids)
        now = self.clock()
        found = [{"transactional_id": m.transactional_id, "producer_id": m.producer_id,
                  "transaction_state": m.state.kafka_name}
                 for m in sorted(self.txns.values(), key=lambda m: m.transactional_id)
                 if m.state != TxnState.DEAD and (not pids or m.producer_id in pids)
                 and (not states or m.state in wanted) and (duration_ms < 0 or now - m.start_ms > duration_ms)]
        return 0, unknown, found

    # ------------------------------------------------------------------ loading

    def start_loading(self) -> asyncio.Task[None] | None:
        """Replay ``__transaction_state`` in the background (if it exists); until it is done
        every request answers COORDINATOR_LOAD_IN_PROGRESS, which clients retry."""
        info = self.state.logs.topic(TRANSACTION_STATE)
        if info is None:
            return None
        if info.partitions != self.config.num_partitions:
            logger.warning("%s has %d partitions but transaction.state.log.num.partitions is %d: transactional"
                           " ids are placed by the topic's count", TRANSACTION_STATE, info.partitions,
                           self.config.num_partitions)
            self.config.num_partitions = info.partitions
        self.loading = True
        task = asyncio.ensure_future(self._load_all(info.partitions))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _load_all(self, partitions: int) -> None:
        loader: CoordinatorLoader[tuple[str, TxnLogValue | None]] = CoordinatorLoader(
            TRANSACTION_STATE, self.state.logs.get_log, self.config.load_buffer_size, _decode, self._replay_chunk)
        summary = await loader.load(range(partitions))
        damaged = f"; {summary.skipped_batches} damaged batches skipped" if summary.skipped_batches else ""
        logger.info("loaded %d transactional ids (%d records) from %s in %.3f s%s", len(self.txns), summary.records,
                    TRANSACTION_STATE, summary.seconds, damaged)
        self.on_loaded()

    def _replay_chunk(self, _partition: int, items: list[tuple[str, TxnLogValue | None]]) -> None:
        for txn_id, value in items:
            self.replay(txn_id, value)

    def replay(self, transactional_id: str, value: TxnLogValue | None) -> None:
        if value is None:
            self.txns.pop(transactional_id, None)
        else:
            self.txns[transactional_id] = TransactionMetadata.from_record(transactional_id, value)

    def on_loaded(self) -> None:
        """Finish what the last run left half-done: transactions in Prepare* get their markers
        (again); Ongoing ones are left to their producer or their timeout."""
        self.loading = False
        self.repair_dangling()
        for m in self.txns.values():
            if m.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                logger.info("completing the %s of %s left by the last run", m.state.kafka_name, m.transactional_id)
                self._spawn(self._complete(m, m.state == TxnState.PREPARE_COMMIT))
            elif m.state == TxnState.PREPARE_EPOCH_FENCE:  # Kafka never writes it; be safe
                self._spawn(self._complete(m, False))

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
