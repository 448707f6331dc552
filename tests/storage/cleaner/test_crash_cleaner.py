"""Crash tests of log compaction: a real process running the cleaner is SIGKILLed at each
step of a cleaning, then the data directory is loaded (recovery after an unclean stop).

Steps (cleaner.py, Log.replace_segments): ``cleaned-writing`` (the ``.cleaned`` segment is
half written), ``swap-renamed`` (renamed ``.swap``, old segments untouched), ``old-renamed``
(in the middle of the swap: the first old segment renamed ``.deleted``), ``swapped`` (the
new segment in place, before the directory fsync returns to the cleaner), ``before-checkpoint``
(everything swapped, ``cleaner-offset-checkpoint`` not yet written). Each crash must recover
to exactly the records of the log before the cleaning (first step) or after it (the others),
never a mix, never a loss; a cleaning run after recovery must then give the post-clean
records. The log is one group of segments (segment.bytes far above the data), so one swap
replaces them all and "pre" and "post" are the only two states.
"""

from __future__ import annotations

import os
import selectors
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from broker.storage.cleaner import CleanerConfig, LogCleaner
from broker.storage.log_manager import LogManager

from .helpers import Rec, keyed_batch, read_all

ROOT = Path(__file__).resolve().parents[3]
TOPIC = "crashc"
TP = (TOPIC, 0)

STEPS = [("cleaned-writing", "pre"), ("swap-renamed", "post"), ("old-renamed", "post"), ("swapped", "post"),
         ("before-checkpoint", "post")]


def make_log(directory: Path) -> None:
    """A compacted log of 6 small segments (explicit rolls): keys repeat, some tombstones,
    batches of every codec; then a clean shutdown."""
    m = LogManager(str(directory))
    m.startup()
    m.create_topic(TOPIC, 1, {"cleanup.policy": "compact", "segment.bytes": str(1 << 20),
                              "min.cleanable.dirty.ratio": "0.01"})
    log = m.get_log(*TP)
    assert log is not None
    codecs = [None, "gzip", "snappy", "lz4", "zstd"]
    n = 0
    for seg in range(6):
        for b in range(8):
            recs = [(b"k%d" % ((n + i) % 11), None if (n + i) % 13 == 0 else b"value-%d" % (n + i) * 20)
                    for i in range(5)]
            log.append(keyed_batch(recs, codec=codecs[(seg + b) % 5], ts=10_000 + n))
            n += 5
        log.roll()
    m.shutdown()


def records_of(directory: Path) -> list[Rec]:
    m = LogManager(str(directory))
    m.startup()
    try:
        log = m.get_log(*TP)
        assert log is not None
        return read_all(log)
    finally:
        m.shutdown()


def clean_in_process(directory: Path) -> None:
    m = LogManager(str(directory))
    m.startup()
    cleaner = LogCleaner(CleanerConfig(), m.log_dir, lambda: m.logs)
    assert cleaner.clean_once()
    m.shutdown()


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Rec], list[Rec]]:
    base = tmp_path_factory.mktemp("crash-cleaner") / "pristine"
    make_log(base)
    pre = records_of(base)
    post_dir = base.parent / "post"
    shutil.copytree(base, post_dir)
    clean_in_process(post_dir)
    post = records_of(post_dir)
    assert len(post) < len(pre)  # the cleaning removes something
    return base, pre, post


def run_until(directory: Path, step: str) -> None:
    """Start the crash helper and SIGKILL it once it reports it reached ``step``."""
    proc = subprocess.Popen([sys.executable, "-m", "tests.storage.cleaner.crash_cleaner", str(directory), step],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    line = b""
    sel = selectors.DefaultSelector()  # not select(): descriptors above 1024 in a long test run
    sel.register(proc.stdout, selectors.EVENT_READ)
    while time.monotonic() < deadline and not line.endswith(b"\n"):
        if sel.select(1.0):
            chunk = os.read(proc.stdout.fileno(), 100)
            if not chunk:
                break
            line += chunk
    sel.close()
    proc.kill()  # SIGKILL
    _, err = proc.communicate(timeout=30)
    assert line == f"AT {step}\n".encode(), (line, err.decode()[-3000:])
    assert proc.returncode == -9


@pytest.mark.parametrize(("step", "expect"), STEPS)
def test_sigkill_at_each_step_recovers_pre_or_post_clean(reference, tmp_path: Path, step: str, expect: str) -> None:
    pristine, pre, post = reference
    directory = tmp_path / "data"
    shutil.copytree(pristine, directory)
    run_until(directory, step)
    leftovers = sorted(n for n in os.listdir(directory / f"{TOPIC}-0") if n.endswith((".cleaned", ".swap", ".deleted")))
    if step == "cleaned-writing":
        assert any(n.endswith(".cleaned") for n in leftovers)
    if step == "swap-renamed":
        assert any(n.endswith(".swap") for n in leftovers)
    if step == "old-renamed":
        assert any(n.endswith(".deleted") for n in leftovers) and any(n.endswith(".swap") for n in leftovers)
    recovered = records_of(directory)  # the load after the SIGKILL recovers the directory
    assert recovered == (pre if expect == "pre" else post)
    names = os.listdir(directory / f"{TOPIC}-0")
    assert not [n for n in names if n.endswith((".cleaned", ".swap"))]
    clean_in_process(directory)  # finishing (or redoing) the cleaning gives the same records
    assert records_of(directory) == post
