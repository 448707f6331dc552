"""RecordAccumulator: the producer's batches between ``send_nowait`` and the sender.

It owns, per topic, each partition's open batch, the sticky partition of unkeyed records and a
key -> partition cache (``TopicState``); every batch not yet answered (``incomplete``); the
``buffer_memory`` reserved by them (``used``); and the records that wait, in order, for buffer
memory (``waiting``) or for their topic's metadata (``topic_waiting``).

Waiting records (``park``) cost about what appended ones cost: one ``WaitingRecord`` (a
``RecordFuture`` that carries the record, pointing at a ``WaitGroup``: one asyncio future per
up to 1024 records, ``client/record_future.py``) in a deque, no asyncio future or callback
per record. When metadata or memory arrives, ``drain_waiting`` appends them in order and
re-points each future at its batch.

One append path: ``append`` puts a record into its partition's open batch (picking the
partition, sealing a full batch and opening the next), for ``Producer.send_nowait`` and for
``drain_waiting`` alike; ``drain_waiting`` hands a run of plain waiting records to
``place_run`` (its C form: the same encoder, in bulk) when the extension is built.

Flow of a batch: ``append_new`` opens it (reserving ``batch_size`` bytes, or one large record's
size); ``append`` fills it; ``seal`` closes it
and hands it to ``sealed`` (the sender's queue); the sender calls ``finished`` once it is
answered or failed, which releases its memory and lets waiting records in. ``seal_lingering`` is
the sender's clock: it seals batches whose ``linger`` passed (all of them while a flush runs or
records wait for memory, as Kafka's accumulator does when its pool is exhausted).

The accumulator knows neither the producer nor the sender: the producer builds it and connects
``sealed``, ``wake`` and ``wake_at`` to the sender it builds next.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from client.errors import ERRORS, KafkaTimeoutError
from client.partitioner import Partitioner, murmur2
from client.producer_batch import FailedRecords, ProducerBatch, WaitGroup, record_size_upper_bound
from client.protocol.api import ErrorCode
from client.record_future import RecordFuture, WaitingRecord, new_waiting_record, place_run
from client.records.codec import append_record
from client.records.compression import Compression

__all__ = ["RecordAccumulator", "TopicState", "Waiting", "TYPE_HELP", "MessageTooLargeError"]

logger = logging.getLogger("client.producer")

_INF = float("inf")
_KEY_CACHE_MAX = 10000
MessageTooLargeError = ERRORS[ErrorCode.MESSAGE_TOO_LARGE]
Header = tuple[str, "bytes | None"]
TYPE_HELP = ("record keys and values must be bytes-like or None; pass key_serializer/value_serializer "
             "to the Producer to send other types")

#: A record waiting for metadata or memory (its future, which carries it; ``deadline``: the loop
#: time after which it fails with KafkaTimeoutError).
Waiting = WaitingRecord


class TopicState:
    """Per topic: partition count, the open batch of each partition, the sticky partition of
    unkeyed records and a small key -> partition cache (murmur2 costs ~1 µs in Python)."""

    __slots__ = ("name", "num_partitions", "open", "sticky", "key_cache")

    def __init__(self, name: str, num_partitions: int, sticky: int) -> None:
        self.name = name
        self.num_partitions = num_partitions
        self.open: list[ProducerBatch | None] = [None] * num_partitions
        self.sticky = sticky
        self.key_cache: dict[bytes, int] = {}


def _noop(_delay: float) -> None:
    pass


class RecordAccumulator:
    def __init__(self, *, batch_size: int, buffer_memory: int, compression: Compression, linger: float,
                 delivery_timeout: float, max_block: float, max_request_size: int,
                 partitioner: Partitioner | None) -> None:
        self.batch_size = batch_size
        self.buffer_memory = buffer_memory
        self.compression = compression
        self.linger = linger
        self.delivery_timeout = delivery_timeout
        self.max_block = max_block
        self.max_request_size = max_request_size
        self.partitioner = partitioner
        #: the largest record_size_upper_bound + 61 that can be sent (check_size)
        self.max_record_bound = min(max_request_size, buffer_memory)
        self.topics: dict[str, TopicState] = {}
        self.open: dict[ProducerBatch, None] = {}          # open batches, oldest first
        self.incomplete: dict[ProducerBatch, None] = {}    # every batch not yet answered
        self.waiting: deque[Waiting] = deque()             # records waiting for memory
        self.topic_waiting: dict[str, deque[Waiting]] = {}  # records waiting for metadata
        self.used = 0                                      # bytes of buffer_memory reserved
        self.flushing = 0                                  # flushes in progress: linger ignored
        self._seq = 0
        self._group: WaitGroup | None = None               # where new waiting records go
        self.groups: dict[WaitGroup, None] = {}            # groups with records still waiting
        self._space: asyncio.Event | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        #: where sealed batches go, and how to ask for a run of the sender (set by the producer)
        self.sealed: Callable[[ProducerBatch], None] = lambda b: None
        self.wake: Callable[[float], None] = _noop
        self.wake_at: Callable[[float], None] = _noop
        #: gives a batch its producer id and sequence just before it is sealed (idempotence)
        self.stamp: Callable[[ProducerBatch], None] | None = None
        #: told of every batch opened (transactions: its partition joins the transaction)
        self.opened: Callable[[ProducerBatch], None] | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._space = asyncio.Event()

    # ------------------------------------------------------------------ topics

    def add_topic(self, topic: str, num_partitions: int) -> None:
        """Metadata arrived (or grew): records that waited for it join the memory queue."""
        topic_state = self.topics.get(topic)
        if topic_state is None:
            self.topics[topic] = TopicState(topic, num_partitions, random.randrange(num_partitions))
        elif num_partitions > topic_state.num_partitions:
            topic_state.open.extend([None] * (num_partitions - topic_state.num_partitions))
            topic_state.num_partitions = num_partitions
            topic_state.key_cache.clear()
        q = self.topic_waiting.pop(topic, None)
        if q:
            self.waiting.extend(q)
            self.drain_waiting()
        self.wake(0)

    def fail_topic_waiting(self, topic: str, err: BaseException) -> None:
        self._fail(list(self.topic_waiting.pop(topic, ())), err)
        self.signal_space()

    def partition_for(self, topic_state: TopicState, key: Any) -> int:
        if self.partitioner is not None:
            p = self.partitioner(topic_state.name, key, topic_state.num_partitions)
            if not 0 <= p < topic_state.num_partitions:
                raise ValueError(f"partitioner returned {p} for {topic_state.num_partitions} partitions")
            return p
        cache = topic_state.key_cache
        cached = cache.get(key) if type(key) is bytes else None
        if cached is not None:
            return cached
        p = (murmur2(key) & 0x7FFFFFFF) % topic_state.num_partitions
        if type(key) is bytes:
            if len(cache) >= _KEY_CACHE_MAX:
                cache.clear()
            cache[key] = p
        return p

    # ------------------------------------------------------------------ batches

    def check_size(self, key: Any, value: Any, headers: Sequence[Header] | None) -> int:
        """The record's encoded size bound as a batch of one; MessageTooLargeError if it can
        never be sent."""
        try:
            need = record_size_upper_bound(key, value, headers) + 61
        except TypeError:
            raise TypeError(TYPE_HELP) from None
        if need > self.max_request_size or need > self.buffer_memory:
            raise MessageTooLargeError(
                f"the record is {need} bytes when encoded (upper bound), larger than "
                f"max_request_size={self.max_request_size} or buffer_memory={self.buffer_memory}")
        return need

    def append(self, topic_state: TopicState, value: Any, key: Any, headers: Sequence[Header] | None,
               partition: int | None, timestamp_ms: int) -> ProducerBatch | None:
        """Append one record of ``topic_state``'s topic: the batch it went to (the record is
        that batch's last, index ``b.count - 1``), or None if buffer memory is short (nothing
        appended; the caller parks the record). The one append path of the producer:
        ``Producer.send_nowait`` calls it for every record whose topic's metadata is known and
        nothing waits, ``drain_waiting`` for every waiting record.

        ``partition`` None: the sticky partition for a key-less record, else the partitioner's
        (the default one's key -> partition cache first). Header-less records are encoded by
        the codec's encoder (``client.records.codec.append_record``, C when built), others by
        ``ProducerBatch.try_append``; a record that does not fit seals the open batch and
        opens the next (``append_new``). Raises ValueError for a partition out of range,
        TypeError (``TYPE_HELP``) for a key, value or header that cannot be encoded, and
        MessageTooLargeError for a record that can never be sent; nothing is appended then.

        Hot path: a burst of ``send_nowait`` runs this once per record, so it is written for
        speed (locals, no further call for a record that fits in the open batch)."""
        if partition is None:
            if key is None:
                partition = topic_state.sticky
            else:  # the key cache is only filled by the default partitioner
                cached = topic_state.key_cache.get(key) if type(key) is bytes else None
                partition = cached if cached is not None else self.partition_for(topic_state, key)
        elif not 0 <= partition < topic_state.num_partitions:
            raise ValueError(f"partition {partition} is not in [0, {topic_state.num_partitions}) "
                             f"for topic {topic_state.name!r}")
        b = topic_state.open[partition]
        if b is not None:
            count = b.count
            tsd = timestamp_ms - b.base_ts
            if headers is None and value is not None and 0 <= tsd:
                try:
                    fits = append_record(b.buf, b.capacity, tsd, count, key, value)
                except TypeError:
                    raise TypeError(TYPE_HELP) from None
                if fits:
                    b.count = count + 1
                    if timestamp_ms > b.max_ts:
                        b.max_ts = timestamp_ms
                    return b
            else:
                try:
                    if b.try_append(key, value, headers, timestamp_ms) >= 0:
                        return b
                except (TypeError, AttributeError):  # e.g. a str value, or a header key that is not a str
                    raise TypeError(TYPE_HELP) from None
            self.seal(b)
        return self.append_new(topic_state, partition, key, value, headers, timestamp_ms)

    def append_new(self, topic_state: TopicState, partition: int, key: Any, value: Any,
                   headers: Sequence[Header] | None, timestamp_ms: int) -> ProducerBatch | None:
        """Open a batch on ``partition`` for this record (its index 0); None if buffer memory
        is short."""
        need = self.check_size(key, value, headers)
        capacity = max(self.batch_size, need)
        if self.used + capacity > self.buffer_memory:
            return None
        loop = self.loop
        assert loop is not None
        now = loop.time()
        self._seq += 1
        b = ProducerBatch(topic_state.name, partition, capacity, self.compression, now, self._seq, capacity, loop)
        b.deadline = now + self.delivery_timeout
        try:
            if headers is None and value is not None:
                # the codec's encoder, as send_nowait's fast path (an awaited send opens a
                # batch per record); need <= capacity, so the record fits
                if not append_record(b.buf, capacity, 0, 0, key, value):
                    raise AssertionError("a record larger than its size bound")  # pragma: no cover
                b.count = 1
                b.base_ts = b.max_ts = timestamp_ms
            elif b.try_append(key, value, headers, timestamp_ms) != 0:
                raise AssertionError("a new batch refused its first record")  # pragma: no cover
        except (TypeError, AttributeError):  # e.g. a str value, or a header key that is not a str
            raise TypeError(TYPE_HELP) from None
        self.used += capacity
        topic_state.open[partition] = b
        self.open[b] = None
        self.incomplete[b] = None
        if self.opened is not None:
            self.opened(b)
        self.wake(self.linger)
        return b

    def seal(self, b: ProducerBatch) -> None:
        """Close ``b`` to new records and hand it to the sender; move the sticky partition."""
        topic_state = self.topics.get(b.topic)
        if topic_state is not None and topic_state.open[b.partition] is b:
            topic_state.open[b.partition] = None
            if topic_state.sticky == b.partition and topic_state.num_partitions > 1:
                p = random.randrange(topic_state.num_partitions - 1)
                topic_state.sticky = p + 1 if p >= b.partition else p
        self.open.pop(b, None)
        if self.stamp is not None:
            self.stamp(b)
        b.seal()
        self.sealed(b)

    def seal_lingering(self, now: float) -> float:
        """For the sender: append records waiting for memory (if it freed up), seal open
        batches whose linger passed (all of them while a flush runs or records wait for
        memory); the next linger deadline."""
        if self.waiting:
            self.drain_waiting()
        force = self.flushing > 0 or bool(self.waiting)
        linger = self.linger
        for b in list(self.open):
            if force or now - b.created >= linger:
                self.seal(b)
            else:
                return b.created + linger
        return _INF

    def forget_open(self, b: ProducerBatch) -> None:
        """A batch failed before it was sealed: no more records go to it."""
        self.open.pop(b, None)
        topic_state = self.topics.get(b.topic)
        if topic_state is not None and topic_state.open[b.partition] is b:
            topic_state.open[b.partition] = None

    def track(self, b: ProducerBatch) -> None:
        """A batch made by a split (MESSAGE_TOO_LARGE): unanswered until its own answer."""
        self.incomplete[b] = None

    def finished(self, b: ProducerBatch) -> None:
        """``b`` was answered or failed: release its memory and let waiting records in."""
        self.incomplete.pop(b, None)
        # Record futures keep the batch alive for its answer; the bytes are not needed any more
        # (a million kept futures would otherwise pin every batch's buffer).
        b.buf = bytearray()
        b.data = None
        parent = b.parent
        if parent is not None:
            if parent.child_done(b):
                if not parent.future.done():
                    parent.future.set_result(None)
                self.finished(parent)
            return
        self.used -= b.reserved
        b.reserved = 0
        if self.waiting:
            self.drain_waiting()

    # ------------------------------------------------------------------ waiting records

    def park(self, topic: str, value: Any, key: Any, headers: Sequence[Header] | None, partition: int | None,
             timestamp_ms: int, deadline: float, metadata_known: bool) -> tuple[RecordFuture, bool]:
        """Queue a record for memory (its topic's metadata known) or for metadata; its future,
        and True when the caller must fetch the topic's metadata."""
        g = self._group
        if g is None or g.pending >= WaitGroup.GROUP_MAX or g.future.done():
            loop = self.loop
            assert loop is not None
            g = self._group = WaitGroup(loop)
            self.groups[g] = None
        g.pending += 1
        rf = new_waiting_record(g, topic, value, key, headers, partition, timestamp_ms, deadline)
        if metadata_known or topic in self.topics:
            self.waiting.append(rf)
            self.wake(0)
            return rf, False
        q = self.topic_waiting.get(topic)
        if q is None:
            q = self.topic_waiting[topic] = deque()
        q.append(rf)
        return rf, True

    def _placed(self, rf: WaitingRecord, b: ProducerBatch, i: int) -> None:
        g = rf._batch
        assert type(g) is WaitGroup
        rf._batch = b
        rf._index = i
        rf.value = rf.key = rf.headers = None  # the batch has the bytes now
        g.batches[b] = None
        g.pending -= 1
        if not g.pending:
            self._resolve(g)

    def _group_placed(self, g: WaitGroup, b: ProducerBatch, n: int) -> None:
        """``_placed`` for ``n`` records of group ``g`` that ``place_run`` appended to ``b``."""
        g.batches[b] = None
        g.pending -= n
        if not g.pending:
            self._resolve(g)

    def _resolve(self, g: WaitGroup) -> None:
        self.groups.pop(g, None)
        if self._group is g:
            self._group = None
        if not g.future.done():
            g.future.set_result(None)

    def _fail(self, items: list[Waiting], err: BaseException) -> None:
        """Fail records that never reached a batch; logged once (as batch failures are)."""
        if not items:
            return
        loop = self.loop
        assert loop is not None
        failed = FailedRecords(items[0].topic, err, loop)
        for rf in items:
            rf.value = rf.key = rf.headers = None
            g = rf._batch
            if type(g) is not WaitGroup:
                continue
            rf._batch = failed
            g.pending -= 1
            if not g.pending:
                self._resolve(g)
        logger.warning("failed %d record(s) before they were batched: %s", len(items), err)

    def drain_waiting(self) -> None:
        """Append records that waited for memory, in order, while memory allows (``append``
        for each; runs of plain records through ``place_run`` when built); records past
        their deadline fail with KafkaTimeoutError, a record ``append`` refuses with its
        error."""
        loop = self.loop
        assert loop is not None
        w = self.waiting
        now = loop.time()
        expired: list[Waiting] = []
        topics = self.topics
        placed = self._placed
        while w:
            rf = w[0]
            topic_state = topics[rf.topic]
            try:
                b = self.append(topic_state, rf.value, rf.key, rf.headers, rf.partition, rf._timestamp)
            except Exception as e:  # noqa: BLE001 - reported through the record's future
                w.popleft()
                self._fail([rf], e)
                continue
            if b is None:
                if now >= rf.deadline:
                    expired.append(w.popleft())
                    continue
                self.wake_at(rf.deadline)
                break
            w.popleft()
            plain = rf.key is None and rf.headers is None and type(rf.value) is bytes
            placed(rf, b, b.count - 1)
            if plain and w and place_run is not None and topic_state.open[b.partition] is b and \
                    (rf.partition is not None or topic_state.sticky == b.partition):
                # The run of like records behind it (same topic and partition choice, plain)
                # goes where append would put each while they fit, into b, by the same
                # encoder: in one C call.
                for g, k in place_run(w, b, rf.topic, rf.partition, append_record)[1]:
                    self._group_placed(g, b, k)
        if expired:
            self._fail(expired, KafkaTimeoutError(
                f"failed to allocate memory within max_block_ms={int(self.max_block * 1000)} "
                f"(buffer_memory={self.buffer_memory} in use)"))
        self.signal_space()

    def signal_space(self) -> None:
        if not self.waiting and not self.topic_waiting and self._space is not None:
            self._space.set()

    async def wait_for_space(self) -> None:
        """Until no record waits for memory or metadata (the producer's ``drain``)."""
        while self.waiting or self.topic_waiting:
            assert self._space is not None
            self._space.clear()
            await self._space.wait()

    def pending(self) -> tuple[list[asyncio.Future[Any]], list[WaitGroup]]:
        """Everything buffered now, for a flush to wait on: the futures of unanswered batches,
        and the groups of waiting records (whose ``batches`` to wait on once they resolve)."""
        return [b.future for b in self.incomplete if b.parent is None], list(self.groups)

    def fail_waiting(self, err: BaseException) -> None:
        """Fail every record that never reached a batch (the producer is closing)."""
        items = list(self.waiting) + [w for q in self.topic_waiting.values() for w in q]
        self.waiting.clear()
        self.topic_waiting.clear()
        self._fail(items, err)
