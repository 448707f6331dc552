#!/usr/bin/env python3
"""Log compaction benchmark: cleaner throughput, and what the cleaner costs a steady producer,
with the cleaning in a cleaner thread and in a worker process (``log.cleaner.mode``).

1. Throughput (storage layer only, driven from this process): a compacted log of
   ``--dirty-mb`` MB of uncompressed batches of 100 records, values of 100 B or 1 KiB, keys
   chosen so that 10 % or 90 % of the records repeat an earlier key; one
   ``LogCleaner.clean_once()`` over all of it (map, rewrite, swap) per ``--modes`` entry.
   Reported: MB/s of dirty log (bytes of the segments cleaned / the cleaning's own time, from
   the map to the last swap: a worker process's start is not in it), the map phase's share,
   the records kept. Median of ``--repeats``.
2. Produce latency (broker subprocesses, our client): a steady producer sends one 100-byte
   record every ``--interval-ms`` to a plain topic, acks=1, awaiting each answer, for
   ``--seconds``; meanwhile a writer keeps a compacted topic dirty (``--dirty-rate-mb`` MB/s
   over ``--dirty-keys`` keys), so the cleaner keeps rewriting it (its share of the run is
   printed). One run per setting: the cleaner off (``log.cleaner.enable=false``) and each of
   ``--modes``; the settings alternate (the order rotates) over ``--latency-repeats`` rounds,
   so that the machine's other load hits them alike. Reported per run: p50/p99/p99.9 ack
   latency of the steady producer, the CPU (share of one core over the measured seconds, from
   ``/proc``) of the broker process and of its children (the cleaner worker processes), what
   the cleaner cleaned, the load average; then the medians per setting, and the p99 each mode
   adds: the median over the rounds of its p99 minus the same round's cleaner-off p99.

Prints the command line that reproduces the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any, NamedTuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from scripts._benchutil import child_pids, command_line, machine_line, proc_cpu_s


def build_log(directory: str, dirty_mb: int, value_size: int, dup: float):  # type: ignore[no-untyped-def]
    from broker.storage.config import LogConfig
    from broker.storage.log import Log
    from client.records import RecordBatchBuilder

    cfg = LogConfig(cleanup_policy="compact", segment_bytes=64 << 20, min_cleanable_dirty_ratio=0.01,
                    file_delete_delay_ms=0, retention_ms=-1)
    log = Log.load(os.path.join(directory, "bench-0"), "bench", 0, cfg)
    record_size = value_size + 20
    n = dirty_mb * (1 << 20) // record_size
    distinct = max(1, int(n * (1 - dup)))
    value = b"v" * value_size
    i = 0
    ts = int(time.time() * 1000)
    while i < n:
        b = RecordBatchBuilder()
        for _ in range(100):
            # the first `distinct` records are new keys; the rest repeat earlier ones
            key = b"key-%012d" % (i if i < distinct else (i * 7919) % distinct)
            b.append(value, key=key, timestamp=ts)
            i += 1
        log.append(b.build())
    log.roll()
    return log


def throughput(args: argparse.Namespace) -> list[str]:
    from broker.storage.cleaner import CleanerConfig, LogCleaner

    rows = []
    for value_size in (100, 1024):
        for dup in (0.1, 0.9):
            for mode in args.modes:
                rates, map_shares, kept = [], [], []
                for _ in range(args.repeats):
                    tmp = tempfile.mkdtemp(prefix="bench-cleaner-", dir=args.dir)
                    cleaner = None
                    try:
                        log = build_log(tmp, args.dirty_mb, value_size, dup)
                        size = sum(s.size for s in log.segments.values())
                        cleaner = LogCleaner(CleanerConfig(mode=mode), tmp, lambda log=log: {("bench", 0): log})
                        assert cleaner.clean_once()
                        stats = cleaner.last_stats[("bench", 0)]
                        rates.append(size / stats.elapsed_s / 1e6)
                        map_shares.append((stats.map_done - stats.start) / stats.elapsed_s)
                        kept.append(stats.messages_written / max(1, stats.messages_read))
                        log.close()
                    finally:
                        if cleaner is not None:
                            cleaner.shutdown()
                        shutil.rmtree(tmp, ignore_errors=True)
                rows.append(f"  values {value_size:>5} B, {int(dup * 100):>2}% duplicate keys, {mode:>7}: "
                            f"{statistics.median(rates):6.1f} MB/s of dirty log (map phase"
                            f" {100 * statistics.median(map_shares):.0f}% of the time;"
                            f" {100 * statistics.median(kept):.0f}% of records kept)")
    return rows


async def steady_producer(bootstrap: str, seconds: float, interval_ms: float) -> list[float]:
    from client import Producer

    lat: list[float] = []
    async with Producer(bootstrap, acks=1, linger_ms=0, request_timeout_ms=10000) as p:
        await p.send("steady", b"warm-up", partition=0)
        end = time.perf_counter() + seconds
        nxt = time.perf_counter()
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            await p.send("steady", b"x" * 100, partition=0)
            lat.append((time.perf_counter() - t0) * 1000)
            nxt += interval_ms / 1000
            delay = nxt - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
    return lat


def dirty_writer_process(bootstrap: str, rate_mb: float, keys: int, stop: Any, sent: Any) -> None:
    """The dirty writer runs in a process of its own: in this one, its Python work would take
    the GIL from the steady producer and show up in the latencies being measured."""
    sent.value = asyncio.run(dirty_writer(bootstrap, rate_mb, keys, stop))


async def dirty_writer(bootstrap: str, rate_mb: float, keys: int, stop: Any) -> int:
    from client import Producer

    sent = 0
    value = b"d" * 100
    async with Producer(bootstrap, acks=1, linger_ms=5, batch_size=65536, request_timeout_ms=10000) as p:
        i = 0
        t0 = time.perf_counter()
        while not stop.is_set():
            for _ in range(1000):
                p.send_nowait("dirty", value, key=b"key-%07d" % ((i * 7919) % keys), partition=0)
                i += 1
            sent += 1000 * 120
            await p.drain()
            ahead = sent / (rate_mb * 1e6) - (time.perf_counter() - t0)
            if ahead > 0:
                await asyncio.sleep(ahead)
        await p.flush()
    return sent


class LatencyRun(NamedTuple):
    latencies: list[float]
    broker_cpu: float    # share of one core over the measured seconds
    worker_cpu: float    # the broker's child processes (cleaner workers), likewise
    note: str


def latency_run(args: argparse.Namespace, setting: str) -> LatencyRun:
    """One run: ``setting`` is ``off`` (no cleaner) or a ``log.cleaner.mode``."""
    from broker.testing.process import BrokerProcess
    from client.sync import SyncAdmin

    tmp = tempfile.mkdtemp(prefix="bench-cleaner-lat-", dir=args.dir)
    overrides = ["log.cleaner.backoff.ms=200"]
    overrides += ["log.cleaner.enable=false"] if setting == "off" else [f"log.cleaner.mode={setting}"]
    b = BrokerProcess(os.path.join(tmp, "data"), overrides).start()
    try:
        with SyncAdmin(b.bootstrap) as admin:
            admin.create_topic("steady", num_partitions=1)
            admin.create_topic("dirty", num_partitions=1, configs={
                "cleanup.policy": "compact", "segment.bytes": str(args.segment_mb << 20),
                "min.cleanable.dirty.ratio": str(args.dirty_ratio)})
        ctx = multiprocessing.get_context("spawn")
        stop = ctx.Event()
        sent = ctx.Value("q", 0)
        writer = ctx.Process(target=dirty_writer_process,
                             args=(b.bootstrap, args.dirty_rate_mb, args.dirty_keys, stop, sent))
        writer.start()
        time.sleep(args.warmup)
        children = child_pids(b.pid)
        cpu0 = proc_cpu_s(b.pid), {c: proc_cpu_s(c) for c in children}
        t0 = time.perf_counter()
        lat = asyncio.run(steady_producer(b.bootstrap, args.seconds, args.interval_ms))
        wall = time.perf_counter() - t0
        broker_cpu = (proc_cpu_s(b.pid) - cpu0[0]) / wall
        worker_cpu = sum(proc_cpu_s(c) - cpu0[1].get(c, 0.0) for c in set(children) | set(child_pids(b.pid))) / wall
        stop.set()
        writer.join()
        text = b.log_text()
    finally:
        b.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    cleaned = re.findall(r"cleaned log dirty-0 .*?: ([\d.]+) MB of log processed in ([\d.]+) s", text)
    mb = sum(float(m) for m, _ in cleaned)
    busy = sum(float(s) for _, s in cleaned)
    note = (f"{len(cleaned)} cleanings, {mb:.0f} MB cleaned, cleaner busy {busy:.1f} s of"
            f" {args.warmup + args.seconds:.0f} s; dirty writer {sent.value / 1e6:.0f} MB;"
            f" load {os.getloadavg()[0]:.1f}")
    return LatencyRun(lat, broker_cpu, worker_cpu, note)


def latency(args: argparse.Namespace) -> list[str]:
    settings = ["off", *args.modes]
    runs: dict[str, list[LatencyRun]] = {s: [] for s in settings}
    rows = []
    for r in range(args.latency_repeats):
        order = settings[r % len(settings):] + settings[:r % len(settings)]
        for setting in order:
            run = latency_run(args, setting)
            runs[setting].append(run)
            lat = run.latencies
            print(f"  round {r + 1} {setting:>7}: p50 {pct(lat, 50):.2f} ms  p99 {pct(lat, 99):.2f} ms"
                  f"  p99.9 {pct(lat, 99.9):.2f} ms  broker CPU {100 * run.broker_cpu:3.0f}%"
                  f"  worker CPU {100 * run.worker_cpu:3.0f}%  ({len(lat)} sends; {run.note})", flush=True)
    med = statistics.median
    rows.append(f"medians of {args.latency_repeats} rounds:")
    for setting in settings:
        rs = runs[setting]
        rows.append(f"  {setting:>7}: p50 {med(pct(x.latencies, 50) for x in rs):.2f} ms"
                    f"  p99 {med(pct(x.latencies, 99) for x in rs):.2f} ms"
                    f"  p99.9 {med(pct(x.latencies, 99.9) for x in rs):.2f} ms"
                    f"  broker CPU {100 * med(x.broker_cpu for x in rs):.0f}%"
                    f"  worker CPU {100 * med(x.worker_cpu for x in rs):.0f}%")
    for mode in args.modes:
        added = [pct(m.latencies, 99) - pct(o.latencies, 99) for m, o in zip(runs[mode], runs["off"], strict=True)]
        rows.append(f"  added by the cleaner ({mode}): p99 {med(added):+.2f} ms (rounds: "
                    f"{', '.join(f'{a:+.2f}' for a in added)}; target < 1 ms)")
    return rows


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(p / 100 * len(s)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dirty-mb", type=int, default=32, help="size of the dirty log per throughput case (32)")
    ap.add_argument("--repeats", type=int, default=1, help="throughput runs per case (median; 1)")
    ap.add_argument("--seconds", type=float, default=20.0, help="steady producer duration per run (20)")
    ap.add_argument("--warmup", type=float, default=10.0, help="dirty writing before measuring (10)")
    ap.add_argument("--interval-ms", type=float, default=2.0, help="steady producer: one record every N ms (2)")
    ap.add_argument("--dirty-rate-mb", type=float, default=4.0, help="compacted topic writes, MB/s (4)")
    ap.add_argument("--dirty-keys", type=int, default=300_000,
                    help="distinct keys of the compacted topic (300000: a ~36 MB clean section to recopy)")
    ap.add_argument("--segment-mb", type=int, default=2, help="segment.bytes of the compacted topic, MiB (2)")
    ap.add_argument("--dirty-ratio", type=float, default=0.01,
                    help="min.cleanable.dirty.ratio of the compacted topic (0.01: clean after every roll)")
    ap.add_argument("--modes", type=lambda v: v.split(","), default=["thread", "process"],
                    help="log.cleaner.mode values to compare, comma-separated (thread,process)")
    ap.add_argument("--latency-repeats", type=int, default=3,
                    help="latency rounds: one run per setting each, medians (3)")
    ap.add_argument("--skip", choices=("throughput", "latency"), help="skip one part")
    ap.add_argument("--dir", default=None, help="where to put the logs (default: the temp dir)")
    args = ap.parse_args()
    print(f"# {command_line()}")
    print(f"# {machine_line()}")
    if args.skip != "throughput":
        print(f"cleaner throughput ({args.dirty_mb} MB dirty log, uncompressed batches of 100 records, one cleaner):")
        for row in throughput(args):
            print(row, flush=True)
    if args.skip != "latency":
        print(f"steady producer ack latency (acks=1, one 100 B record every {args.interval_ms} ms for"
              f" {args.seconds:.0f} s; a compacted topic written at {args.dirty_rate_mb} MB/s meanwhile):", flush=True)
        for row in latency(args):
            print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
