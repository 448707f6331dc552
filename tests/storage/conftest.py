"""Helpers shared by the storage tests: batches with assigned offsets, raw index parsing,
and the Kafka indexing rule computed independently of the code under test."""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Sequence
from typing import NamedTuple

import pytest

from broker.storage.config import LogConfig
from broker.storage.log import Log
from broker.storage.segment import LogSegment
from client.records import RecordBatchBuilder, set_base_offset


def make_batch(
    n: int,
    base_offset: int = 0,
    *,
    timestamps: Sequence[int] | None = None,
    base_timestamp: int = 1_000_000,
    value_size: int = 16,
    leader_epoch: int = -1,
) -> bytearray:
    """One RecordBatch v2 with ``n`` records (offset deltas 0..n-1), baseOffset assigned as
    the broker would: built with baseOffset 0, then bytes 0-7 patched by ``set_base_offset``."""
    if timestamps is None:
        timestamps = [base_timestamp + i for i in range(n)]
    assert len(timestamps) == n
    b = RecordBatchBuilder(partition_leader_epoch=leader_epoch)
    for i, ts in enumerate(timestamps):
        b.append(bytes([i % 251]) * value_size, key=b"k%d" % i, timestamp=ts)
    batch = b.build()
    set_base_offset(batch, base_offset)
    return batch


class BatchInfo(NamedTuple):
    position: int
    size: int
    base_offset: int
    last_offset: int
    max_timestamp: int


def describe(batches: Sequence[bytes | bytearray]) -> list[BatchInfo]:
    """Position, size and offsets of each batch if written back to back from position 0,
    parsed with struct from the raw bytes (not with the code under test)."""
    out = []
    pos = 0
    for b in batches:
        base, length = struct.unpack_from(">qi", b, 0)
        (delta,) = struct.unpack_from(">i", b, 23)
        (max_ts,) = struct.unpack_from(">q", b, 35)
        assert length + 12 == len(b)
        out.append(BatchInfo(pos, len(b), base, base + delta, max_ts))
        pos += len(b)
    return out


def consecutive_batches(
    counts: Sequence[int], start_offset: int = 0, *, gap: int = 0, value_size: int = 16,
    timestamps: Sequence[int] | None = None,
) -> list[bytearray]:
    """Batches with ``counts[i]`` records each and consecutive offsets (``gap`` offsets skipped
    between batches). ``timestamps[i]``, when given, is the base timestamp of batch i."""
    out = []
    off = start_offset
    for i, n in enumerate(counts):
        ts0 = 1_000_000 + 1000 * i if timestamps is None else timestamps[i]
        out.append(make_batch(n, off, base_timestamp=ts0, value_size=value_size))
        off += n + gap
    return out


def expected_index_entries(infos: Sequence[BatchInfo], interval: int) -> list[tuple[int, int]]:
    """Kafka's per-batch indexing rule: before writing a batch, if more than ``interval`` bytes
    were written since the last entry, add (batch last offset, batch position)."""
    entries = []
    since = 0
    for b in infos:
        if since > interval:
            entries.append((b.last_offset, b.position))
            since = 0
        since += b.size
    return entries


def expected_time_index_entries(
    infos: Sequence[BatchInfo], interval: int, *, final: bool = True, closed_after: Sequence[int] = ()
) -> list[tuple[int, int]]:
    """The time index the same rule writes: at each offset-index point, the running max
    (timestamp, last offset of the batch carrying it) if its timestamp grew; with ``final``,
    the entry written at roll/close; ``closed_after`` lists batch counts after which the
    segment was closed or recovered (which also writes that entry) and then continued."""
    entries: list[tuple[int, int]] = []
    since = 0
    max_ts = (-1, -1)

    def maybe_add() -> None:
        if max_ts[0] > (entries[-1][0] if entries else -1):
            entries.append(max_ts)

    for n, b in enumerate(infos):
        if b.max_timestamp > max_ts[0]:
            max_ts = (b.max_timestamp, b.last_offset)
        if since > interval:
            maybe_add()
            since = 0
        since += b.size
        if n + 1 in closed_after:
            maybe_add()
    if final:
        maybe_add()
    return entries


def read_offset_index_file(path: str, base_offset: int) -> list[tuple[int, int]]:
    """Entries of a trimmed ``.index`` file: (absolute offset, position), parsed with struct."""
    data = open(path, "rb").read()
    assert len(data) % 8 == 0
    return [(base_offset + rel, pos) for rel, pos in struct.iter_unpack(">ii", data)]


def read_time_index_file(path: str, base_offset: int) -> list[tuple[int, int]]:
    """Entries of a trimmed ``.timeindex`` file: (timestamp, absolute offset)."""
    data = open(path, "rb").read()
    assert len(data) % 12 == 0
    return [(ts, base_offset + rel) for ts, rel in struct.iter_unpack(">qi", data)]


def file_digest(path: str) -> tuple[int, str]:
    """(size, sha256) of a file."""
    with open(path, "rb") as f:
        data = f.read()
    return os.path.getsize(path), hashlib.sha256(data).hexdigest()


def open_segment(directory, base_offset: int = 0, **kwargs) -> LogSegment:
    kwargs.setdefault("index_interval_bytes", 256)
    kwargs.setdefault("max_index_size", 4096)
    return LogSegment.open(str(directory), base_offset, **kwargs)


@pytest.fixture
def segment_factory(tmp_path):
    """Open segments in tmp_path; every segment opened is closed at teardown."""
    opened: list[LogSegment] = []

    def factory(base_offset: int = 0, directory=None, **kwargs) -> LogSegment:
        seg = open_segment(directory or tmp_path, base_offset, **kwargs)
        opened.append(seg)
        return seg

    yield factory
    for seg in opened:
        if not seg.log.closed:
            seg.close_handlers()


class Clock:
    """An injectable ``now_ms``: a number of milliseconds the test moves by hand."""

    def __init__(self, ms: int = 1_000_000) -> None:
        self.ms = ms

    def __call__(self) -> int:
        return self.ms


def abandon(log: Log) -> None:
    """Simulate a crash: close every fd without trimming or writing anything. What was
    written is in the page cache, so a Log loaded afterwards sees it (as after a process
    crash, not a power loss). A later ``close()`` of this object is a no-op."""
    for seg in log.segments.values():
        seg.close_handlers()
    log._closed = True  # close() writes nothing (no trim, no producer snapshot)


def reload(log: Log, *, clean: bool, clock: Clock | None = None, **overrides) -> Log:
    """Load the log's directory again after a clean close or a simulated crash."""
    if clean:
        log.close()
    else:
        abandon(log)
    kwargs = dict(recovery_point=log.recovery_point, log_start_offset=log.log_start_offset)
    kwargs.update(overrides)
    return Log.load(log.dir, log.topic, log.partition, log.config, had_clean_shutdown=clean,
                    now_ms=clock or Clock(), **kwargs)


@pytest.fixture
def make_log(tmp_path):
    """``make_log(clock=None, name="t-0", **config)`` loads a Log in tmp_path/name; every log
    made is closed at teardown."""
    made: list[Log] = []

    def factory(clock: Clock | None = None, name: str = "t-0", *, recovery_point: int = 0,
                log_start_offset: int = 0, had_clean_shutdown: bool = True, **cfg) -> Log:
        log = Log.load(str(tmp_path / name), "t", 0, LogConfig(**cfg), recovery_point=recovery_point,
                       log_start_offset=log_start_offset, had_clean_shutdown=had_clean_shutdown,
                       now_ms=clock or Clock())
        made.append(log)
        return log

    yield factory
    for log in made:
        log.close()
