"""LogCleaner: the cleaner threads (and their worker processes), which log to clean next, and
the cleaner checkpoint (Kafka's LogCleaner, LogCleanerManager and CleanerConfig).

Each of ``log.cleaner.threads`` threads loops: pick the **filthiest** compacted log (largest
cleanable ratio = dirty cleanable bytes / (clean + dirty cleanable bytes)) among those above
their topic's ``min.cleanable.dirty.ratio``, or whose oldest dirty segment is older than
``max.compaction.lag.ms`` (then any cleanable byte is enough); clean it (cleaner.py); record
the end offset in ``cleaner-offset-checkpoint``; when nothing was cleanable, sleep
``log.cleaner.backoff.ms`` (15 s). A log is cleaned by one thread at a time.

``cleaner-offset-checkpoint`` (in the data directory, Kafka's offset checkpoint format, see
checkpoint.py): ``<topic> <partition> <first dirty offset>`` per compacted log. A missing
entry, one below the log start offset or one above the log end offset (a truncated log)
means the log is dirty from its start offset. It is written after the swaps of a cleaning:
a crash before that only makes the next cleaning redo work whose result is the same.

Errors: a cleaning given up (``LogCleaningAbortedError``: the log closed or changed under it)
is retried later; any other error (a worker process that died included) marks the partition
uncleanable until the broker restarts (logged; Kafka's uncleanable partitions) so that one
bad log does not stop the others.

Where a cleaning's work runs, ``log.cleaner.mode`` (ours; Kafka's cleaner threads have no GIL
to share):

- ``process`` (the default): each cleaner thread hands the cleaning (``CleaningInput``: the
  segment files, the cleanable range, the producers' last offsets, the aborted transactions)
  to a worker process of its own (worker.py), started at its first cleaning, at a lower CPU
  priority, and waits on a socket; it keeps choosing logs, checking for aborts and running
  the swaps. None of the cleaning's Python work runs in the broker's process, so the event
  loop never waits for the GIL because of it.
- ``thread``: the cleaner thread does the work itself, holding the GIL while it runs Python
  code; it gives the GIL away every ``GIL_SLICE_S`` of work (checked between batches), so the
  event loop waits for it at most about one slice. No extra process; the loop's waits add up.

``scripts/bench_cleaner.py`` measures the two side by side (docs/pages/compaction.md). In
both modes the cleaning only reads inactive segments and writes ``.cleaned`` files; ``run_swap``
runs each ``Log.replace_segments`` where the log's owner wants it (the broker: on its event
loop, where reads and appends run, so they never see the segment map half-changed).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from bisect import bisect_right
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from client.clock import now_ms

from ..checkpoint import read_offset_checkpoint, write_offset_checkpoint
from ..errors import LogCleaningAbortedError
from ..log import Log
from ..segment import LogSegment
from .cleaner import Cleaner, CleanerStats, LogToClean, run_inline, swap_into, take_input
from .offset_map import OffsetMap
from .throttler import Throttler
from .worker import CleanerWorker, WorkerParams

__all__ = ["CleanerConfig", "LogCleaner", "CLEANER_OFFSET_CHECKPOINT", "cleanable_offsets", "CLEANER_MODES"]

logger = logging.getLogger(__name__)

CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
#: A cleaner thread gives the GIL away after this much work (checked between batches), for
#: GIL_PAUSE_S. Without it the event loop, once it wakes up wanting the GIL, waits for
#: CPython's switch interval (5 ms) whenever a cleaner thread is busy in Python code; with it,
#: at most about one slice. The cost is the pauses: a few percent of the cleaner's throughput.
GIL_SLICE_S = 0.0005
GIL_PAUSE_S = 0.00002
TopicPartition = tuple[str, int]
#: ``log.cleaner.mode``: where a cleaning's work runs (module docstring)
CLEANER_MODES = ("process", "thread")


@dataclass(frozen=True)
class CleanerConfig:
    """The broker's ``log.cleaner.*`` settings, with Kafka's defaults."""

    enable_cleaner: bool = True                        # log.cleaner.enable
    num_threads: int = 1                               # log.cleaner.threads
    dedupe_buffer_size: int = 128 * 1024 * 1024        # log.cleaner.dedupe.buffer.size (all threads)
    dedupe_buffer_load_factor: float = 0.9             # log.cleaner.io.buffer.load.factor
    io_buffer_size: int = 512 * 1024                   # log.cleaner.io.buffer.size
    max_io_bytes_per_second: float = 1.7976931348623157e308  # log.cleaner.io.max.bytes.per.second
    backoff_ms: int = 15_000                           # log.cleaner.backoff.ms
    mode: str = "process"                              # log.cleaner.mode (ours): process | thread

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> CleanerConfig:
        d = cls()
        return cls(
            enable_cleaner=props.get("log.cleaner.enable", "true").strip().lower() == "true",
            num_threads=int(props.get("log.cleaner.threads", d.num_threads)),
            dedupe_buffer_size=int(props.get("log.cleaner.dedupe.buffer.size", d.dedupe_buffer_size)),
            dedupe_buffer_load_factor=float(props.get("log.cleaner.io.buffer.load.factor",
                                                      d.dedupe_buffer_load_factor)),
            io_buffer_size=int(props.get("log.cleaner.io.buffer.size", d.io_buffer_size)),
            max_io_bytes_per_second=float(props.get("log.cleaner.io.max.bytes.per.second",
                                                    d.max_io_bytes_per_second)),
            backoff_ms=int(props.get("log.cleaner.backoff.ms", d.backoff_ms)),
            mode=props.get("log.cleaner.mode", d.mode).strip().lower(),
        )

    @property
    def map_memory(self) -> int:
        """The offset map budget of each thread (or worker process)."""
        return min(self.dedupe_buffer_size // max(1, self.num_threads), 2**31 - 1)


def _first_batch_timestamp(seg: LogSegment) -> int:
    for _, h in seg.log.batch_headers(0):
        return h.max_timestamp
    return -1


def cleanable_offsets(log: Log, checkpoint: int | None, now_ms: int) -> tuple[int, int, bool]:
    """``(first dirty offset, first uncleanable offset, checkpoint was invalid)`` of ``log``
    (Kafka's cleanableOffsets): never past the active segment, nor past the last stable
    offset (an open transaction is never rewritten: its records may still be aborted), nor
    past the first dirty segment younger than ``min.compaction.lag.ms``. The caller rounds
    it down to the base of the segment holding it."""
    start, leo = log.log_start_offset, log.log_end_offset
    first_dirty = start if checkpoint is None else checkpoint
    invalid = False
    if first_dirty < start or first_dirty > leo:
        if first_dirty > leo or "delete" not in log.config.cleanup_policy:
            logger.warning("%s: resetting the first dirty offset %d to the log start offset %d", log.dir,
                           first_dirty, start)
        first_dirty, invalid = start, True
    segments = log.segment_list(first_dirty)
    uncleanable = min(segments[-1].base_offset, log.last_stable_offset_locked())  # the active segment, the LSO
    lag = log.config.min_compaction_lag_ms
    if lag > 0:
        for seg in segments[:-1]:
            if seg.largest_timestamp() > now_ms - lag:
                uncleanable = min(uncleanable, seg.base_offset)
                break
    return first_dirty, max(first_dirty, uncleanable), invalid


def _max_compaction_delay(log: Log, segments: list[LogSegment], now_ms: int) -> int:
    """How long past ``max.compaction.lag.ms`` the oldest dirty inactive segment is (0: not)."""
    lag = log.config.max_compaction_lag_ms
    stamps = [t for t in (_first_batch_timestamp(s) for s in segments) if t > 0]
    if not stamps or lag >= now_ms:
        return 0
    clean_until = now_ms - lag
    earliest = min(stamps)
    return clean_until - earliest if earliest < clean_until else 0


class LogCleaner:
    """The cleaner of one data directory: ``start()`` its threads, ``shutdown()`` them (and
    their worker processes); ``clean_once()`` runs one pick-and-clean from the calling thread
    (tests, tools; in process mode with a worker process of that thread's own)."""

    def __init__(self, config: CleanerConfig, log_dir: str, logs: Callable[[], Mapping[TopicPartition, Log]], *,
                 now_ms: Callable[[], int] = now_ms,
                 run_swap: Callable[[Callable[[], Any]], Any] = run_inline,
                 pause_at: Callable[[str], None] | None = None,
                 gil_slice_s: float = GIL_SLICE_S) -> None:
        if config.mode not in CLEANER_MODES:
            raise ValueError(f"log.cleaner.mode must be one of {', '.join(CLEANER_MODES)}, not {config.mode!r}")
        self.config = config
        self.log_dir = log_dir
        self._logs = logs
        self._now_ms = now_ms
        self._run_swap = run_swap
        self.pause_at = pause_at
        self.gil_slice_s = gil_slice_s
        self._worked_since = threading.local()
        self._local = threading.local()  # process mode: the calling thread's CleanerWorker
        self._workers: list[CleanerWorker] = []
        self._lock = threading.Lock()
        self._in_progress: set[TopicPartition] = set()
        self._aborted: set[TopicPartition] = set()
        self.uncleanable: set[TopicPartition] = set()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._threads: list[threading.Thread] = []
        self.throttler = Throttler(config.max_io_bytes_per_second)
        self.checkpoint_path = os.path.join(log_dir, CLEANER_OFFSET_CHECKPOINT)
        #: the last cleaning's statistics per log (tests, metrics)
        self.last_stats: dict[TopicPartition, Any] = {}
        self.cleanings = 0
        self.max_dirty_ratio = 0.0

    # ------------------------------------------------------------------ checkpoints

    def checkpoints(self) -> dict[TopicPartition, int]:
        return read_offset_checkpoint(self.checkpoint_path)

    def _update_checkpoint(self, tp: TopicPartition | None, offset: int | None) -> None:
        with self._lock:
            live = self._logs()
            entries = {k: v for k, v in self.checkpoints().items() if k in live}
            if tp is not None and offset is not None:
                entries[tp] = offset
            write_offset_checkpoint(self.checkpoint_path, entries)

    # ------------------------------------------------------------------ choosing

    def grab_filthiest_log(self) -> LogToClean | None:
        """The dirtiest cleanable compacted log, marked in progress; None when none qualifies."""
        now = self._now_ms()
        last_clean = self.checkpoints()
        candidates: list[LogToClean] = []
        for tp, log in list(self._logs().items()):
            if not log.config.compact or tp in self.uncleanable:
                continue
            with self._lock:
                if tp in self._in_progress:
                    continue
            try:
                first_dirty, uncleanable, invalid = cleanable_offsets(log, last_clean.get(tp), now)
                if invalid:
                    self._update_checkpoint(tp, first_dirty)
                segments = log.segment_list()
                bases = [seg.base_offset for seg in segments]
                # Kafka's calculateCleanableBytes: the uncleanable offset rounded down to the start
                # of its segment; clean bytes: the segments starting below the first dirty
                # offset; cleanable bytes: the segments overlapping [first dirty, uncleanable).
                uncleanable = bases[max(0, bisect_right(bases, uncleanable) - 1)]
                clean_bytes = sum(seg.size for seg in segments if seg.base_offset < first_dirty)
                ends = bases[1:] + [log.log_end_offset]
                low = min(first_dirty, uncleanable)
                cleanable = sum(seg.size for seg, nxt in zip(segments, ends, strict=True)
                                if seg.base_offset < uncleanable and nxt > low)
                dirty_from = bases[max(0, bisect_right(bases, first_dirty) - 1)]
                delay = _max_compaction_delay(log, [seg for seg in segments[:-1] if seg.base_offset >= dirty_from], now)
            except Exception as e:  # noqa: BLE001 - one bad log must not stop the others
                logger.warning("cannot compute the cleanable range of %s-%d: %s", tp[0], tp[1], e)
                continue
            ltc = LogToClean(tp, log, first_dirty, uncleanable, clean_bytes, cleanable, delay > 0)
            if ltc.total_bytes > 0:
                candidates.append(ltc)
        self.max_dirty_ratio = max((c.cleanable_ratio for c in candidates), default=0.0)
        cleanable_logs = [c for c in candidates if (c.need_compaction_now and c.cleanable_bytes > 0)
                          or c.cleanable_ratio > c.log.config.min_cleanable_dirty_ratio]
        if not cleanable_logs:
            return None
        chosen = max(cleanable_logs, key=lambda c: c.cleanable_ratio)
        with self._lock:
            if chosen.topic_partition in self._in_progress:
                return None
            self._in_progress.add(chosen.topic_partition)
            self._aborted.discard(chosen.topic_partition)
        return chosen

    # ------------------------------------------------------------------ cleaning

    def abort_cleaning(self, tp: TopicPartition) -> None:
        """Make a cleaning of ``tp`` in progress give up at its next check (topic deletion)."""
        with self._lock:
            if tp in self._in_progress:
                self._aborted.add(tp)

    def _check_aborted(self, tp: TopicPartition, log: Log) -> None:
        if self._stop.is_set() or tp in self._aborted or log.closed:
            raise LogCleaningAbortedError(f"cleaning of {tp[0]}-{tp[1]} aborted")

    def _check_done(self, tp: TopicPartition, log: Log) -> None:
        """Thread mode, between batches: stop when asked, and give the GIL away every slice."""
        self._check_aborted(tp, log)
        if self.gil_slice_s:
            now = time.perf_counter()
            since = getattr(self._worked_since, "t", None)
            if since is None:
                self._worked_since.t = now
            elif now - since >= self.gil_slice_s:
                time.sleep(GIL_PAUSE_S)  # releases the GIL: a waiting event loop thread takes it now
                self._worked_since.t = time.perf_counter()

    def _worker(self) -> CleanerWorker:
        worker: CleanerWorker | None = getattr(self._local, "worker", None)
        if worker is None:
            worker = self._local.worker = CleanerWorker()
        with self._lock:
            if worker not in self._workers:  # new, or closed by shutdown() and used again
                self._workers.append(worker)
        return worker

    def _clean(self, ltc: LogToClean, offset_map: OffsetMap | None) -> tuple[int, CleanerStats]:
        """One cleaning of ``ltc``, in this thread or in this thread's worker process."""
        tp, log = ltc.topic_partition, ltc.log
        inp, live = take_input(ltc, self._now_ms())
        swap = swap_into(log, live, self._run_swap, self.pause_at)
        cfg = self.config
        if cfg.mode == "process":
            memory, load = ((offset_map.memory, offset_map.load_factor) if offset_map is not None
                            else (cfg.map_memory, cfg.dedupe_buffer_load_factor))
            params = WorkerParams(memory, load, cfg.io_buffer_size,
                                  cfg.max_io_bytes_per_second / max(1, cfg.num_threads), self.pause_at is not None)
            return self._worker().clean(inp, params, check_done=lambda: self._check_aborted(tp, log), swap=swap,
                                        pause_at=self.pause_at)
        if offset_map is None:
            offset_map = OffsetMap(cfg.map_memory, cfg.dedupe_buffer_load_factor)
        cleaner = Cleaner(offset_map, self.throttler, check_done=lambda: self._check_done(tp, log),
                          io_buffer_size=cfg.io_buffer_size, pause_at=self.pause_at)
        return cleaner.clean(inp, swap)

    def clean_once(self, offset_map: OffsetMap | None = None) -> bool:
        """Pick the filthiest log and clean it; True if one was cleaned."""
        ltc = self.grab_filthiest_log()
        if ltc is None:
            return False
        tp = ltc.topic_partition
        end: int | None = None
        try:
            end, stats = self._clean(ltc, offset_map)
            self.last_stats[tp] = stats
            self.cleanings += 1
            logger.info("cleaned log %s-%d (dirty section [%d, %d]): %s", tp[0], tp[1], ltc.first_dirty_offset,
                        end, stats.summary())
            if self.pause_at is not None:
                self.pause_at("before-checkpoint")
        except LogCleaningAbortedError as e:
            logger.info("%s", e)
            end = None
        except Exception:
            logger.exception("unexpected error cleaning %s-%d: marking it uncleanable until restart", tp[0], tp[1])
            self.uncleanable.add(tp)
            end = None
        finally:
            with self._lock:
                self._in_progress.discard(tp)
                aborted = tp in self._aborted
                self._aborted.discard(tp)
            if end is not None and not aborted:
                self._update_checkpoint(tp, end)
        return True

    # ------------------------------------------------------------------ threads

    def start(self) -> None:
        if not self.config.enable_cleaner or self._threads:
            return
        self._stop.clear()
        for i in range(self.config.num_threads):
            t = threading.Thread(target=self._run, args=(i,), name=f"kafka-log-cleaner-thread-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        logger.info("started %d log cleaner thread(s)", len(self._threads))

    def _run(self, index: int) -> None:
        offset_map = OffsetMap(self.config.map_memory, self.config.dedupe_buffer_load_factor)
        while not self._stop.is_set():
            try:
                cleaned = self.clean_once(offset_map)
            except Exception:  # the thread must survive
                logger.exception("log cleaner thread %d failed", index)
                cleaned = False
            offset_map.clear()
            if not cleaned:
                self._wake.wait(self.config.backoff_ms / 1000)
                self._wake.clear()

    def wake(self) -> None:
        """Look for work now instead of at the end of the backoff (tests, benchmarks)."""
        self._wake.set()

    def shutdown(self, timeout_s: float = 30.0) -> None:
        """Stop the threads (a cleaning in progress gives up at its next check) and wait."""
        self._stop.set()
        self._wake.set()
        for t in self._threads:
            t.join(timeout_s)
        self._threads = []
        with self._lock:
            workers, self._workers = self._workers, []
        for w in workers:
            w.close()

    @property
    def worker_pids(self) -> list[int]:
        """Process mode: the pids of the running worker processes (tests, metrics)."""
        with self._lock:
            return [pid for pid in (w.pid for w in self._workers) if pid is not None]

    @property
    def alive_threads(self) -> int:
        return sum(t.is_alive() for t in self._threads)

