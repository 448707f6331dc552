"""The producer's record futures: what ``Producer.send_nowait`` returns, one per record.

This module is where they come from: it picks their implementation once, at import, and every
user (the producer, the accumulator, the sync facade, tests) imports these names from here.

- ``RecordFuture``: the future of one record of a batch, duck-type compatible with
  ``asyncio.Future`` (``asyncio.gather``/``wait`` take it as is; ``await`` gives the record's
  ``RecordMetadata`` or raises its error). It holds only ``_batch`` (the ``ProducerBatch``; while
  the record waits for metadata or memory the batch's stand-in, a ``WaitGroup``; a
  ``FailedRecords`` if it failed before reaching a batch), ``_index`` (its position in the batch)
  and ``_timestamp``. The accumulator re-points ``_batch``/``_index`` when it appends a waiting
  record; nothing else writes them.
- ``WaitingRecord``: a ``RecordFuture`` that also carries its record (``topic``, ``value``,
  ``key``, ``headers``, ``partition``, ``deadline``) while it waits in the accumulator's queues;
  ``value``/``key``/``headers`` are dropped once it is appended or failed.
- ``new_record_future(batch, index, timestamp)``, ``new_waiting_record(group, topic, value, key,
  headers, partition, timestamp, deadline)``: the constructors, as the producer calls them (one
  per record).
- ``new_metadata(cls, topic, partition, offset, timestamp)``: a ``RecordMetadata`` built as a
  tuple (no NamedTuple ``__new__``).
- ``place_run``: ``RecordAccumulator.append``'s bulk form for a run of plain waiting records
  (``client/_record_future.pyi`` states it), or None in pure Python.
- ``fresh_error(exc)``: the copy of a batch's error that a record future raises.
- ``C_RECORD_FUTURES``: whether the C types are in use.

Implementations. With the C extension (``client/_record_future.c``, built at install) the
futures, and the RecordMetadata their fast paths answer, are outside the cyclic garbage
collector: a burst keeps a million of them alive, and the collector's full passes over them were
the largest single cost of the send-then-gather idiom. Their methods' uncommon cases delegate to
the pure-Python class (``configure``, below), so each method is written once. Without the
extension, or with ``MINIBROKER_PURE_PYTHON=1`` in the environment (which also picks the
Python record codec), the pure-Python twin ``client/_record_future_py.py`` serves, identically.
``client/_record_future.pyi`` is the interface of both.

Invariant of both: a record future takes part in no reference cycle (the C ones could never be
collected): callbacks held for its records are dropped once run, and the error it raises or
returns is a fresh copy (``fresh_error``), never the batch's own object.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from client import _record_future_py
from client._record_future_py import fresh_error
from client.producer_batch import ProducerBatch, RecordMetadata, WaitGroup

__all__ = ["RecordFuture", "WaitingRecord", "new_record_future", "new_waiting_record", "new_metadata", "place_run",
           "fresh_error", "C_RECORD_FUTURES"]

PlaceRun = Callable[[deque[Any], ProducerBatch, str, "int | None", Callable[..., bool]],
                    tuple[int, list[tuple[WaitGroup, int]]]]


def _load_extension() -> ModuleType | None:
    """The C extension, configured; None when it is not built or ``MINIBROKER_PURE_PYTHON`` is
    set (to anything but "" or "0")."""
    if os.environ.get("MINIBROKER_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        from client import _record_future
    except ImportError:
        return None
    _record_future.configure(ProducerBatch, RecordMetadata, _record_future_py.RecordFuture)
    return _record_future


_impl: ModuleType = _load_extension() or _record_future_py
C_RECORD_FUTURES = _impl is not _record_future_py

if TYPE_CHECKING:
    from client._record_future import (
        RecordFuture,
        WaitingRecord,
        new_metadata,
        new_record_future,
        new_waiting_record,
    )

    place_run: PlaceRun | None
else:
    RecordFuture = _impl.RecordFuture
    WaitingRecord = _impl.WaitingRecord
    new_record_future = _impl.new_record_future
    new_waiting_record = _impl.new_waiting_record
    new_metadata = _impl.new_metadata
    place_run = getattr(_impl, "place_run", None)
