"""The cleaner's Throttler (broker/storage/cleaner/throttler.py), ``log.cleaner.io.max.bytes.per.second``,
on a simulated clock: the clock advances only by the work a test says it did and by the sleeps
the throttler asks for, so the asserts are on the sleeps requested, never on wall time."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from broker.storage.cleaner import CleanerConfig, LogCleaner, Throttler

from .helpers import CLEANER_MODE, cleaner_config
from .test_manager import Clock, fill, open_log

MB = 1_000_000


class SimClock:
    """``now`` and ``sleep`` for the Throttler; ``work`` stands for time spent cleaning."""

    def __init__(self) -> None:
        self.t = 0.0
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        assert seconds > 0
        self.sleeps.append(seconds)
        self.t += seconds

    def work(self, seconds: float) -> None:
        self.t += seconds


def throttled(rate: float, clock: SimClock, check_interval_s: float = 0.3) -> Throttler:
    return Throttler(rate, check_interval_s, sleep=clock.sleep, now=clock.now)


def test_a_fast_cleaner_is_held_to_the_rate(tmp_path: Path) -> None:
    """10 KB per ms (10 MB/s) of work against a 1 MB/s limit: after every check the bytes seen
    so far fit the rate exactly, so 20 MB take 20 s, not the 2 s of work."""
    clock = SimClock()
    t = throttled(1 * MB, clock)
    seen = 0
    after_sleeps = []
    for _ in range(2000):
        clock.work(0.001)
        seen += 10_000
        slept = len(clock.sleeps)
        t.maybe_throttle(10_000)
        if len(clock.sleeps) > slept:
            after_sleeps.append((seen, clock.t))
    assert len(after_sleeps) >= 5  # one per check interval of work (0.3 s, 3 MB)
    for seen_then, at in after_sleeps:
        assert seen_then / at == pytest.approx(1 * MB, rel=1e-9)
    assert t.slept_s == pytest.approx(sum(clock.sleeps))
    # the bytes after the last check (under one interval of work: 3 MB) are not yet paid for
    assert 17.0 <= clock.t <= 20.0 + 1e-9


def test_a_cleaner_slower_than_the_rate_never_sleeps() -> None:
    clock = SimClock()
    t = throttled(10 * MB, clock)
    for _ in range(1000):
        clock.work(0.01)
        t.maybe_throttle(50_000)  # 5 MB/s
    assert clock.sleeps == [] and t.slept_s == 0


def test_the_rate_is_checked_once_per_interval() -> None:
    """Within ``check_interval_s`` no sleep, however many bytes; at the interval, one sleep
    long enough for all of them."""
    clock = SimClock()
    t = throttled(1 * MB, clock, check_interval_s=1.0)
    for _ in range(7):
        clock.work(0.125)
        t.maybe_throttle(1 * MB)
    assert clock.sleeps == []
    clock.work(0.125)
    t.maybe_throttle(1 * MB)
    assert clock.sleeps == [pytest.approx(8.0 - 1.0)]  # 8 MB at 1 MB/s, 1 s of it spent working


def test_unlimited_by_default() -> None:
    """Kafka's default, Double.MAX_VALUE: the throttler is off."""
    clock = SimClock()
    t = throttled(CleanerConfig().max_io_bytes_per_second, clock, check_interval_s=0.0)
    for _ in range(100):
        t.maybe_throttle(1 << 30)
    assert clock.sleeps == []


def test_the_cleaner_passes_what_it_reads_and_writes_through_the_throttler(tmp_path: Path) -> None:
    """A real cleaning, the LogCleaner's throttler on the simulated clock, checked at every
    call: the sleeps add up to (bytes read building the map + bytes read cleaning + bytes
    written) / rate."""
    cfg = CleanerConfig.from_properties({"log.cleaner.io.max.bytes.per.second": "5000", "log.cleaner.mode": "thread"})
    assert cfg.max_io_bytes_per_second == 5000.0
    log_clock = Clock()
    log = open_log(tmp_path, log_clock)
    fill(log, 4)
    cleaner = LogCleaner(cfg, str(tmp_path), lambda: {("t", 0): log}, now_ms=log_clock)
    assert cleaner.throttler.desired_rate == 5000.0
    clock = SimClock()
    cleaner.throttler = throttled(cfg.max_io_bytes_per_second, clock, check_interval_s=0.0)
    assert cleaner.clean_once()
    stats = cleaner.last_stats[("t", 0)]
    assert stats.bytes_written > 0 and stats.bytes_read > stats.bytes_written
    moved = stats.map_bytes_read + stats.bytes_read + stats.bytes_written
    assert sum(clock.sleeps) == pytest.approx(moved / 5000.0, rel=1e-9)
    log.close()


@pytest.mark.usefixtures("cleaner_mode")
def test_the_rate_holds_in_real_time_in_both_modes(tmp_path: Path) -> None:
    """Real time, a thread or a worker process (whose throttler gets the rate divided by the
    number of threads): once a check comes (``check_interval_s`` after the throttler began),
    the cleaner has slept until every byte seen since fits the rate. So two cleanings with a
    pause longer than the interval between them end no earlier than the first one's bytes
    take at the rate, counted from before the cleaner existed."""
    total = 40_000.0  # log.cleaner.io.max.bytes.per.second, two threads
    rate = total if CLEANER_MODE[0] == "thread" else total / 2  # shared by the threads / per worker
    log_clock = Clock()
    log = open_log(tmp_path, log_clock)
    fill(log, 4, per_segment=40)
    t0 = time.monotonic()
    cleaner = LogCleaner(cleaner_config(max_io_bytes_per_second=total, num_threads=2), str(tmp_path),
                         lambda: {("t", 0): log}, now_ms=log_clock)
    try:
        assert cleaner.clean_once()
        first = cleaner.last_stats[("t", 0)]
        moved = first.map_bytes_read + first.bytes_read + first.bytes_written
        assert moved / rate > 0.7  # well above the pause below
        time.sleep(0.35)
        fill(log, 4, per_segment=40)
        assert cleaner.clean_once()
        assert time.monotonic() - t0 >= moved / rate
    finally:
        cleaner.shutdown()
    log.close()
