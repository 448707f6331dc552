#!/usr/bin/env python3
"""Share groups (KIP-932) against classic consumer groups, with confluent-kafka (librdkafka)
consumers, each polled by its own thread, against a real ``python -m broker serve`` process:

- **throughput**: ``--records`` records (100 bytes) consumed once, end to end, by 1, 3 and 6
  ``ShareConsumer`` members of one share group on a **one-partition** topic (explicit
  acknowledgement, ``commit_sync`` after each poll: every record's acceptance is durable before
  the next poll), against classic group consumers (``Consumer``, commit after each poll) on 1 and
  3 partitions; records/s and the broker's CPU (user + system, /proc) per record.
- **acknowledgement latency**: each ``commit_sync`` of the share consumers above (a
  ShareAcknowledge answered once ``__share_group_state`` is fsync'd), p50 and p99.

The runs alternate, so that machine noise hits every variant alike; medians of ``--repeats``.

    .venv/bin/python scripts/bench_share_groups.py --records 100000 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _benchutil import command_line, machine_line, proc_cpu_s
from confluent_kafka import Consumer, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from broker.testing import BrokerProcess, create_topic


def fill(bs: str, topic: str, n: int) -> None:
    p = Producer({"bootstrap.servers": bs, "linger.ms": 20, "batch.num.messages": 10000})
    value = b"x" * 100
    for i in range(n):
        while True:
            try:
                p.produce(topic, value)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0


def earliest(bs: str, group: str) -> None:
    admin = AdminClient({"bootstrap.servers": bs})
    r = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([r])[r].result(10)


def run_share(bs: str, topic: str, n: int, members: int, pid: int) -> tuple[float, float, list[float]]:
    """(records/s, broker CPU us per record, commit latencies in ms)."""
    group = f"share-{uuid.uuid4().hex[:8]}"
    earliest(bs, group)
    done = [0]
    lock = threading.Lock()
    latencies: list[float] = []
    stop = threading.Event()

    def member() -> None:
        c = ShareConsumer({"bootstrap.servers": bs, "group.id": group, "share.acknowledgement.mode": "explicit"})
        c.subscribe([topic])
        while not stop.is_set():
            batch = c.poll(0.1)
            msgs = [m for m in (list(batch) if batch is not None else []) if m.error() is None]
            if not msgs:
                continue
            for m in msgs:
                c.acknowledge(m)
            t0 = time.perf_counter()
            c.commit_sync(30)
            took = (time.perf_counter() - t0) * 1000
            with lock:
                latencies.append(took)
                done[0] += len(msgs)
                if done[0] >= n:
                    stop.set()
        c.close()

    cpu0 = proc_cpu_s(pid)
    t0 = time.perf_counter()
    threads = [threading.Thread(target=member, daemon=True) for _ in range(members)]
    for t in threads:
        t.start()
    stop.wait(300)
    elapsed = time.perf_counter() - t0
    cpu = proc_cpu_s(pid) - cpu0
    stop.set()
    for t in threads:
        t.join(60)
    return done[0] / elapsed, cpu / max(done[0], 1) * 1e6, latencies


def run_classic(bs: str, topic: str, n: int, members: int, pid: int) -> tuple[float, float]:
    group = f"classic-{uuid.uuid4().hex[:8]}"
    done = [0]
    lock = threading.Lock()
    stop = threading.Event()

    def member() -> None:
        c = Consumer({"bootstrap.servers": bs, "group.id": group, "auto.offset.reset": "earliest",
                      "enable.auto.commit": False})
        c.subscribe([topic])
        while not stop.is_set():
            msgs = [m for m in c.consume(500, 0.1) if m.error() is None]
            if not msgs:
                continue
            c.commit(asynchronous=False)
            with lock:
                done[0] += len(msgs)
                if done[0] >= n:
                    stop.set()
        c.close()

    cpu0 = proc_cpu_s(pid)
    t0 = time.perf_counter()
    threads = [threading.Thread(target=member, daemon=True) for _ in range(members)]
    for t in threads:
        t.start()
    stop.wait(300)
    elapsed = time.perf_counter() - t0
    cpu = proc_cpu_s(pid) - cpu0
    stop.set()
    for t in threads:
        t.join(60)
    return done[0] / elapsed, cpu / max(done[0], 1) * 1e6


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(command_line())
    print(machine_line())
    data = tempfile.mkdtemp(prefix="minibroker-share-")
    b = BrokerProcess(os.path.join(data, "d")).start()
    try:
        bs = b.bootstrap_servers
        create_topic(bs, "one", 1)
        create_topic(bs, "three", 3)
        fill(bs, "one", args.records)
        fill(bs, "three", args.records)
        variants = [("share, 1 partition", "one", 1, True), ("share, 1 partition", "one", 3, True),
                    ("share, 1 partition", "one", 6, True), ("classic, 1 partition", "one", 1, False),
                    ("classic, 3 partitions", "three", 3, False)]
        rates: dict[tuple[str, int], list[float]] = {}
        cpus: dict[tuple[str, int], list[float]] = {}
        lat: dict[tuple[str, int], list[float]] = {}
        for _ in range(args.repeats):
            for name, topic, members, share in variants:
                key = (name, members)
                if share:
                    r, c, ls = run_share(bs, topic, args.records, members, b.pid)
                    lat.setdefault(key, []).extend(ls)
                else:
                    r, c = run_classic(bs, topic, args.records, members, b.pid)
                rates.setdefault(key, []).append(r)
                cpus.setdefault(key, []).append(c)
        for (name, members), rs in rates.items():
            line = (f"{name}, {members} consumer(s): median {statistics.median(rs):9,.0f} records/s"
                    f" (runs: {', '.join(f'{x:,.0f}' for x in rs)}); broker CPU"
                    f" {statistics.median(cpus[(name, members)]):.1f} us/record")
            if (name, members) in lat:
                ls = lat[(name, members)]
                line += f"; commit_sync p50 {pct(ls, 0.5):.1f} ms, p99 {pct(ls, 0.99):.1f} ms ({len(ls)} commits)"
            print(line)
    finally:
        b.stop()
        shutil.rmtree(data, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
