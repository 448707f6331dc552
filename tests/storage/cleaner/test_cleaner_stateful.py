"""Stateful property test of log compaction (broker/storage/cleaner/) against a model.

The model is the list of records appended (offset, key, value, headers, timestamp), which
of them are still alive, and the transaction each belongs to (none, or a producer's
transaction: open, committed or aborted). Rules produce keyed records and tombstones with
several codecs and headers, outside transactions or in transactions of two producers that
interleave with each other and with plain records; commit or abort them (markers written as
the coordinator does); roll the active segment, move the clock, run the cleaner
(``LogCleaner.clean_once``) and restart the log cleanly or after a simulated crash. After
every step:

- a full read_uncommitted read returns exactly the model's alive records, with their
  original offsets, keys, values, headers and timestamps;
- a read_committed read (small fetches, aborted transactions from the ``.txnindex`` files,
  as Kafka's consumer applies them) returns exactly the alive records below the last stable
  offset that are not in an aborted transaction;
- the log's last stable offset is the first offset of the oldest open transaction (or the
  log end offset), also after restarts: the producer state survives cleanings.

Model of one cleaning that returns end offset E (read back from cleaner-offset-checkpoint) at
time T (Kafka's rules; the offset map is large enough to cover the whole dirty range):
- E is at most the last stable offset: no open transaction is touched;
- a record at offset >= E is untouched;
- below E, every record of an aborted transaction goes, and of the others only the last
  alive record of each key stays (an aborted record never supersedes anything);
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

from .helpers import Rec, end_txn, keyed_batch, read_all, read_committed, txn_batch

TP = ("t", 0)
RETENTION_MS = 1_000
PRODUCERS = (100, 101)


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


def abandon(log: Log) -> None:
    """A crash: drop every descriptor without trimming or writing anything."""
    for seg in log.segments.values():
        seg.close_handlers()
    log._closed = True  # nothing else may run on it


class CleanerMachine(RuleBasedStateMachine):
    MODE = "thread"  # log.cleaner.mode

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
        self.txn_of: dict[int, tuple[int, int]] = {}  # offset -> (producer id, transaction number)
        self.open_txn: dict[int, tuple[int, int]] = {}  # producer id -> (transaction number, first offset)
        self.aborted: set[tuple[int, int]] = set()
        self.txn_count = 0
        self.sequence = dict.fromkeys(PRODUCERS, 0)

    @initialize(segment_bytes=st.integers(300, 1500), index_interval=st.sampled_from([0, 100, 4096]))
    def open_log(self, segment_bytes: int, index_interval: int) -> None:
        self.config = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=index_interval,
                                cleanup_policy="compact", min_cleanable_dirty_ratio=0.0,
                                delete_retention_ms=RETENTION_MS, retention_ms=-1, file_delete_delay_ms=0)
        self.log = Log.load(self.dir, "t", 0, self.config, now_ms=self.clock)
        self._new_cleaner()

    def _new_cleaner(self) -> None:
        if getattr(self, "cleaner", None) is not None:
            self.cleaner.shutdown()
        self.cleaner = LogCleaner(CleanerConfig(dedupe_buffer_size=1 << 22, mode=self.MODE), self.tmp,
                                  lambda: {TP: self.log}, now_ms=self.clock)

    def teardown(self) -> None:
        if getattr(self, "cleaner", None) is not None:
            self.cleaner.shutdown()
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ---------------------------------------------------------------- rules

    @rule(recs=st.lists(st.tuples(st.integers(0, 6), st.one_of(st.none(), st.binary(min_size=0, max_size=60))),
                        min_size=1, max_size=6),
          codec=st.sampled_from([None, "gzip", "snappy", "lz4", "zstd"]),
          with_headers=st.booleans())
    def produce(self, recs: list[tuple[int, bytes | None]], codec: str | None, with_headers: bool,
                producer: int | None = None) -> None:
        headers = (("h", b"x"), ("n", None)) if with_headers else ()
        pairs = [(b"key-%d" % k, v) for k, v in recs]
        if producer is None:
            batch = keyed_batch(pairs, codec=codec, ts=self.ts, headers=headers)
        else:
            batch = txn_batch(pairs, producer, self.sequence[producer], codec=codec, ts=self.ts, headers=headers)
        info = self.log.append(batch)
        if producer is not None:
            self.sequence[producer] += len(pairs)
            if producer not in self.open_txn:
                self.txn_count += 1
                self.open_txn[producer] = (self.txn_count, info.first_offset)
        for i, (k, v) in enumerate(pairs):
            rec = Rec(info.first_offset + i, k, v, headers, self.ts + i)
            self.records.append(rec)
            self.alive.add(rec.offset)
            if producer is not None:
                self.txn_of[rec.offset] = (producer, self.open_txn[producer][0])
        self.ts += len(pairs)

    @rule(producer=st.sampled_from(PRODUCERS),
          recs=st.lists(st.tuples(st.integers(0, 6), st.one_of(st.none(), st.binary(min_size=0, max_size=40))),
                        min_size=1, max_size=4),
          codec=st.sampled_from([None, "gzip", "zstd"]))
    def produce_in_transaction(self, producer: int, recs: list[tuple[int, bytes | None]], codec: str | None) -> None:
        self.produce(recs, codec, False, producer)

    @rule(producer=st.sampled_from(PRODUCERS), commit=st.booleans())
    def end_transaction(self, producer: int, commit: bool) -> None:
        """The coordinator's marker; for a producer with no open transaction here it is a
        marker of a transaction that wrote nothing to this partition (it changes nothing)."""
        end_txn(self.log, producer, commit)
        txn = self.open_txn.pop(producer, None)
        if txn is not None and not commit:
            self.aborted.add((producer, txn[0]))
        event(f"marker: {'commit' if commit else 'abort'}{'' if txn else ' of nothing'}")

    def _is_aborted(self, offset: int) -> bool:
        txn = self.txn_of.get(offset)
        return txn is not None and txn in self.aborted

    @property
    def lso(self) -> int:
        return min((first for _, first in self.open_txn.values()), default=self.log.log_end_offset)

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
        assert end <= self.lso
        self.cleanings += 1
        event(f"removed by a cleaning: {'some' if len(self.alive) < len(self.records) else 'none'}")
        if self.open_txn:
            event("cleaned with a transaction open")
        now = self.clock.ms
        by_offset = {r.offset: r for r in self.records}
        for o in sorted(self.alive):
            if o < end and self._is_aborted(o):
                self.alive.discard(o)
                event("aborted records removed")
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

    @invariant()
    def read_committed_matches_the_model(self) -> None:
        if not hasattr(self, "log"):
            return
        lso = self.lso
        assert self.log.last_stable_offset == lso
        expected = [r for r in self.records if r.offset in self.alive and r.offset < lso and not self._is_aborted(r.offset)]
        assert read_committed(self.log) == expected


class ProcessCleanerMachine(CleanerMachine):
    """The same model with the cleanings in a worker process (``log.cleaner.mode=process``);
    fewer examples: every machine and every restart starts a worker process."""

    MODE = "process"


_EXAMPLES = int(os.environ.get("CLEANER_EXAMPLES", "150"))
CleanerMachine.TestCase.settings = settings(
    max_examples=_EXAMPLES, stateful_step_count=50, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
ProcessCleanerMachine.TestCase.settings = settings(CleanerMachine.TestCase.settings,
                                                   max_examples=max(10, _EXAMPLES // 5))
TestCleanerStateful = CleanerMachine.TestCase
TestCleanerStatefulProcess = ProcessCleanerMachine.TestCase
