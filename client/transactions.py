"""Transactions: the transactional producer's state machine and its requests to the
transaction coordinator (the transactional half of Kafka's Java TransactionManager;
``client/producer_state.py`` is the idempotence half, which this one drives).

States, as Kafka's::

    UNINITIALIZED --init_transactions--> READY --begin_transaction--> IN_TRANSACTION
    IN_TRANSACTION --commit_transaction--> COMMITTING --EndTxn(commit)--> READY
    IN_TRANSACTION, ABORTABLE_ERROR --abort_transaction--> ABORTING --EndTxn(abort)--> READY
    IN_TRANSACTION, COMMITTING --a batch, AddPartitions or TxnOffsetCommit fails--> ABORTABLE_ERROR
    any --PRODUCER_FENCED, INVALID_PRODUCER_EPOCH (or another fatal answer)--> FATAL_ERROR

Requests:

- ``init_transactions``: FindCoordinator (key type 1) for the transactional id, then
  InitProducerId with it: the coordinator bumps the id's epoch, which fences any older
  producer of the same id and aborts its open transaction (answering CONCURRENT_TRANSACTIONS
  until that abort is done, which is retried). Sequences restart at 0.
- AddPartitionsToTxn: a partition must be in the transaction before its first batch is sent.
  The accumulator reports every batch it opens (``batch_opened``); partitions not yet added
  are collected and sent in one request (more that arrive meanwhile go in the next). The
  sender sends a partition's batches only once it is in ``added``.
- ``send_offsets``: AddOffsetsToTxn (the group's ``__consumer_offsets`` partition joins the
  transaction), then TxnOffsetCommit to the group's coordinator (FindCoordinator key type 0).
  The offsets become the group's committed offsets only if the transaction commits.
- ``commit`` / ``abort``: flush first (an abort fails the batches not sent yet with
  TransactionAbortedError and waits only for those in flight), then EndTxn. A transaction
  that never reached the coordinator (nothing sent, no offsets) ends without a request.

Retries: COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR (the
coordinator is looked up again), CONCURRENT_TRANSACTIONS (the previous transaction's markers
are still being written; retried after ``min(retry_backoff, 20 ms)``, as Kafka's producer does
for AddPartitions) and lost connections, for up to ``max_block`` seconds; then
KafkaTimeoutError, and the same method may be called again to resume (a commit that timed out
cannot be turned into an abort, as in Kafka).

Transactions V2 (KIP-890 part 2), as Kafka's producer speaks them: when the transaction
coordinator's ApiVersions (v3+, asked once per coordinator connection) finalizes
``transaction.version`` 2 or more and it serves EndTxn v5, each transaction begun from then on
(never one already open) is a V2 one (``v2``): no AddPartitionsToTxn (a partition is in the
transaction as soon as a batch opens for it; the broker adds it when the batch arrives, Produce
v12+), no AddOffsetsToTxn (TxnOffsetCommit v5 adds the group's partition), and EndTxn v5, whose
answer carries the producer id and epoch to go on with: the coordinator bumps the epoch at every
transaction end, so sequences restart at 0 and a batch of an ended transaction arriving late is
fenced. A V2 transaction with failed batches needs no InitProducerId to end: EndTxn's bump
resets the sequences. Otherwise the producer stays on the older versions (AddPartitionsToTxn
v0-3, EndTxn v0-4, TxnOffsetCommit v0-4, Produce v11 at most).

Errors: a fenced producer (``ProducerFencedError``) is fatal — every later call raises it and
the producer must be closed. A batch that fails for good, or a failed AddPartitions or
TxnOffsetCommit, makes the transaction abortable: sends and ``commit_transaction`` raise
``TransactionAbortableError`` (its ``__cause__`` the failure) until ``abort_transaction``.
Such an abort leaves gaps in the partitions' sequences, so it ends with an InitProducerId that
carries the current producer id and epoch (KIP-360): the epoch is bumped and sequences restart.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from client.cluster import Cluster
from client.conn import BrokerConnection
from client.errors import (
    IllegalStateError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    ProducerFencedError,
    TransactionAbortableError,
    TransactionAbortedError,
    error_for_code,
)
from client.producer_batch import ProducerBatch
from client.producer_state import TransactionManager
from client.protocol.api import ApiKey, error_name
from client.protocol.api import ErrorCode as E
from client.records.batch import TRANSACTIONAL_FLAG_MASK
from client.structs import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

__all__ = ["Transactions", "TxnState"]

logger = logging.getLogger("client.producer")

GROUP_KEY, TRANSACTION_KEY = 0, 1
#: the feature a broker finalizes to serve transactions V2, and the level (KIP-890 part 2)
TRANSACTION_VERSION, TV2 = "transaction.version", 2
#: the highest versions of the older transaction protocol: AddPartitionsToTxn v4+ are the
#: brokers' batched form, EndTxn v5, TxnOffsetCommit v5 and Produce v12 transactions V2
CLIENT_ADD_PARTITIONS_MAX, END_TXN_V1_MAX, TXN_OFFSET_COMMIT_V1_MAX = 3, 4, 4
#: Kafka's producer retries an AddPartitions refused with CONCURRENT_TRANSACTIONS after 20 ms:
#: the previous transaction's markers take a few ms, and the default backoff would add 100 ms
#: to every transaction that follows another.
CONCURRENT_BACKOFF = 0.02
_RETRY = {E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR,
          E.CONCURRENT_TRANSACTIONS, E.REQUEST_TIMED_OUT, E.UNKNOWN_TOPIC_OR_PARTITION}
_MOVED = {E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR, E.REQUEST_TIMED_OUT}
_FENCED = {E.PRODUCER_FENCED, E.INVALID_PRODUCER_EPOCH}
#: answers after which the producer cannot go on (others make the transaction abortable)
_FATAL = _FENCED | {E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, E.CLUSTER_AUTHORIZATION_FAILED, E.INVALID_TXN_STATE,
                    E.INVALID_PRODUCER_ID_MAPPING, E.UNSUPPORTED_VERSION, E.INVALID_TRANSACTION_TIMEOUT,
                    E.UNSUPPORTED_FOR_MESSAGE_FORMAT}


class TxnState(enum.Enum):
    UNINITIALIZED = "UNINITIALIZED"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    COMMITTING = "COMMITTING_TRANSACTION"
    ABORTING = "ABORTING_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


def _fenced(cause: BaseException | None, transactional_id: str) -> ProducerFencedError:
    err = ProducerFencedError(f"producer fenced: another producer with transactional id {transactional_id!r}"
                              " has a newer epoch, or the coordinator aborted this producer's transaction"
                              f" (timeout): close this producer ({cause})")
    err.__cause__ = cause
    return err


class Transactions:
    """The transactional state of one Producer (see the module docstring). ``flush`` (wait
    for every batch sent so far), ``drop_waiting`` (fail records not yet in a batch),
    ``wake`` (run the sender) and ``on_change`` (the state changed) are the producer's."""

    def __init__(self, cluster: Cluster, tm: TransactionManager, *, transactional_id: str,
                 transaction_timeout_ms: int, max_block: float, retry_backoff: float,
                 flush: Callable[[], Awaitable[None]], drop_waiting: Callable[[BaseException], None]) -> None:
        if not transactional_id:
            raise ValueError("transactional_id must be a non-empty string")
        self._cluster = cluster
        self._tm = tm
        tm.batch_flags = TRANSACTIONAL_FLAG_MASK
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.max_block = max_block
        self.retry_backoff = retry_backoff
        self._flush = flush
        self._drop_waiting = drop_waiting
        self.wake: Callable[[float], None] = lambda _delay: None
        self.on_change: Callable[[], None] = lambda: None
        self.state = TxnState.UNINITIALIZED
        self.last_error: BaseException | None = None
        #: partitions in the current transaction (AddPartitions answered): the sender's gate
        self.added: set[tuple[str, int]] = set()
        self._to_add: dict[tuple[str, int], None] = {}
        self._adding: asyncio.Task[None] | None = None
        self._sent_to_coordinator = False  # an Add* request went out: EndTxn is needed
        self._confirmed = False  # an Add* request was answered NONE
        self._coordinators: dict[tuple[int, str], tuple[int, str, int]] = {}
        self._lock = asyncio.Lock()  # one of init/send_offsets/commit/abort at a time
        #: the transaction coordinator connection whose ApiVersions was read, and whether it
        #: offers transactions V2 (transaction.version >= 2 finalized, EndTxn v5 served)
        self._tv_conn: BrokerConnection | None = None
        self._coordinator_v2 = False
        #: the current transaction speaks transactions V2 (decided at begin_transaction)
        self.v2 = False

    # ------------------------------------------------------------------ state

    @property
    def fatal(self) -> bool:
        return self.state == TxnState.FATAL_ERROR

    def _set(self, state: TxnState, error: BaseException | None = None) -> None:
        if self.state == TxnState.FATAL_ERROR:
            return
        if state in (TxnState.ABORTABLE_ERROR, TxnState.FATAL_ERROR):
            if state == TxnState.ABORTABLE_ERROR and self.state in (TxnState.ABORTING, TxnState.ABORTABLE_ERROR):
                return  # already on its way out; the first error is the one to report
            logger.log(logging.ERROR if state == TxnState.FATAL_ERROR else logging.WARNING,
                       "transactional id %s: %s: %s", self.transactional_id, state.value, error)
            self.last_error = error
            self._to_add.clear()
        self.state = state
        self.on_change()
        self.wake(0)

    def _fail(self, err: KafkaError) -> KafkaError:
        """Put the transaction in the error state ``err`` calls for; the error to raise."""
        if err.code in _FENCED:
            err = _fenced(err, self.transactional_id)
        if err.code in _FATAL or isinstance(err, ProducerFencedError):
            self._set(TxnState.FATAL_ERROR, err)
        else:
            self._set(TxnState.ABORTABLE_ERROR, err)
        return err

    def _raise_if_failed(self, what: str) -> None:
        if self.state == TxnState.FATAL_ERROR:
            err = self.last_error
            if isinstance(err, ProducerFencedError):
                raise _fenced(err.__cause__, self.transactional_id) from err.__cause__
            cls = type(err) if isinstance(err, KafkaError) else KafkaError
            raise cls(f"cannot {what}: the producer hit a fatal error ({err}); close it") from err
        if self.state == TxnState.ABORTABLE_ERROR:
            raise TransactionAbortableError(f"cannot {what}: the transaction failed ({self.last_error}); call"
                                            " abort_transaction()") from self.last_error

    def check_send(self) -> None:
        """For ``send``: records are accepted only inside a transaction."""
        if self.state == TxnState.IN_TRANSACTION:
            return
        self._raise_if_failed("send")
        raise IllegalStateError(f"cannot send in state {self.state.value}: a transactional producer sends between"
                                " begin_transaction() and commit_transaction()/abort_transaction()"
                                + (" (call init_transactions() first)" if self.state == TxnState.UNINITIALIZED else ""))

    def undrained_error(self) -> BaseException | None:
        """For the sender: the error to fail every batch not yet sent with, or None to send."""
        s = self.state
        if s == TxnState.IN_TRANSACTION or s == TxnState.COMMITTING:
            return None
        if s == TxnState.ABORTING:
            return TransactionAbortedError("the transaction was aborted before this record was sent")
        if s == TxnState.ABORTABLE_ERROR:
            err = TransactionAbortableError(f"not sent: the transaction failed ({self.last_error})")
            err.__cause__ = self.last_error
            return err
        if s == TxnState.FATAL_ERROR:
            return self.last_error
        return None

    def batch_failed(self, exc: BaseException) -> BaseException:
        """A batch failed for good (the sender): the transaction cannot commit. The error to
        fail the batch's records with (a fence becomes ProducerFencedError)."""
        if isinstance(exc, KafkaError) and self.state in (TxnState.IN_TRANSACTION, TxnState.COMMITTING):
            return self._fail(exc)
        if isinstance(exc, KafkaError) and exc.code in _FENCED:
            err = _fenced(exc, self.transactional_id)
            self._set(TxnState.FATAL_ERROR, err)
            return err
        return exc

    # ------------------------------------------------------------------ coordinators

    async def _connection(self, key_type: int, key: str) -> BrokerConnection:
        found = self._coordinators.get((key_type, key))
        if found is None:
            found = self._coordinators[(key_type, key)] = await self._cluster.find_coordinator(key, key_type)
        conn = await self._cluster.coordinator_connection(*found)
        if key_type == TRANSACTION_KEY and conn is not self._tv_conn:
            self._coordinator_v2 = await _offers_v2(conn)
            self._tv_conn = conn
        return conn

    async def _request(self, api: ApiKey, body: dict[str, Any], what: str, *, key_type: int = TRANSACTION_KEY,
                       key: str | None = None, code_of: Callable[[dict[str, Any]], int] | None = None,
                       accept: frozenset[int] = frozenset(), max_version: int | None = None
                       ) -> tuple[int, dict[str, Any]]:
        """Send ``body`` to the coordinator (at most version ``max_version``), retrying what is
        retriable for ``max_block`` seconds: ``(error code, answer)``, the code 0 or one of
        ``accept``. Raises the answer's other errors (the state updated by ``_fail``) or
        KafkaTimeoutError (state unchanged)."""
        key = self.transactional_id if key is None else key
        deadline = time.monotonic() + self.max_block
        while True:
            backoff = self.retry_backoff
            try:
                conn = await self._connection(key_type, key)
                if api in (ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN):
                    self._sent_to_coordinator = True  # from now on the transaction needs an EndTxn
                version = conn.pick_version(api)
                if max_version is not None:
                    version = min(version, max_version)
                resp = await conn.request(api, version, body)
            except KafkaError as e:
                if not e.retriable:
                    raise self._fail(e) from None
                if isinstance(e, KafkaConnectionError) or e.code in _MOVED:
                    self._coordinators.pop((key_type, key), None)
                err: KafkaError = e
            else:
                code = code_of(resp) if code_of is not None else resp["error_code"]
                if not code or code in accept:
                    return code, resp
                err = error_for_code(code, f"{what} for transactional id {self.transactional_id!r}: {error_name(code)}")
                if code not in _RETRY:
                    raise self._fail(err)
                if code in _MOVED:
                    self._coordinators.pop((key_type, key), None)
                if code == E.CONCURRENT_TRANSACTIONS:
                    backoff = min(backoff, CONCURRENT_BACKOFF)
            if time.monotonic() + backoff > deadline:
                raise KafkaTimeoutError(f"{what} did not complete within max_block_ms={int(self.max_block * 1000)}:"
                                        f" {err}") from err
            logger.debug("%s: %s; retrying", what, err)
            await asyncio.sleep(backoff)

    async def _init_producer_id(self, bump: bool) -> None:
        """InitProducerId with the transactional id; ``bump``: as the current producer (its id
        and epoch sent: a new epoch for it, not a fence of someone else). Any answer but a
        retriable one is fatal."""
        tm = self._tm
        body = {"transactional_id": self.transactional_id, "transaction_timeout_ms": self.transaction_timeout_ms,
                "producer_id": tm.producer_id if bump else -1, "producer_epoch": tm.producer_epoch if bump else -1}
        try:
            _, resp = await self._request(ApiKey.INIT_PRODUCER_ID, body, "InitProducerId")
        except KafkaError as e:
            if not isinstance(e, KafkaTimeoutError) and self.state != TxnState.FATAL_ERROR:
                self._set(TxnState.FATAL_ERROR, e)
            raise
        tm.set_producer(resp["producer_id"], resp["producer_epoch"])
        logger.info("transactional id %s: producer id %d, epoch %d", self.transactional_id, tm.producer_id,
                    tm.producer_epoch)

    # ------------------------------------------------------------------ the application's calls

    async def init_transactions(self) -> None:
        async with self._lock:
            if self.state != TxnState.UNINITIALIZED:
                self._raise_if_failed("init_transactions")
                raise IllegalStateError(f"init_transactions() was already called (state {self.state.value})")
            await self._init_producer_id(bump=False)
            self._set(TxnState.READY)

    def begin_transaction(self) -> None:
        self._raise_if_failed("begin_transaction")
        if self.state != TxnState.READY:
            raise IllegalStateError(f"cannot begin a transaction in state {self.state.value}"
                                    + (": call init_transactions() first" if self.state == TxnState.UNINITIALIZED
                                       else ""))
        self.v2 = self._coordinator_v2  # a transaction keeps the protocol it began with
        self._set(TxnState.IN_TRANSACTION)

    async def send_offsets(self, offsets: Mapping[TopicPartition, OffsetAndMetadata],
                           group: ConsumerGroupMetadata) -> None:
        async with self._lock:
            self._raise_if_failed("send_offsets_to_transaction")
            if self.state != TxnState.IN_TRANSACTION:
                raise IllegalStateError(f"cannot send offsets in state {self.state.value}: call begin_transaction()"
                                        " first")
            if not offsets:
                return
            tm = self._tm
            if self.v2:  # TxnOffsetCommit v5 adds the group's partition itself
                self._sent_to_coordinator = self._confirmed = True
            else:
                await self._request(ApiKey.ADD_OFFSETS_TO_TXN, {
                    "transactional_id": self.transactional_id, "producer_id": tm.producer_id,
                    "producer_epoch": tm.producer_epoch, "group_id": group.group_id},
                    f"AddOffsetsToTxn (group {group.group_id!r})")
                self._confirmed = True
            by_topic: dict[str, list[dict[str, Any]]] = {}
            for tp, om in offsets.items():
                by_topic.setdefault(tp[0], []).append({
                    "partition_index": tp[1], "committed_offset": om.offset,
                    "committed_leader_epoch": om.leader_epoch, "committed_metadata": om.metadata})
            await self._request(ApiKey.TXN_OFFSET_COMMIT, {
                "transactional_id": self.transactional_id, "group_id": group.group_id,
                "producer_id": tm.producer_id, "producer_epoch": tm.producer_epoch,
                "generation_id": group.generation_id, "member_id": group.member_id,
                "group_instance_id": group.group_instance_id,
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]},
                f"TxnOffsetCommit (group {group.group_id!r})", key_type=GROUP_KEY, key=group.group_id,
                code_of=_first_partition_error, max_version=None if self.v2 else TXN_OFFSET_COMMIT_V1_MAX)

    async def commit(self) -> None:
        async with self._lock:
            self._raise_if_failed("commit_transaction")
            if self.state == TxnState.ABORTING:
                raise IllegalStateError("a previous abort_transaction() did not complete: call it again")
            if self.state not in (TxnState.IN_TRANSACTION, TxnState.COMMITTING):
                raise IllegalStateError(f"cannot commit in state {self.state.value}: no transaction begun")
            self._set(TxnState.COMMITTING)
            await self._flush()
            await self._added_or_failed()
            self._raise_if_failed("commit_transaction")  # a batch or an AddPartitions failed
            await self._end(commit=True)

    async def abort(self) -> None:
        async with self._lock:
            if self.state == TxnState.FATAL_ERROR:
                self._raise_if_failed("abort_transaction")
            if self.state == TxnState.COMMITTING:
                raise IllegalStateError("a previous commit_transaction() did not complete: call it again")
            if self.state not in (TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR, TxnState.ABORTING):
                raise IllegalStateError(f"cannot abort in state {self.state.value}: no transaction begun")
            self._set(TxnState.ABORTING)
            self._drop_waiting(TransactionAbortedError("the transaction was aborted before this record was sent"))
            await self._flush()  # the sender fails what is not sent yet; this waits for what is in flight
            await self._added_or_failed()
            if self.fatal:  # fenced meanwhile
                self._raise_if_failed("abort_transaction")
            await self._end(commit=False)

    async def _end(self, commit: bool) -> None:
        if self._sent_to_coordinator:
            tm = self._tm
            # An Add* whose answer was lost may not have reached the coordinator: then there is
            # no transaction to end, and the coordinator answers INVALID_TXN_STATE.
            code, resp = await self._request(ApiKey.END_TXN, {
                "transactional_id": self.transactional_id, "producer_id": tm.producer_id,
                "producer_epoch": tm.producer_epoch, "committed": commit},
                "EndTxn(commit)" if commit else "EndTxn(abort)",
                accept=frozenset() if self._confirmed else frozenset({E.INVALID_TXN_STATE}),
                max_version=None if self.v2 else END_TXN_V1_MAX)
            if not code and resp.get("producer_id", -1) >= 0:
                # transactions V2: the epoch was bumped (or a new producer id given); sequences restart
                tm.set_producer(resp["producer_id"], resp["producer_epoch"])
                logger.debug("transactional id %s: next transaction as producer id %d, epoch %d",
                             self.transactional_id, tm.producer_id, tm.producer_epoch)
        if self._tm.needs_reset:  # batches failed: their sequences are gaps
            await self._init_producer_id(bump=True)
        self.added.clear()
        self._to_add.clear()
        self._sent_to_coordinator = self._confirmed = False
        self._set(TxnState.READY)

    # ------------------------------------------------------------------ adding partitions

    def batch_opened(self, b: ProducerBatch) -> None:
        """The accumulator opened a batch (the accumulator's hook): its partition joins the
        transaction before the batch may be sent."""
        tp = (b.topic, b.partition)
        if tp in self.added or tp in self._to_add:
            return
        if self.v2:  # the broker adds the partition when the batch arrives (Produce v12+)
            self.added.add(tp)
            self._sent_to_coordinator = self._confirmed = True
            return
        self._to_add[tp] = None
        if self._adding is None:
            self._adding = asyncio.ensure_future(self._add_partitions())

    async def _add_partitions(self) -> None:
        try:
            while self._to_add and self.state in (TxnState.IN_TRANSACTION, TxnState.COMMITTING):
                batch = list(self._to_add)
                by_topic: dict[str, list[int]] = {}
                for t, p in batch:
                    by_topic.setdefault(t, []).append(p)
                tm = self._tm
                try:
                    await self._request(ApiKey.ADD_PARTITIONS_TO_TXN, {
                        "v3_and_below_transactional_id": self.transactional_id,
                        "v3_and_below_producer_id": tm.producer_id, "v3_and_below_producer_epoch": tm.producer_epoch,
                        "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]},
                        "AddPartitionsToTxn", code_of=_add_partitions_error, max_version=CLIENT_ADD_PARTITIONS_MAX)
                except KafkaTimeoutError as e:
                    self._fail(e)
                    return
                except KafkaError:
                    return  # the state says what happened
                self._confirmed = True
                for tp in batch:
                    self._to_add.pop(tp, None)
                    self.added.add(tp)
                self.wake(0)
        finally:
            self._adding = None

    async def _added_or_failed(self) -> None:
        """Wait for an AddPartitions in flight: EndTxn must not overtake it."""
        task = self._adding
        if task is not None:
            await asyncio.wait([task])

    async def close(self) -> None:
        """Abort an open transaction (as Kafka's producer does on a graceful close), so that
        its partitions' last stable offset does not wait for the transaction's timeout."""
        if self.state in (TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR, TxnState.ABORTING):
            try:
                await self.abort()
            except KafkaError as e:
                logger.warning("transactional id %s: could not abort the open transaction on close: %s",
                               self.transactional_id, e)
        if self._adding is not None:
            self._adding.cancel()


async def _offers_v2(conn: BrokerConnection) -> bool:
    """Whether the broker of ``conn`` serves transactions V2: ``transaction.version`` 2 or more
    finalized in its ApiVersions (v3+) and EndTxn v5 offered."""
    version = min(conn.pick_version(ApiKey.API_VERSIONS), 4)
    if version < 3 or conn.api_versions.get(ApiKey.END_TXN, (0, 0))[1] < 5:
        return False
    resp = await conn.request(ApiKey.API_VERSIONS, version, {"client_software_name": "minibroker-client",
                                                              "client_software_version": "1"})
    levels = {f["name"]: f["max_version_level"] for f in resp.get("finalized_features") or ()}
    return levels.get(TRANSACTION_VERSION, 0) >= TV2


def _first_partition_error(resp: dict[str, Any]) -> int:
    """TxnOffsetCommit: the first partition's error (0 when all are committed)."""
    return next((p["error_code"] for t in resp["topics"] for p in t["partitions"] if p["error_code"]), 0)


def _add_partitions_error(resp: dict[str, Any]) -> int:
    """AddPartitionsToTxn: the error that matters (OPERATION_NOT_ATTEMPTED only says that
    another partition of the request failed)."""
    codes = [r["partition_error_code"] for t in resp["results_by_topic_v3_and_below"]
             for r in t["results_by_partition"]]
    return next((c for c in codes if c and c != E.OPERATION_NOT_ATTEMPTED), next((c for c in codes if c), 0))
