#!/usr/bin/env python3
"""Consumer groups with our client against a real ``python -m broker serve`` process (the test
harness's settings, so ``group.initial.rebalance.delay.ms=0``):

- **join**: three fresh consumers of a new group on a 6-partition topic (one record per
  partition), connected beforehand; the time from their ``subscribe`` to every one of them
  having handed out a record (FindCoordinator, JoinGroup twice each (KIP-394), SyncGroup,
  OffsetFetch, ListOffsets, Fetch);
- **commit, 1 client**: sequential awaited OffsetCommit round trips of one client (each is
  answered once its ``__consumer_offsets`` record is fsync'd);
- **commit, N clients**: N clients (own connections, own groups) committing concurrently, in
  all (group commit: one fsync answers every commit waiting on the same file).

Medians of ``--repeats`` runs; the command line is printed with the figures.

    .venv/bin/python scripts/bench_groups.py --repeats 5
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _benchutil import command_line, machine_line

from broker.testing import BrokerProcess
from client.admin import Admin
from client.consumer import Consumer
from client.producer import Producer


async def join_time(bootstrap: str, topic: str) -> tuple[float, int]:
    """Seconds from subscribe to all three consuming, and the generation they ended in."""
    group = f"bench-{uuid.uuid4().hex[:8]}"
    cs = [Consumer(bootstrap, group_id=group, auto_offset_reset="earliest", fetch_max_wait_ms=100) for _ in range(3)]
    for c in cs:
        await c.start()
    try:
        t0 = time.perf_counter()
        for c in cs:
            c.subscribe([topic])

        async def first_record(c: Consumer) -> None:
            while not await c.getmany(timeout_ms=1000, max_records=1):
                pass

        await asyncio.wait_for(asyncio.gather(*(first_record(c) for c in cs)), 60)
        elapsed = time.perf_counter() - t0
        return elapsed, max(c.generation_id for c in cs)
    finally:
        for c in cs:
            await c.close()


async def commit_rate(bootstrap: str, topic: str, clients: int, seconds: float) -> float:
    """OffsetCommit round trips per second over ``clients`` concurrent committers."""
    cs = [Consumer(bootstrap, group_id=f"bench-commit-{uuid.uuid4().hex[:8]}", enable_auto_commit=False)
          for _ in range(clients)]
    await asyncio.gather(*(c.start() for c in cs))
    for c in cs:
        await c.commit({(topic, 0): 0})  # connections and coordinator lookups out of the timing
    done = 0
    stop = time.perf_counter() + seconds

    async def loop(c: Consumer) -> None:
        nonlocal done
        i = 1
        while time.perf_counter() < stop:
            await c.commit({(topic, 0): i})
            i += 1
            done += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(loop(c) for c in cs))
    elapsed = time.perf_counter() - t0
    await asyncio.gather(*(c.close() for c in cs))
    return done / elapsed


async def run(args: argparse.Namespace, bootstrap: str) -> None:
    topic = "bench-groups"
    async with Admin(bootstrap) as admin:
        await admin.create_topic(topic, 6)
    async with Producer(bootstrap) as p:
        for part in range(6):
            p.send_nowait(topic, b"x", partition=part)
        await p.flush()
    joins, gens = [], []
    for _ in range(args.repeats):
        s, gen = await join_time(bootstrap, topic)
        joins.append(s * 1000)
        gens.append(gen)
    one = [await commit_rate(bootstrap, topic, 1, args.seconds) for _ in range(args.repeats)]
    many = [await commit_rate(bootstrap, topic, args.clients, args.seconds) for _ in range(args.repeats)]
    print(f"3 fresh consumers, subscribe -> all consuming: median {statistics.median(joins):.0f} ms"
          f" (runs: {', '.join(f'{x:.0f}' for x in joins)}; final generations {gens}; target < 300 ms)")
    print(f"OffsetCommit round trips, 1 client:  median {statistics.median(one):,.0f}/s"
          f" (runs: {', '.join(f'{x:,.0f}' for x in one)})")
    print(f"OffsetCommit round trips, {args.clients} concurrent clients: median {statistics.median(many):,.0f}/s"
          f" in all (runs: {', '.join(f'{x:,.0f}' for x in many)})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5, help="runs of each measurement (default 5)")
    ap.add_argument("--seconds", type=float, default=2.0, help="length of each commit run (default 2)")
    ap.add_argument("--clients", type=int, default=100, help="concurrent committers (default 100)")
    args = ap.parse_args()
    print(command_line())
    print(machine_line())
    data = tempfile.mkdtemp(prefix="minibroker-groups-")
    b = BrokerProcess(os.path.join(data, "d")).start()
    try:
        asyncio.run(run(args, b.bootstrap))
    finally:
        b.stop()
        shutil.rmtree(data, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
