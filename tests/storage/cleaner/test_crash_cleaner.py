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

The ``txn`` flavour adds transactions of two producers, committed and aborted, spanning
segments: there "the records" also means what a read_committed reader gets and the
aborted-transaction entries of the ``.txnindex`` files (carried by the ``.txnindex.swap``).
A crash inside the final rename of a swap (between the ``.log`` and the ``.txnindex``) is
reproduced by hand: the loader must finish it.
"""

from __future__ import annotations

import os
import selectors
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import pytest

from broker.storage.cleaner import CleanerConfig, LogCleaner
from broker.storage.log_manager import LogManager
from broker.storage.transaction_index import AbortedTxn

from .helpers import CLEANER_MODE, Rec, end_txn, keyed_batch, read_all, read_committed, txn_batch

ROOT = Path(__file__).resolve().parents[3]
TOPIC = "crashc"
TP = (TOPIC, 0)

STEPS = [("cleaned-writing", "pre"), ("swap-renamed", "post"), ("old-renamed", "post"), ("swapped", "post"),
         ("before-checkpoint", "post")]


def make_log(directory: Path, transactions: bool = False) -> None:
    """A compacted log of 6 small segments (explicit rolls): keys repeat, some tombstones,
    batches of every codec; with ``transactions``, producers 7 and 8 write some of the
    batches in transactions (every third one aborted, some spanning a roll); then a clean
    shutdown."""
    m = LogManager(str(directory))
    m.startup()
    m.create_topic(TOPIC, 1, {"cleanup.policy": "compact", "segment.bytes": str(1 << 20),
                              "min.cleanable.dirty.ratio": "0.01"})
    log = m.get_log(*TP)
    assert log is not None
    codecs = [None, "gzip", "snappy", "lz4", "zstd"]
    n = 0
    seq = {7: 0, 8: 0}
    ended = 0
    for seg in range(6):
        for b in range(8):
            recs = [(b"k%d" % ((n + i) % 11), None if (n + i) % 13 == 0 else b"value-%d" % (n + i) * 20)
                    for i in range(5)]
            pid = 7 + b % 2
            if transactions and b % 4 < 2:
                log.append(txn_batch(recs, pid, seq[pid], codec=codecs[(seg + b) % 5], ts=10_000 + n))
                seq[pid] += len(recs)
                if b % 4 == 1 or seg % 2:
                    end_txn(log, pid, commit=ended % 3 != 2)
                    ended += 1
            else:
                log.append(keyed_batch(recs, codec=codecs[(seg + b) % 5], ts=10_000 + n))
            n += 5
        log.roll()
    if transactions:
        for pid in (7, 8):
            end_txn(log, pid, commit=False)
        log.roll()
    m.shutdown()


class State(NamedTuple):
    records: list[Rec]
    committed: list[Rec]
    aborted: list[AbortedTxn]


def records_of(directory: Path) -> State:
    m = LogManager(str(directory))
    m.startup()
    try:
        log = m.get_log(*TP)
        assert log is not None
        return State(read_all(log), read_committed(log),
                     log.collect_aborted_transactions(log.log_start_offset, log.log_end_offset))
    finally:
        m.shutdown()


def clean_in_process(directory: Path, mode: str = "thread") -> None:
    m = LogManager(str(directory))
    m.startup()
    cleaner = LogCleaner(CleanerConfig(mode=mode), m.log_dir, lambda: m.logs)
    try:
        assert cleaner.clean_once()
    finally:
        cleaner.shutdown()
    m.shutdown()


@pytest.fixture(scope="module", params=["plain", "txn"])
def reference(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, State, State]:
    base = tmp_path_factory.mktemp(f"crash-cleaner-{request.param}") / "pristine"
    make_log(base, transactions=request.param == "txn")
    pre = records_of(base)
    post_dir = base.parent / "post"
    shutil.copytree(base, post_dir)
    clean_in_process(post_dir)
    post = records_of(post_dir)
    assert len(post.records) < len(pre.records)  # the cleaning removes something
    assert post.committed == [r for r in pre.committed if r in post.records]
    if request.param == "txn":
        assert len(pre.aborted) >= 4 and post.aborted == pre.aborted
        assert len(pre.committed) < len(pre.records)  # aborted records before the cleaning, none after
        assert post.committed == post.records
    return base, pre, post


def process_gone(pid: int) -> bool:
    """``pid`` has exited (a zombie counts: it runs no more code)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def run_until(directory: Path, step: str, mode: str = "thread") -> None:
    """Start the crash helper and SIGKILL it once it reports it reached ``step``. In process
    mode its worker process must die with it (at once: it could otherwise write into the
    directory the next broker loads)."""
    proc = subprocess.Popen([sys.executable, "-m", "tests.storage.cleaner.crash_cleaner", str(directory), step, mode],
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
    assert line.startswith(f"AT {step}".encode()) and line.endswith(b"\n"), (line, err.decode()[-3000:])
    assert proc.returncode == -9
    if mode == "process":
        worker = int(line.split(b" worker ")[1])
        deadline = time.monotonic() + 5
        while not process_gone(worker) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert process_gone(worker)


@pytest.mark.usefixtures("cleaner_mode")
@pytest.mark.parametrize(("step", "expect"), STEPS)
def test_sigkill_at_each_step_recovers_pre_or_post_clean(reference, tmp_path: Path, step: str, expect: str) -> None:
    """In both modes; the reference cleaning ran in a thread, so the process mode's result
    must equal it exactly."""
    pristine, pre, post = reference
    directory = tmp_path / "data"
    shutil.copytree(pristine, directory)
    run_until(directory, step, CLEANER_MODE[0])
    leftovers = sorted(n for n in os.listdir(directory / f"{TOPIC}-0") if n.endswith((".cleaned", ".swap", ".deleted")))
    if step == "cleaned-writing":
        assert any(n.endswith(".cleaned") for n in leftovers)
    if step == "swap-renamed":
        assert any(n.endswith(".swap") for n in leftovers)
        assert bool(pre.aborted) == any(n.endswith(".txnindex.swap") for n in leftovers)
    if step == "old-renamed":
        assert any(n.endswith(".deleted") for n in leftovers) and any(n.endswith(".swap") for n in leftovers)
    recovered = records_of(directory)  # the load after the SIGKILL recovers the directory
    assert recovered == (pre if expect == "pre" else post)
    names = os.listdir(directory / f"{TOPIC}-0")
    assert not [n for n in names if n.endswith((".cleaned", ".swap"))]
    clean_in_process(directory, CLEANER_MODE[0])  # finishing (or redoing) the cleaning gives the same records
    assert records_of(directory) == post


def test_crash_inside_the_final_rename_of_a_swap(reference, tmp_path: Path) -> None:
    """Log.replace_segments renames the new segment's files ``.swap`` -> final name, the
    ``.log`` first. A crash right after that rename leaves the final ``.log`` beside
    ``.index.swap``, ``.timeindex.swap`` and ``.txnindex.swap`` (the old files are already
    ``.deleted``): the loader rebuilds the indexes and must finish the ``.txnindex`` rename,
    whose entries cannot be rebuilt from the cleaned segment."""
    _, _, post = reference
    directory = tmp_path / "data"
    shutil.copytree(reference[0].parent / "post", directory)
    part = directory / f"{TOPIC}-0"
    first = sorted(n for n in os.listdir(part) if n.endswith(".log"))[0][:20]
    for suffix in (".index", ".timeindex", ".txnindex"):
        if (part / f"{first}{suffix}").exists():
            os.rename(part / f"{first}{suffix}", part / f"{first}{suffix}.swap")
    (directory / ".kafka_cleanshutdown").unlink(missing_ok=True)
    assert records_of(directory) == post
    names = os.listdir(part)
    assert not [n for n in names if n.endswith(".swap")]
    assert (f"{first}.txnindex" in names) == bool(post.aborted)


def test_a_stale_txnindex_swap_is_removed(reference, tmp_path: Path) -> None:
    """A ``.txnindex.swap`` beside a ``.cleaned`` file at or below its offset belongs to a
    swap the loader found invalid (a crash while it removed the leftovers): it is deleted, not
    taken for an interrupted final rename."""
    pristine, pre, _ = reference
    directory = tmp_path / "data"
    shutil.copytree(pristine, directory)
    part = directory / f"{TOPIC}-0"
    first = sorted(n for n in os.listdir(part) if n.endswith(".log"))[0][:20]
    (part / f"{first}.txnindex.swap").write_bytes(b"\x00" * 34)
    (part / f"{first}.log.cleaned").write_bytes(b"")
    assert records_of(directory) == pre
    assert not [n for n in os.listdir(part) if n.endswith((".swap", ".cleaned"))]
