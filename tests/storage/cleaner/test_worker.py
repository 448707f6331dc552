"""The cleaner worker process (broker/storage/cleaner/worker.py, ``log.cleaner.mode=process``)
where it differs from a cleaner thread: the worker is killed mid-cleaning, a cleaning is
aborted while the worker writes, shutdown stops the workers, a worker cannot be started, and
a bad mode is refused. (Every other cleaner test runs in both modes.)"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from broker.storage.checkpoint import read_offset_checkpoint
from broker.storage.cleaner import CLEANER_OFFSET_CHECKPOINT, CleanerConfig, LogCleaner
from broker.storage.log import Log

from .helpers import read_all
from .test_crash_cleaner import process_gone
from .test_manager import Clock, fill, open_log


def leftovers(log: Log) -> list[str]:
    return sorted(n for n in os.listdir(log.dir) if n.endswith((".cleaned", ".swap")))


def test_a_worker_killed_mid_cleaning_leaves_the_log_as_it_was(tmp_path: Path) -> None:
    """SIGKILL of the worker while it writes a ``.cleaned`` segment: the cleaning fails, the
    log keeps every record, the half-written files go, the log is marked uncleanable (as any
    unexpected error) and the next cleaning of another log starts a new worker."""
    clock = Clock()
    a = open_log(tmp_path, clock, "a", segment_bytes=2000)
    b = open_log(tmp_path, clock, "b")
    fill(a, 6, keys=3, per_segment=12)
    fill(b, 2)
    logs = {("a", 0): a}
    before = read_all(a)
    killed: list[int] = []

    def pause_at(step: str) -> None:
        if step == "cleaned-writing" and not killed:
            assert any(n.endswith(".log.cleaned") for n in os.listdir(a.dir))
            killed.append(cleaner.worker_pids[0])
            os.kill(killed[0], signal.SIGKILL)

    cleaner = LogCleaner(CleanerConfig(mode="process"), str(tmp_path), lambda: logs, now_ms=clock, pause_at=pause_at)
    try:
        assert cleaner.clean_once()
        assert killed and process_gone(killed[0])
        assert read_all(a) == before
        assert leftovers(a) == []
        assert ("a", 0) in cleaner.uncleanable
        assert not os.path.exists(tmp_path / CLEANER_OFFSET_CHECKPOINT) or \
            ("a", 0) not in read_offset_checkpoint(str(tmp_path / CLEANER_OFFSET_CHECKPOINT))
        logs[("b", 0)] = b
        assert cleaner.clean_once()  # a new worker
        assert cleaner.worker_pids[-1] != killed[0]
        assert [r.key for r in read_all(b)] == [b"k2", b"k0", b"k1"]
    finally:
        cleaner.shutdown()
    a.close()
    b.close()


def test_an_abort_while_the_worker_writes_swaps_nothing(tmp_path: Path) -> None:
    """``abort_cleaning`` (a topic deletion) while the worker is writing: the worker gives up
    and deletes its files, nothing is swapped in, no checkpoint is written, and the worker is
    ready for the next cleaning."""
    clock = Clock()
    log = open_log(tmp_path, clock, segment_bytes=2000)
    fill(log, 6, keys=3, per_segment=12)
    before = read_all(log)
    aborted: list[str] = []

    def pause_at(step: str) -> None:
        if step == "cleaned-writing" and not aborted:
            aborted.append(step)
            cleaner.abort_cleaning(("t", 0))
            time.sleep(0.2)  # the worker goes on meanwhile: the abort reaches it at a check

    cleaner = LogCleaner(CleanerConfig(mode="process"), str(tmp_path), lambda: {("t", 0): log}, now_ms=clock,
                         pause_at=pause_at)
    try:
        assert cleaner.clean_once()
        assert aborted
        assert read_all(log) == before
        assert leftovers(log) == []
        assert cleaner.cleanings == 0 and ("t", 0) not in cleaner.uncleanable
        assert not os.path.exists(tmp_path / CLEANER_OFFSET_CHECKPOINT)
        pid = cleaner.worker_pids[0]
        assert cleaner.clean_once()  # the same worker, cleaning for real now
        assert cleaner.worker_pids == [pid] and cleaner.cleanings == 1
        assert [r.key for r in read_all(log)] == [b"k0", b"k1", b"k2"]
    finally:
        cleaner.shutdown()
    log.close()


def test_shutdown_stops_the_workers_of_the_cleaner_threads(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path, clock)
    fill(log, 3)
    cleaner = LogCleaner(CleanerConfig(mode="process", num_threads=2, backoff_ms=20), str(tmp_path),
                         lambda: {("t", 0): log}, now_ms=clock)
    cleaner.start()
    deadline = time.monotonic() + 30
    while cleaner.cleanings == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert cleaner.cleanings == 1
    pids = cleaner.worker_pids
    assert pids and all(not process_gone(p) for p in pids)
    cleaner.shutdown()
    assert cleaner.alive_threads == 0 and cleaner.worker_pids == []
    assert all(process_gone(p) for p in pids)
    assert [r.key for r in read_all(log)] == [b"k0", b"k1", b"k2"]
    log.close()


def test_an_unknown_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="log.cleaner.mode must be one of process, thread"):
        LogCleaner(CleanerConfig.from_properties({"log.cleaner.mode": "fork"}), str(tmp_path), dict)


def test_a_worker_that_cannot_start_makes_the_cleaning_wait_for_the_next_one(tmp_path: Path, monkeypatch) -> None:
    """No process can be started (here: no interpreter at ``sys.executable``): the cleaning
    gives up, nothing changes, the log is not marked uncleanable; the next one works."""
    clock = Clock()
    log = open_log(tmp_path, clock)
    fill(log, 3)
    before = read_all(log)
    cleaner = LogCleaner(CleanerConfig(mode="process"), str(tmp_path), lambda: {("t", 0): log}, now_ms=clock)
    try:
        monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))
        assert cleaner.clean_once()
        assert read_all(log) == before and cleaner.cleanings == 0 and not cleaner.uncleanable
        monkeypatch.undo()
        assert cleaner.clean_once()
        assert cleaner.cleanings == 1 and [r.key for r in read_all(log)] == [b"k0", b"k1", b"k2"]
    finally:
        cleaner.shutdown()
    log.close()
