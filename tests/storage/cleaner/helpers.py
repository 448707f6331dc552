"""Helpers shared by the cleaner tests: read every record of a log as a consumer would (whole
batches from the log start, CRC checked, empty batches allowed, control batches skipped),
read_uncommitted or read_committed; build keyed, transactional and marker batches."""

from __future__ import annotations

import heapq
import os
import struct
from typing import NamedTuple

from broker.storage.log import Log
from client.records import RecordBatchBuilder, iter_records
from client.records.control import ABORT, build_control_batch, parse_control_key

_CONTROL = 0x20
_TRANSACTIONAL = 0x10


class Rec(NamedTuple):
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int


def read_all(log: Log) -> list[Rec]:
    """Every record from the log start to the LEO, checking that batches and records come in
    strictly increasing offset order and that each batch's CRC holds."""
    out: list[Rec] = []
    offset = log.log_start_offset
    last = -1
    while offset < log.log_end_offset:
        data = log.read_bytes(offset, 1 << 20)
        assert data, f"no data at {offset} below the LEO {log.log_end_offset}"
        pos = 0
        nxt = offset
        while len(data) - pos >= 61:
            size = struct.unpack_from(">i", data, pos + 8)[0] + 12
            if pos + size > len(data):
                break
            base, = struct.unpack_from(">q", data, pos)
            last_delta, = struct.unpack_from(">i", data, pos + 23)
            assert base > last or base == last == -1 or base >= offset, (base, last)
            control = struct.unpack_from(">h", data, pos + 21)[0] & _CONTROL
            for r in iter_records(data[pos:pos + size]):
                assert r.offset > last and base <= r.offset <= base + last_delta
                last = r.offset
                if r.offset >= offset and not control:
                    out.append(Rec(r.offset, r.key, r.value, r.headers, r.timestamp))
            last = max(last, base + last_delta)
            nxt = base + last_delta + 1
            pos += size
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
        pos = 0
        nxt = offset
        while len(data) - pos >= 61:
            size = struct.unpack_from(">i", data, pos + 8)[0] + 12
            if pos + size > len(data):
                break
            base, = struct.unpack_from(">q", data, pos)
            attrs = struct.unpack_from(">h", data, pos + 21)[0]
            last_delta, = struct.unpack_from(">i", data, pos + 23)
            pid, = struct.unpack_from(">q", data, pos + 43)
            last_offset = base + last_delta
            batch = data[pos:pos + size]
            pos += size
            nxt = last_offset + 1
            while entries and entries[0][0] <= last_offset:
                aborted_producers.add(heapq.heappop(entries)[1])
            if attrs & _CONTROL:
                recs = list(iter_records(batch))
                if recs and parse_control_key(recs[0].key).type == ABORT:
                    aborted_producers.discard(pid)
                continue
            if attrs & _TRANSACTIONAL and pid in aborted_producers:
                continue
            out.extend(Rec(r.offset, r.key, r.value, r.headers, r.timestamp) for r in iter_records(batch)
                       if r.offset >= offset)
        assert nxt > offset
        offset = nxt
    return out
