#!/usr/bin/env python3
"""KIP-848's consumer group protocol against the classic one, with confluent-kafka (librdkafka)
consumers, each polled by its own thread, against a real ``python -m broker serve`` process
with the broker's defaults for both protocols (``group.consumer.heartbeat.interval.ms`` 5000,
``group.initial.rebalance.delay.ms`` 3000) and the clients' defaults:

- **join**: three fresh members subscribe at once to a 6-partition topic that a producer
  thread keeps writing to; the time from ``subscribe`` until every member owns two partitions
  and has consumed from each of them. ``classic`` is librdkafka's default (range, eager),
  ``cooperative`` is ``cooperative-sticky``, ``consumer`` is ``group.protocol=consumer``;
  ``ours-classic`` and ``ours-consumer`` are our client's ``Consumer`` with its defaults and
  ``group_protocol="consumer"``.
- **pause**: four members consume 60 partitions that get a record every 20 ms each; a fifth
  member joins. For each partition that keeps its owner, the longest gap between two consumed
  records in the 10 s after the join (the same window before the join is the noise floor);
  for the partitions that move, the gap until their new owner consumes.
- **heartbeat CPU**: 200 KIP-848 members heartbeating over one raw connection (no client
  library in the way): broker CPU (user + system, /proc) per ConsumerGroupHeartbeat.
- **large group** (``--large``): 1,000 raw-wire members, half subscribed to one topic and half
  to two (1,000 partitions each: the uniform assignor's mixed-subscription path), join at once
  (pipelined full heartbeats) and reconcile as clients do, heartbeating every 50 ms, until the
  group is Stable; on a broker that runs the assignor off the request path (the default,
  ``group.consumer.assignment.offload.min.members=100``) and one that runs it in every
  heartbeat that bumps the epoch (the setting at its maximum). Printed: seconds to Stable,
  broker CPU seconds, and the longest an ApiVersions of another client waited meanwhile.

Medians of ``--repeats`` runs; the command line is printed with the figures.

    .venv/bin/python scripts/bench_consumer_protocol.py --repeats 3
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _benchutil import command_line, machine_line, proc_cpu_s
from confluent_kafka import Consumer, Producer

from broker.testing import BrokerProcess, create_topic
from broker.testing.wire import Conn
from client.protocol.api import ApiKey

PROTOCOLS: dict[str, dict[str, str]] = {
    "classic": {},
    "cooperative": {"partition.assignment.strategy": "cooperative-sticky"},
    "consumer": {"group.protocol": "consumer"},
}


class Member:
    """A confluent-kafka consumer polled by its own thread; records (partition, time) of each
    record it consumes."""

    def __init__(self, bs: str, topic: str, group: str, protocol: str) -> None:
        self.c = Consumer({"bootstrap.servers": bs, "group.id": group, "auto.offset.reset": "latest",
                           "enable.auto.commit": True, **PROTOCOLS[protocol]})
        self.c.subscribe([topic])
        self.seen: list[tuple[int, float]] = []
        self.parts: set[int] = set()
        self.stop = False
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self) -> None:
        while not self.stop:
            m = self.c.poll(0.05)
            if m is not None and m.error() is None:
                self.seen.append((m.partition(), time.monotonic()))
            self.parts = {tp.partition for tp in self.c.assignment()}
        self.c.close()

    def close(self) -> None:
        self.stop = True
        self.t.join(30)


class OurMember:
    """The same as ``Member`` with our client (``client.consumer.Consumer``), polled by an
    asyncio loop on its own thread."""

    def __init__(self, bs: str, topic: str, group: str, protocol: str) -> None:
        self.args = (bs, topic, group, protocol)
        self.seen: list[tuple[int, float]] = []
        self.parts: set[int] = set()
        self.stop = False
        self.t = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)
        self.t.start()

    async def _run(self) -> None:
        from client.consumer import Consumer as OurConsumer

        bs, topic, group, protocol = self.args
        opts = {"group_protocol": "consumer"} if protocol == "ours-consumer" else {}
        async with OurConsumer(bs, group_id=group, auto_offset_reset="latest", **opts) as c:  # type: ignore[arg-type]
            c.subscribe([topic])
            while not self.stop:
                for tp, rows in (await c.getmany(timeout_ms=50)).items():
                    now = time.monotonic()
                    self.seen.extend((tp.partition, now) for _ in rows)
                self.parts = {tp.partition for tp in c.assignment()}

    def close(self) -> None:
        self.stop = True
        self.t.join(30)


#: the join figure's members: librdkafka's three, and our client's with either protocol
JOIN_PROTOCOLS = [*PROTOCOLS, "ours-classic", "ours-consumer"]


class Feeder:
    """A producer thread writing one record to every partition every ``every`` seconds."""

    def __init__(self, bs: str, topic: str, partitions: int, every: float) -> None:
        self.p = Producer({"bootstrap.servers": bs, "linger.ms": 5})
        self.stop = False
        self.args = (topic, partitions, every)
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self) -> None:
        topic, partitions, every = self.args
        while not self.stop:
            for p in range(partitions):
                self.p.produce(topic, b"x", partition=p)
            self.p.poll(0)
            time.sleep(every)
        self.p.flush(10)

    def close(self) -> None:
        self.stop = True
        self.t.join(30)


def wait(cond: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.005)
    return False


def join_time(bs: str, topic: str, protocol: str) -> float:
    group = f"join-{protocol}-{uuid.uuid4().hex[:6]}"
    t0 = time.monotonic()
    make = OurMember if protocol.startswith("ours-") else Member
    ms = [make(bs, topic, group, protocol) for _ in range(3)]

    def consuming() -> bool:
        if sorted(len(m.parts) for m in ms) != [2, 2, 2] or set().union(*(m.parts for m in ms)) != set(range(6)):
            return False
        return all(m.parts <= {p for p, _ in m.seen[-50:]} for m in ms)

    ok = wait(consuming, 60)
    elapsed = time.monotonic() - t0
    for m in ms:
        m.close()
    return elapsed if ok else float("nan")


def pause(bs: str, topic: str, protocol: str, window: float = 10.0) -> tuple[float, float, float, float]:
    """(max gap of unmoved partitions after the join, the same before it, median move gap,
    partitions moved), seconds."""
    group = f"pause-{protocol}-{uuid.uuid4().hex[:6]}"
    ms = [Member(bs, topic, group, protocol) for _ in range(4)]
    assert wait(lambda: set().union(*(m.parts for m in ms)) == set(range(60))
                and sorted(len(m.parts) for m in ms) == [15, 15, 15, 15], 60), "four members never settled"
    time.sleep(window)
    before = {p: i for i, m in enumerate(ms) for p in m.parts}
    t_join = time.monotonic()
    fifth = Member(bs, topic, group, protocol)
    ms.append(fifth)
    wait(lambda: len(fifth.parts) == 12 and all(len(m.parts) == 12 for m in ms), 60)
    time.sleep(max(0.0, t_join + window - time.monotonic()))
    after = {p: i for i, m in enumerate(ms) for p in m.parts}
    for m in ms:
        m.close()
    by_part: dict[int, list[float]] = {}
    for m in ms:
        for p, t in m.seen:
            by_part.setdefault(p, []).append(t)

    def max_gap(times: list[float], lo: float, hi: float) -> float:
        ts = sorted(t for t in times if lo <= t <= hi)
        return max((b - a for a, b in zip(ts, ts[1:])), default=hi - lo)

    kept = [p for p in range(60) if before.get(p) == after.get(p)]
    moved = [p for p in range(60) if p not in kept]
    after_gap = max(max_gap(by_part.get(p, []), t_join, t_join + window) for p in kept)
    before_gap = max(max_gap(by_part.get(p, []), t_join - window, t_join) for p in kept)
    move_gaps = [max_gap(by_part.get(p, []), t_join - 1, t_join + window) for p in moved]
    return after_gap, before_gap, statistics.median(move_gaps) if move_gaps else 0.0, float(len(moved))


def heartbeat_cpu(b: BrokerProcess, topic: str, members: int = 200, rounds: int = 10) -> float:
    """Broker CPU microseconds per ConsumerGroupHeartbeat (steady state, after the joins)."""
    group = f"hb-{uuid.uuid4().hex[:6]}"
    with Conn(b.port) as conn:
        epochs = {}
        for _ in range(members):
            mid = str(uuid.uuid4())
            r = conn.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
                "group_id": group, "member_id": mid, "member_epoch": 0, "instance_id": None, "rack_id": None,
                "rebalance_timeout_ms": 30000, "subscribed_topic_names": [topic], "subscribed_topic_regex": None,
                "server_assignor": None, "topic_partitions": []})
            epochs[mid] = r["member_epoch"]
        cpu0 = proc_cpu_s(b.pid)
        n = 0
        for _ in range(rounds):
            for mid in epochs:
                cid = conn.send(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
                    "group_id": group, "member_id": mid, "member_epoch": epochs[mid], "instance_id": None,
                    "rack_id": None, "rebalance_timeout_ms": -1, "subscribed_topic_names": None,
                    "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": None})
                _, r = conn.recv(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1)
                assert r["error_code"] == 0, r
                epochs[mid] = r["member_epoch"]
                n += 1
                del cid
        cpu = proc_cpu_s(b.pid) - cpu0
        for mid, e in epochs.items():
            conn.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
                "group_id": group, "member_id": mid, "member_epoch": -1, "instance_id": None, "rack_id": None,
                "rebalance_timeout_ms": -1, "subscribed_topic_names": None, "subscribed_topic_regex": None,
                "server_assignor": None, "topic_partitions": None})
    return cpu / n * 1e6


def _ping(port: int, worst: Any, stop: Any) -> None:
    """ApiVersions every 10 ms until ``stop`` is set; the longest round trip into ``worst`` (a shared double)."""
    with Conn(port, timeout=60) as c:
        while not stop.is_set():
            t = time.perf_counter()
            c.call(ApiKey.API_VERSIONS, 0, {})
            worst.value = max(worst.value, time.perf_counter() - t)
            time.sleep(0.01)


def large_join(data: str, offload: bool, members: int = 1000, partitions: int = 1000) -> tuple[float, float, float]:
    """(seconds until Stable, broker CPU seconds, another client's longest wait in seconds: an
    ApiVersions every 10 ms from a process of its own, so that this one's work does not count)."""
    import multiprocessing
    threshold = "100" if offload else "2147483647"
    b = BrokerProcess(os.path.join(data, f"large-{offload}-{uuid.uuid4().hex[:6]}"),
                      overrides=[f"group.consumer.assignment.offload.min.members={threshold}"]).start()
    try:
        create_topic(b.bootstrap_servers, "la", partitions)
        create_topic(b.bootstrap_servers, "lb", partitions)
        subs = {str(uuid.uuid4()): (["la"] if i % 2 else ["la", "lb"]) for i in range(members)}
        epochs = dict.fromkeys(subs, 0)
        owned: dict[str, list[dict[str, object]]] = {m: [] for m in subs}
        cpu0, t0 = proc_cpu_s(b.pid), time.monotonic()
        ctx = multiprocessing.get_context("spawn")
        worst, stop = ctx.Value("d", 0.0), ctx.Event()
        pinging = ctx.Process(target=_ping, args=(b.port, worst, stop), daemon=True)
        pinging.start()
        with Conn(b.port, timeout=120) as conn:
            while time.monotonic() - t0 < 300:
                for m, topics in subs.items():
                    conn.send(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
                        "group_id": "large", "member_id": m, "member_epoch": epochs[m], "instance_id": None,
                        "rack_id": None, "rebalance_timeout_ms": 60000 if epochs[m] == 0 else -1,
                        "subscribed_topic_names": topics if epochs[m] == 0 else None, "subscribed_topic_regex": None,
                        "server_assignor": None, "topic_partitions": owned[m]})
                for m in subs:
                    _, r = conn.recv(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1)
                    assert r["error_code"] == 0, r
                    epochs[m] = r["member_epoch"]
                    if r["assignment"] is not None:
                        owned[m] = r["assignment"]["topic_partitions"]
                d = conn.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": ["large"],
                                                                 "include_authorized_operations": False})["groups"][0]
                if d["group_state"] == "Stable" and set(epochs.values()) == {d["group_epoch"]}:
                    break
                time.sleep(0.05)
            else:
                raise AssertionError("the large group did not become Stable in 300 s")
            took = time.monotonic() - t0
        stop.set()
        pinging.join(10)
        return took, proc_cpu_s(b.pid) - cpu0, worst.value
    finally:
        b.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3, help="runs of each measurement (default 3)")
    ap.add_argument("--skip-pause", action="store_true", help="only the join and heartbeat figures")
    ap.add_argument("--large", action="store_true", help="only the large-group figures (offload vs inline)")
    args = ap.parse_args()
    print(command_line())
    print(machine_line())
    data = tempfile.mkdtemp(prefix="minibroker-cgp-")
    if args.large:
        try:
            res = {True: [], False: []}  # type: dict[bool, list[tuple[float, float, float]]]
            for _ in range(args.repeats):
                for offload in (True, False):  # alternating: machine noise hits both alike
                    res[offload].append(large_join(data, offload))
            for offload, rs in res.items():
                print(f"1,000 members (mixed subscriptions, 2,000 partitions) join, assignor "
                      f"{'off the request path' if offload else 'in the heartbeat':>21}: Stable after median "
                      f"{statistics.median(r[0] for r in rs):5.1f} s, broker CPU {statistics.median(r[1] for r in rs):5.1f} s,"
                      f" another client's longest wait {statistics.median(r[2] for r in rs) * 1000:5.0f} ms"
                      f" (runs: {'; '.join(f'{r[0]:.1f}/{r[1]:.1f}/{r[2] * 1000:.0f}' for r in rs)})")
        finally:
            shutil.rmtree(data, ignore_errors=True)
        return 0
    # Kafka's defaults for both protocols (the test harness would set the initial delay to 0)
    b = BrokerProcess(os.path.join(data, "d"), overrides=["group.initial.rebalance.delay.ms=3000"]).start()
    try:
        bs = b.bootstrap_servers
        create_topic(bs, "join6", 6)
        create_topic(bs, "pause60", 60)
        feed6 = Feeder(bs, "join6", 6, 0.01)
        joins: dict[str, list[float]] = {p: [] for p in JOIN_PROTOCOLS}
        for _ in range(args.repeats):
            for p in JOIN_PROTOCOLS:  # alternating, so that machine noise hits every protocol alike
                joins[p].append(join_time(bs, "join6", p) * 1000)
        feed6.close()
        for p, xs in joins.items():
            print(f"join, 3 members, {p:>13}: median {statistics.median(xs):7.0f} ms"
                  f" (runs: {', '.join(f'{x:.0f}' for x in xs)})")
        if not args.skip_pause:
            feed = Feeder(bs, "pause60", 60, 0.02)
            res: dict[str, list[tuple[float, float, float, float]]] = {p: [] for p in PROTOCOLS}
            for _ in range(args.repeats):
                for p in PROTOCOLS:
                    res[p].append(pause(bs, "pause60", p))
            feed.close()
            for p, rs in res.items():
                print(f"5th member joins 4 (60 partitions), {p:>11}: partitions that stay put, longest gap"
                      f" median {statistics.median(r[0] for r in rs) * 1000:6.0f} ms (window before the join:"
                      f" {statistics.median(r[1] for r in rs) * 1000:.0f} ms); partitions moved"
                      f" {statistics.median(r[3] for r in rs):.0f}, their gap median"
                      f" {statistics.median(r[2] for r in rs) * 1000:.0f} ms"
                      f" (runs: {'; '.join(f'{r[0] * 1000:.0f}/{r[1] * 1000:.0f}/{r[2] * 1000:.0f}' for r in rs)})")
        cpu = [heartbeat_cpu(b, "join6") for _ in range(args.repeats)]
        print(f"broker CPU per ConsumerGroupHeartbeat (200 members, steady): median {statistics.median(cpu):.0f} us"
              f" (runs: {', '.join(f'{x:.0f}' for x in cpu)})")
    finally:
        b.stop()
        shutil.rmtree(data, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
