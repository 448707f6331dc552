"""TransactionCoordinator: Kafka's transaction coordinator for one node, as a sans-IO state
machine — transactional ids, their producer ids and epochs, the partitions of each open
transaction, and which state change each request makes. It does no I/O and needs no event
loop: a request is turned into a ``Transition`` (the record to write and the change it makes),
which the runtime (runtime.py) writes to ``__transaction_state``, waits on, and applies; the
runtime also writes the COMMIT/ABORT markers that end a transaction and loads the topic.

State per transactional id (``TransactionMetadata``), persisted in ``__transaction_state``
(records.py) before any answer depends on it; the last record of an id is its state after a
restart. Transitions, as Kafka's::

    Empty / CompleteCommit / CompleteAbort --AddPartitions/AddOffsets--> Ongoing
    Ongoing --EndTxn(commit)--> PrepareCommit --markers written--> CompleteCommit
    Ongoing --EndTxn(abort) / timeout / InitProducerId--> PrepareAbort --markers--> CompleteAbort
    Empty / Complete* --InitProducerId--> Empty with epoch + 1 (fences the previous producer)
    Empty / Complete* --EndTxn(abort), transactions V2 only--> PrepareAbort (no partitions)

- **InitProducerId(transactional_id)**: a new id gets a fresh producer id at epoch 0; a known
  one gets its epoch bumped (at 32766 a fresh producer id instead). A transaction still
  Ongoing is first aborted under a bumped epoch (``PrepareEpochFence``) and the caller told
  CONCURRENT_TRANSACTIONS, which it retries: the old producer (a zombie) is fenced — its
  writes get INVALID_PRODUCER_EPOCH, its transaction calls PRODUCER_FENCED. Timeouts above
  ``transaction.max.timeout.ms`` (15 min) get INVALID_TRANSACTION_TIMEOUT.
- **AddPartitionsToTxn / AddOffsetsToTxn** add partitions (AddOffsets: the group's
  ``__consumer_offsets`` partition) and make the transaction Ongoing. A write in flight:
  CONCURRENT_TRANSACTIONS (retriable; checked first, as Kafka 4.3 does); wrong producer id:
  INVALID_PRODUCER_ID_MAPPING; old epoch: PRODUCER_FENCED; while the transaction is ending:
  CONCURRENT_TRANSACTIONS.
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

**Transactions V2** (KIP-890 part 2), for a request of a client that speaks them (EndTxn v5,
Produce v12+, TxnOffsetCommit v5, the brokers' AddPartitionsToTxn v4+) while the finalized
``transaction.version`` is 2 (``client_tv`` 2; every other request is ``client_tv`` 0 and
keeps the rules above). The version a transaction was last changed with is kept with it
(``TransactionMetadata.client_tv``, Kafka's clientTransactionVersion):

- the partitions are added by the broker itself, at the producer's epoch, when its batch
  arrives (Produce) or its offsets do (TxnOffsetCommit); the client sends no AddPartitionsToTxn
  or AddOffsetsToTxn;
- EndTxn bumps the epoch: Prepare* is written with epoch + 1 (the markers carry it, so a late
  batch of the ended transaction is fenced by every partition it wrote to, and by the
  coordinator everywhere else) and the client is answered the producer id and epoch to use
  next. When the epoch would reach 32767, a new producer id is allocated (``next_producer_id``
  in Prepare*), which Complete* switches to at epoch 0. A retried EndTxn is recognised by its
  epoch being the bumped one minus 1 (or 32766 of the previous producer id after a switch) and
  answered NONE with the current producer id and epoch, as Kafka's table says: Abort of an
  Empty or completed transaction at the current epoch ends an empty transaction (epoch bump,
  no markers), Commit of one is INVALID_TXN_STATE;
- fences (InitProducerId of an open transaction, timeouts) follow the finalized level, as
  Kafka's use the server's version: at level 2 the abort after the fence bumps the epoch once
  more.

Produce: a transactional batch is accepted only for a partition its transaction added
(``verify_produce``): else INVALID_TXN_STATE (TRANSACTION_ABORTABLE from Produce v11), as
Kafka's partition verification answers; one without a transactional id (every Produce v0-2)
is refused before it gets here (broker/handlers/produce.py).

Transitions: ``begin`` marks the id ``pending`` (no other change is accepted until the write
is settled), ``apply`` makes memory follow the log once the record is written (durable where
the answer depends on it), ``end`` clears ``pending`` whether or not the write succeeded.

Single node: the coordinator epoch is 0, markers are written locally (no WriteTxnMarkers; the
broker serves WriteTxnMarkers only for operators ending a hanging transaction, see
broker/handlers/write_txn_markers.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from client.clock import now_ms
from client.protocol.api import ErrorCode as E

from ..config import BrokerConfig
from ..errors import ApiError
from ..storage.producer_state import ProducerStateManager
from .records import TxnLogValue, TxnState, partition_for

__all__ = ["TransactionCoordinator", "TransactionMetadata", "Transition", "TxnConfig", "CoordinatorError",
           "DanglingTxn", "TV0", "TV2"]

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 32767
COORDINATOR_EPOCH = 0
#: Kafka's TransactionVersion levels as a request's client speaks them: before transactions V2,
#: and V2 (the epoch bumps at every transaction end)
TV0, TV2 = 0, 2
_PREPARED = (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)
_ENDED = (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)


class TxnConfig:
    """The transaction coordinator's configs (Kafka's names)."""

    def __init__(self, cfg: BrokerConfig) -> None:
        self.num_partitions = cfg.int("transaction.state.log.num.partitions")
        self.segment_bytes = cfg.int("transaction.state.log.segment.bytes")
        self.max_timeout_ms = cfg.int("transaction.max.timeout.ms")
        self.id_expiration_ms = cfg.int("transactional.id.expiration.ms")
        self.load_buffer_size = cfg.int("transaction.state.log.load.buffer.size")


class TransactionMetadata:
    """One transactional id: its producer id and epoch (``last_epoch``: the epoch before the
    last bump, so a retried InitProducerId gets the same answer), timeout, state, the
    partitions of the open transaction and ``pending``: the state being written (no other
    change is accepted until that write is durable). As Kafka's: ``prev_producer_id`` is the
    producer id before the last transition (another one after a switch to a new id),
    ``next_producer_id`` the id a transactions V2 EndTxn switches to when the epoch runs out,
    ``client_tv`` the transaction version of the client that made the last change."""

    __slots__ = ("transactional_id", "producer_id", "prev_producer_id", "next_producer_id", "producer_epoch",
                 "last_epoch", "timeout_ms", "state", "partitions", "start_ms", "last_update_ms", "client_tv",
                 "pending", "unflushed_markers")

    def __init__(self, transactional_id: str, producer_id: int, timeout_ms: int, now_ms: int) -> None:
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.prev_producer_id = NO_PRODUCER_ID
        self.next_producer_id = NO_PRODUCER_ID
        self.client_tv = TV0
        self.producer_epoch = NO_PRODUCER_EPOCH
        self.last_epoch = NO_PRODUCER_EPOCH
        self.timeout_ms = timeout_ms
        self.state = TxnState.EMPTY
        self.partitions: set[tuple[str, int]] = set()
        self.start_ms = -1
        self.last_update_ms = now_ms
        self.pending: TxnState | None = None
        #: (log, offset after the marker) of the last transaction's markers, until they are fsync'd
        #: (the runtime's: every durable state write of the id waits for them first)
        self.unflushed_markers: list[tuple[Any, int]] = []

    @property
    def epoch_exhausted(self) -> bool:
        return self.producer_epoch >= MAX_EPOCH - 1

    def to_record(self, state: TxnState | None = None) -> TxnLogValue:
        s = self.state if state is None else state
        parts = tuple(sorted(self.partitions)) if s in (TxnState.ONGOING, TxnState.PREPARE_COMMIT,
                                                         TxnState.PREPARE_ABORT) else ()
        return TxnLogValue(self.producer_id, self.producer_epoch, self.timeout_ms, s, parts, self.last_update_ms,
                           self.start_ms, self.prev_producer_id, self.next_producer_id, self.client_tv)

    @classmethod
    def from_record(cls, transactional_id: str, v: TxnLogValue) -> TransactionMetadata:
        m = cls(transactional_id, v.producer_id, v.timeout_ms, v.last_update_timestamp_ms)
        m.producer_epoch = v.producer_epoch
        m.state = v.state
        m.partitions = set(v.partitions)
        m.start_ms = v.start_timestamp_ms
        m.prev_producer_id = v.previous_producer_id
        m.next_producer_id = v.next_producer_id
        m.client_tv = v.client_transaction_version
        return m

    @property
    def tv2(self) -> bool:
        """The last change came from a transactions V2 client (Kafka's supportsEpochBump)."""
        return self.client_tv >= TV2

    def describe(self) -> dict[str, Any]:
        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(self.partitions):
            by_topic.setdefault(t, []).append(p)
        return {"transactional_id": self.transactional_id, "transaction_state": self.state.kafka_name,
                "transaction_timeout_ms": self.timeout_ms, "transaction_start_time_ms": self.start_ms,
                "producer_id": self.producer_id, "producer_epoch": self.producer_epoch,
                "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]}


class Transition:
    """One state change of ``metadata`` on its way to the log: ``record`` is what is written;
    ``apply`` makes memory follow once it is. ``durable``: the answer waits for its fsync (a
    Complete* record is not waited for: the id's next durable write covers it).
    ``complete``: after the write, the transaction's markers are to be written (True COMMIT,
    False ABORT, None none); ``error``: what the request is answered after the write (a fence
    answers CONCURRENT_TRANSACTIONS, which the producer retries); ``fence``: the transition bumps
    the epoch of an open transaction to abort it."""

    __slots__ = ("metadata", "state", "changes", "record", "durable", "complete", "error", "fence")

    def __init__(self, metadata: TransactionMetadata, state: TxnState, changes: dict[str, Any], now_ms: int, *,
                 durable: bool = True, complete: bool | None = None, error: int = 0, fence: bool = False) -> None:
        self.metadata = metadata
        self.state = state
        # Kafka's TxnTransitMetadata: the producer id before the transition is the previous one
        self.changes = {"prev_producer_id": metadata.producer_id, **changes, "last_update_ms": now_ms}
        self.durable = durable
        self.complete = complete
        self.error = error
        self.fence = fence
        saved = {k: getattr(metadata, k) for k in self.changes}
        for k, v in self.changes.items():
            setattr(metadata, k, v)
        self.record = metadata.to_record(state)
        for k, v in saved.items():  # memory follows the log: restored until the write is done
            setattr(metadata, k, v)

    def begin(self) -> None:
        self.metadata.pending = self.state

    def apply(self) -> None:
        m = self.metadata
        for k, v in self.changes.items():
            setattr(m, k, v)
        m.state = self.state

    def end(self) -> None:
        self.metadata.pending = None


class DanglingTxn(NamedTuple):
    """A transaction open in a partition whose coordinator state says it ended (or knows nothing
    of it): a crash lost its marker, which ``marker`` says how to write again."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    commit: bool
    transactional_id: str  # or the producer id, for an id the coordinator does not know


class CoordinatorError(ApiError):
    """A transactional request's answer is this error code."""

    def __init__(self, code: int) -> None:
        super().__init__(error_code=code)


class TransactionCoordinator:
    """The state of every transactional id and the rules of its changes (see the module
    docstring). ``next_producer_id`` hands out producer ids; ``clock`` is the wall clock in ms;
    ``transaction_version`` is the finalized ``transaction.version`` (it picks the record
    format and how fences end transactions, as Kafka's server version does)."""

    def __init__(self, config: TxnConfig, next_producer_id: Callable[[], int],
                 clock: Callable[[], int] = now_ms, transaction_version: Callable[[], int] = lambda: TV0) -> None:
        self.config = config
        self.next_producer_id = next_producer_id
        self.clock = clock
        self.transaction_version = transaction_version
        self.txns: dict[str, TransactionMetadata] = {}
        #: True while ``__transaction_state`` loads: every request answers COORDINATOR_LOAD_IN_PROGRESS
        self.loading = False

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.config.num_partitions)

    def log_value_version(self) -> int:
        """The TransactionLogValue version to write: 1 (flexible, with the transactions V2
        fields) from ``transaction.version`` 1, as Kafka's TransactionVersion.transactionLogValueVersion."""
        return 1 if self.transaction_version() >= 1 else 0

    def client_tv(self, tv2_request: bool) -> int:
        """The transaction version of a request: TV2 for a transactions V2 version (EndTxn v5,
        Produce v12+, TxnOffsetCommit v5, AddPartitionsToTxn v4+) while ``transaction.version``
        2 is finalized, TV0 otherwise."""
        return TV2 if tv2_request and self.transaction_version() >= TV2 else TV0

    def _check_ready(self) -> None:
        if self.loading:
            raise CoordinatorError(E.COORDINATOR_LOAD_IN_PROGRESS)

    def _transition(self, m: TransactionMetadata, state: TxnState, **changes: Any) -> Transition:
        return Transition(m, state, changes, self.clock())

    # ------------------------------------------------------------------ InitProducerId

    def prepare_init(self, txn_id: str, timeout_ms: int, expected_pid: int = -1, expected_epoch: int = -1
                     ) -> Transition:
        """InitProducerId: the transition to Empty under the producer id and epoch to answer
        (in ``changes``), or, for an id with an Ongoing transaction, the fence that aborts it
        under a bumped epoch (answered CONCURRENT_TRANSACTIONS). CoordinatorError otherwise."""
        if txn_id == "":
            raise CoordinatorError(E.INVALID_REQUEST)
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            raise CoordinatorError(E.INVALID_TRANSACTION_TIMEOUT)
        self._check_ready()
        m = self.txns.get(txn_id)
        if m is None:
            m = self.txns[txn_id] = TransactionMetadata(txn_id, self.next_producer_id(), timeout_ms, self.clock())
        if m.pending is not None:
            raise CoordinatorError(E.CONCURRENT_TRANSACTIONS)
        if expected_pid >= 0 and not (m.producer_epoch == NO_PRODUCER_EPOCH or expected_pid == m.producer_id or (
                expected_pid == m.prev_producer_id and expected_epoch >= MAX_EPOCH - 1)):
            raise CoordinatorError(E.PRODUCER_FENCED)
        if m.state in _PREPARED:
            raise CoordinatorError(E.CONCURRENT_TRANSACTIONS)
        if m.state == TxnState.ONGOING:
            # Fence the producer of the open transaction: abort it under a bumped epoch (never
            # handed out), and have this caller retry; its retry bumps the epoch again.
            return self.prepare_fence(m, error=E.CONCURRENT_TRANSACTIONS)
        if m.epoch_exhausted and (expected_epoch < 0 or expected_epoch == m.producer_epoch):
            pid, epoch, last_epoch = self.next_producer_id(), 0, NO_PRODUCER_EPOCH
        else:
            pid = m.producer_id
            if expected_epoch < 0 or m.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == m.producer_epoch:
                epoch, last_epoch = m.producer_epoch + 1, (m.producer_epoch if expected_epoch >= 0 else -1)
            elif expected_epoch == m.last_epoch:  # a retry whose answer was lost: the same epoch again
                epoch, last_epoch = m.producer_epoch, m.last_epoch
            else:
                raise CoordinatorError(E.PRODUCER_FENCED)
        return self._transition(m, TxnState.EMPTY, producer_id=pid, producer_epoch=epoch, last_epoch=last_epoch,
                                timeout_ms=timeout_ms, partitions=set(), start_ms=-1)

    def prepare_fence(self, m: TransactionMetadata, error: int = 0) -> Transition:
        """Bump the epoch of an Ongoing transaction and abort it under the new epoch (Kafka's
        PrepareEpochFence, then an abort with the server's transaction version: at 2 that
        abort bumps the epoch once more). Epoch 32767 is never passed."""
        fenced = m.producer_epoch + 1 if m.producer_epoch < MAX_EPOCH else m.producer_epoch
        tv = self.transaction_version()
        if tv >= TV2:
            epoch = fenced + 1 if fenced < MAX_EPOCH else fenced
            changes = {"producer_epoch": epoch, "last_epoch": fenced}
        else:
            changes = {"producer_epoch": fenced, "last_epoch": NO_PRODUCER_EPOCH}
        return Transition(m, TxnState.PREPARE_ABORT, {**changes, "client_tv": tv, "next_producer_id": NO_PRODUCER_ID},
                          self.clock(), complete=False, error=error, fence=True)

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

    def prepare_add_partitions(self, txn_id: str, producer_id: int, epoch: int,
                               partitions: Iterable[tuple[str, int]], client_tv: int = TV0) -> Transition | None:
        """AddPartitionsToTxn / AddOffsetsToTxn, and the partitions a transactions V2 produce
        or offset commit adds: the transition to Ongoing with the partitions added, None when
        they are all in the open transaction already. The checks in Kafka 4.3's order: a write
        in flight first (a V2 producer may already use the producer id a pending switch
        installs), then the producer id, the epoch, a transaction ending."""
        wanted = set(partitions)
        if not txn_id:
            raise CoordinatorError(E.INVALID_REQUEST)
        self._check_ready()
        m = self.txns.get(txn_id)
        if m is None:
            raise CoordinatorError(E.INVALID_PRODUCER_ID_MAPPING)
        if m.pending is not None:
            raise CoordinatorError(E.CONCURRENT_TRANSACTIONS)
        if m.producer_id != producer_id:
            raise CoordinatorError(E.INVALID_PRODUCER_ID_MAPPING)
        if m.producer_epoch != epoch:
            raise CoordinatorError(E.PRODUCER_FENCED)
        if m.state in _PREPARED:
            raise CoordinatorError(E.CONCURRENT_TRANSACTIONS)
        if m.state == TxnState.ONGOING and wanted <= m.partitions:
            return None
        start = m.start_ms if m.state == TxnState.ONGOING else self.clock()
        return self._transition(m, TxnState.ONGOING, partitions=m.partitions | wanted, start_ms=start,
                                client_tv=client_tv)

    def in_transaction(self, txn_id: str | None, producer_id: int, epoch: int, topic: str, partition: int) -> bool:
        """Whether ``topic-partition`` is in the Ongoing transaction of this producer id and
        epoch: a transactions V2 batch for it needs no add (Kafka skips the coordinator when the
        partition already has the producer's transaction open)."""
        m = self.txns.get(txn_id) if txn_id else None
        return (m is not None and m.producer_id == producer_id and m.producer_epoch == epoch
                and m.state == TxnState.ONGOING and (topic, partition) in m.partitions)

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

    def verify_partitions(self, txn_id: str, producer_id: int, epoch: int,
                          partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """AddPartitionsToTxn v4+ with ``verify_only`` (Kafka's handleVerifyPartitionsInTransaction):
        each partition's error, NONE when it is in the transaction, TRANSACTION_ABORTABLE when
        not; a pending write is not waited for."""
        parts = list(partitions)
        try:
            m = self._validate(txn_id, producer_id, epoch)
            if m.state in _PREPARED:
                raise CoordinatorError(E.CONCURRENT_TRANSACTIONS)
        except CoordinatorError as e:
            return {tp: e.error_code for tp in parts}
        return {tp: 0 if tp in m.partitions else int(E.TRANSACTION_ABORTABLE) for tp in parts}

    # ------------------------------------------------------------------ ending

    def prepare_end(self, txn_id: str, producer_id: int, epoch: int, commit: bool, client_tv: int = TV0
                    ) -> Transition | None:
        """EndTxn: the transition to Prepare* (after which the markers are written), None for a
        retry of an EndTxn that completed (answered NONE with the current producer id and
        epoch). ``client_tv`` TV2: Kafka's transactions V2 rules (the module docstring)."""
        if client_tv >= TV2:
            return self._prepare_end_v2(txn_id, producer_id, epoch, commit)
        m = self._validate(txn_id, producer_id, epoch)
        if m.pending is not None:
            raise CoordinatorError(E.CONCURRENT_TRANSACTIONS)
        done = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        prepared = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        if m.state == TxnState.ONGOING:
            return Transition(m, prepared, {"client_tv": client_tv, "next_producer_id": NO_PRODUCER_ID},
                              self.clock(), complete=commit)
        if m.state == done:
            return None  # a retry of an EndTxn that completed
        if m.state == prepared:
            raise CoordinatorError(E.CONCURRENT_TRANSACTIONS)
        raise CoordinatorError(E.INVALID_TXN_STATE)

    def _prepare_end_v2(self, txn_id: str, producer_id: int, epoch: int, commit: bool) -> Transition | None:
        """Kafka 4's TransactionCoordinator.endTransaction for a transactions V2 client: every
        end bumps the epoch; a retry is told apart by its epoch, one below the bumped one (or
        32766 of the previous producer id after a switch to a new one)."""
        if not txn_id:
            raise CoordinatorError(E.INVALID_REQUEST)
        self._check_ready()
        m = self.txns.get(txn_id)
        if m is None:
            raise CoordinatorError(E.INVALID_PRODUCER_ID_MAPPING)
        retry_on_overflow = (m.prev_producer_id == producer_id and epoch == MAX_EPOCH - 1 and m.producer_epoch == 0)
        retry_on_bump = m.producer_epoch == epoch + 1
        if m.state in _PREPARED:
            valid_epoch = retry_on_bump
        elif m.state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            valid_epoch = retry_on_bump or retry_on_overflow or epoch == m.producer_epoch
        else:
            valid_epoch = epoch == m.producer_epoch
        if m.producer_id != producer_id and not retry_on_overflow:
            raise CoordinatorError(E.INVALID_PRODUCER_ID_MAPPING)
        if not valid_epoch:
            raise CoordinatorError(E.PRODUCER_FENCED)
        if m.pending is not None:
            raise CoordinatorError(E.CONCURRENT_TRANSACTIONS)
        retry = retry_on_bump or retry_on_overflow
        state = m.state
        if state == TxnState.ONGOING:
            return self._bump_and_end(m, commit, empty=False)
        if state == TxnState.COMPLETE_COMMIT:
            if commit:
                if retry:
                    return None
            elif not retry:
                return self._bump_and_end(m, False, empty=True)
        elif state == TxnState.COMPLETE_ABORT:
            if not commit:
                return None if retry else self._bump_and_end(m, False, empty=True)
        elif state == TxnState.PREPARE_COMMIT and commit or state == TxnState.PREPARE_ABORT and not commit:
            raise CoordinatorError(E.CONCURRENT_TRANSACTIONS)
        elif state == TxnState.EMPTY and not commit:
            return self._bump_and_end(m, False, empty=True)
        raise CoordinatorError(E.INVALID_TXN_STATE)

    def _bump_and_end(self, m: TransactionMetadata, commit: bool, *, empty: bool) -> Transition:
        """Prepare* at epoch + 1 (Kafka's prepareAbortOrCommit for transactions V2), with a new
        producer id to switch to when the epoch runs out; ``empty``: an abort of a transaction
        that added nothing (its start time is now)."""
        next_pid = self.next_producer_id() if m.epoch_exhausted else NO_PRODUCER_ID
        epoch = m.producer_epoch if m.producer_epoch >= MAX_EPOCH and not commit else m.producer_epoch + 1
        now = self.clock()
        prepared = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        return Transition(m, prepared, {"producer_epoch": epoch, "last_epoch": m.producer_epoch,
                                        "next_producer_id": next_pid, "client_tv": TV2,
                                        "start_ms": now if empty else m.start_ms}, now, complete=commit)

    @staticmethod
    def next_identity(m: TransactionMetadata) -> tuple[int, int]:
        """The producer id and epoch a transactions V2 client continues with once its
        transaction's Prepare* is written: the new producer id at epoch 0 after a switch."""
        if m.next_producer_id >= 0:
            return m.next_producer_id, 0
        return m.producer_id, m.producer_epoch

    def prepare_complete(self, m: TransactionMetadata, commit: bool) -> Transition:
        """Complete*, once every marker of the transaction is written (not waited for: see
        ``Transition``); a transactions V2 transaction whose epoch ran out switches to its
        next producer id, at epoch 0."""
        done = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        changes: dict[str, Any] = {"partitions": set(), "next_producer_id": NO_PRODUCER_ID}
        if m.tv2 and m.next_producer_id >= 0:
            changes.update(producer_id=m.next_producer_id, producer_epoch=0)
        return Transition(m, done, changes, self.clock(), durable=False)

    def dangling(self, partitions: Iterable[tuple[tuple[str, int], ProducerStateManager]]) -> list[DanglingTxn]:
        """The markers a crash lost: for each partition's open transaction whose coordinator
        state has ended (or is unknown), a COMMIT for CompleteCommit of the same transaction,
        an ABORT otherwise (under the partition's producer epoch, or the coordinator's if
        newer). A transactions V2 transaction wrote its data at the epoch below its markers',
        and after a switch to a new producer id under the previous one, at epoch 32767."""
        by_pid = {m.producer_id: m for m in self.txns.values()}
        switched = {m.prev_producer_id: m for m in self.txns.values()
                    if m.tv2 and m.producer_epoch == 0 and m.prev_producer_id not in (m.producer_id, NO_PRODUCER_ID)}
        out: list[DanglingTxn] = []
        for (topic, partition), psm in partitions:
            for pid in list(psm.ongoing_txns):
                m = by_pid.get(pid)
                marker_epoch = None if m is None else m.producer_epoch
                if m is None and pid in switched:
                    m, marker_epoch = switched[pid], MAX_EPOCH
                if m is not None and (m.state in (TxnState.ONGOING, *_PREPARED) or m.pending is not None):
                    continue  # still open, or being ended: its producer, timeout or markers end it
                entry = psm.last_entry(pid)
                epoch = entry.producer_epoch if entry is not None else 0
                commit = False
                if m is not None and marker_epoch is not None:
                    if m.tv2:
                        commit = m.state == TxnState.COMPLETE_COMMIT and epoch == marker_epoch - 1
                    else:
                        commit = m.state == TxnState.COMPLETE_COMMIT and m.producer_epoch == epoch
                    epoch = max(epoch, marker_epoch)
                out.append(DanglingTxn(topic, partition, pid, epoch, commit,
                                       m.transactional_id if m is not None else str(pid)))
        return out

    # ------------------------------------------------------------------ timeouts and expiry

    def timed_out(self) -> list[Transition]:
        """The fences of the Ongoing transactions older than their timeout."""
        if self.loading:
            return []
        now = self.clock()
        return [self.prepare_fence(m) for m in list(self.txns.values())
                if m.state == TxnState.ONGOING and m.pending is None and m.start_ms + m.timeout_ms < now]

    def expirable(self) -> list[TransactionMetadata]:
        """Ids idle (Empty or Complete*) for ``transactional.id.expiration.ms``."""
        if self.loading:
            return []
        now = self.clock()
        return [m for m in self.txns.values() if m.pending is None and m.state in _ENDED
                and now - m.last_update_ms >= self.config.id_expiration_ms]

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

    def replay(self, transactional_id: str, value: TxnLogValue | None) -> None:
        """Apply one record of ``__transaction_state``: the last one of an id is its state."""
        if value is None:
            self.txns.pop(transactional_id, None)
        else:
            self.txns[transactional_id] = TransactionMetadata.from_record(transactional_id, value)

    def left_prepared(self) -> list[tuple[TransactionMetadata, bool]]:
        """After loading: the transactions the last run left in Prepare* (or Kafka's
        PrepareEpochFence, which it never writes), with whether each commits."""
        return [(m, m.state == TxnState.PREPARE_COMMIT) for m in self.txns.values()
                if m.state in (*_PREPARED, TxnState.PREPARE_EPOCH_FENCE)]
