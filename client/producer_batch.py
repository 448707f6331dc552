"""ProducerBatch: records of one partition, encoded straight into one RecordBatch v2 buffer,
and what the record futures (``client/record_future.py``) of its records point at.

A batch owns a ``bytearray`` that starts with 61 zero bytes (the header, written once when the
batch is sealed) followed by the encoded records (``client/records/record.py`` has the layout).
Records are appended as they are encoded, no per-record object kept: header-less ones by the
producer's fast path (``client.records.codec.append_record``, C when built), others by
``try_append`` (the reference encoder of ``client/records/record.py``). ``seal`` writes the header with ``struct.pack_into``,
compresses the records section when a codec is set, and computes the CRC-32C once.

Invariants:
- offset delta of record i is i; ``count`` records; ``max_ts`` >= every record timestamp;
  ``base_ts`` is the first record's timestamp (deltas may be negative: explicit timestamps).
- the encoded size ``len(buf)`` never exceeds ``capacity`` except for a batch created for one
  record larger than the batch size (then capacity is that record's size).
- ``future`` resolves once per batch with a ``BatchResult``; per-record metadata is derived
  from it lazily (``metadata(index, timestamp)``): offset = base_offset + index.
- a batch the broker refused as too large (MESSAGE_TOO_LARGE) can be ``split`` in two; the
  children answer for index ranges of the parent, whose future resolves when both are done.

Record futures cost no asyncio object of their own: a record that waits for metadata or memory
points at a ``WaitGroup`` (one future per up to 1024 waiting records) and is re-pointed at its
batch when appended (or at ``FailedRecords``); callbacks added to pending record futures are
kept per batch (``_Fanout``) and run by one callback on the batch's future; callbacks added to
done ones run in one ``call_soon`` per loop turn (``_SoonCalls``). That is what makes
``asyncio.gather`` over a million record futures cheaper than over a million asyncio futures.
No batch or group future is ever handed to a Task to wait on (``__await__`` uses a waiter of
its own), so cancelling a task that awaits a record cannot cancel the others' future.

The record futures themselves (``RecordFuture``, ``WaitingRecord``: C types outside the cyclic
garbage collector when the extension is built) are ``client/record_future.py``'s.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from client.records.batch import (
    _HEADER,
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    CURRENT_MAGIC,
    LOG_OVERHEAD,
    PRODUCER_ID_OFFSET,
    RECORDS_OFFSET,
    crc32c,
)
from client.records.compression import Compression, compress
from client.records.record import RecordBatchBuilder, encode_record, iter_records

if TYPE_CHECKING:
    from client._record_future import RecordFuture  # the interface (.pyi) both implementations share

__all__ = ["ProducerBatch", "BatchFuture", "BatchResult", "RecordMetadata", "WaitGroup", "FailedRecords",
           "record_size_upper_bound"]

_CRC = struct.Struct(">I")
_PRODUCER_FIELDS = struct.Struct(">qhi")  # producerId, producerEpoch, baseSequence


def record_size_upper_bound(key: Any, value: Any, headers: Sequence[tuple[str, bytes | None]] | None) -> int:
    """An upper bound of the encoded size of one record (for the max_request_size check)."""
    n = 1 + 10 + 5 + 5 + 5 + 5 + (len(key) if key is not None else 0) + (len(value) if value is not None else 0)
    for hkey, hvalue in headers or ():
        n += 10 + len(hkey.encode("utf-8")) + (len(hvalue) if hvalue is not None else 0)
    return n + 5


class BatchResult(NamedTuple):
    """What the broker answered for a batch: ``base_offset`` (-1 with acks=0) and
    ``log_append_time`` (-1 unless the topic uses LogAppendTime)."""

    base_offset: int
    log_append_time: int


class BatchFuture(asyncio.Future):  # type: ignore[type-arg]
    """The future of a batch or a WaitGroup: an asyncio future that, when it resolves, also
    resolves at once the waiters of the tasks awaiting its records (``RecordFuture.__await__``).

    A waiter added as an ordinary done callback would be resolved by a callback the loop runs
    one turn later, and the awaiting task would resume one turn after that; here the task's
    wake-up is scheduled in the turn that resolves the batch (the one that reads the broker's
    answer), right after the future's own callbacks. An awaited send is a round trip, and
    each loop turn on its path is part of its latency. The waiters are the awaiting tasks'
    own futures, so cancelling a task still cancels only its waiter. ``add_settle_callback``
    does the same for a SyncProducer's result, which a thread waits on."""

    __slots__ = ("_record_waiters",)

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop=loop)
        # waiters (asyncio futures) and (fn, arg) settle callbacks, in the order added
        self._record_waiters: list[Any] | None = None

    def add_record_waiter(self, waiter: asyncio.Future[None]) -> None:
        """Resolve ``waiter`` (with None, unless it is done by then) once this future is."""
        self._add(waiter)

    def add_settle_callback(self, fn: Callable[[Any], Any], arg: Any) -> None:
        """Call ``fn(arg)`` right after this future resolves (in the same call, not a loop
        turn later); for code outside the loop's tasks that must learn the outcome at once.
        An exception from it goes to the loop's exception handler."""
        self._add((fn, arg))

    def _add(self, item: Any) -> None:
        if self._record_waiters is None:
            self._record_waiters = [item]
        else:
            self._record_waiters.append(item)

    def _wake_record_waiters(self) -> None:
        waiters = self._record_waiters
        if waiters is not None:
            self._record_waiters = None
            for w in waiters:
                if type(w) is tuple:
                    try:
                        w[0](w[1])
                    except Exception as e:  # noqa: BLE001 - as the loop treats a failing callback
                        self.get_loop().call_exception_handler(
                            {"message": "settle callback of a batch future failed", "exception": e, "future": self})
                elif not w.done():
                    w.set_result(None)

    def set_result(self, result: Any) -> None:
        super().set_result(result)
        self._wake_record_waiters()

    def set_exception(self, exception: Any) -> None:
        super().set_exception(exception)
        self._wake_record_waiters()

    def cancel(self, msg: Any = None) -> bool:
        cancelled = super().cancel(msg)
        self._wake_record_waiters()
        return cancelled


class ProducerBatch:
    """One partition's batch being filled, then sent (and maybe retried) as one unit."""

    __slots__ = ("topic", "partition", "buf", "count", "base_ts", "max_ts", "created", "capacity",
                 "reserved", "future", "attempts", "retry_at", "seq", "data", "codec", "deadline",
                 "children", "parent", "parent_start", "results", "producer_id", "producer_epoch",
                 "base_sequence", "fanout", "flags")

    def __init__(self, topic: str, partition: int, capacity: int, codec: Compression, created: float,
                 seq: int, reserved: int, loop: asyncio.AbstractEventLoop) -> None:
        self.topic = topic
        self.partition = partition
        self.buf = bytearray(RECORDS_OFFSET)
        self.count = 0
        self.base_ts = 0
        self.max_ts = -1
        self.created = created
        self.capacity = capacity
        self.reserved = reserved  # bytes of buffer_memory this batch holds until it completes
        self.future: BatchFuture = BatchFuture(loop)
        self.attempts = 0
        self.retry_at = 0.0
        self.seq = seq
        self.data: bytearray | None = None  # the sealed batch, as sent
        self.codec = codec
        self.deadline = 0.0
        self.children: list[ProducerBatch] | None = None
        self.parent: ProducerBatch | None = None
        self.parent_start = 0
        self.results: list[tuple[int, int, Any]] | None = None  # split: (start, end, result|exc)
        # idempotence (client/producer_state.py): set before sealing, -1 when off
        self.producer_id = -1
        self.producer_epoch = -1
        self.base_sequence = -1
        self.fanout: _Fanout | None = None  # callbacks added to its records' futures
        self.flags = 0  # attribute bits besides the codec: TRANSACTIONAL_FLAG_MASK in a transaction

    def try_append(self, key: Any, value: Any, headers: Sequence[tuple[str, bytes | None]] | None,
                   ts: int) -> int:
        """Append one record (any key, value and headers) with the reference encoder; its
        index in the batch, or -1 if it does not fit (nothing written). Header-less records
        usually take ``client.records.codec.append_record`` instead (the producer's fast
        path), which writes the same bytes."""
        count = self.count
        rec = encode_record(count, ts - self.base_ts if count else 0, key, value, headers)
        buf = self.buf
        if count:
            if len(buf) + len(rec) > self.capacity:
                return -1
            if ts > self.max_ts:
                self.max_ts = ts
        else:
            self.base_ts = self.max_ts = ts
        buf += rec
        self.count = count + 1
        return count

    @property
    def size(self) -> int:
        """Uncompressed size of the batch so far (header included)."""
        return len(self.buf)

    def seal(self) -> bytearray:
        """Write the header (and compress) once; the result is what is sent, retries included."""
        if self.data is not None:
            return self.data
        buf = self.buf
        if self.codec:
            payload = compress(self.codec, memoryview(buf)[RECORDS_OFFSET:])
            out = bytearray(RECORDS_OFFSET + len(payload))
            out[RECORDS_OFFSET:] = payload
            buf = out
        _HEADER.pack_into(buf, 0, 0, len(buf) - LOG_OVERHEAD, -1, CURRENT_MAGIC, 0, int(self.codec) | self.flags,
                          self.count - 1, self.base_ts, self.max_ts, self.producer_id, self.producer_epoch,
                          self.base_sequence, self.count)
        _CRC.pack_into(buf, CRC_OFFSET, crc32c(memoryview(buf)[ATTRIBUTES_OFFSET:]))
        self.data = buf
        self.buf = buf  # the uncompressed copy is no longer needed
        return buf

    def set_producer_state(self, producer_id: int, epoch: int, base_sequence: int) -> None:
        """Give the batch its producer id, epoch and first sequence; a sealed batch's header
        fields (bytes 43-56) are rewritten and its CRC recomputed (the CRC covers them)."""
        self.producer_id, self.producer_epoch, self.base_sequence = producer_id, epoch, base_sequence
        data = self.data
        if data is not None:
            _PRODUCER_FIELDS.pack_into(data, PRODUCER_ID_OFFSET, producer_id, epoch, base_sequence)
            _CRC.pack_into(data, CRC_OFFSET, crc32c(memoryview(data)[ATTRIBUTES_OFFSET:]))

    # -- results --

    def metadata_args(self, index: int) -> tuple[int, int]:
        """``(offset, log_append_time)`` of record ``index``; raises the batch's error (or,
        after a split, the error of the part holding the record)."""
        res = self.future.result()
        if self.results is None:
            base, lat = res
            return (base + index if base >= 0 else -1), lat
        for start, end, r in self.results:
            if start <= index < end:
                if isinstance(r, BaseException):
                    raise r
                base, lat = r
                return (base + index - start if base >= 0 else -1), lat
        raise AssertionError("split batch does not cover record index")  # pragma: no cover

    def record_exception(self, index: int) -> BaseException | None:
        exc = self.future.exception()
        if exc is not None or self.results is None:
            return exc
        for start, end, r in self.results:
            if start <= index < end and isinstance(r, BaseException):
                return r
        return None

    def split(self, seq_base: int) -> list[ProducerBatch]:
        """Two batches with the first and second half of the records (re-encoded from the sealed
        bytes: the rare path after MESSAGE_TOO_LARGE). They share this batch's memory
        reservation and report to it (``child_done``)."""
        data = self.seal()
        records = list(iter_records(data, verify_crc=False))
        half = (len(records) + 1) // 2
        loop = self.future.get_loop()
        out = []
        for start, part in ((0, records[:half]), (half, records[half:])):
            b = ProducerBatch(self.topic, self.partition, 0, self.codec, self.created, seq_base, 0, loop)
            builder = RecordBatchBuilder(self.codec)
            for r in part:
                builder.append(r.value, r.key, r.headers, r.timestamp)
            b.data = b.buf = builder.build()
            b.count = len(part)
            b.parent = self
            b.parent_start = start
            b.deadline = self.deadline
            b.attempts = self.attempts
            out.append(b)
        self.children = out
        self.results = []
        return out

    def child_done(self, child: ProducerBatch) -> bool:
        """Record a child's outcome; True when this (parent) batch is complete."""
        assert self.results is not None and self.children is not None
        f = child.future
        outcome: Any = f.exception() if f.exception() is not None else f.result()
        if child.results is not None:  # the child was split again: flatten its parts
            for s, e, r in child.results:
                self.results.append((child.parent_start + s, child.parent_start + e, r))
        else:
            self.results.append((child.parent_start, child.parent_start + child.count, outcome))
        return all(c.future.done() for c in self.children)


class RecordMetadata(NamedTuple):
    """Where an acknowledged record was written. ``offset`` is -1 with acks=0 (no answer);
    ``timestamp`` is the record's CreateTime, or the broker's LogAppendTime for topics that
    use it."""

    topic: str
    partition: int
    offset: int
    timestamp: int


class _Fanout:
    """The callbacks added to the futures of a batch's records, run in order by one callback
    on the batch's future: a batch of 1,000 records watched by ``gather`` costs one Handle when
    it is answered, not 1,000 (plus an adapter object each). Parallel lists, not a tuple per
    callback: fewer objects for the garbage collector to walk. An exception is reported to the
    loop's exception handler, as asyncio does for a callback, and the others still run."""

    __slots__ = ("fns", "rfs", "contexts")

    def __init__(self) -> None:
        self.fns: list[Callable[[Any], Any]] = []
        self.rfs: list[RecordFuture] = []
        self.contexts: list[Any] = []

    def add(self, fn: Callable[[Any], Any], rf: RecordFuture, context: Any) -> None:
        self.fns.append(fn)
        self.rfs.append(rf)
        self.contexts.append(context)

    def remove(self, fn: Callable[[Any], Any], rf: RecordFuture) -> int:
        """O(callbacks of the batch), as ``asyncio.Future.remove_done_callback`` (a C scan)."""
        removed = start = 0
        rfs = self.rfs
        while True:
            try:
                i = rfs.index(rf, start)
            except ValueError:
                return removed
            if self.fns[i] == fn:
                del self.fns[i], rfs[i], self.contexts[i]
                removed += 1
            else:
                start = i + 1

    def take(self) -> tuple[list[Callable[[Any], Any]], list[RecordFuture], list[Any]]:
        """The callbacks, emptied (the batch is answered: no record/batch cycle left behind)."""
        out = self.fns, self.rfs, self.contexts
        self.fns, self.rfs, self.contexts = [], [], []
        return out

    def __call__(self, f: asyncio.Future[Any]) -> None:
        run_all(f.get_loop(), *self.take())


class _GroupFanout(_Fanout):
    """A WaitGroup's: once its records are placed, each callback moves to its record's batch
    (or runs soon, if the record failed)."""

    __slots__ = ()

    def __call__(self, f: asyncio.Future[Any]) -> None:
        for fn, rf, ctx in zip(*self.take()):
            rf.add_done_callback(fn, context=ctx)


def run_all(loop: asyncio.AbstractEventLoop, fns: list[Callable[[Any], Any]], args: list[Any],
            contexts: list[Any]) -> None:
    """Call ``fn(arg)`` for each, in ``context`` if given; errors go to the loop's handler."""
    for fn, arg, ctx in zip(fns, args, contexts):
        try:
            if ctx is None:
                fn(arg)
            else:
                ctx.run(fn, arg)
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as e:  # noqa: BLE001 - as asyncio's Handle does
            loop.call_exception_handler({"message": f"Exception in callback {fn!r}", "exception": e,
                                         "future": arg})


class WaitGroup:
    """Stands in for the batch of records that wait — for their topic's metadata or for
    buffer memory — in the RecordAccumulator's queues (``client/accumulator.py``).

    A waiting record's RecordFuture points here; when the record is appended to a batch the
    accumulator re-points it (``RecordFuture._batch``/``_index``), or points it at a
    ``FailedRecords`` if it fails first. ``future`` resolves (always with None) once every
    record of the group has left the queue, so a callback added while the record waited is
    moved to its batch then (``_GroupFanout``): it runs after the record's own answer, at most one
    group's placement late. Groups hold at most ``GROUP_MAX`` records, so that wait is bounded;
    one asyncio future per group instead of one per record is what makes a burst of sends
    before the metadata arrives cost about what sends after it cost. ``batches``: the batches
    its records went to (for ``Producer.flush``)."""

    __slots__ = ("future", "pending", "batches", "fanout")
    GROUP_MAX = 1024
    topic = "?"
    partition = -1

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.future: BatchFuture = BatchFuture(loop)
        self.pending = 0
        self.batches: dict[ProducerBatch, None] = {}
        self.fanout: _Fanout | None = None

    def metadata_args(self, index: int) -> tuple[int, int]:
        self.future.result()  # InvalidStateError: the record is not answered yet
        raise AssertionError("a placed record still points to its WaitGroup")  # pragma: no cover

    def record_exception(self, index: int) -> BaseException | None:
        self.future.exception()  # InvalidStateError while pending
        raise AssertionError("a placed record still points to its WaitGroup")  # pragma: no cover


class FailedRecords:
    """Stands in for the batch of records that failed before they reached one (metadata or
    memory never came, the producer closed, a bad partition): a done future holding the error."""

    __slots__ = ("future", "error", "topic")
    partition = -1

    def __init__(self, topic: str, error: BaseException, loop: asyncio.AbstractEventLoop) -> None:
        self.topic = topic
        self.error = error
        self.future: asyncio.Future[None] = loop.create_future()
        self.future.set_exception(error)
        self.future.exception()  # logged once by the accumulator, not per record

    def metadata_args(self, index: int) -> tuple[int, int]:
        raise self.error

    def record_exception(self, index: int) -> BaseException | None:
        return self.error


class _SoonCalls:
    """Callbacks of done record futures, run in one ``call_soon`` per loop turn, in order.

    ``asyncio.gather`` over N answered records adds N callbacks to done futures; one
    ``call_soon`` each is one Handle each, a million of them alive at once, and what the
    garbage collector's full passes then walk dominated the idiom (measured: gather of 1M
    answered records 6 µs each, of which ~4 in collections). Here they are three list entries
    each. Order among these callbacks is kept; other ``call_soon`` callbacks scheduled between
    two of them may run before both (asyncio promises FIFO only per future)."""

    __slots__ = ("fns", "args", "contexts", "scheduled")

    def __init__(self) -> None:
        self.fns: list[Callable[[Any], Any]] = []
        self.args: list[Any] = []
        self.contexts: list[Any] = []

    def __call__(self, loop: asyncio.AbstractEventLoop) -> None:
        fns, args, contexts = self.fns, self.args, self.contexts
        self.fns, self.args, self.contexts = [], [], []
        run_all(loop, fns, args, contexts)


_soon: dict[asyncio.AbstractEventLoop, _SoonCalls] = {}


def _call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[[Any], Any], arg: Any, context: Any) -> None:
    sc = _soon.get(loop)
    if sc is None:
        sc = _soon[loop] = _SoonCalls()
        if len(_soon) > 16:  # closed loops' entries: drop them (loops are few; O(loops))
            for old in [lp for lp in _soon if lp.is_closed()]:
                del _soon[old]
    if not sc.fns:
        loop.call_soon(sc, loop)
    sc.fns.append(fn)
    sc.args.append(arg)
    sc.contexts.append(context)
