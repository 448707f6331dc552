"""Stateful property test of log compaction (broker/storage/cleaner/) against a model.

The model is the list of records appended (offset, key, value, headers, timestamp) and which
of them are still alive. Rules produce keyed records and tombstones with several codecs and
headers, roll the active segment, move the clock, run the cleaner (``LogCleaner.clean_once``)
and restart the log cleanly or after a simulated crash. After every step a full read must
return exactly the model's alive records, with their original offsets, keys, values, headers
and timestamps.

Model of one cleaning that returns end offset E (read back from cleaner-offset-checkpoint) at
time T (Kafka's rules; the offset map is large enough to cover the whole dirty range):
- a record at offset >= E is untouched;
- below E, only the last alive record of each key stays;
- a tombstone that stays is given a delete horizon the first time a cleaning covers it
  (T + delete.retention.ms) and goes at the first later cleaning at or after that horizon.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from broker.storage.cleaner import CleanerConfig, LogCleaner
from broker.storage.config import LogConfig
from broker.storage.log import Log

from .helpers import Rec, keyed_batch, read_all

TP = ("t", 0)
RETENTION_MS = 1_000


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


def abandon(log: Log) -> None:
    """A crash: drop every descriptor without trimming or writing anything."""
    for seg in log.segments.values():
        seg.close_handlers()
    log._closed = True  # noqa: SLF001 - nothing else may run on it


class CleanerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.mkdtemp(prefix="cleaner-stateful-")
        self.dir = os.path.join(self.tmp, "t-0")
        self.clock = Clock()
        self.records: list[Rec] = []
        self.alive: set[int] = set()
        self.horizon: dict[int, int] = {}  # tombstone offset -> delete horizon
        self.ts = 5_000
        self.cleanings = 0

    @initialize(segment_bytes=st.integers(300, 1500), index_interval=st.sampled_from([0, 100, 4096]))
    def open_log(self, segment_bytes: int, index_interval: int) -> None:
        self.config = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=index_interval,
                                cleanup_policy="compact", min_cleanable_dirty_ratio=0.0,
                                delete_retention_ms=RETENTION_MS, retention_ms=-1, file_delete_delay_ms=0)
        self.log = Log.load(self.dir, "t", 0, self.config, now_ms=self.clock)
        self._new_cleaner()

    def _new_cleaner(self) -> None:
        self.cleaner = LogCleaner(CleanerConfig(dedupe_buffer_size=1 << 22), self.tmp, lambda: {TP: self.log},
                                  now_ms=self.clock)

    def teardown(self) -> None:
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ---------------------------------------------------------------- rules

    @rule(recs=st.lists(st.tuples(st.integers(0, 6), st.one_of(st.none(), st.binary(min_size=0, max_size=60))),
                        min_size=1, max_size=6),
          codec=st.sampled_from([None, "gzip", "snappy", "lz4", "zstd"]),
          with_headers=st.booleans())
    def produce(self, recs: list[tuple[int, bytes | None]], codec: str | None, with_headers: bool) -> None:
        headers = (("h", b"x"), ("n", None)) if with_headers else ()
        pairs = [(b"key-%d" % k, v) for k, v in recs]
        info = self.log.append(keyed_batch(pairs, codec=codec, ts=self.ts, headers=headers))
        for i, (k, v) in enumerate(pairs):
            rec = Rec(info.first_offset + i, k, v, headers, self.ts + i)
            self.records.append(rec)
            self.alive.add(rec.offset)
        self.ts += len(pairs)

    @rule(n=st.integers(2, 12), codec=st.sampled_from([None, "lz4", "zstd"]))
    def produce_many(self, n: int, codec: str | None) -> None:
        """Several batches over few keys: segments roll and fill with superseded records."""
        for i in range(n):
            self.produce([((self.ts + i) % 5, b"v" * (i % 40))], codec if i % 2 else None, i % 3 == 0)

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @rule(ms=st.sampled_from([10, 400, 1_500]))
    def tick(self, ms: int) -> None:
        self.clock.ms += ms
        self.log.delete_expired_files()

    @rule()
    def clean(self) -> None:
        before = self.cleaner.checkpoints().get(TP)
        cleaned = self.cleaner.clean_once()
        if not cleaned:
            return
        end = self.cleaner.checkpoints()[TP]
        assert before is None or end >= before
        self.cleanings += 1
        event(f"removed by a cleaning: {'some' if len(self.alive) < len(self.records) else 'none'}")
        now = self.clock.ms
        by_offset = {r.offset: r for r in self.records}
        last_of_key: dict[bytes | None, int] = {}
        for o in sorted(self.alive):
            if o < end:
                last_of_key[by_offset[o].key] = o
        for o in sorted(self.alive):
            if o >= end:
                continue
            r = by_offset[o]
            if last_of_key[r.key] != o:
                self.alive.discard(o)
            elif r.value is None:
                if o not in self.horizon:
                    self.horizon[o] = now + RETENTION_MS
                elif now >= self.horizon[o]:
                    self.alive.discard(o)
                    event("a tombstone expired")

    @rule(clean_shutdown=st.booleans())
    def restart(self, clean_shutdown: bool) -> None:
        leo = self.log.log_end_offset
        if clean_shutdown:
            self.log.close()
        else:
            abandon(self.log)
        self.log = Log.load(self.dir, "t", 0, self.config, now_ms=self.clock, had_clean_shutdown=clean_shutdown,
                            recovery_point=leo if clean_shutdown else 0)
        assert self.log.log_end_offset == leo
        self._new_cleaner()

    # ---------------------------------------------------------------- checks

    @invariant()
    def full_read_matches_the_model(self) -> None:
        if not hasattr(self, "log"):
            return
        expected = [r for r in self.records if r.offset in self.alive]
        assert read_all(self.log) == expected


CleanerMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=50, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
TestCleanerStateful = CleanerMachine.TestCase
