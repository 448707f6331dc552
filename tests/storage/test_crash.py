"""Crash tests: real processes killed with SIGKILL, then damaged files, then recovery.

What is checked (kafka_storage.md §5 and §7 checks 24-29; the durability contract of
broker/storage/log.py and log_loader.py):

- Kill cycles (``test_kill_restart_cycles``): ``crash_writer.py`` appends self-verifying
  records and acks each append (after ``Log.flush()`` in mode flush); it is SIGKILLed at a
  random moment. Every acked offset must be below the LEO after recovery, every batch from the
  log start to the LEO must decode with its CRC and hold intact records whose sequence numbers
  are contiguous, and a restarted writer must continue at exactly the recovered LEO. Restarts
  alternate between the writer itself (unclean recovery in the child, more data over more
  segments) and an in-process LogManager that verifies everything, shuts down cleanly and runs
  ``minibroker dump-log --index-sanity-check`` on every file.
- File damage (``test_damaged_*``, in-process): torn, corrupt and zero-padded tails, missing
  and garbled indexes, garbage checkpoints. Recovery must keep the longest valid prefix, log
  what it truncated, rebuild the indexes, and keep offsets contiguous for the next append.

The segment files are parsed here with ``struct`` and the ``crc32c`` package, independently of
the code under test.
"""

from __future__ import annotations

import logging
import os
import random
import re
import select
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import crc32c
import pytest

from broker.storage.checkpoint import read_offset_checkpoint
from broker.storage.log import Log
from broker.storage.log_manager import LogManager
from client.records import iter_records
from client.records.batch import CorruptRecordError

from .conftest import BatchInfo, expected_index_entries, read_offset_index_file, read_time_index_file
from .crash_writer import SEQ_BASE, TOPIC, check_record, make_batch, next_seq_of, topic_configs

pytestmark = pytest.mark.slow  # SIGKILL loops of a writer process

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
READ_BYTES = 1 << 20
_TRUNCATED = re.compile(r"Truncated (\d+) invalid bytes at the end of segment (\S+)")

#: Figures printed at the end of each test (run with ``-s`` to see them).
STATS: Counter[str] = Counter()


def report(label: str, before: Counter[str]) -> None:
    """Print what this test added to STATS."""
    delta = {k: v - before.get(k, 0) for k, v in sorted(STATS.items()) if v != before.get(k, 0)}
    print(f"\n[{label}] " + ", ".join(f"{k}: {v}" for k, v in delta.items()))


# ---------------------------------------------------------------------------- helpers

class WriterRun(NamedTuple):
    ready: tuple[int, int, int, int, str] | None  # leo, next_seq, log_start, recovery_point, clean
    acks: list[tuple[int, int, int]]               # (last_offset, seq_last, first_offset)
    stderr: str
    returncode: int


def run_writer(directory: Path, mode: str, rng: random.Random, *, kill_after_ack_s: float | None,
               kill_after_start_s: float = 0.0, extra: tuple[str, ...] = ()) -> WriterRun:
    """Start the writer; SIGKILL it ``kill_after_ack_s`` after its first ack (or, when None,
    ``kill_after_start_s`` after spawning it, possibly during its recovery). Every line it
    wrote before dying counts, including lines still in the pipe when it was killed."""
    cmd = [PYTHON, "-m", "tests.storage.crash_writer", str(directory), "--mode", mode,
           "--seed", str(rng.randrange(1 << 30)), *extra]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=err)
        fd = proc.stdout.fileno()  # type: ignore[union-attr]
        buf = bytearray()
        lines: list[str] = []

        def pump(until: float, stop_at_ack: bool = False) -> bool:
            """Read what arrives until ``until`` (or the first ack); False at EOF."""
            while (left := until - time.monotonic()) > 0:
                if not select.select([fd], [], [], left)[0]:
                    break
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return False
                buf.extend(chunk)
                *complete, rest = buf.split(b"\n")
                lines.extend(line.decode() for line in complete)
                buf[:] = rest
                if stop_at_ack and any(line.startswith("ACK") for line in lines):
                    break
            return True

        def stderr_text() -> str:
            err.seek(0)
            return err.read().decode(errors="replace")

        try:
            if kill_after_ack_s is None:
                alive = pump(time.monotonic() + kill_after_start_s)
            else:
                alive = pump(time.monotonic() + 120, stop_at_ack=True)
                assert any(line.startswith("ACK") for line in lines), f"no ack: {lines}\n{stderr_text()}"
                alive = alive and pump(time.monotonic() + kill_after_ack_s)
            assert alive and proc.poll() is None, f"writer died by itself: {lines[-3:]}\n{stderr_text()}"
            proc.kill()  # SIGKILL
            proc.wait(30)
            while pump(time.monotonic() + 30):  # acks still in the pipe count: they were sent
                pass
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()  # type: ignore[union-attr]
        stderr = stderr_text()
    ready = None
    acks = []
    for line in lines:
        parts = line.split()
        if parts[0] == "READY":
            ready = (int(parts[1]), int(parts[2]), int(parts[3]), int(parts[4]), parts[5])
        elif parts[0] == "ACK":
            acks.append((int(parts[1]), int(parts[2]), int(parts[3])))
        else:
            raise AssertionError(f"unexpected writer output {line!r}; stderr:\n{stderr}")
    assert "Traceback" not in stderr, stderr
    return WriterRun(ready, acks, stderr, proc.returncode)


def truncations(messages: list[str]) -> list[tuple[int, str]]:
    """(bytes, segment path) of each 'Truncated N invalid bytes' warning."""
    return [(int(m.group(1)), m.group(2)) for m in map(_TRUNCATED.search, messages) if m]


def parse_log_file(path: str | Path) -> tuple[list[BatchInfo], int]:
    """Valid batches of a ``.log`` (magic 2, sane length, CRC-32C) and where they end."""
    data = Path(path).read_bytes()
    out: list[BatchInfo] = []
    pos = 0
    while len(data) - pos >= 61:
        base, length = struct.unpack_from(">qi", data, pos)
        size = length + 12
        if size < 61 or pos + size > len(data) or data[pos + 16] != 2:
            break
        if crc32c.crc32c(data[pos + 21 : pos + size]) != struct.unpack_from(">I", data, pos + 17)[0]:
            break
        (delta,) = struct.unpack_from(">i", data, pos + 23)
        (max_ts,) = struct.unpack_from(">q", data, pos + 35)
        out.append(BatchInfo(pos, size, base, base + delta, max_ts))
        pos += size
    return out, pos


def partition_dir(data: Path) -> Path:
    return data / f"{TOPIC}-0"


def segment_files(data: Path) -> dict[int, list[BatchInfo]]:
    """Base offset -> valid batches of every ``.log`` in the partition."""
    return {int(p.name[:20]): parse_log_file(p)[0] for p in sorted(partition_dir(data).glob("*.log"))}


def verify_contents(log: Log) -> list[tuple[int, int]]:
    """Read from the log start to the LEO with ``read_bytes`` and decode every batch (CRC
    on): offsets contiguous from the log start, records intact, sequence numbers contiguous,
    no partial batch unless the read was cut by ``max_bytes``. Returns (offset, timestamp)
    of every record."""
    leo = log.log_end_offset
    offset = log.log_start_offset
    assert offset == 0, "nothing here deletes segments"
    expected_seq = SEQ_BASE + offset
    out: list[tuple[int, int]] = []
    while offset < leo:
        data = log.read_bytes(offset, READ_BYTES)
        assert data, f"empty read at offset {offset} below the LEO {leo}"
        pos = 0
        while len(data) - pos >= 61:
            base, length = struct.unpack_from(">qi", data, pos)
            if pos + length + 12 > len(data):
                break
            assert base == offset, f"batch at {base}, expected offset {offset} (gap or reuse)"
            for rec in iter_records(data, pos):  # validates the CRC first
                assert rec.offset == offset, f"record offset {rec.offset}, expected {offset}"
                seq = check_record(rec.key, rec.value)
                assert seq == expected_seq, f"offset {offset}: seq {seq}, expected {expected_seq}"
                out.append((rec.offset, rec.timestamp))
                offset += 1
                expected_seq += 1
            pos += length + 12
        if len(data) < READ_BYTES:  # the read reached the LEO: it must end on a batch boundary
            assert pos == len(data), f"partial batch ({len(data) - pos} bytes) at the end of a read"
            assert offset == leo, f"reads ended at {offset}, LEO is {leo}"
    assert offset == leo
    return out


def check_point_reads(log: Log, rng: random.Random, n: int = 40) -> None:
    """Reads at random offsets (index lookups) return the batch holding the offset."""
    leo = log.log_end_offset
    for target in [rng.randrange(leo) for _ in range(n)] if leo else []:
        data = log.read_bytes(target, 1)
        base, = struct.unpack_from(">q", data, 0)
        recs = list(iter_records(data))
        assert base <= target <= recs[-1].offset, f"read at {target} returned {base}..{recs[-1].offset}"
        rec = next(r for r in recs if r.offset == target)
        assert check_record(rec.key, rec.value) == SEQ_BASE + target


def check_timestamp_lookups(log: Log, records: list[tuple[int, int]], rng: random.Random, n: int = 15) -> None:
    """ListOffsets by timestamp (time index + offset index) agrees with a scan of the records:
    Kafka returns the first record with ts >= target of the first batch whose max ts >= target."""
    if not records:
        return
    ts_list = [ts for _, ts in records]
    for target in [rng.choice(ts_list) + d for d in (-1, 0) for _ in range(n // 2)] + [max(ts_list) + 1]:
        found = log.offset_for_timestamp(target)
        expected = next(((o, t) for o, t in records if t >= target), None)
        if expected is None:
            assert found is None
        else:
            assert found is not None and (found.offset, found.timestamp) == expected, (target, found, expected)


def check_files(data: Path, rebuilt: set[int] = frozenset(), index_interval: int | None = None,
                recovered_leo: int | None = None) -> None:
    """After a clean shutdown: ``minibroker dump-log --index-sanity-check`` passes on every
    file and finds no invalid bytes; segments are contiguous; every index entry maps an offset
    to the start of the batch that ends at it; segments in ``rebuilt`` have exactly the indexes
    Kafka's recovery rule builds (``recovered_leo``: where recovery ended, see
    ``expected_time_entries``)."""
    pdir = partition_dir(data)
    files = sorted(str(p) for p in pdir.iterdir() if p.suffix in (".log", ".index", ".timeindex"))
    r = subprocess.run([PYTHON, "-m", "broker", "dump-log", "--index-sanity-check", *files], cwd=ROOT,
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 0 and r.stderr == "", r.stderr[-2000:]
    for f in files:  # Kafka's tool reports an empty offset index instead of checking it
        if not f.endswith(".log"):
            assert f"{f} passed sanity check." in r.stdout or f"{f} is empty." in r.stdout, f
    assert "invalid bytes at the end" not in r.stdout
    assert "isvalid: false" not in r.stdout
    next_base = None
    for base, batches in segment_files(data).items():
        log_path = pdir / f"{base:020d}.log"
        assert parse_log_file(log_path)[1] == log_path.stat().st_size, f"{log_path} has a bad tail"
        if next_base is not None:
            assert base == next_base, f"segment {base} does not follow offset {next_base - 1}"
        if batches:
            assert batches[0].base_offset == base
            next_base = batches[-1].last_offset + 1
        else:
            next_base = base
        by_pos = {b.position: b for b in batches}
        offsets = read_offset_index_file(str(pdir / f"{base:020d}.index"), base)
        assert [o for o, _ in offsets] == sorted({o for o, _ in offsets}), "index keys must increase"
        for off, pos in offsets:
            assert pos in by_pos and by_pos[pos].last_offset == off, f"{base}.index entry ({off}, {pos})"
        times = read_time_index_file(str(pdir / f"{base:020d}.timeindex"), base)
        assert [t for t, _ in times] == sorted({t for t, _ in times}), "time index must increase"
        lasts = {b.last_offset: b for b in batches}
        for ts, off in times:
            assert off in lasts and lasts[off].max_timestamp == ts, f"{base}.timeindex entry ({ts}, {off})"
        if base in rebuilt:
            assert index_interval is not None
            assert offsets == expected_index_entries(batches, index_interval)
            assert times == expected_time_entries(batches, index_interval, recovered_leo)


def expected_time_entries(batches: list[BatchInfo], interval: int,
                          recovered_leo: int | None = None) -> list[tuple[int, int]]:
    """Kafka's recovery rule for the time index: at each offset-index entry, the running max
    timestamp (and the last offset of the batch that set it) if larger than the last entry's;
    then the segment's max timestamp as the final entry. Recovery writes such a final entry
    where it ends (before ``recovered_leo``); a segment appended to afterwards keeps it."""
    entries: list[tuple[int, int]] = []
    since, max_ts, max_off = 0, -1, -1

    def final() -> None:
        if max_ts >= 0 and max_ts > (entries[-1][0] if entries else -1):
            entries.append((max_ts, max_off))

    for b in batches:
        if b.max_timestamp > max_ts:
            max_ts, max_off = b.max_timestamp, b.last_offset
        if since > interval:
            if max_ts > (entries[-1][0] if entries else -1):
                entries.append((max_ts, max_off))
            since = 0
        since += b.size
        if b.last_offset + 1 == recovered_leo:
            final()
    final()
    return entries


def recovered_bases(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the base offset of every segment whose ``recover`` runs from now on."""
    from broker.storage.segment import LogSegment

    seen: list[int] = []
    original = LogSegment.recover

    def recover(self: LogSegment) -> int:
        seen.append(self.base_offset)
        return original(self)

    monkeypatch.setattr(LogSegment, "recover", recover)
    return seen


def open_manager(data: Path) -> LogManager:
    manager = LogManager(str(data))
    manager.startup()
    return manager


# ---------------------------------------------------------------------------- kill cycles

def recover_and_verify(data: Path, caplog: pytest.LogCaptureFixture, last_acked: int,
                       rng: random.Random, seen: list[int], *, expect_clean: bool) -> int:
    """Start in-process (recovering after an unclean stop); check which segments were
    re-validated, acked data, contents and reads; shut down cleanly and check the files.
    ``seen`` collects the segments whose ``recover`` runs (``recovered_bases``). Returns the
    recovered LEO."""
    pdir = partition_dir(data)
    bases = sorted(int(p.name[:20]) for p in pdir.glob("*.log"))
    missing_index = {b for b in bases if not (pdir / f"{b:020d}.index").exists()}
    checkpoint = read_offset_checkpoint(str(data / "recovery-point-offset-checkpoint"))
    rp = checkpoint.get((TOPIC, 0), 0)
    first = max([b for b in bases if b <= rp], default=bases[0])
    caplog.clear()
    seen.clear()
    manager = open_manager(data)
    assert manager.had_clean_shutdown == expect_clean
    # Recovery re-validates the segments from floor(recovery point) on (and any segment whose
    # offset index is missing), nothing else.
    expected = set() if expect_clean else {b for b in bases if b >= first}
    assert expected <= set(seen) <= expected | missing_index, (rp, seen, bases)
    if not expect_clean:
        STATS["segments re-validated"] += len(set(seen))
        STATS["segments present at unclean restarts"] += len(bases)
    cut = truncations([r.getMessage() for r in caplog.records])
    STATS["verifier restarts"] += 1
    STATS["verifier restarts that truncated bytes"] += bool(cut)
    STATS["bytes truncated"] += sum(n for n, _ in cut)
    log = manager.log_or_raise(TOPIC, 0)
    leo = log.log_end_offset
    # SIGKILL ends the process, not the kernel: every write() that returned is in the page
    # cache and survives, flushed or not. Only a machine crash can lose unflushed appends,
    # which mode noflush allows (acks there promise nothing about the disk); mode flush acks
    # after Log.flush() and must survive even that. A process kill must lose nothing acked.
    assert leo > last_acked, f"acked offset {last_acked} lost: LEO after recovery is {leo}"
    for seg in log.segments.values():  # the tail is clean right after recovery
        assert os.path.getsize(seg.log.path) == seg.size
        assert parse_log_file(seg.log.path)[1] == seg.size
    records = verify_contents(log)
    check_point_reads(log, rng)
    check_timestamp_lookups(log, records, rng)
    manager.shutdown()
    # While a log is open its active indexes are preallocated (zero entries past the real ones,
    # which the time index's sanity check reads as a timestamp 0): check the files after the
    # clean shutdown trimmed them, as Kafka's tool would be used. Recovered segments have
    # exactly the indexes Kafka's recovery rule builds.
    check_files(data, set(seen), 512, leo)
    return leo


@pytest.mark.parametrize("mode", ["flush", "noflush"])
def test_kill_restart_cycles(tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch,
                             mode: str) -> None:
    caplog.set_level(logging.WARNING)
    seen = recovered_bases(monkeypatch)
    before = Counter(STATS)
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    print(f"[{mode}] seed {seed}")  # shown with a failure (the kill times are random anyway)
    data = tmp_path / "data"
    marker = data / ".kafka_cleanshutdown"
    cycles = 25
    last_acked = -1
    clean_leo: int | None = None  # LEO of the last clean shutdown while its marker is present
    for i in range(cycles):
        during_startup = i > 0 and rng.random() < 0.15
        # noflush runs flat out only now and then: the data a run adds is verified many times
        extra = ("--pause-ms", "1") if mode == "noflush" and rng.random() < 0.8 else ()
        if during_startup:  # may land before, during or after the writer's own recovery
            run = run_writer(data, mode, rng, kill_after_ack_s=None,
                             kill_after_start_s=rng.uniform(0.05, 0.4), extra=extra)
            STATS[f"{mode} kills before READY"] += run.ready is None
        else:
            run = run_writer(data, mode, rng, kill_after_ack_s=rng.uniform(0.02, 0.3), extra=extra)
        STATS[f"{mode} kill cycles"] += 1
        assert run.returncode == -9, run
        cut = truncations(run.stderr.splitlines())
        if run.ready is not None:
            leo0, next_seq, log_start, _rp, clean = run.ready
            assert log_start == 0 and next_seq == SEQ_BASE + leo0
            if i == 0:
                assert leo0 == 0
            elif clean_leo is not None:
                assert clean == "clean" and leo0 == clean_leo and not cut
            else:
                assert clean == "unclean"
                assert leo0 > last_acked, f"acked offset {last_acked} lost: writer recovered LEO {leo0}"
                STATS["writer restarts"] += 1
                STATS["writer restarts that truncated bytes"] += bool(cut)
                STATS["bytes truncated"] += sum(n for n, _ in cut)
            expected = leo0
            for last, seq_last, first in run.acks:  # offsets continue at the recovered LEO
                assert first == expected and last >= first and seq_last == SEQ_BASE + last
                expected = last + 1
        else:
            assert not run.acks
        if run.acks:
            last_acked = run.acks[-1][0]
        STATS[f"{mode} acked appends"] += len(run.acks)
        # The writer deletes the marker first thing at startup; a kill before that leaves it.
        if not marker.exists():
            clean_leo = None
        else:
            assert run.ready is None
        if i % 2 == 1 or i == cycles - 1:
            clean_leo = recover_and_verify(data, caplog, last_acked, rng, seen, expect_clean=clean_leo is not None)
    STATS[f"{mode} final LEO"] = clean_leo or 0
    STATS[f"{mode} segments"] = len(list(partition_dir(data).glob("*.log")))
    report(f"{mode} seed={seed}", before)


def test_kill_cycles_preallocated(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """With ``preallocate`` the active ``.log`` is segment.bytes long from the start, zeros past
    the data: after every kill, recovery must cut the zero tail (check 26)."""
    caplog.set_level(logging.WARNING)
    before = Counter(STATS)
    rng = random.Random()
    data = tmp_path / "data"
    last_acked = -1
    zero_tails = 0
    for _ in range(5):
        existing = set(partition_dir(data).glob("*.log")) if data.exists() else set()
        # flat out: ~25 MB/s, so each run rolls (and preallocates) several segments
        run = run_writer(data, "noflush", rng, kill_after_ack_s=rng.uniform(0.03, 0.1), extra=("--preallocate",))
        assert run.returncode == -9
        last_acked = run.acks[-1][0]
        assert not (data / ".kafka_cleanshutdown").exists()
        active = max(partition_dir(data).glob("*.log"))
        size = active.stat().st_size
        # A segment rolled during the run is preallocated, unless the kill fell between creating
        # its file and extending it (creating a file can wait on the journal for milliseconds
        # here, so that happens); one reopened after a clean start is not (as in Kafka). A roll
        # trims the old segment before it creates the new file: a kill between the two leaves
        # the trimmed segment last, holding data up to its end and no zero tail.
        trimmed_at_roll = active not in existing and size not in (0, 64 * 1024)
        caplog.clear()
        manager = open_manager(data)
        cut = truncations([r.getMessage() for r in caplog.records])
        log = manager.log_or_raise(TOPIC, 0)
        assert log.log_end_offset > last_acked
        if trimmed_at_roll:
            assert 0 < size < 64 * 1024 and not cut, (active, size, cut)
            assert log.active_segment.log.path == str(active) and log.active_segment.size == size
            STATS["preallocated kills between trim and roll"] += 1
        if size == 64 * 1024 and log.active_segment.size < size:
            assert cut == [(size - log.active_segment.size, str(active))]
            zero_tails += 1
        verify_contents(log)
        manager.shutdown()
        check_files(data)
    assert zero_tails >= 1
    STATS["preallocated kill cycles"] += 5
    STATS["preallocated zero tails cut"] += zero_tails
    report("preallocated", before)


def test_kill_cycles_big_batches(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Appends of 64 KB-1.6 MB: a pwrite of many pages runs long enough for SIGKILL to land in
    it (Linux stops a buffered write between pages on a fatal signal), leaving a torn batch at
    the end of the active segment that recovery must cut. Restarts alternate between the
    writer (unclean recovery in the child) and the in-process verifier."""
    caplog.set_level(logging.WARNING)
    seen = recovered_bases(monkeypatch)
    before = Counter(STATS)
    rng = random.Random()
    data = tmp_path / "data"
    last_acked = -1
    clean_leo: int | None = None
    big = ("--big", "--segment-bytes", str(4 << 20))
    for i in range(8):
        run = run_writer(data, "noflush", rng, kill_after_ack_s=rng.uniform(0.005, 0.06), extra=big)
        assert run.returncode == -9
        assert run.ready is not None and run.acks
        leo0 = run.ready[0]
        assert leo0 > last_acked and run.acks[0][2] == leo0  # nothing acked lost; no gap, no reuse
        if clean_leo is not None:
            assert leo0 == clean_leo
        cut = truncations(run.stderr.splitlines())
        if i and clean_leo is None:
            STATS["big writer restarts"] += 1
            STATS["big restarts that truncated bytes"] += bool(cut)
            STATS["bytes truncated"] += sum(n for n, _ in cut)
        last_acked = run.acks[-1][0]
        STATS["big kill cycles"] += 1
        clean_leo = None
        if i % 2 == 1:
            torn = STATS["verifier restarts that truncated bytes"]
            clean_leo = recover_and_verify(data, caplog, last_acked, rng, seen, expect_clean=False)
            STATS["big restarts that truncated bytes"] += STATS["verifier restarts that truncated bytes"] - torn
            STATS["big verifier restarts"] += 1
    report("big", before)


# ---------------------------------------------------------------------------- damaged files

SEGMENT_BYTES = 16 * 1024
INTERVAL = 256


class Layout(NamedTuple):
    data: Path
    segments: dict[int, list[BatchInfo]]  # base -> batches, as written before the damage
    leo: int

    @property
    def pdir(self) -> Path:
        return partition_dir(self.data)

    def path(self, base: int, suffix: str) -> Path:
        return self.pdir / f"{base:020d}{suffix}"

    @property
    def bases(self) -> list[int]:
        return sorted(self.segments)


def crash(manager: LogManager) -> None:
    """What SIGKILL leaves behind: no flush, no trim (active indexes stay preallocated), no
    final time-index entry, no checkpoint, no clean-shutdown marker."""
    for log in manager.logs.values():
        for seg in log.segments.values():
            seg.close_handlers()


def build(tmp_path: Path, *, stop: str, checkpoint: bool) -> Layout:
    """A log of >= 4 segments whose active segment holds >= 5 batches. ``stop``: "unclean"
    (see ``crash``) or "clean". ``checkpoint``: flush and write both checkpoints first, so the
    recovery point is the LEO; otherwise there are no checkpoint files (recovery point 0)."""
    data = tmp_path / "data"
    manager = open_manager(data)
    manager.create_topic(TOPIC, 1, topic_configs(SEGMENT_BYTES, INTERVAL, False))
    log = manager.log_or_raise(TOPIC, 0)
    rng = random.Random(7)
    seq = SEQ_BASE
    in_active = 0
    while log.num_segments < 4 or in_active < 5:
        n = rng.randint(1, 6)
        active = log.active_segment.base_offset
        log.append(make_batch(seq, n))
        in_active = in_active + 1 if log.active_segment.base_offset == active else 1
        seq += n
    leo = log.log_end_offset
    if checkpoint:
        log.flush()
        manager.checkpoint_logs()
    if stop == "clean":
        manager.shutdown()
    else:
        crash(manager)
    assert not (data / ".kafka_cleanshutdown").exists() or stop == "clean"
    return Layout(data, segment_files(data), leo)


def recover(layout: Layout, caplog: pytest.LogCaptureFixture) -> tuple[LogManager, Log, list[str]]:
    caplog.clear()
    manager = open_manager(layout.data)
    return manager, manager.log_or_raise(TOPIC, 0), [r.getMessage() for r in caplog.records]


def check_recovered(layout: Layout, manager: LogManager, log: Log, expected_leo: int, *,
                    rebuilt: set[int] = frozenset(), timestamps: bool = True) -> None:
    """LEO, every record intact and readable at every batch's first and last offset, timestamp
    lookups, the next append continuing at the LEO, then a clean shutdown and the files."""
    assert log.log_end_offset == expected_leo
    rng = random.Random(1)
    records = verify_contents(log)
    for _base, batches in layout.segments.items():
        for b in batches:
            if b.last_offset < expected_leo:
                for target in (b.base_offset, b.last_offset):
                    assert struct.unpack_from(">q", log.read_bytes(target, 1))[0] == b.base_offset
    check_point_reads(log, rng)
    if timestamps:
        check_timestamp_lookups(log, records, rng)
    assert next_seq_of(log) == SEQ_BASE + expected_leo
    info = log.append(make_batch(SEQ_BASE + expected_leo, 3))
    assert info.first_offset == expected_leo
    verify_contents(log)
    manager.shutdown()
    check_files(layout.data, rebuilt, INTERVAL, expected_leo)


def kept_leo(batches: list[BatchInfo], base: int, cut: int) -> int:
    """LEO when segment ``base`` keeps only the batches wholly before byte ``cut``."""
    kept = [b for b in batches if b.position + b.size <= cut]
    return kept[-1].last_offset + 1 if kept else base


def assert_truncation_logged(messages: list[str], segment: Path, nbytes: int) -> None:
    cut = truncations(messages)
    assert (nbytes, str(segment)) in cut, f"no truncation warning for {segment}: {messages}"


TRUNCATE_AT = {  # name -> cut position, from the last batch of the active segment
    "one_byte_short": lambda b: b.position + b.size - 1,
    "header_byte_1": lambda b: b.position + 1,
    "header_byte_16": lambda b: b.position + 16,   # < 17 bytes: not even offset+length+magic
    "header_byte_40": lambda b: b.position + 40,   # length readable, rest of header missing
    "header_byte_60": lambda b: b.position + 60,
    "mid_batch": lambda b: b.position + b.size // 2,
    "at_batch_start": lambda b: b.position,        # a clean cut: nothing to truncate
    "empty_file": lambda b: 0,
}


@pytest.mark.parametrize("where,checkpoint", [
    *((w, True) for w in [*TRUNCATE_AT, "random1", "random2", "random3"]),
    *((w, False) for w in ["one_byte_short", "header_byte_40", "random1"]),  # recovery point 0
])
def test_damaged_torn_tail(tmp_path, caplog, where: str, checkpoint: bool) -> None:
    caplog.set_level(logging.WARNING)
    layout = build(tmp_path, stop="unclean", checkpoint=checkpoint)
    base = layout.bases[-1]
    batches = layout.segments[base]
    path = layout.path(base, ".log")
    size = path.stat().st_size
    if where in TRUNCATE_AT:
        cut = TRUNCATE_AT[where](batches[-1])
    else:
        cut = random.Random(where).randrange(1, size)
    os.truncate(path, cut)
    manager, log, messages = recover(layout, caplog)
    expected = kept_leo(batches, base, cut)
    valid = next((b.position + b.size for b in reversed(batches) if b.position + b.size <= cut), 0)
    if cut > valid:
        assert_truncation_logged(messages, path, cut - valid)
        assert any(f"corruption in segment {base}" in m for m in messages), messages
    else:
        assert not truncations(messages)
    check_recovered(layout, manager, log, expected, rebuilt={base})


FLIP_AT = {  # name -> byte position inside the last batch
    "length_high": 8, "length_low": 11, "magic": 16, "crc": 17, "attributes": 21,
    "last_offset_delta": 26, "timestamp": 30, "records_count": 60, "first_record_byte": 61,
    "last_byte": -1,
}


@pytest.mark.parametrize("where", list(FLIP_AT))
def test_damaged_byte_in_last_batch(tmp_path, caplog, where: str) -> None:
    """One overwritten byte anywhere the batch is checked (length, magic, CRC and everything
    the CRC covers) drops the batch. Bytes 0-7 (offset) and 12-15 (leader epoch) are outside
    the CRC by design; Kafka does not detect changes there either."""
    caplog.set_level(logging.WARNING)
    layout = build(tmp_path, stop="unclean", checkpoint=True)
    base = layout.bases[-1]
    last = layout.segments[base][-1]
    path = layout.path(base, ".log")
    pos = last.position + (FLIP_AT[where] % last.size)
    with open(path, "r+b") as f:
        f.seek(pos)
        byte = f.read(1)[0]
        f.seek(pos)
        f.write(bytes([byte ^ 0xFF]))
    manager, log, messages = recover(layout, caplog)
    assert_truncation_logged(messages, path, last.size)
    check_recovered(layout, manager, log, last.base_offset, rebuilt={base})


@pytest.mark.parametrize("damage", ["records", "length"])
def test_damaged_batch_in_middle_segment(tmp_path, caplog, damage: str) -> None:
    """Check 25: a damaged batch in segment k (at or after the recovery point) costs only that
    batch, where Kafka truncates k there and deletes every later segment: a CRC failure, or a
    length field that breaks the framing (the next batch is found again by magic, offsets and
    CRC). Reads stop before the damage, an offset in it is CORRUPT_MESSAGE, every other batch
    reads, and the log goes on at its LEO."""
    caplog.set_level(logging.WARNING)
    layout = build(tmp_path, stop="unclean", checkpoint=False)
    base = layout.bases[1]
    batches = layout.segments[base]
    i = len(batches) // 2
    bad = batches[i]
    path = layout.path(base, ".log")
    pos = bad.position + 61 + (bad.size - 61) // 2 if damage == "records" else bad.position + 8
    with open(path, "r+b") as f:
        f.seek(pos)
        byte = f.read(1)[0]
        f.seek(pos)
        f.write(bytes([byte ^ (0x01 if damage == "records" else 0x80)]))
    manager, log, messages = recover(layout, caplog)
    assert not truncations(messages), messages
    assert any(f"Damaged batches in {path}: {bad.size} bytes at position {bad.position}" in m for m in messages), messages
    assert log.num_segments == len(layout.bases)
    assert log.log_end_offset == layout.leo
    for target in (bad.base_offset, bad.last_offset):
        with pytest.raises(CorruptRecordError, match="lies in damaged bytes"):
            log.read(target, 1 << 20)
    # a read from the segment's start ends where the damage starts
    assert len(log.read_bytes(base, 1 << 30)) == bad.position
    for _base, seg_batches in layout.segments.items():
        for b in seg_batches:
            if b is not bad:
                for target in (b.base_offset, b.last_offset):
                    assert struct.unpack_from(">q", log.read_bytes(target, 1))[0] == b.base_offset
    info = log.append(make_batch(SEQ_BASE + layout.leo, 3))
    assert info.first_offset == layout.leo
    manager.shutdown()


@pytest.mark.parametrize("zeros", [5, 16, 17, 60, 61, 4096])
def test_damaged_zero_filled_tail(tmp_path, caplog, zeros: int) -> None:
    """Check 26: zeros after the last batch (a preallocated file's tail) are cut."""
    caplog.set_level(logging.WARNING)
    layout = build(tmp_path, stop="unclean", checkpoint=True)
    base = layout.bases[-1]
    path = layout.path(base, ".log")
    with open(path, "ab") as f:
        f.write(bytes(zeros))
    manager, log, messages = recover(layout, caplog)
    assert_truncation_logged(messages, path, zeros)
    check_recovered(layout, manager, log, layout.leo, rebuilt={base})


@pytest.mark.parametrize("which", ["middle", "last"])
@pytest.mark.parametrize("stop", ["clean", "unclean"])
def test_damaged_missing_offset_index(tmp_path, caplog, stop: str, which: str) -> None:
    """Check 27: a missing ``.index`` makes the segment recover (and rebuild both indexes),
    after a clean stop too."""
    caplog.set_level(logging.WARNING)
    layout = build(tmp_path, stop=stop, checkpoint=True)
    base = layout.bases[1] if which == "middle" else layout.bases[-1]
    layout.path(base, ".index").unlink()
    manager, log, messages = recover(layout, caplog)
    assert any(f"offset index of segment {base} is missing" in m for m in messages), messages
    assert not truncations(messages)
    check_recovered(layout, manager, log, layout.leo, rebuilt={base})


@pytest.mark.parametrize("which", ["middle", "last"])
@pytest.mark.parametrize("stop", ["clean", "unclean"])
def test_damaged_missing_time_index(tmp_path, caplog, stop: str, which: str) -> None:
    """Check 27: a missing ``.timeindex`` is recreated empty (rebuilt when the segment is
    recovered); reads and timestamp lookups stay correct (they fall back to scanning)."""
    caplog.set_level(logging.WARNING)
    layout = build(tmp_path, stop=stop, checkpoint=True)
    base = layout.bases[1] if which == "middle" else layout.bases[-1]
    layout.path(base, ".timeindex").unlink()
    manager, log, messages = recover(layout, caplog)
    assert not truncations(messages)
    rebuilt = {base} if stop == "unclean" and which == "last" else set()
    # An empty time index makes the segment's largest timestamp fall back to the .log mtime,
    # as in Kafka; the kernel's coarse clock can date that a few ms *before* the newest
    # records, so ListOffsets by timestamp may skip the segment for them: not checked.
    check_recovered(layout, manager, log, layout.leo, rebuilt=rebuilt, timestamps=bool(rebuilt))
    if not rebuilt:
        assert layout.path(base, ".timeindex").stat().st_size in (0, 12)


GARBLE = {  # name -> bytes written over the index files
    "random_odd_length": lambda rng, n: rng.randbytes(n * 8 + 5),
    "random_full_size": lambda rng, n: rng.randbytes(4096),
    "zeros_untrimmed": lambda rng, n: bytes(4096),
    "short": lambda rng, n: rng.randbytes(3),
}


@pytest.mark.parametrize("garble", list(GARBLE))
@pytest.mark.parametrize("which", ["last", "middle"])
def test_damaged_garbled_indexes_after_unclean_stop(tmp_path, caplog, which: str, garble: str) -> None:
    """Garbled ``.index`` and ``.timeindex`` of a segment at or past the recovery point are
    rebuilt by recovery, so lookups are right afterwards. (After a *clean* stop, or below the
    recovery point, Kafka runs no index sanity check at load, KAFKA-7283, and neither do we:
    such damage goes unnoticed; see ``test_damaged_active_index_after_clean_shutdown``.)"""
    caplog.set_level(logging.WARNING)
    # "middle": no checkpoint, so the recovery point is 0 and every segment is recovered.
    layout = build(tmp_path, stop="unclean", checkpoint=which == "last")
    base = layout.bases[-1] if which == "last" else layout.bases[1]
    rng = random.Random(garble)
    n = len(layout.segments[base])
    layout.path(base, ".index").write_bytes(GARBLE[garble](rng, n))
    layout.path(base, ".timeindex").write_bytes(GARBLE[garble](rng, n)[:-1])
    manager, log, messages = recover(layout, caplog)
    assert not truncations(messages)
    check_recovered(layout, manager, log, layout.leo, rebuilt={base})


@pytest.mark.parametrize("content", [b"\xff\xfe garbage \x00\x01", b"0\n1\ncrash 0 notanumber\n", b"1\n0\n",
                                     b"0\n2\ncrash 0 5\n", b""], ids=["binary", "bad-entry", "bad-version",
                                                                     "bad-count", "empty"])
@pytest.mark.parametrize("stop", ["clean", "unclean"])
def test_damaged_checkpoints(tmp_path, caplog, stop: str, content: bytes) -> None:
    """Garbage in both checkpoint files is treated as empty: recovery point 0 (everything is
    re-validated after an unclean stop), log start offset 0; nothing is lost."""
    caplog.set_level(logging.WARNING)
    layout = build(tmp_path, stop=stop, checkpoint=True)
    for name in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint"):
        (layout.data / name).write_bytes(content)
    manager, log, messages = recover(layout, caplog)
    assert sum("checkpoint" in m and "treating it as empty" in m for m in messages) == 2, messages
    assert log.log_start_offset == 0
    assert log.recovery_point == (layout.leo if stop == "clean" else 0)
    check_recovered(layout, manager, log, layout.leo, rebuilt=set(layout.bases) if stop == "unclean" else set())


def test_damaged_checkpoints_and_torn_first_segment(tmp_path, caplog) -> None:
    """With garbage checkpoints (recovery point 0) a torn batch in the *first* segment is found;
    the bytes from it to the segment's end are recorded as damaged (offsets up to the next
    segment's base), where Kafka would cut the segment there and delete every later one,
    flushed data included. Every later segment stays readable."""
    caplog.set_level(logging.WARNING)
    layout = build(tmp_path, stop="unclean", checkpoint=True)
    for name in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint"):
        (layout.data / name).write_bytes(os.urandom(64))
    base = layout.bases[0]
    batches = layout.segments[base]
    path = layout.path(base, ".log")
    cut = batches[2].position + 30
    os.truncate(path, cut)
    manager, log, messages = recover(layout, caplog)
    assert not truncations(messages), messages
    first_lost, next_base = batches[2].base_offset, layout.bases[1]
    assert any(f"Damaged batches in {path}: 30 bytes at position {batches[2].position}, where offsets"
               f" {first_lost}..{next_base - 1} were due" in m for m in messages), messages
    assert log.num_segments == len(layout.bases)
    assert log.log_end_offset == layout.leo
    for target in (first_lost, next_base - 1):
        with pytest.raises(CorruptRecordError):
            log.read(target, 1 << 20)
    assert len(log.read_bytes(base, 1 << 30)) == batches[2].position
    for b in [b for later in layout.bases[1:] for b in layout.segments[later]]:
        assert struct.unpack_from(">q", log.read_bytes(b.base_offset, 1))[0] == b.base_offset
    manager.shutdown()


# ---------------------------------------------------------------------------- recovery range and durability

def test_recovery_after_kill_starts_at_rolled_segments_flush(tmp_path, caplog, monkeypatch) -> None:
    """Kafka flushes the segments a roll made inactive (asynchronously; here the periodic
    ``flush_dirty_logs``), which moves the recovery point to the active segment's base: after a
    kill with no explicit flush, only the active segment is re-validated."""
    layout = build(tmp_path, stop="unclean", checkpoint=False)
    manager = open_manager(layout.data)  # recovers everything (no checkpoint yet)
    log = manager.log_or_raise(TOPIC, 0)
    active = log.active_segment.base_offset
    assert manager.flush_dirty_logs() == 1
    assert log.recovery_point == active
    manager.checkpoint_logs()
    crash(manager)
    seen = recovered_bases(monkeypatch)
    manager, log, messages = recover(layout, caplog)
    assert seen == [active]
    check_recovered(layout, manager, log, layout.leo, rebuilt={active})


def test_flush_makes_new_files_durable(tmp_path, monkeypatch) -> None:
    """For an acked+flushed append to survive a machine crash, the directory entries of new
    files must be durable too (Kafka's LocalLog.flush fsyncs the partition directory when a
    flushed segment is at or above the recovery point, which includes a new log's first
    segment); a new topic's partition directories must be durable in the data directory."""
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    data = tmp_path / "data"
    manager = open_manager(data)
    manager.create_topic(TOPIC, 1, topic_configs(SEGMENT_BYTES, INTERVAL, False))
    assert str(data) in synced, "the data directory was not fsynced after creating a partition directory"
    log = manager.log_or_raise(TOPIC, 0)
    log.append(make_batch(SEQ_BASE, 3))
    synced.clear()
    log.flush()
    assert str(partition_dir(data) / f"{0:020d}.log") in synced
    assert str(partition_dir(data)) in synced, "the first flush did not fsync the partition directory"
    manager.shutdown()


def test_damaged_active_index_after_clean_shutdown(tmp_path, caplog) -> None:
    """After a clean shutdown the LEO is computed from the active segment's last offset-index
    entry. In Kafka (KAFKA-7283: no index checks at load) a plausible but wrong last entry (an
    offset ahead, a position past the end of the .log) makes the LEO fall back to the segment's
    base offset, so the next appends would reuse offsets. We check that entry against the .log
    at load (kafka_storage.md §8) and rebuild the indexes when it is wrong."""
    caplog.set_level(logging.WARNING)
    layout = build(tmp_path, stop="clean", checkpoint=True)
    path = layout.path(layout.bases[-1], ".index")
    data = bytearray(path.read_bytes())
    struct.pack_into(">ii", data, len(data) - 8, 100_000, 1 << 20)
    path.write_bytes(bytes(data))
    manager, log, _ = recover(layout, caplog)
    try:
        assert log.log_end_offset == layout.leo
    finally:
        manager.shutdown()
