"""Stateful property test of Log (broker/storage/log.py) against a simple model.

The model is the list of records ``(offset, key, value)`` still in the log, the batches'
offset ranges, the log start offset and the log end offset. Rules append, read at random
offsets, roll, run size retention, delete records, truncate, and restart the log cleanly or
after a simulated crash; segments are tiny (segment.bytes 600-2000, index.interval.bytes 100,
small index files) so that rolls, index entries and full-index rolls happen within a few steps.

Retention is modelled by applying Kafka's rules (log-start breach, then size; each stops at
the first segment that fails; an empty last segment is never deleted; when everything goes an
empty segment is rolled at the LEO first) to the segment layout observed before the pass.
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from broker.storage.config import LogConfig
from broker.storage.errors import OffsetOutOfRangeError, RecordBatchTooLargeError
from broker.storage.log import Log
from client.records import RecordBatchBuilder, decode_batch

Rec = tuple[int, "bytes | None", "bytes | None"]


class Clock:
    def __init__(self, ms: int = 1_000_000) -> None:
        self.ms = ms

    def __call__(self) -> int:
        return self.ms


def whole_batches(data: bytes) -> list[bytes]:
    out, pos = [], 0
    while len(data) - pos >= 12:
        size = struct.unpack_from(">i", data, pos + 8)[0] + 12
        if pos + size > len(data):
            break
        out.append(data[pos : pos + size])
        pos += size
    return out


def abandon(log: Log) -> None:
    """A crash: close every fd without trimming or writing anything (then ``close`` only
    releases the remaining handles of segments awaiting deletion)."""
    for seg in log.segments.values():
        seg.close_handlers()
    log.close()


def kafka_retention(segs: list[tuple[int, int]], leo: int, log_start: int,
                    retention_bytes: int) -> tuple[list[int], int, int]:
    """Kafka's retention pass over ``[(base, size)]``: (surviving bases, new log start
    offset, number of segments deleted). Time retention is off (retention.ms=-1) and the HW is
    the LEO, so a segment's deletability depends only on the predicate."""
    segs = list(segs)
    deleted = 0

    def walk(pred) -> None:
        nonlocal segs, deleted
        k = 0
        for i, (_, size) in enumerate(segs):
            nxt = segs[i + 1] if i + 1 < len(segs) else None
            if nxt is None and size == 0:
                break
            if not pred(size, nxt):
                break
            k += 1
        deleted += k
        segs = [(leo, 0)] if k == len(segs) and k else segs[k:]

    walk(lambda size, nxt: nxt is not None and nxt[0] <= log_start)
    if retention_bytes >= 0:
        total = sum(size for _, size in segs)
        if total >= retention_bytes:
            diff = [total - retention_bytes]

            def size_breach(size, nxt) -> bool:
                if diff[0] - size >= 0:
                    diff[0] -= size
                    return True
                return False

            walk(size_breach)
    return [b for b, _ in segs], max(log_start, segs[0][0]), deleted


keys = st.one_of(st.none(), st.binary(max_size=8))
values = st.one_of(st.none(), st.binary(max_size=150))


class LogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.mkdtemp(prefix="log-stateful-")
        self.dir = os.path.join(self.tmp, "t-0")
        self.clock = Clock()
        self.log: Log | None = None
        self.records: list[Rec] = []
        self.batches: list[tuple[int, int]] = []  # (base, last) of batches not yet removed
        self.leo = 0
        self.log_start = 0
        self.ts = 1_000

    @initialize(segment_bytes=st.integers(600, 2000),
                segment_index_bytes=st.sampled_from([96, 240, 4096]),
                retention_bytes=st.sampled_from([0, 700, 1500, 4000]))
    def open_log(self, segment_bytes: int, segment_index_bytes: int, retention_bytes: int) -> None:
        self.config = LogConfig(segment_bytes=segment_bytes, segment_index_bytes=segment_index_bytes,
                                index_interval_bytes=100, retention_bytes=retention_bytes, retention_ms=-1)
        self.log = Log.load(self.dir, "t", 0, self.config, now_ms=self.clock)

    def teardown(self) -> None:
        if self.log is not None:
            self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ---------------------------------------------------------------- rules

    @rule(recs=st.lists(st.tuples(keys, values), min_size=1, max_size=5))
    def append(self, recs) -> None:
        self._append(recs)

    @rule(sizes=st.lists(st.tuples(st.integers(1, 5), st.integers(0, 120)), min_size=2, max_size=8))
    def append_several(self, sizes) -> None:
        """Several appends of ``n`` records with ``size``-byte values: rolls happen sooner."""
        for n, size in sizes:
            self._append([(b"k%d" % i, bytes([(self.leo + i) % 256]) * size) for i in range(n)])

    def _append(self, recs) -> None:
        b = RecordBatchBuilder()
        for key, value in recs:
            b.append(value, key=key, timestamp=self.ts)
            self.ts += 1
        batch = b.build()
        log = self.log
        if len(batch) > self.config.segment_bytes:
            with pytest.raises(RecordBatchTooLargeError):
                log.append(batch)
            return
        segments = log.num_segments
        info = log.append(batch)
        if log.num_segments > segments:
            event("append rolled")
        assert (info.first_offset, info.last_offset) == (self.leo, self.leo + len(recs) - 1)
        self.batches.append((self.leo, self.leo + len(recs) - 1))
        self.records += [(self.leo + i, k, v) for i, (k, v) in enumerate(recs)]
        self.leo += len(recs)

    @rule(data=st.data())
    def read(self, data) -> None:
        offset = data.draw(st.integers(self.log_start - 3, self.leo + 3), label="offset")
        max_bytes = data.draw(st.integers(0, 3000), label="max_bytes")
        if offset < self.log_start or offset > self.leo:
            with pytest.raises(OffsetOutOfRangeError):
                self.log.read(offset, max_bytes)
            return
        raw = self.log.read_bytes(offset, max_bytes)
        batches = whole_batches(raw)
        got = [(r.offset, r.key, r.value) for b in batches for r in decode_batch(b) if r.offset >= offset]
        wanted = [r for r in self.records if r[0] >= offset]
        assert got == wanted[: len(got)]
        if offset == self.leo:
            assert raw == b""
        else:
            assert got, "min_one_batch: at least the batch holding the offset"
            first = decode_batch(batches[0])
            assert first[0].offset <= offset <= first[-1].offset  # starts at the batch holding it
            assert len(raw) <= max(max_bytes, len(batches[0]))
        if max_bytes >= self.log.size:
            assert got == wanted

    @rule()
    def roll(self) -> None:
        seg = self.log.roll()
        assert seg.base_offset == self.leo and self.log.active_segment is seg

    @rule()
    def retention(self) -> None:
        log = self.log
        layout = [(b, s.size) for b, s in log.segments.items()]
        want_bases, want_start, want_deleted = kafka_retention(
            layout, self.leo, self.log_start, self.config.retention_bytes)
        assert log.delete_old_segments() == want_deleted
        event(f"retention deleted {min(want_deleted, 2)}+ segments")
        assert [b for b, _ in log.segments.items()] == want_bases
        self._set_log_start(want_start)
        assert log.log_start_offset == self.log_start
        log.delete_expired_files(self.clock.ms + self.config.file_delete_delay_ms)

    @rule(data=st.data())
    def delete_records(self, data) -> None:
        offset = data.draw(st.integers(self.log_start - 2, self.leo + 2), label="offset")
        if offset > self.leo or offset < 0:
            with pytest.raises(OffsetOutOfRangeError):
                self.log.delete_records_before(offset)
            return
        assert self.log.delete_records_before(offset) == max(self.log_start, offset)
        self._set_log_start(max(self.log_start, offset))

    @rule(data=st.data())
    def truncate(self, data) -> None:
        offset = data.draw(st.integers(0, self.leo + 2), label="offset")
        changed = self.log.truncate_to(offset)
        if offset >= self.leo:
            assert not changed
            return
        assert changed
        target = max(offset, self.log_start)
        if target < self.leo:
            base = next(b for b, last in self.batches if last >= target)  # whole batches go
            new_leo = base if base >= self.log_start else self.log_start
            event("truncate restarted the log empty" if base < self.log_start else "truncate")
            self.records = [r for r in self.records if r[0] < new_leo]
            self.batches = [x for x in self.batches if x[1] < new_leo]
            self.leo = new_leo

    @rule()
    def clean_restart(self) -> None:
        old = self.log
        old.close()
        self.log = Log.load(self.dir, "t", 0, self.config, recovery_point=old.recovery_point,
                            log_start_offset=old.log_start_offset, had_clean_shutdown=True,
                            now_ms=self.clock)
        assert self.log.recovery_point == self.leo

    @rule(flush=st.booleans())
    def unclean_restart(self, flush: bool) -> None:
        old = self.log
        if flush:
            assert old.flush() == self.leo
        recovery_point = old.recovery_point
        abandon(old)
        self.log = Log.load(self.dir, "t", 0, self.config, recovery_point=recovery_point,
                            log_start_offset=old.log_start_offset, had_clean_shutdown=False,
                            now_ms=self.clock)
        assert self.log.recovery_point == min(recovery_point, self.leo)

    @rule()
    def flush(self) -> None:
        assert self.log.flush() == self.leo
        assert self.log.recovery_point == self.leo

    def _set_log_start(self, start: int) -> None:
        self.log_start = start
        self.records = [r for r in self.records if r[0] >= start]
        self.batches = [x for x in self.batches if x[1] >= start]

    # ---------------------------------------------------------------- invariants

    @invariant()
    def offsets_match(self) -> None:
        log = self.log
        assert log.log_end_offset == self.leo
        assert log.log_start_offset == self.log_start
        assert 0 <= log.recovery_point <= self.leo
        bases = [b for b, _ in log.segments.items()]
        assert bases == sorted(bases) and bases[0] <= self.log_start <= self.leo
        assert log.active_segment.base_offset <= self.leo

    @invariant()
    def everything_reads_back(self) -> None:
        raw = self.log.read_bytes(self.log_start, 1 << 30)
        got = [(r.offset, r.key, r.value) for b in whole_batches(raw) for r in decode_batch(b)
               if r.offset >= self.log_start]
        assert got == self.records

    @invariant()
    def files_match_segments(self) -> None:
        log = self.log
        logs = sorted(n for n in os.listdir(self.dir) if n.endswith(".log"))
        assert logs == [f"{b:020d}.log" for b, _ in log.segments.items()]
        for _, seg in log.segments.items():
            assert os.path.getsize(seg.log.path) == seg.size
            seg.offset_index.verify(seg.size)
            seg.time_index.verify()


LogMachine.TestCase.settings = settings(
    max_examples=100, stateful_step_count=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_log_state_machine = LogMachine.TestCase
