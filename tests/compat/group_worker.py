"""A group consumer in its own process, for tests/compat/test_groups.py: subscribes with one
of the Kafka client libraries, processes records (appends ``partition offset`` lines to
``--out``, flushed), commits after each poll, and writes its current assignment to
``--out``.assignment at every rebalance. It stops cleanly (commit, close, LeaveGroup) when
``--stop`` appears, and can be SIGKILLed to play a crashed member.

    python -m tests.compat.group_worker confluent BOOTSTRAP TOPIC GROUP --out F --stop F [--instance ID]

Its log (stdout and stderr, the test's ``<name>.log``) has the group protocol's steps;
``GW_DEBUG=1`` in the environment adds kafka-python's whole DEBUG log (requests and answers).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import time
from typing import Any


class Sink:
    def __init__(self, path: str) -> None:
        self.f = open(path, "a", buffering=1)  # lives as long as the process
        self.path = path
        self.revocations = 0

    def record(self, partition: int, offset: int) -> None:
        self.f.write(f"{partition} {offset} {time.time():.4f}\n")

    def assignment(self, parts: list[int], revoked: bool = False) -> None:
        if revoked:
            self.revocations += 1
        tmp = self.path + ".assignment.tmp"
        with open(tmp, "w") as f:
            f.write(" ".join(map(str, sorted(parts))) + f"\nrevocations {self.revocations}\n")
        os.replace(tmp, self.path + ".assignment")


def run_confluent(a: argparse.Namespace, sink: Sink) -> None:
    from confluent_kafka import Consumer

    conf: dict[str, Any] = {"bootstrap.servers": a.bootstrap, "group.id": a.group, "auto.offset.reset": "earliest",
                            "enable.auto.commit": False, "client.id": a.name}
    if a.protocol == "consumer":  # KIP-848: the broker assigns, sets the session and heartbeat
        conf["group.protocol"] = "consumer"
        if a.assignor in ("uniform", "range"):
            conf["group.remote.assignor"] = a.assignor
    else:
        conf.update({"session.timeout.ms": a.session_ms, "heartbeat.interval.ms": 500,
                     "partition.assignment.strategy": a.assignor or "range"})
    if a.instance:
        conf["group.instance.id"] = a.instance
    c = Consumer(conf)
    current: set[int] = set()

    def on_assign(consumer: Any, parts: list[Any]) -> None:
        current.clear()
        current.update(p.partition for p in parts)
        sink.assignment(sorted(current))

    def on_revoke(consumer: Any, parts: list[Any]) -> None:
        current.difference_update(p.partition for p in parts)
        sink.assignment(sorted(current), revoked=bool(parts))

    if a.protocol == "consumer":  # incremental: on_assign gets only what is added
        def on_assign(consumer: Any, parts: list[Any]) -> None:
            current.update(p.partition for p in parts)
            sink.assignment(sorted(current))

    c.subscribe([a.topic], on_assign=on_assign, on_revoke=on_revoke)
    while not os.path.exists(a.stop):
        msgs = c.consume(100, timeout=0.2)
        good = [m for m in msgs if m.error() is None]
        for m in good:
            sink.record(m.partition(), m.offset())
        if good:
            c.commit(asynchronous=False)
    c.close()


def run_kafka_python(a: argparse.Namespace, sink: Sink) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    assignor = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}[a.assignor or "range"]
    c = KafkaConsumer(bootstrap_servers=a.bootstrap, group_id=a.group, auto_offset_reset="earliest",
                      enable_auto_commit=False, session_timeout_ms=a.session_ms, heartbeat_interval_ms=500,
                      client_id=a.name, partition_assignment_strategy=[assignor], request_timeout_ms=30000)

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: Any) -> None:
            sink.assignment([], revoked=bool(revoked))

        def on_partitions_assigned(self, assigned: Any) -> None:
            sink.assignment([tp.partition for tp in assigned])

    c.subscribe([a.topic], listener=Listener())
    while not os.path.exists(a.stop):
        batch = c.poll(timeout_ms=200)
        n = 0
        for records in batch.values():
            for r in records:
                sink.record(r.partition, r.offset)
                n += 1
        if n:
            c.commit()
    c.close()


async def run_aiokafka(a: argparse.Namespace, sink: Sink) -> None:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    assignor = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}[a.assignor or "range"]
    c = AIOKafkaConsumer(bootstrap_servers=a.bootstrap, group_id=a.group, auto_offset_reset="earliest",
                         enable_auto_commit=False, session_timeout_ms=a.session_ms, heartbeat_interval_ms=500,
                         client_id=a.name, partition_assignment_strategy=[assignor])

    class Listener(ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked: Any) -> None:
            sink.assignment([], revoked=bool(revoked))

        async def on_partitions_assigned(self, assigned: Any) -> None:
            sink.assignment([tp.partition for tp in assigned])

    await c.start()
    c.subscribe([a.topic], listener=Listener())
    try:
        await consume_and_commit(c, a, sink)
    finally:
        await c.stop()


async def consume_and_commit(c: Any, a: argparse.Namespace, sink: Sink) -> None:
    """An asyncio consumer's loop (aiokafka's or ours): record each record, commit after each
    batch, until the stop file appears."""
    while not os.path.exists(a.stop):
        batch = await c.getmany(timeout_ms=200)
        n = 0
        for records in batch.values():
            for r in records:
                sink.record(r.partition, r.offset)
                n += 1
        if n:
            await c.commit()


async def run_minibroker(a: argparse.Namespace, sink: Sink) -> None:
    """Our client (client.Consumer); with --protocol consumer its KIP-848 member, whose listener
    hears each incremental change."""
    from client.consumer import Consumer
    from client.group.coordinator import ConsumerRebalanceListener

    current: set[int] = set()

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: Any) -> None:
            current.difference_update(tp.partition for tp in revoked)
            sink.assignment(sorted(current), revoked=bool(revoked))

        def on_partitions_assigned(self, assigned: Any) -> None:
            if a.protocol != "consumer":
                current.clear()
            current.update(tp.partition for tp in assigned)
            sink.assignment(sorted(current))

    opts: dict[str, Any] = {"group_protocol": a.protocol} if a.protocol == "consumer" else \
        {"session_timeout_ms": a.session_ms, "heartbeat_interval_ms": 500}
    if a.protocol == "consumer" and a.assignor in ("uniform", "range"):
        opts["group_remote_assignor"] = a.assignor
    c = Consumer(a.bootstrap, group_id=a.group, auto_offset_reset="earliest", enable_auto_commit=False,
                 client_id=a.name, fetch_max_wait_ms=100, group_instance_id=a.instance, **opts)
    await c.start()
    c.subscribe([a.topic], listener=Listener())
    try:
        await consume_and_commit(c, a, sink)
    finally:
        await c.close()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("client", choices=("confluent", "kafka-python", "aiokafka", "minibroker"))
    p.add_argument("bootstrap")
    p.add_argument("topic")
    p.add_argument("group")
    p.add_argument("--out", required=True)
    p.add_argument("--stop", required=True)
    p.add_argument("--name", default="worker")
    p.add_argument("--instance", default=None)
    p.add_argument("--session-ms", type=int, default=6000)
    # classic members: the client-side assignor (range by default, as the clients' own default);
    # KIP-848 members: group.remote.assignor when given, else the broker's default (uniform)
    p.add_argument("--assignor", default=None)
    p.add_argument("--protocol", default="classic", choices=("classic", "consumer"))
    a = p.parse_args()
    # The group protocol's steps (join, sync, heartbeat errors) go to the worker's log, which
    # the test shows when a rebalance does not finish in time.
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    for name in ("kafka.coordinator", "aiokafka.consumer.group_coordinator"):
        logging.getLogger(name).setLevel(logging.INFO)
    if os.environ.get("GW_DEBUG"):
        logging.getLogger("kafka").setLevel(logging.DEBUG)
    sink = Sink(a.out)
    t0 = time.time()
    if a.client == "confluent":
        run_confluent(a, sink)
    elif a.client == "kafka-python":
        run_kafka_python(a, sink)
    elif a.client == "minibroker":
        asyncio.run(run_minibroker(a, sink))
    else:
        asyncio.run(run_aiokafka(a, sink))
    sink.f.write(f"# closed after {time.time() - t0:.1f} s\n")


if __name__ == "__main__":
    main()
