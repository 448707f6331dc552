#!/usr/bin/env python3
"""What incremental fetch sessions (KIP-227) save the broker: ``--consumers`` kafka-python
consumers (default configs: ``fetch_max_wait_ms`` 500, sessions on) each assigned every
partition of one idle topic of ``--partitions`` partitions, long-polling it, with
``enable_incremental_fetch_sessions`` on and off, alternating runs against the same broker.

Per run: the broker's CPU (from /proc, user + system) over a ``--seconds`` window after a
warm-up, the Fetch requests it answered in that window (``minibroker_requests_total``), and so
the broker's CPU per Fetch request and its CPU share. Reports the medians and the off/on ratio
of broker CPU (target >= 5x less with sessions).

    .venv/bin/python scripts/bench_fetch_sessions.py               # 20 consumers x 1000 partitions, 3 runs each
    .venv/bin/python scripts/bench_fetch_sessions.py --quick
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _benchutil import command_line, git_rev, machine_line, proc_cpu_s

from broker.testing import create_topic
from broker.testing.process import BrokerProcess

TOPIC = "idle"


def fetch_requests(broker: BrokerProcess) -> float:
    pattern = re.compile(r'^minibroker_requests_total{api="FETCH",version="\d+"} (\S+)$', re.M)
    return sum(float(v) for v in pattern.findall(broker.scrape()))


def run_once(broker: BrokerProcess, consumers: int, partitions: int, sessions: bool, warmup: float,
             seconds: float) -> tuple[float, float, float]:
    """(broker CPU share, Fetch requests/s, broker CPU µs per Fetch) over one window."""
    from kafka import KafkaConsumer, TopicPartition

    stop = threading.Event()
    ready = threading.Barrier(consumers + 1)
    errors: list[BaseException] = []

    def consume() -> None:
        c = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id=None, enable_auto_commit=False,
                          enable_incremental_fetch_sessions=sessions)
        try:
            c.assign([TopicPartition(TOPIC, p) for p in range(partitions)])
            c.poll(timeout_ms=100)
            ready.wait()
            while not stop.is_set():
                if c.poll(timeout_ms=1000):
                    raise RuntimeError("records in an idle topic")
        except BaseException as e:  # noqa: BLE001 - reported after the run
            errors.append(e)
            ready.abort()
        finally:
            c.close()

    threads = [threading.Thread(target=consume, daemon=True) for _ in range(consumers)]
    for t in threads:
        t.start()
    ready.wait(timeout=120)
    time.sleep(warmup)
    pid = broker.pid
    cpu0, req0, t0 = proc_cpu_s(pid), fetch_requests(broker), time.monotonic()
    time.sleep(seconds)
    cpu1, req1, t1 = proc_cpu_s(pid), fetch_requests(broker), time.monotonic()
    stop.set()
    for t in threads:
        t.join(timeout=30)
    if errors:
        raise errors[0]
    wall, cpu, reqs = t1 - t0, cpu1 - cpu0, req1 - req0
    return cpu / wall, reqs / wall, cpu / reqs * 1e6 if reqs else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--consumers", type=int, default=20)
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--quick", action="store_true", help="5 consumers x 200 partitions, 1 run of 5 s each")
    args = ap.parse_args()
    if args.quick:
        args.consumers, args.partitions, args.runs, args.seconds, args.warmup = 5, 200, 1, 5.0, 2.0
    print(f"# {command_line()}\n# {machine_line()}\n# git {git_rev()}")
    print(f"# {args.consumers} kafka-python consumers x {args.partitions} idle partitions, default configs"
          f" (fetch_max_wait_ms 500), {args.runs} runs of {args.seconds:.0f} s per mode, alternating")
    with tempfile.TemporaryDirectory(prefix="bench-sessions-") as d:
        broker = BrokerProcess(os.path.join(d, "data"), metrics=True,
                               overrides=[f"num.partitions={args.partitions}"]).start()
        try:
            create_topic(broker.bootstrap_servers, TOPIC, args.partitions)
            results: dict[bool, list[tuple[float, float, float]]] = {True: [], False: []}
            for i in range(args.runs):
                for sessions in (False, True):
                    r = run_once(broker, args.consumers, args.partitions, sessions, args.warmup, args.seconds)
                    results[sessions].append(r)
                    print(f"run {i + 1} sessions={'on ' if sessions else 'off'}: broker CPU {r[0] * 100:5.1f}%"
                          f"  {r[1]:7.1f} Fetch/s  {r[2]:8.1f} µs CPU/Fetch", flush=True)
        finally:
            broker.stop()
    med = {s: tuple(statistics.median(r[k] for r in results[s]) for k in range(3)) for s in results}
    print("\nmedians:")
    for s in (False, True):
        cpu, rate, per = med[s]
        print(f"  sessions {'on ' if s else 'off'}: broker CPU {cpu * 100:5.1f}%  {rate:7.1f} Fetch/s"
              f"  {per:8.1f} µs CPU/Fetch")
    print(f"  broker CPU without / with sessions: {med[False][0] / med[True][0]:.1f}x"
          f"  (per Fetch: {med[False][2] / med[True][2]:.1f}x; target >= 5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
