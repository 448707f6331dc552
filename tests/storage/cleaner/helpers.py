"""Helpers shared by the cleaner tests: read every record of a log as a consumer would (whole
batches from the log start, CRC checked, empty batches allowed, control batches skipped),
read_uncommitted or read_committed; build keyed, transactional and marker batches; the
cleaner settings of the mode under test (conftest.py's ``cleaner_mode``)."""

from __future__ import annotations

import heapq
import os
import struct
from typing import NamedTuple

from broker.storage.cleaner import CleanerConfig
from broker.storage.log import Log
from client.records import RecordBatchBuilder, iter_records
from client.records.control import ABORT, build_control_batch, parse_control_key

#: ``log.cleaner.mode`` of the test running now (set by conftest.py's ``cleaner_mode``)
CLEANER_MODE = ["thread"]
_CONTROL = 0x20
_TRANSACTIONAL = 0x10


def cleaner_config(**settings: object) -> CleanerConfig:
    """``CleanerConfig(**settings)`` in the mode under test."""
    return CleanerConfig(mode=CLEANER_MODE[0], **settings)  # type: ignore[arg-type]


class Rec(NamedTuple):
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int


class _Batch(NamedTuple):
    base: int
    last: int
    attributes: int
    producer_id: int
    data: bytes


def _whole_batches(data: bytes) -> list[_Batch]:
    """The whole batches at the start of ``data`` (a fetch may end inside one)."""
    out = []
    pos = 0
    while len(data) - pos >= 61:
        size = struct.unpack_from(">i", data, pos + 8)[0] + 12
        if pos + size > len(data):
            break
        base, = struct.unpack_from(">q", data, pos)
        attributes, last_delta = struct.unpack_from(">hi", data, pos + 21)
        pid, = struct.unpack_from(">q", data, pos + 43)
        out.append(_Batch(base, base + last_delta, attributes, pid, data[pos:pos + size]))
        pos += size
    return out


def read_all(log: Log) -> list[Rec]:
    """Every record from the log start to the LEO, checking that batches and records come in
    strictly increasing offset order and that each batch's CRC holds."""
    out: list[Rec] = []
    offset = log.log_start_offset
    last = -1
    while offset < log.log_end_offset:
        data = log.read_bytes(offset, 1 << 20)
        assert data, f"no data at {offset} below the LEO {log.log_end_offset}"
        nxt = offset
        for b in _whole_batches(data):
            assert b.base > last or b.base == last == -1 or b.base >= offset, (b.base, last)
            for r in iter_records(b.data):
                assert r.offset > last and b.base <= r.offset <= b.last
                last = r.offset
                if r.offset >= offset and not b.attributes & _CONTROL:
                    out.append(Rec(r.offset, r.key, r.value, r.headers, r.timestamp))
            last = max(last, b.last)
            nxt = b.last + 1
        assert nxt > offset
        offset = nxt
    return out


def keyed_batch(records: list[tuple[bytes | None, bytes | None]], *, codec: str | None = None, ts: int = 1_000,
                headers: tuple[tuple[str, bytes | None], ...] = (), **kwargs: object) -> bytearray:
    b = RecordBatchBuilder(codec, **kwargs)  # type: ignore[arg-type]
    for i, (k, v) in enumerate(records):
        b.append(v, key=k, headers=headers, timestamp=ts + i)
    return b.build()


def txn_batch(records: list[tuple[bytes | None, bytes | None]], producer_id: int, sequence: int, *,
              epoch: int = 0, **kwargs: object) -> bytearray:
    """A transactional batch of ``producer_id`` starting at ``sequence``."""
    return keyed_batch(records, producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence,
                       is_transactional=True, **kwargs)


def end_txn(log: Log, producer_id: int, commit: bool, *, epoch: int = 0) -> int:
    """Write a COMMIT or ABORT marker as the transaction coordinator does; its offset."""
    return log.append(build_control_batch(producer_id, epoch, commit, timestamp_ms=1_000),
                      from_coordinator=True).first_offset


def read_committed(log: Log, max_bytes: int = 2048) -> list[Rec]:
    """Every record a read_committed consumer gets, fetching ``max_bytes`` at a time from the
    log start: each fetch stops at the last stable offset and comes with the aborted
    transactions the broker answers (``Log.collect_aborted_transactions(offset, LSO)``, as the
    Fetch handler); the consumer (Kafka's CompletedFetch) drops a producer's transactional
    batches from an entry's first offset until that producer's ABORT marker, and skips control
    batches. Small fetches exercise the stopping rule of the ``.txnindex`` search."""
    out: list[Rec] = []
    offset = log.log_start_offset
    lso = log.last_stable_offset
    while offset < lso:
        res = log.read(offset, max_bytes, True, lso)
        data = b"".join(os.pread(sl.fd, sl.size, sl.position) for sl in res.slices)
        assert data, f"no data at {offset} below the LSO {lso}"
        entries = [(a.first_offset, a.producer_id) for a in log.collect_aborted_transactions(offset, lso)]
        heapq.heapify(entries)
        aborted_producers: set[int] = set()
        nxt = offset
        for b in _whole_batches(data):
            nxt = b.last + 1
            while entries and entries[0][0] <= b.last:
                aborted_producers.add(heapq.heappop(entries)[1])
            if b.attributes & _CONTROL:
                recs = list(iter_records(b.data))
                if recs and parse_control_key(recs[0].key).type == ABORT:
                    aborted_producers.discard(b.producer_id)
                continue
            if b.attributes & _TRANSACTIONAL and b.producer_id in aborted_producers:
                continue
            out.extend(Rec(r.offset, r.key, r.value, r.headers, r.timestamp) for r in iter_records(b.data)
                       if r.offset >= offset)
        assert nxt > offset
        offset = nxt
    return out
