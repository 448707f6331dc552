"""Tests for ``Consumer(group_id=...)`` (``client/group/coordinator.py`` driven by
``client/consumer.py``) against a real broker process: members sharing a topic, members
leaving and dying, commits surviving restarts, static membership, and groups shared with
confluent-kafka and kafka-python consumers."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterable

import pytest

from client.admin import Admin
from client.consumer import Consumer
from client.producer import Producer
from client.structs import OffsetAndMetadata, TopicPartition

FAST = {"fetch_max_wait_ms": 100, "request_timeout_ms": 10000, "connect_timeout_ms": 5000,
        "auto_offset_reset": "earliest", "heartbeat_interval_ms": 300, "session_timeout_ms": 6000}


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    return re.sub(r"[^a-zA-Z0-9._-]+", "-", request.node.name).strip("-")[:200]


async def make_topic(bootstrap: str, topic: str, partitions: int, records_per_partition: int = 0) -> None:
    async with Admin(bootstrap) as admin:
        await admin.create_topic(topic, partitions)
    if records_per_partition:
        async with Producer(bootstrap, linger_ms=1) as p:
            for part in range(partitions):
                for i in range(records_per_partition):
                    p.send_nowait(topic, f"{part}-{i}".encode(), partition=part)
            await p.flush()


async def wait_for(cond, timeout: float = 20.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def drain(consumers: Iterable[Consumer], seen: dict[str, set[tuple[int, int]]], until, timeout: float = 20.0) -> None:
    """Poll every consumer (as an application would) until ``until()`` holds."""
    cs = list(consumers)
    deadline = time.monotonic() + timeout
    while not until():
        if time.monotonic() > deadline:
            raise AssertionError("timed out draining; seen " + str({k: len(v) for k, v in seen.items()}))
        for c in cs:
            got = await c.getmany(timeout_ms=20)
            for tp, rows in got.items():
                seen.setdefault(c.member_id or "?", set()).update((tp.partition, r.offset) for r in rows)


def assigned(consumers: Iterable[Consumer]) -> list[set[TopicPartition]]:
    return [c.assignment() for c in consumers]


def is_partition_of(sets: list[set[TopicPartition]], topic: str, n: int) -> bool:
    allp = [tp for s in sets for tp in s]
    return len(allp) == n and set(allp) == {TopicPartition(topic, p) for p in range(n)}


async def test_three_members_share_then_one_leaves(broker, name):
    await make_topic(broker.bootstrap, name, 6, 10)
    cs = [Consumer(broker.bootstrap, group_id=name, **FAST) for _ in range(3)]
    for c in cs:
        await c.start()
        c.subscribe([name])
    try:
        seen: dict[str, set[tuple[int, int]]] = {}
        await drain(cs, seen, lambda: all(len(a) == 2 for a in assigned(cs)) and is_partition_of(assigned(cs), name, 6))
        assert len({c.generation_id for c in cs}) == 1
        # range over 6 partitions and 3 members sorted by member id: 0-1, 2-3, 4-5
        by_member = sorted(cs, key=lambda c: c.member_id or "")
        assert [sorted(tp.partition for tp in c.assignment()) for c in by_member] == [[0, 1], [2, 3], [4, 5]]
        await drain(cs, seen, lambda: sum(len(v) for v in seen.values()) >= 60)
        assert sum(len(v) for v in seen.values()) == 60  # each record once
        await cs[0].close()
        rest = cs[1:]
        await drain(rest, seen, lambda: is_partition_of(assigned(rest), name, 6)
                    and all(len(a) == 3 for a in assigned(rest)))
        # what the leaver consumed was committed on close: nobody reads it again
        await asyncio.sleep(0.3)
        for c in rest:
            for rows in (await c.getmany(timeout_ms=200)).values():
                raise AssertionError(f"read again: {rows[:3]}")
    finally:
        for c in cs:
            await c.close()


async def test_kip394_member_id_and_positions_from_commits(broker, name):
    await make_topic(broker.bootstrap, name, 2, 5)
    async with Consumer(broker.bootstrap, group_id=name, enable_auto_commit=False, **FAST) as c:
        c.subscribe([name])
        got: list[int] = []
        while len(got) < 10:
            for rows in (await c.getmany(timeout_ms=200)).values():
                got.extend(r.offset for r in rows)
        assert c.member_id is not None and c.member_id.startswith("minibroker-python-")
        await c.commit({(name, 0): 3, (name, 1): OffsetAndMetadata(5, "done")})
        com = await c.committed([(name, 0), (name, 1)])
        assert com[TopicPartition(name, 0)] == OffsetAndMetadata(3, "", com[TopicPartition(name, 0)].leader_epoch)
        assert com[TopicPartition(name, 1)].offset == 5 and com[TopicPartition(name, 1)].metadata == "done"
    async with Consumer(broker.bootstrap, group_id=name, **FAST) as c:
        c.subscribe([name])
        rows = []
        deadline = time.monotonic() + 10
        while len(rows) < 2 and time.monotonic() < deadline:
            for rs in (await c.getmany(timeout_ms=200)).values():
                rows.extend(rs)
        assert sorted((r.partition, r.offset) for r in rows) == [(0, 3), (0, 4)]
