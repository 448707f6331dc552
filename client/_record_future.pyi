"""Stubs of the C extension ``client/_record_future.c`` (record futures outside the cyclic
garbage collector), which ``client/_record_future_py.py`` mirrors in pure Python (all but
``configure`` and ``place_run``). Import these names from ``client.record_future``."""

import asyncio
from collections import deque
from collections.abc import Callable, Generator, Sequence
from typing import Any

from client.producer_batch import FailedRecords, ProducerBatch, RecordMetadata, WaitGroup

class RecordFuture:
    """The future of one record of a batch: awaitable, and duck-type compatible with
    ``asyncio.Future`` (``asyncio.gather``/``wait`` take it as is). Holds only its batch (or
    the batch's stand-in: ``WaitGroup`` while it waits, ``FailedRecords`` if it failed
    first), its index there and its timestamp; ``result()`` derives its RecordMetadata from
    the batch's single answer. ``cancel()`` is always False: records are not cancelled one by
    one. ``result()``/``exception()`` give a fresh copy of the batch's error each time."""

    _batch: ProducerBatch | WaitGroup | FailedRecords
    _index: int
    _timestamp: int
    @property
    def _asyncio_future_blocking(self) -> bool: ...
    def __init__(self, batch: ProducerBatch | WaitGroup | FailedRecords, index: int, timestamp: int) -> None: ...
    def get_loop(self) -> asyncio.AbstractEventLoop: ...
    def done(self) -> bool: ...
    def cancelled(self) -> bool: ...
    def cancel(self, msg: Any = None) -> bool: ...
    def result(self) -> RecordMetadata: ...
    def exception(self) -> BaseException | None: ...
    def add_done_callback(self, fn: Callable[[Any], Any], *, context: Any = None) -> None: ...
    def remove_done_callback(self, fn: Callable[[Any], Any]) -> int: ...
    def _make_cancelled_error(self) -> BaseException: ...
    def __await__(self) -> Generator[Any, None, RecordMetadata]: ...
    def __iter__(self) -> Generator[Any, None, RecordMetadata]: ...

class WaitingRecord(RecordFuture):
    """A record waiting for metadata or memory: its future (index 0, ``_batch`` its
    ``WaitGroup``) carrying the record until the accumulator appends it (then ``value``,
    ``key`` and ``headers`` are None); ``deadline``: the loop time at which it fails."""

    topic: str
    value: Any
    key: Any
    headers: Sequence[tuple[str, bytes | None]] | None
    partition: int | None
    deadline: float
    def __init__(self, group: WaitGroup, topic: str, value: Any, key: Any,
                 headers: Sequence[tuple[str, bytes | None]] | None, partition: int | None, timestamp: int,
                 deadline: float) -> None: ...

def new_record_future(batch: ProducerBatch | WaitGroup | FailedRecords, index: int, timestamp: int) -> RecordFuture:
    """``RecordFuture(batch, index, timestamp)`` without an argument tuple."""

def new_waiting_record(group: WaitGroup, topic: str, value: Any, key: Any,
                       headers: Sequence[tuple[str, bytes | None]] | None, partition: int | None, timestamp: int,
                       deadline: float) -> WaitingRecord:
    """``WaitingRecord(...)`` without an argument tuple."""

def new_metadata(cls: type[RecordMetadata], topic: str, partition: int, offset: int, timestamp: int) -> RecordMetadata:
    """``cls(topic, partition, offset, timestamp)``, untracked by the cyclic collector when
    every field is an exact str or int."""

def configure(batch_type: type[ProducerBatch], metadata_type: type[RecordMetadata], methods: type) -> None:
    """Name the classes the fast paths recognise, and the class whose methods (by name: result,
    exception, add_done_callback, remove_done_callback, cancel, _make_cancelled_error,
    __await__, __repr__) answer everything else. Call once, before any method is used."""

def place_run(queue: deque[WaitingRecord], batch: ProducerBatch, topic: str, partition: int | None,
              append_record: Callable[[bytearray, int, int, int, Any, Any], bool],
              /) -> tuple[int, list[tuple[WaitGroup, int]]]:
    """Append the run of plain records (for ``topic``, no key, no headers, a bytes value, a
    timestamp not before the batch's first, partition None when ``partition`` is None, else
    equal to it) at the head of ``queue`` to ``batch`` with the codec's ``append_record``,
    popping them and pointing each at the batch; stops at the first that does not qualify or
    fit. How many were placed, and how many left each WaitGroup, in order."""
