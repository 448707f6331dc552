#!/usr/bin/env python3
"""Benchmarks of the log engine (broker/storage), one section each.

Sections (``--only NAME[,NAME...]``; all by default):

- ``append``: append throughput of 16 KiB batches to a LogSegment, into the page cache. One
  batch is built with ``build_batch``; each append stamps its base offset in place
  (``set_base_offset``, as the broker's offset assignment does) and calls
  ``LogSegment.append``. The same number of bytes is written by ``dd if=/dev/zero bs=16k``
  (no ``oflag=direct``/``dsync``: into the page cache too) in the same run, the runs of both
  interleaved, and the medians printed side by side with the ratio. To show where the time
  goes, more variants are timed the same way: LogSegment with a .log that discards the bytes
  (its own bookkeeping alone), ``FileRecords.append`` alone, a bare ``os.pwrite`` loop, and
  ``LogSegment.append`` of K batches per call (``--coalesce``). Wall time and the process's
  user and system CPU time are recorded per run. A cProfile of ``LogSegment.append`` follows
  when its median is below the 1 GB/s target, or with ``--profile``.

Later sections (clean start of many partitions, recovery scan rate, retention pass) are added
as functions registered with ``@section``; each gets the parsed arguments and a scratch
directory, prints its own table and returns a JSON-able dict.

Run from the repository root::

    .venv/bin/python scripts/bench_storage.py             # 256 MiB x 5 runs per variant
    .venv/bin/python scripts/bench_storage.py --quick     # 64 MiB x 3

Why 256 MiB per run by default: on a VM whose balloon driver reports free pages to the host
(``/sys/module/page_reporting``), removing a 1 GiB file hands its memory back to the host, and
the next run's page-cache allocations then take host page faults: system time per 16 KiB
write goes from ~6 us to 15-30 us and the same run varies 5x between repeats. Smaller runs keep
the freed memory below the reporting threshold, so every variant measures the page-cache write
itself. ``--total-mib 1024`` shows the effect; the header prints how much memory was reported
to the host during the run.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from _benchutil import command_line, fs_type, machine_line  # noqa: E402

from broker.storage.file_records import FileRecords  # noqa: E402
from broker.storage.segment import LogSegment, log_file_name  # noqa: E402
from client.records.batch import set_base_offset  # noqa: E402
from client.records.record import build_batch  # noqa: E402

MB = 1_000_000  # throughput is in decimal MB/s, as dd prints it
MiB = 1 << 20

SECTIONS: dict[str, Callable[[argparse.Namespace, str], dict]] = {}


def section(name: str):
    def register(fn: Callable[[argparse.Namespace, str], dict]):
        SECTIONS[name] = fn
        return fn
    return register


# -- helpers --


def build_batch_of_size(size: int, value_size: int = 100) -> tuple[bytearray, int]:
    """One uncompressed RecordBatch v2 of exactly ``size`` bytes, built with ``build_batch``
    from ``value_size``-byte values (W1's record size; the last value is padded so the batch
    hits the size exactly). Returns (batch, record count)."""

    def build(n: int, pad: int) -> bytearray:
        values = [b"v" * value_size] * (n - 1) + [b"v" * (value_size + pad)]
        return build_batch([(None, v) for v in values])

    n = 1
    while len(build(n + 1, 0)) <= size:
        n += 1
    pad = 0
    for _ in range(8):  # the pad changes the varint lengths by a byte or two at most
        batch = build(n, pad)
        if len(batch) == size:
            return batch, n
        pad += size - len(batch)
    raise RuntimeError(f"could not build a batch of exactly {size} bytes")


class Samples:
    """Per-variant runs: wall seconds and CPU seconds (user, system) of each run."""

    def __init__(self) -> None:
        self.runs: dict[str, list[tuple[float, float, float]]] = {}

    def add(self, name: str, wall: float, user: float, sys_: float) -> None:
        self.runs.setdefault(name, []).append((wall, user, sys_))

    def median(self, name: str, field: int = 0) -> float:
        return statistics.median(r[field] for r in self.runs[name])

    def best(self, name: str) -> float:
        return min(r[0] for r in self.runs[name])


def timed(fn: Callable[[], None], who: int = resource.RUSAGE_SELF) -> tuple[float, float, float]:
    """Run ``fn`` with the garbage collector off (as timeit); (wall, user CPU, system CPU) s."""
    gc_was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        r0 = resource.getrusage(who)
        t0 = time.perf_counter()
        fn()
        wall = time.perf_counter() - t0
        r1 = resource.getrusage(who)
        return wall, r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime
    finally:
        if gc_was_enabled:
            gc.enable()


def fresh_dir(parent: str, name: str) -> str:
    d = os.path.join(parent, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


# -- section: append --


class NullFileRecords(FileRecords):
    """A .log that accepts appends without writing them: LogSegment's own cost, alone."""

    def append(self, data: bytes | bytearray | memoryview) -> int:
        n = len(data)
        self._size += n
        return n


def open_segment(d: str, args: argparse.Namespace, write: bool = True) -> LogSegment:
    seg = LogSegment.open(d, 0, index_interval_bytes=args.index_interval_bytes,
                          max_index_size=args.max_index_bytes)
    if not write:
        real = seg.log
        seg.log = NullFileRecords(real.path, real.fd, real.size, True)
    # Open (create, preallocate, mmap) both lazy indexes before timing, as a roll does.
    seg.offset_index
    seg.time_index
    return seg


def segment_loop(seg: LogSegment, batch: bytearray, count: int, n_calls: int, per_call: int) -> Callable[[], None]:
    """``n_calls`` appends of ``per_call`` copies of ``batch``, offsets assigned in place."""
    size = len(batch)
    buf = bytearray(batch * per_call)
    views = [memoryview(buf)[i * size:] for i in range(per_call)]

    def loop() -> None:
        append = seg.append
        offset = seg.base_offset
        for _ in range(n_calls):
            for v in views:
                set_base_offset(v, offset)
                offset += count
            append(buf)
    return loop


def file_records_loop(fr: FileRecords, batch: bytearray, count: int, n_batches: int) -> Callable[[], None]:
    def loop() -> None:
        append = fr.append
        offset = 0
        for _ in range(n_batches):
            set_base_offset(batch, offset)
            append(batch)
            offset += count
    return loop


def pwrite_loop(fd: int, batch: bytearray, n_batches: int) -> Callable[[], None]:
    def loop() -> None:
        pwrite = os.pwrite
        size = len(batch)
        pos = 0
        for _ in range(n_batches):
            pwrite(fd, batch, pos)
            pos += size
    return loop


SEGMENT = "LogSegment.append"
DD = "dd"
NO_WRITE = "LogSegment, no write"
FILE_RECORDS = "FileRecords.append"
PWRITE = "os.pwrite loop"


def coalesced_name(k: int) -> str:
    return f"LogSegment {k} batches/call"


def one_run(variant: str, d: str, batch: bytearray, count: int, n_batches: int,
            args: argparse.Namespace) -> tuple[float, float, float]:
    if variant in (SEGMENT, NO_WRITE) or variant.startswith("LogSegment ") and "/call" in variant:
        per_call = 1 if variant in (SEGMENT, NO_WRITE) else int(variant.split()[1])
        seg = open_segment(d, args, write=variant != NO_WRITE)
        try:
            return timed(segment_loop(seg, batch, count, n_batches // per_call, per_call))
        finally:
            seg.close()
    if variant == FILE_RECORDS:
        fr = FileRecords.open(log_file_name(d, 0))
        try:
            return timed(file_records_loop(fr, batch, count, n_batches))
        finally:
            fr.close()
    if variant == PWRITE:
        fd = os.open(os.path.join(d, "pwrite.bin"), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            return timed(pwrite_loop(fd, batch, n_batches))
        finally:
            os.close(fd)
    if variant == DD:
        cmd = ["dd", "if=/dev/zero", f"of={os.path.join(d, 'dd.bin')}", f"bs={len(batch)}",
               f"count={n_batches}"]
        return timed(lambda: subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL), resource.RUSAGE_CHILDREN)
    raise ValueError(variant)


def profile_append(d: str, batch: bytearray, count: int, n_batches: int, args: argparse.Namespace) -> str:
    seg = open_segment(d, args)
    try:
        loop = segment_loop(seg, batch, count, n_batches, 1)
        prof = cProfile.Profile()
        prof.enable()
        loop()
        prof.disable()
    finally:
        seg.close()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("tottime").print_stats(args.profile_top)
    text = out.getvalue()  # keep the table, drop pstats' preamble
    return text[text.find("   ncalls"):] if "   ncalls" in text else text


@section("append")
def section_append(args: argparse.Namespace, scratch: str) -> dict:
    batch, count = build_batch_of_size(args.batch_bytes)
    coalesce = [k for k in args.coalesce if k > 1]
    n_batches = args.total_mib * MiB // len(batch)
    for k in coalesce:
        n_batches -= n_batches % k  # every variant writes the same bytes
    total = n_batches * len(batch)
    variants = [SEGMENT, DD]
    if not args.no_layers:
        variants += [NO_WRITE, FILE_RECORDS, PWRITE]
    variants += [coalesced_name(k) for k in coalesce]
    print(f"## append: {n_batches:,} batches of {len(batch):,} bytes ({count} records of 100 bytes)"
          f" = {total / MiB:,.0f} MiB per run, into the page cache; median of {args.repeats}"
          f" runs per variant (variants interleaved, order rotated each repeat, files removed"
          f" between runs, {args.warmup} untimed warm-up run(s) first)")
    print(f"   LogSegment: index.interval.bytes={args.index_interval_bytes}, indexes preallocated to"
          f" {args.max_index_bytes:,} bytes and opened before timing; one batch per call"
          " unless stated")
    print(f"   dd: dd if=/dev/zero of=<run dir>/dd.bin bs={len(batch)} count={n_batches}"
          " (page cache, no oflag)")
    samples = Samples()
    for _ in range(args.warmup):
        d = fresh_dir(scratch, "run")
        one_run(SEGMENT, d, batch, count, n_batches, args)
        shutil.rmtree(d)
    for r in range(args.repeats):
        k = r % len(variants)
        for v in variants[k:] + variants[:k]:
            d = fresh_dir(scratch, "run")
            samples.add(v, *one_run(v, d, batch, count, n_batches, args))
            shutil.rmtree(d)
        sys.stdout.flush()
        print(f"  (repeat {r + 1}/{args.repeats} done)", file=sys.stderr, flush=True)

    dd = samples.median(DD)
    hdr = (f"{'variant':<26} | {'MB/s':>6} | {'batches/s':>9} | {'us/batch':>8} | {'vs dd':>5} |"
           f" {'best MB/s':>9} | {'CPU us/batch user+sys':>21} | {'MB/CPU-s':>8} | wall s per run")
    print(hdr)
    print("-" * (len(hdr) + 12))
    res: dict = {"batch_bytes": len(batch), "records_per_batch": count, "batches": n_batches,
                 "total_bytes": total, "repeats": args.repeats, "variants": {}}
    for v in variants:
        t = samples.median(v)
        user_us = samples.median(v, 1) / n_batches * 1e6
        sys_us = samples.median(v, 2) / n_batches * 1e6
        runs = " ".join(f"{x[0]:.2f}" for x in samples.runs[v])
        print(f"{v:<26} | {total / t / MB:>6,.0f} | {n_batches / t:>9,.0f} | {t / n_batches * 1e6:>8.2f} |"
              f" {dd / t:>4.2f}x | {total / samples.best(v) / MB:>9,.0f} |"
              f" {f'{user_us:.2f} + {sys_us:.2f}':>21} | {len(batch) / (user_us + sys_us):>8,.0f} | {runs}")
        res["variants"][v] = {
            "median_s": t, "mb_per_s": total / t / MB, "batches_per_s": n_batches / t,
            "us_per_batch": t / n_batches * 1e6, "best_mb_per_s": total / samples.best(v) / MB,
            "user_us_per_batch": user_us, "sys_us_per_batch": sys_us,
            "mb_per_cpu_s": len(batch) / (user_us + sys_us),
            "runs_wall_user_sys_s": samples.runs[v],
        }
    seg = res["variants"][SEGMENT]
    print(f"{SEGMENT}: {seg['mb_per_s']:,.0f} MB/s median ({seg['best_mb_per_s']:,.0f} best) ="
          f" {seg['mb_per_s'] / (total / dd / MB):.2f} x dd;"
          f" target >= 1,000 MB/s: {'MET' if seg['mb_per_s'] >= 1000 else 'NOT MET'} (median)")
    print("MB = 10^6 bytes. CPU: medians of getrusage user and system time (dd: the child's);"
          " MB/CPU-s = bytes per CPU second, what the wall rate would be if the process never"
          " waited for a CPU (wall - CPU = time spent runnable or blocked on a shared machine).")
    if args.profile or seg["mb_per_s"] < 1000:
        n = min(n_batches, max(1, args.profile_mib * MiB // len(batch)))
        d = fresh_dir(scratch, "profile")
        text = profile_append(d, batch, count, n, args)
        shutil.rmtree(d)
        print()
        print(f"### cProfile of {SEGMENT}, {n:,} batches of 16 KiB, one per call (sorted by own time;"
              " the profiler inflates per-call costs)")
        print(text.rstrip())
        res["profile"] = text
    return res


def reported_kib() -> int | None:
    """KiB of free memory the guest has reported to the hypervisor so far (None if not a VM
    with free page reporting)."""
    try:
        with open("/sys/module/page_reporting/parameters/reported_kib") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


# -- main --


# -- sections for the Log / LogManager (issue "Partitions and their life") --


def _rchar() -> int:
    """Bytes this process has read through read()/pread() so far (/proc/self/io rchar)."""
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    return -1


def _make_manager_dir(root: str, partitions: int, segments: int) -> None:
    """``partitions`` partitions of topic ``bench`` with ``segments`` segments each (every
    append rolls: segment.bytes is below two batches), then a clean shutdown."""
    from broker.storage.config import LogConfig
    from broker.storage.log_manager import LogManager

    batch = build_batch([(None, b"v" * 100)] * 8)
    mgr = LogManager(root, LogConfig())
    mgr.startup()
    mgr.create_topic("bench", partitions, {"segment.bytes": str(len(batch) + 10), "segment.index.bytes": "4096"})
    for (_, _), log in mgr.logs.items():
        for _ in range(segments):
            log.append(bytearray(batch))
    mgr.shutdown()


@section("start")
def section_start(args: argparse.Namespace, scratch: str) -> dict:
    """Clean start of P partitions x S segments: LogManager.startup() wall time and the bytes
    it read (a clean start must read no .log data beyond the last segments' batch headers)."""
    from broker.storage.log_manager import LogManager

    partitions, segments = args.partitions, args.segments
    root = fresh_dir(scratch, "start")
    t0 = time.perf_counter()
    _make_manager_dir(root, partitions, segments)
    build_s = time.perf_counter() - t0
    log_bytes = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(root)
                    for f in fs if f.endswith(".log"))
    walls, reads = [], []
    for _ in range(args.repeats):
        mgr = LogManager(root)
        r0 = _rchar()
        wall, _, _ = timed(mgr.startup)
        reads.append(_rchar() - r0)
        walls.append(wall)
        assert mgr.had_clean_shutdown and len(mgr.logs) == partitions
        assert sum(log.num_segments for log in mgr.logs.values()) == partitions * segments
        mgr.shutdown()
    med = statistics.median(walls)
    print(f"\n== clean start: {partitions} partitions x {segments} segments"
          f" ({partitions * segments} segments, {log_bytes / MiB:.1f} MiB of .log; built in {build_s:.1f} s)")
    print(f"  startup wall time   median {med:.3f} s   runs: {', '.join(f'{w:.3f}' for w in walls)}   (target < 1 s)")
    print(f"  bytes read (rchar)  median {statistics.median(reads):,.0f}   (.log total {log_bytes:,})")
    shutil.rmtree(root, ignore_errors=True)
    return {"partitions": partitions, "segments_per_partition": segments, "startup_s_median": med,
            "startup_s_runs": walls, "bytes_read_median": statistics.median(reads), "log_bytes": log_bytes}


@section("recovery")
def section_recovery(args: argparse.Namespace, scratch: str) -> dict:
    """Unclean recovery scan: a partition of ``--recovery-mib`` MiB in 1 GiB segments with no
    clean-shutdown marker and recovery point 0, loaded by Log.load: every batch is re-validated
    by CRC and both indexes rebuilt. Data is in the page cache (just written)."""
    from broker.storage.config import LogConfig
    from broker.storage.log import Log

    out = {}
    for batch_size in (16 * 1024, 1024):
        root = fresh_dir(scratch, f"recovery-{batch_size}")
        batch, count = build_batch_of_size(batch_size)
        cfg = LogConfig()
        log = Log.load(root, "bench", 0, cfg, had_clean_shutdown=True)
        total = args.recovery_mib * MiB
        written = 0
        while written < total:
            log.append(bytearray(batch))
            written += len(batch)
        log.close()  # trims; we then drop the marker semantics by loading as unclean
        walls = []
        for _ in range(args.repeats):
            wall, _, _ = timed(lambda: Log.load(root, "bench", 0, cfg, recovery_point=0,
                                                had_clean_shutdown=False).close())
            walls.append(wall)
        med = statistics.median(walls)
        rate = written / med / MB
        print(f"\n== unclean recovery scan, {batch_size // 1024} KiB batches: {written / MiB:.0f} MiB"
              f" ({written // len(batch):,} batches)")
        print(f"  median {med:.3f} s = {rate:,.0f} MB/s   runs: {', '.join(f'{w:.3f}' for w in walls)}"
              f"   (target >= 500 MB/s)")
        out[f"{batch_size}"] = {"bytes": written, "seconds_median": med, "MB_per_s": rate, "runs": walls}
        shutil.rmtree(root, ignore_errors=True)
    return out


@section("retention")
def section_retention(args: argparse.Namespace, scratch: str) -> dict:
    """Retention over 10,000 segments: (a) LogManager.cleanup_logs() over P partitions x S
    segments when nothing is due (each log stops at its first segment), (b) one Log of N
    segments whose records are all older than retention.ms: one pass renames N-1 segments to
    .deleted (rolling first), then delete_expired_files removes them."""
    from broker.storage.config import LogConfig
    from broker.storage.log import Log
    from broker.storage.log_manager import LogManager

    root = fresh_dir(scratch, "retention-mgr")
    _make_manager_dir(root, args.partitions, args.segments)
    mgr = LogManager(root)
    mgr.startup()
    walls = [timed(mgr.cleanup_logs)[0] for _ in range(args.repeats)]
    mgr.shutdown()
    shutil.rmtree(root, ignore_errors=True)
    idle = statistics.median(walls)
    print(f"\n== retention pass, nothing due: {args.partitions} x {args.segments} segments:"
          f" median {idle * 1000:.1f} ms")

    n = args.partitions * args.segments
    root = fresh_dir(scratch, "retention-log")
    batch = build_batch([(None, b"v" * 100)] * 8, base_offset=0)
    cfg = LogConfig(segment_bytes=len(batch) + 10, segment_index_bytes=4096, retention_ms=1000,
                    file_delete_delay_ms=0)
    clock = [1_000_000]
    log = Log.load(root, "bench", 0, cfg, had_clean_shutdown=True, now_ms=lambda: clock[0])
    old = build_batch([(None, b"v" * 100)] * 8)  # timestamps "now" in real time...
    for _ in range(n):
        log.append(bytearray(old))
    clock[0] = int(time.time() * 1000) + 10_000  # ...all older than retention.ms by now
    segs_before = log.num_segments
    wall_pass, _, _ = timed(log.delete_old_segments)
    wall_files, _, _ = timed(lambda: log.delete_expired_files(clock[0] + 1))
    print(f"== retention pass deleting {segs_before - log.num_segments:,} of {segs_before:,} segments:"
          f" {wall_pass * 1000:.0f} ms to remove and rename (.deleted), {wall_files * 1000:.0f} ms to unlink")
    log.close()
    shutil.rmtree(root, ignore_errors=True)
    return {"idle_pass_ms_median": idle * 1000, "segments": segs_before,
            "delete_pass_ms": wall_pass * 1000, "unlink_ms": wall_files * 1000}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default=",".join(SECTIONS),
                    help=f"comma-separated sections to run: {', '.join(SECTIONS)} (default: all)")
    ap.add_argument("--dir", help="scratch directory parent (default: a temp dir under the repo)")
    ap.add_argument("--repeats", type=int, default=5, help="runs per variant (median reported)")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    ap.add_argument("--quick", action="store_true", help="smaller totals and 3 repeats")
    g = ap.add_argument_group("start / retention")
    g.add_argument("--partitions", type=int, default=1000, help="partitions for the clean start (default 1000)")
    g.add_argument("--segments", type=int, default=10, help="segments per partition (default 10)")
    g = ap.add_argument_group("recovery")
    g.add_argument("--recovery-mib", type=int, default=256, help="MiB of .log scanned by the unclean recovery")
    g = ap.add_argument_group("append")
    g.add_argument("--total-mib", type=int, default=256,
                   help="MiB appended per run (default 256; see the module docstring on larger runs)")
    g.add_argument("--batch-bytes", type=int, default=16384, help="batch size (default 16 KiB)")
    g.add_argument("--index-interval-bytes", type=int, default=4096)
    g.add_argument("--max-index-bytes", type=int, default=10 * MiB)
    g.add_argument("--no-layers", action="store_true",
                   help="time only LogSegment.append, dd and --coalesce (skip the layer breakdown:"
                        " LogSegment without the write, FileRecords.append, a bare os.pwrite loop)")
    g.add_argument("--coalesce", type=lambda s: [int(x) for x in s.split(",") if x.strip()],
                   default=[16], metavar="K[,K...]",
                   help="also time LogSegment.append of K batches per call (default 16; '' for none)")
    g.add_argument("--warmup", type=int, default=1, help="untimed LogSegment runs first (default 1)")
    g.add_argument("--profile", action="store_true",
                   help="add a cProfile of LogSegment.append (automatic when below 1,000 MB/s)")
    g.add_argument("--profile-mib", type=int, default=256, help="MiB appended under cProfile")
    g.add_argument("--profile-top", type=int, default=15, help="rows of the profile to print")
    args = ap.parse_args(argv)
    if args.quick:
        args.total_mib = min(args.total_mib, 64)
        args.repeats = min(args.repeats, 3)
        args.profile_mib = min(args.profile_mib, 64)
        args.partitions = min(args.partitions, 100)
        args.recovery_mib = min(args.recovery_mib, 64)
    chosen = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in SECTIONS]
    if unknown:
        ap.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    if args.total_mib * MiB > 0x7FFFFFFF:
        ap.error("--total-mib must stay below 2 GiB: one segment's positions are int32")

    cmd = command_line()
    print("# bench_storage: log engine benchmarks")
    print(f"# command: {cmd}")
    print(f"# {machine_line()}")
    parent = args.dir or REPO
    os.makedirs(parent, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix=".bench-storage-", dir=parent)
    print(f"# scratch dir {scratch} ({fs_type(scratch)})")
    print()
    results: dict = {"command": cmd, "args": vars(args), "sections": {}}
    try:
        for name in chosen:
            reported0 = reported_kib()
            results["sections"][name] = SECTIONS[name](args, scratch)
            reported1 = reported_kib()
            if reported0 is not None and reported1 is not None:
                mib = (reported1 - reported0) / 1024
                results["sections"][name]["free_pages_reported_to_host_mib"] = mib
                print(f"(free page reporting: {mib:,.0f} MiB of free memory was handed back to the"
                      " host during this section; large amounts mean runs paid host page faults)")
            print()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"# reproduce: {cmd}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
        print(f"# JSON written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
