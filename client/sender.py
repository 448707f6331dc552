"""Sender: the producer's network half — sealed batches to Produce requests, answers to futures.

It is given the cluster (metadata, connections) and the RecordAccumulator
(``client/accumulator.py``), which hands each sealed batch to ``Sender.enqueue``; it never
knows the producer. The sender keeps one FIFO of sealed batches per partition and runs
(``run``, scheduled on the event loop by ``wake``/``wake_at``, never a task polling a queue)
when a batch is sealed, when linger or a retry backoff expires, and when an answer frees a
request slot. Each run:

1. asks the accumulator to seal open batches whose ``linger_ms`` has passed (all of them while
   a flush runs or records wait for memory) — ``RecordAccumulator.seal_lingering``;
2. fails head batches older than ``delivery_timeout_ms`` (KafkaTimeoutError);
3. builds, per leader broker with a free slot (``max_in_flight_requests_per_connection``), one
   Produce request carrying the head batch of every ready partition it leads (one batch per
   partition per request, as Kafka's brokers require, up to ``max_request_size``), and repeats
   while slots and batches remain, so one partition's batches are pipelined.

Each request uses the highest Produce version both sides speak (a transactional producer's at
most v11 unless its transaction is a transactions V2 one, as Kafka's); from v13 (KIP-516) it names
topics by the ids the metadata gave (``TopicMetadata.topic_id``) and the answer is matched back
by id; a topic whose id is unknown (stale metadata after a recreation) answers
UNKNOWN_TOPIC_ID, which is retried after a metadata refresh like UNKNOWN_TOPIC_OR_PARTITION.

A request is written within the run when it can be (``BrokerConnection.send_request``: the
node's connection is open and can take it at once) and answered by a callback from the
connection's data callback (``_answered``): no task per request, and no loop turn between the
response's arrival and the batches' futures. Otherwise (the first request to a node, which
connects; a full connection; back-pressure) a task awaits ``BrokerConnection.request``; while
any such task of a node is alive, that node's later requests take the same path, so requests
reach each node in the order the runs made them.

Answers: a partition's batch resolves its future with ``BatchResult(base_offset,
log_append_time)``; a retriable error requeues it (in creation order, after
``retry_backoff_ms``; stale metadata is refreshed first); MESSAGE_TOO_LARGE splits a batch of
several records in two; other errors fail it. Either way ``RecordAccumulator.finished``
releases its memory. A lost connection fails every request in flight on it with a retriable error.

Idempotence (``client/producer_state.py``): a retried batch keeps its producer id and
sequence, so the broker recognises one it already wrote; OUT_OF_ORDER_SEQUENCE_NUMBER is
retried while an earlier batch of the partition is being retried; a batch that fails for
good stops the sending until the in-flight requests are answered and the unsent batches are
renumbered under a new producer id.

Transactions (``client/transactions.py``): Produce requests carry the transactional id, and a
partition's batches wait until the partition is in the transaction (AddPartitionsToTxn
answered, or at once in a transactions V2 transaction: ``Transactions.added``). Once the transaction is aborting, abortable or fenced,
every batch not yet sent fails at once (TransactionAbortedError, TransactionAbortableError,
ProducerFencedError) and only the requests in flight are waited for. A batch that fails for
good makes the transaction abortable (``Transactions.batch_failed``) instead of renumbering
anything: the abort bumps the epoch. MESSAGE_TOO_LARGE is not split in a transaction (the
halves would need sequences the batches behind it already hold): the batch fails.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import uuid
from collections import deque
from typing import Any

from client.accumulator import RecordAccumulator
from client.cluster import Cluster
from client.conn import BrokerConnection
from client.errors import ERRORS, KafkaError, KafkaTimeoutError, TransactionAbortedError, error_for_code
from client.producer_batch import BatchResult, ProducerBatch
from client.producer_state import TransactionManager
from client.protocol.api import ApiKey, ErrorCode, error_name
from client.transactions import Transactions

__all__ = ["Sender"]

logger = logging.getLogger("client.producer")

_INF = float("inf")
MessageTooLargeError: type[KafkaError] = ERRORS[ErrorCode.MESSAGE_TOO_LARGE]
_SEQUENCE_ERRORS = (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, ErrorCode.UNKNOWN_PRODUCER_ID)


class Sender:
    def __init__(self, cluster: Cluster, accumulator: RecordAccumulator, *, acks: int, request_timeout_ms: int,
                 retries: int, retry_backoff: float, max_in_flight: int, max_request_size: int,
                 transaction_manager: TransactionManager | None = None,
                 transactions: Transactions | None = None) -> None:
        self._cluster = cluster
        self._tm = transaction_manager
        self._txns = transactions
        self.transactional_id = transactions.transactional_id if transactions is not None else None
        self._acc = accumulator
        self.acks = acks
        self.request_timeout_ms = request_timeout_ms
        self.retries = retries
        self.retry_backoff = retry_backoff
        self.max_in_flight = max_in_flight
        self.max_request_size = max_request_size
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queues: dict[tuple[str, int], deque[ProducerBatch]] = {}  # sealed, to send
        self._ready: dict[tuple[str, int], None] = {}  # partitions with a non-empty queue
        self._in_flight: dict[int, int] = {}  # node id -> Produce requests in flight
        self._awaiting: dict[int, int] = {}  # node id -> requests sent by a task (_send_request), alive
        self._connect_locks: dict[int, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._refreshing: dict[str, asyncio.Task[Any]] = {}
        self._handle: asyncio.TimerHandle | None = None
        self._at = _INF
        self._closed = False
        self.backlog = 0  # sealed batches queued, not in flight
        self._progress = asyncio.Event()  # set when a request ends or a batch fails

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    async def wait_backlog(self, limit: int) -> None:
        """Wait until at most ``limit`` sealed batches wait to be sent (Producer.drain)."""
        while self.backlog > limit and not self._closed:
            self._progress.clear()
            await self._progress.wait()

    # ------------------------------------------------------------------ scheduling

    def wake(self, delay: float) -> None:
        """Run ``delay`` seconds from now unless a run is due earlier already."""
        loop = self._loop
        assert loop is not None
        self.wake_at(loop.time() + delay)

    def wake_at(self, when: float) -> None:
        if when >= self._at or self._closed:
            return
        if self._handle is not None:
            self._handle.cancel()
        loop = self._loop
        assert loop is not None
        self._at = when
        self._handle = loop.call_at(when, self.run)

    def run_due(self) -> None:
        """Run now if a run is due now (``wake(0)`` was called, e.g. by sealing a batch)
        instead of in the loop's next turn."""
        h = self._handle
        loop = self._loop
        if h is not None and loop is not None and self._at <= loop.time():
            h.cancel()
            self.run()

    def enqueue(self, b: ProducerBatch) -> None:
        """A sealed batch, to be sent after those already queued for its partition."""
        tp = (b.topic, b.partition)
        q = self._queues.get(tp)
        if q is None:
            q = self._queues[tp] = deque()
        q.append(b)
        self._ready[tp] = None
        self.backlog += 1
        self.wake(0)

    def _requeue(self, b: ProducerBatch) -> None:
        """Put a batch to retry back in its partition's queue, in creation order (O(queue))."""
        tp = (b.topic, b.partition)
        q = self._queues.setdefault(tp, deque())
        q.insert(bisect.bisect_right([x.seq for x in q], b.seq), b)
        self._ready[tp] = None
        self.backlog += 1

    def close(self) -> None:
        self._closed = True
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        for t in list(self._tasks) + list(self._refreshing.values()):
            t.cancel()
        self._progress.set()

    # ------------------------------------------------------------------ one run

    def run(self) -> None:
        self._handle = None
        self._at = _INF
        if self._closed:
            return
        loop = self._loop
        assert loop is not None
        now = loop.time()
        next_at = self._acc.seal_lingering(now)
        self._at = _INF  # sealing scheduled a run; this one covers it
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        tm = self._tm
        txns = self._txns
        gate: set[tuple[str, int]] | None = None
        if txns is not None:
            err = txns.undrained_error()
            if err is not None:
                self._fail_unsent(err)
                return
            gate = txns.added
        elif tm is not None and tm.needs_reset:
            # A batch's sequences will never be written: nothing more is sent until the
            # requests in flight are answered and the unsent batches are renumbered.
            if not tm.resetting and not any(self._in_flight.values()):
                self._spawn_reset(tm)
            return
        topics = self._cluster.topics
        max_in_flight, max_request_size = self.max_in_flight, self.max_request_size
        while self._ready:
            requests: dict[int, list[ProducerBatch]] = {}
            sizes: dict[int, int] = {}
            for tp in list(self._ready):
                q = self._queues[tp]
                while q and now >= q[0].deadline:
                    b = q.popleft()
                    self.backlog -= 1
                    self.fail(b, KafkaTimeoutError(
                        f"expiring {b.count} record(s) for {tp[0]}-{tp[1]}: "
                        f"{int((now - b.created) * 1000)} ms has passed since batch creation"))
                if not q:
                    self._ready.pop(tp, None)
                    continue
                b = q[0]
                if b.retry_at > now:
                    next_at = min(next_at, b.retry_at)
                    continue
                if gate is not None and tp not in gate:
                    continue  # AddPartitionsToTxn not answered yet: it wakes us
                meta = topics.get(tp[0])
                leader = meta.partitions.get(tp[1], -1) if meta is not None else -1
                if leader < 0:  # metadata invalidated by an error: refresh (it wakes us)
                    if tp[0] not in self._refreshing:
                        self._spawn_refresh(tp[0])
                    continue
                if self._in_flight.get(leader, 0) >= max_in_flight:
                    continue  # an answer will wake us
                size = sizes.get(leader, 0) + len(b.data or b.buf) + 64
                if size > max_request_size and leader in requests:
                    continue
                q.popleft()
                self.backlog -= 1
                if not q:
                    del self._ready[tp]
                requests.setdefault(leader, []).append(b)
                sizes[leader] = size
            if not requests:
                break
            for node, batches in requests.items():
                self._in_flight[node] = self._in_flight.get(node, 0) + 1
                if self.acks != 0 and not self._awaiting.get(node) and self._send_now(node, batches):
                    continue
                self._awaiting[node] = self._awaiting.get(node, 0) + 1
                t = loop.create_task(self._send_request(node, batches))
                self._tasks.add(t)
                t.add_done_callback(self._tasks.discard)
        if next_at < _INF:
            self.wake_at(next_at)

    def _fail_unsent(self, err: BaseException) -> None:
        """Fail every sealed batch not yet sent (a transaction ending badly)."""
        for q in self._queues.values():
            while q:
                b = q.popleft()
                self.backlog -= 1
                self.fail(b, err)
        self._ready.clear()

    def _spawn_reset(self, tm: TransactionManager) -> None:
        async def reset() -> None:
            try:
                await tm.reset(list(self._queues.values()))
            except KafkaError as e:
                logger.error("idempotent producer: cannot get a new producer id: %s", e)
                tm.needs_reset = False
                self._fail_unsent(e)
            finally:
                self.wake(0)

        t = asyncio.ensure_future(reset())
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    def _spawn_refresh(self, topic: str) -> None:
        async def refresh() -> None:
            try:
                await asyncio.sleep(self.retry_backoff)
                await self._cluster.topic(topic, timeout_ms=self.request_timeout_ms)
            except KafkaError as e:
                logger.warning("metadata refresh for %s failed: %s", topic, e)
            finally:
                self._refreshing.pop(topic, None)
                self.wake(0)

        self._refreshing[topic] = asyncio.ensure_future(refresh())

    # ------------------------------------------------------------------ requests and answers

    def _produce_request(self, conn: BrokerConnection, batches: list[ProducerBatch]
                         ) -> tuple[int, dict[str, Any], dict[uuid.UUID, str] | None]:
        """(version, body, the topics' names by id when the body names them by id): the
        highest common version; v13+ names topics by the ids the metadata gave (KIP-516), or,
        when one of them has none (metadata from a broker without ids, or dropped since the
        batch was routed), the request falls back to v12, which names them."""
        version = conn.pick_version(ApiKey.PRODUCE)
        if version > 11 and self._txns is not None and not self._txns.v2:
            # Kafka's ProduceRequest.json: without transactions V2 (KIP-890 part 2) a
            # transactional producer uses v11 at most; a V2 transaction's v12+ batches add their
            # partitions to the transaction
            version = 11
        topic_data: dict[str, list[dict[str, Any]]] = {}
        for b in batches:
            topic_data.setdefault(b.topic, []).append({"index": b.partition, "records": b.data})
        body: dict[str, Any] = {"transactional_id": self.transactional_id, "acks": self.acks,
                                "timeout_ms": self.request_timeout_ms}
        if version >= 13:
            topics = self._cluster.topics
            names: dict[uuid.UUID, str] = {}
            for t in topic_data:
                meta = topics.get(t)
                if meta is None or meta.topic_id is None:
                    break
                names[meta.topic_id] = t
            else:
                body["topic_data"] = [{"topic_id": i, "partition_data": topic_data[t]} for i, t in names.items()]
                return version, body, names
            version = 12
        body["topic_data"] = [{"name": t, "partition_data": d} for t, d in topic_data.items()]
        return version, body, None

    def _send_now(self, node: int, batches: list[ProducerBatch]) -> bool:
        """Write the request within this run if the node's connection takes it at once (see
        the module docstring); False, having sent nothing, otherwise."""
        conn = self._cluster.ready_connection(node)
        if conn is None:
            return False
        try:
            version, body, names = self._produce_request(conn, batches)
        except KafkaError:
            return False  # the task's path reports it
        if not conn.send_request(ApiKey.PRODUCE, version, body,
                                 lambda resp, exc: self._answered(node, conn, batches, names, resp, exc)):
            return False
        for b in batches:
            b.attempts += 1
        return True

    def _answered(self, node: int, conn: BrokerConnection, batches: list[ProducerBatch],
                  names: dict[uuid.UUID, str] | None, resp: dict[str, Any] | None, exc: KafkaError | None) -> None:
        """The outcome of a request written by ``_send_now``."""
        try:
            if exc is not None:
                for b in batches:
                    self._retry_or_fail(b, exc)
            else:
                assert resp is not None
                self._handle_response(conn, batches, names, resp)
        finally:
            self._request_ended(node)

    def _request_ended(self, node: int) -> None:
        self._in_flight[node] -= 1
        self._progress.set()
        self.wake(0)

    async def _send_request(self, node: int, batches: list[ProducerBatch]) -> None:
        try:
            try:
                # Requests to a node are written in the order run() made them (an idempotent
                # producer's batches of a partition must arrive in sequence order): the FIFO lock
                # keeps a request made later from finding the connection ready while an earlier
                # one is still being woken from waiting for it. Nothing between getting the
                # connection and ``conn.request`` writing yields.
                lock = self._connect_locks.get(node)
                if lock is None:
                    lock = self._connect_locks[node] = asyncio.Lock()
                async with lock:
                    conn = await self._cluster.node_connection(node)
                version, body, names = self._produce_request(conn, batches)
                for b in batches:
                    b.attempts += 1
                if self.acks == 0:  # no answer: done once written (offsets unknown, -1)
                    await conn.request(ApiKey.PRODUCE, version, body, expect_response=False)
                    for b in batches:
                        self.complete(b, BatchResult(-1, -1))
                    return
                resp = await conn.request(ApiKey.PRODUCE, version, body)
            except KafkaError as e:
                for b in batches:
                    self._retry_or_fail(b, e)
                return
            self._handle_response(conn, batches, names, resp)
        finally:
            self._awaiting[node] -= 1
            self._request_ended(node)

    def _handle_response(self, conn: BrokerConnection, batches: list[ProducerBatch],
                         names: dict[uuid.UUID, str] | None, resp: dict[str, Any]) -> None:
        by_tp = {(b.topic, b.partition): b for b in batches}
        for t in resp["responses"]:
            topic = t["name"] if names is None else names.get(t["topic_id"], "")
            for r in t["partition_responses"]:
                answered = by_tp.pop((topic, r["index"]), None)
                if answered is None:
                    continue
                b = answered
                code = r["error_code"]
                if code == 0:
                    self.complete(b, BatchResult(r["base_offset"], r["log_append_time_ms"]))
                elif code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER:  # older brokers: written before
                    self.complete(b, BatchResult(-1, -1))
                elif code in _SEQUENCE_ERRORS and self._tm is not None and self._sequence_retry(b, code):
                    continue
                else:
                    name = error_name(code)
                    self._retry_or_fail(b, error_for_code(
                        code, f"{name} from {conn.host}:{conn.port} for {b.topic}-{b.partition}"))
        for b in by_tp.values():
            self._retry_or_fail(b, KafkaError(f"no answer for {b.topic}-{b.partition} in the Produce response"))

    def _sequence_retry(self, b: ProducerBatch, code: int) -> bool:
        """Idempotence: retry ``b`` after OUT_OF_ORDER_SEQUENCE_NUMBER while an earlier batch
        of its partition is being retried, or after UNKNOWN_PRODUCER_ID (with a new producer
        id); True when ``b`` was requeued."""
        tm = self._tm
        assert tm is not None and self._loop is not None
        if code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER and not tm.is_retry_of_earlier(b):
            return False
        if code == ErrorCode.UNKNOWN_PRODUCER_ID:
            if self._txns is not None:
                return False  # the transaction fails; its abort bumps the epoch
            tm.needs_reset = True
        if self._loop.time() + self.retry_backoff >= b.deadline:
            return False
        b.retry_at = self._loop.time() + self.retry_backoff
        self._requeue(b)
        self.wake_at(b.retry_at)
        return True

    def _retry_or_fail(self, b: ProducerBatch, exc: KafkaError) -> None:
        assert self._loop is not None
        now = self._loop.time()
        if isinstance(exc, MessageTooLargeError) and b.count > 1 and self._txns is None:
            if self._tm is not None:
                self._tm.failed(b)  # the children are numbered when the producer id is reset
            for child in b.split(b.seq):
                self._acc.track(child)
                self._requeue(child)
            logger.info("%s-%d: batch of %d records too large, split in two", b.topic, b.partition, b.count)
            self.wake(0)
            return
        if exc.retriable and b.attempts <= self.retries and now + self.retry_backoff < b.deadline:
            if exc.invalid_metadata:
                self._cluster.invalidate(b.topic)
            b.retry_at = now + self.retry_backoff
            logger.debug("retrying %s-%d (attempt %d): %s", b.topic, b.partition, b.attempts + 1, exc)
            self._requeue(b)
            self.wake_at(b.retry_at)
            return
        self.fail(b, exc)

    def complete(self, b: ProducerBatch, result: BatchResult) -> None:
        if self._tm is not None:
            self._tm.resolved(b)
        if not b.future.done():
            b.future.set_result(result)
        self._acc.finished(b)

    def fail(self, b: ProducerBatch, exc: BaseException) -> None:
        if self._tm is not None:
            self._tm.failed(b)
        if self._txns is not None:
            exc = self._txns.batch_failed(exc)
        self._acc.forget_open(b)
        if not b.future.done():
            b.future.set_exception(exc)
            # a deliberate abort's unsent records are no news (debug); every other failure is
            logger.log(logging.DEBUG if isinstance(exc, TransactionAbortedError) else logging.WARNING,
                       "failed to deliver %d record(s) to %s-%d: %s", b.count, b.topic, b.partition, exc)
            b.future.exception()  # retrieved: reported through the record futures and the log
        self._progress.set()
        self._acc.finished(b)
