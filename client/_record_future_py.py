"""The pure-Python twin of ``client/_record_future.c``: the record futures the producer makes,
with the C extension's interface (``client/_record_future.pyi``) minus ``configure`` and
``place_run``. Import them from ``client.record_future``, which picks the implementation once.

Serves when the extension was not built (no C compiler at install) or ``MINIBROKER_PURE_PYTHON``
is set; its methods are also what the C type delegates to for everything its own fast paths do
not answer (``configure`` hands it this module's ``RecordFuture`` class): one implementation
of each method, whichever storage holds the record future.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator, Sequence
from typing import Any

from client.producer_batch import (
    FailedRecords,
    ProducerBatch,
    RecordMetadata,
    WaitGroup,
    _call_soon,
    _Fanout,
    _GroupFanout,
)

__all__ = ["RecordFuture", "WaitingRecord", "new_record_future", "new_waiting_record", "new_metadata", "fresh_error"]


def fresh_error(exc: BaseException) -> BaseException:
    """A new exception equal to ``exc`` (same class, args, attributes, cause and traceback so
    far), for a record future to raise or return. The batch keeps the original: were it raised,
    the frames it passes through (holding record futures, which hold the batch) would hang off
    the batch's own exception, a reference cycle; with the C record futures, which the cyclic
    collector does not see, a cycle it could never free."""
    cls = type(exc)
    try:
        new = cls.__new__(cls, *exc.args)
        new.__dict__.update(exc.__dict__)
    except Exception:  # noqa: BLE001 - an exception class that cannot be rebuilt: hand out the original
        return exc
    new.__cause__ = exc.__cause__
    new.__context__ = exc.__context__
    new.__suppress_context__ = exc.__suppress_context__
    return new.with_traceback(exc.__traceback__)


def new_metadata(cls: type[RecordMetadata], topic: str, partition: int, offset: int,
                 timestamp: int) -> RecordMetadata:
    """``cls(topic, partition, offset, timestamp)`` without the NamedTuple's Python-level
    ``__new__`` (the C version also takes it out of the cyclic collector)."""
    return tuple.__new__(cls, (topic, partition, offset, timestamp))


class RecordFuture:
    """The future of one record of a batch: awaitable, and duck-type compatible with
    ``asyncio.Future`` (``asyncio.gather``/``wait`` accept it without wrapping it in a task).

    It holds only the batch, the record's index and its timestamp; ``result()`` derives the
    RecordMetadata from the batch's single answer. While the record waits for metadata or
    memory the "batch" is its ``WaitGroup``, then the real batch (or ``FailedRecords``).
    Records of a batch cannot be cancelled one by one: ``cancel()`` returns False.
    """

    __slots__ = ("_batch", "_index", "_timestamp")
    _asyncio_future_blocking = False  # asyncio.isfuture() -> True

    def __init__(self, batch: ProducerBatch | WaitGroup | FailedRecords, index: int, timestamp: int) -> None:
        self._batch = batch
        self._index = index
        self._timestamp = timestamp

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self._batch.future.get_loop()

    def done(self) -> bool:
        return self._batch.future.done()

    def cancelled(self) -> bool:
        return self._batch.future.cancelled()

    def cancel(self, msg: Any = None) -> bool:
        return False

    def result(self) -> RecordMetadata:
        b = self._batch
        if type(b) is ProducerBatch and b.results is None:  # inlined metadata_args: gather calls this per record
            f = b.future
            exc = f.exception()  # raises InvalidStateError while pending, CancelledError: new objects
            if exc is not None:
                raise fresh_error(exc)
            base, lat = f.result()
            offset = base + self._index if base >= 0 else -1
        else:
            exc = b.record_exception(self._index)
            if exc is not None:
                raise fresh_error(exc)
            offset, lat = b.metadata_args(self._index)
        return new_metadata(RecordMetadata, b.topic, b.partition, offset, lat if lat >= 0 else self._timestamp)

    def exception(self) -> BaseException | None:
        b = self._batch
        if type(b) is ProducerBatch and b.results is None:
            exc = b.future.exception()
        else:
            exc = b.record_exception(self._index)
        return None if exc is None else fresh_error(exc)

    def add_done_callback(self, fn: Callable[[Any], Any], *, context: Any = None) -> None:
        b = self._batch
        f = b.future
        if f.done():  # e.g. asyncio.gather over answered records
            _call_soon(f.get_loop(), fn, self, context)
            return
        # not FailedRecords: its future is done from the start
        fo = b.fanout  # type: ignore[union-attr]
        if fo is None:
            fo = b.fanout = _GroupFanout() if type(b) is WaitGroup else _Fanout()  # type: ignore[union-attr]
            f.add_done_callback(fo)
        fo.add(fn, self, context)  # type: ignore[arg-type]  # this class is RecordFuture when it runs

    def remove_done_callback(self, fn: Callable[[Any], Any]) -> int:
        fo = getattr(self._batch, "fanout", None)
        return fo.remove(fn, self) if fo is not None else 0

    def _make_cancelled_error(self) -> BaseException:
        return self._batch.future._make_cancelled_error()  # type: ignore[union-attr]  # asyncio.Future's (private)

    def __await__(self) -> Generator[Any, None, RecordMetadata]:
        f = self._batch.future
        while not f.done():  # a WaitGroup resolves when the record is placed: then its batch
            # Wait on a future of our own: cancelling the awaiting task cancels what it waits
            # on, and the batch's (or group's) future is shared by other records.
            # (a pending future is a BatchFuture: FailedRecords' is done from the start)
            waiter = f.get_loop().create_future()
            f.add_record_waiter(waiter)  # type: ignore[union-attr]
            yield from waiter.__await__()
            f = self._batch.future
        return self.result()

    __iter__ = __await__

    def __repr__(self) -> str:
        b = self._batch
        state = "pending" if not b.future.done() else ("error" if self.exception() else "done")
        return f"<RecordFuture {b.topic}-{b.partition} #{self._index} {state}>"


class WaitingRecord(RecordFuture):
    """The future of a record that waits for metadata or memory, carrying the record itself
    until ``RecordAccumulator.drain_waiting`` appends it (then the fields are dropped): one
    object per waiting record in the accumulator's queues, not a future plus a tuple."""

    __slots__ = ("topic", "value", "key", "headers", "partition", "deadline")

    def __init__(self, group: WaitGroup, topic: str, value: Any, key: Any,
                 headers: Sequence[tuple[str, bytes | None]] | None, partition: int | None, timestamp: int,
                 deadline: float) -> None:
        self._batch = group
        self._index = 0
        self._timestamp = timestamp
        self.topic = topic
        self.value = value
        self.key = key
        self.headers = headers
        self.partition = partition
        self.deadline = deadline


#: ``RecordFuture(batch, index, timestamp)``; with the C extension, without an argument tuple
new_record_future = RecordFuture
#: ``WaitingRecord(group, topic, value, key, headers, partition, timestamp, deadline)``
new_waiting_record = WaitingRecord
