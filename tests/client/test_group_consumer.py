"""Tests for ``Consumer(group_id=...)`` (``client/group/coordinator.py`` driven by
``client/consumer.py``) against a real broker process: members sharing a topic, members
leaving and dying, commits surviving restarts, static membership, and groups shared with
confluent-kafka and kafka-python consumers."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterable

import pytest

from client.admin import Admin
from client.consumer import CommitFailedError, Consumer, ConsumerRebalanceListener, IllegalStateError
from client.fetcher import NoOffsetForPartitionError
from client.producer import Producer
from client.structs import OffsetAndMetadata, TopicPartition
from tests.broker_process import REPO, BrokerProcess

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


MEMBER_SCRIPT = textwrap.dedent("""
    import asyncio, sys
    from client.consumer import Consumer

    async def main():
        bootstrap, group, topic = sys.argv[1:4]
        c = Consumer(bootstrap, group_id=group, auto_offset_reset="earliest", fetch_max_wait_ms=100,
                     heartbeat_interval_ms=300, session_timeout_ms=6000)
        await c.start()
        c.subscribe([topic])
        while True:
            await c.getmany(timeout_ms=100)
            if c.assignment():
                print("assigned", sorted(tp.partition for tp in c.assignment()), flush=True)

    asyncio.run(main())
""")


@pytest.mark.slow
async def test_sigkilled_member_partitions_move_after_session_timeout(broker, name):
    await make_topic(broker.bootstrap, name, 6)
    proc = subprocess.Popen([sys.executable, "-c", MEMBER_SCRIPT, broker.bootstrap, name, name], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    cs: list[Consumer] = []
    try:
        line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 20)
        assert line.startswith(b"assigned [0, 1, 2, 3, 4, 5]"), line
        cs = [Consumer(broker.bootstrap, group_id=name, **FAST) for _ in range(2)]
        for c in cs:
            await c.start()
            c.subscribe([name])
        seen: dict[str, set[tuple[int, int]]] = {}
        # the process keeps polling: the group rebalances into three members of two partitions
        await drain(cs, seen, lambda: all(len(a) == 2 for a in assigned(cs)))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        killed_at = time.monotonic()
        await drain(cs, seen, lambda: is_partition_of(assigned(cs), name, 6), timeout=30)
        # not before the session timeout (6 s): a dead member is noticed only by its silence
        assert time.monotonic() - killed_at > 4.5
        async with Admin(broker.bootstrap) as admin:
            desc = (await admin.describe_groups([name]))[name]
        assert desc.state == "Stable" and len(desc.members) == 2
        assert sorted(tp for m in desc.members for tp in m.assignment) == [TopicPartition(name, p) for p in range(6)]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for c in cs:
            await c.close()


async def test_commits_survive_restart_nothing_committed_is_read_again(broker, name):
    await make_topic(broker.bootstrap, name, 3, 20)
    seen: list[tuple[int, int]] = []
    async with Consumer(broker.bootstrap, group_id=name, auto_commit_interval_ms=100000, **FAST) as c:
        c.subscribe([name])
        while len(seen) < 30:
            for tp, rows in (await c.getmany(timeout_ms=200, max_records=7)).items():
                seen.extend((tp.partition, r.offset) for r in rows)
        # close commits the positions (enable_auto_commit's final commit)
    async with Consumer(broker.bootstrap, group_id=name, **FAST) as c:
        c.subscribe([name])
        while len(seen) < 60:
            got = await c.getmany(timeout_ms=3000)
            assert got, f"only {len(seen)} records"
            for tp, rows in got.items():
                seen.extend((tp.partition, r.offset) for r in rows)
        await c.commit()
        assert {tp: om.offset for tp, om in (await c.committed([(name, p) for p in range(3)])).items()} \
            == {TopicPartition(name, p): 20 for p in range(3)}
    assert sorted(seen) == sorted((p, o) for p in range(3) for o in range(20))  # each exactly once


async def test_auto_commit_commits_the_positions_periodically_while_running(broker, name):
    """``enable_auto_commit`` with a short interval: the committed offsets (read by a separate
    Admin) reach the consumer's positions while it keeps running, twice over, with no commit()
    and no close (whose final commit would hide a broken periodic one)."""
    await make_topic(broker.bootstrap, name, 3, 10)
    tps = [(name, p) for p in range(3)]
    async with Admin(broker.bootstrap) as admin, \
            Consumer(broker.bootstrap, group_id=name, enable_auto_commit=True, auto_commit_interval_ms=200,
                     **FAST) as c:
        c.subscribe([name])
        offsets: dict[TopicPartition, int] = {}
        committed: dict[TopicPartition, int] = {}

        async def poll_until_committed(expected: dict[TopicPartition, int], timeout: float = 20.0) -> None:
            deadline = time.monotonic() + timeout
            while committed != expected:
                assert time.monotonic() < deadline, f"committed {committed}, consumed up to {expected}"
                for tp, rows in (await c.getmany(timeout_ms=100)).items():
                    offsets[tp] = rows[-1].offset + 1
                committed.clear()
                committed.update({tp: go.committed for tp, go in (await admin.list_group_offsets(name, tps)).items()})

        # nothing is committed before something is consumed; then the commit follows the positions
        assert await admin.list_group_offsets(name, tps) == {}
        await poll_until_committed({TopicPartition(name, p): 10 for p in range(3)})
        assert {tp: await c.position(tp) for tp in offsets} == offsets
        async with Producer(broker.bootstrap, linger_ms=1) as p:
            for i in range(5):
                p.send_nowait(name, b"more-%d" % i, partition=1)
            await p.flush()
        await poll_until_committed({TopicPartition(name, 0): 10, TopicPartition(name, 1): 15,
                                    TopicPartition(name, 2): 10})
        assert offsets[TopicPartition(name, 1)] == 15


async def test_static_member_restart_gets_its_partitions_back_without_rebalance(broker, name):
    await make_topic(broker.bootstrap, name, 4)
    a = Consumer(broker.bootstrap, group_id=name, group_instance_id="a", **FAST)
    b = Consumer(broker.bootstrap, group_id=name, group_instance_id="b", **FAST)
    for c in (a, b):
        await c.start()
        c.subscribe([name])
    try:
        await drain([a, b], {}, lambda: is_partition_of(assigned([a, b]), name, 4) and len(a.assignment()) == 2)
        gen, before = a.generation_id, a.assignment()
        assert before == {TopicPartition(name, 0), TopicPartition(name, 1)}  # static members by instance id
        await a.close()  # static: no LeaveGroup
        async with Admin(broker.bootstrap) as admin:
            desc = (await admin.describe_groups([name]))[name]
            assert desc.state == "Stable" and len(desc.members) == 2
            a2 = Consumer(broker.bootstrap, group_id=name, group_instance_id="a", **FAST)
            await a2.start()
            a2.subscribe([name])
            try:
                await drain([a2, b], {}, lambda: bool(a2.assignment()))
                assert a2.assignment() == before
                assert a2.generation_id == gen == b.generation_id
                await asyncio.sleep(1)  # b keeps heartbeating: no rebalance comes
                await b.getmany(timeout_ms=0)
                assert b.generation_id == gen and len(b.assignment()) == 2
                desc = (await admin.describe_groups([name]))[name]
                assert desc.state == "Stable" and sorted(m.group_instance_id for m in desc.members) == ["a", "b"]
            finally:
                await a2.close()
    finally:
        await b.close()


class Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.events: list[tuple[str, set[TopicPartition]]] = []

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.events.append(("revoked", revoked))

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.events.append(("assigned", assigned))

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        self.events.append(("lost", lost))


async def test_pattern_subscription_roundrobin_and_listener(broker, name):
    await make_topic(broker.bootstrap, f"{name}-a", 2, 1)
    await make_topic(broker.bootstrap, f"other-{name}", 1, 1)
    rec = Recorder()
    async with Consumer(broker.bootstrap, group_id=name, metadata_max_age_ms=300,
                        partition_assignment_strategy=["roundrobin"], **FAST) as c:
        c.subscribe(pattern=re.escape(name) + r"-.*", listener=rec)
        await drain([c], {}, lambda: len(c.assignment()) == 2)
        assert c.subscription() == {f"{name}-a"}
        assert rec.events == [("assigned", {TopicPartition(f"{name}-a", 0), TopicPartition(f"{name}-a", 1)})]
        await make_topic(broker.bootstrap, f"{name}-b", 1, 1)
        await drain([c], {}, lambda: len(c.assignment()) == 3)
        assert c.subscription() == {f"{name}-a", f"{name}-b"}
        assert rec.events[1] == ("revoked", {TopicPartition(f"{name}-a", 0), TopicPartition(f"{name}-a", 1)})
        assert rec.events[-1][0] == "assigned" and len(rec.events[-1][1]) == 3
        with pytest.raises(IllegalStateError):
            c.assign([(name, 0)])
    assert rec.events[-1] == ("revoked", {TopicPartition(f"{name}-a", 0), TopicPartition(f"{name}-a", 1),
                                          TopicPartition(f"{name}-b", 0)})


async def test_offset_reset_none_commit_async_and_misuse(broker, name):
    await make_topic(broker.bootstrap, name, 1, 3)
    with pytest.raises(IllegalStateError):
        Consumer(broker.bootstrap).subscribe([name])
    async with Consumer(broker.bootstrap, group_id=name, **{**FAST, "auto_offset_reset": "none"}) as c:
        c.subscribe([name])
        with pytest.raises(NoOffsetForPartitionError):
            for _ in range(100):
                await c.getmany(timeout_ms=100)
        results = []
        task = c.commit_async({(name, 0): 2}, callback=lambda offsets, exc: results.append((offsets, exc)))
        await task
        assert results == [({TopicPartition(name, 0): OffsetAndMetadata(2)}, None)]
    async with Consumer(broker.bootstrap, group_id=name, **{**FAST, "auto_offset_reset": "none"}) as c:
        c.subscribe([name])
        got = await c.getone()
        assert (got.partition, got.offset, got.value) == (0, 2, b"0-2")


async def test_assign_mode_with_group_id_commits_simply(broker, name):
    await make_topic(broker.bootstrap, name, 1, 3)
    async with Consumer(broker.bootstrap, group_id=name, **FAST) as c:
        c.assign([(name, 0)])
        assert (await c.getone()).offset == 0
        await c.commit()
        assert (await c.committed([(name, 0)]))[TopicPartition(name, 0)].offset == 1
    async with Admin(broker.bootstrap) as admin:
        assert (await admin.describe_groups([name]))[name].state == "Empty"


async def test_commit_after_being_replaced_fails_and_the_member_rejoins(broker, name):
    await make_topic(broker.bootstrap, name, 2, 2)
    rec = Recorder()
    async with Consumer(broker.bootstrap, group_id=name, **FAST) as c:
        c.subscribe([name], listener=rec)
        await drain([c], {}, lambda: len(c.assignment()) == 2)
        gen = c.generation_id
        c._group.generation = gen + 100  # as if the group had moved on without this member
        with pytest.raises(CommitFailedError):
            await c.commit({(name, 0): 1})
        await drain([c], {}, lambda: c.generation_id > gen and len(c.assignment()) == 2)
        all2 = {TopicPartition(name, 0), TopicPartition(name, 1)}
        assert rec.events[:3] == [("assigned", all2), ("lost", all2), ("assigned", all2)]
        assert (await c.committed([(name, 0)]))[TopicPartition(name, 0)] is None  # nothing committed when lost


@pytest.mark.slow
async def test_member_that_stops_polling_leaves_and_rejoins_at_its_next_poll(broker, name):
    await make_topic(broker.bootstrap, name, 2)
    slow = Consumer(broker.bootstrap, group_id=name, **{**FAST, "max_poll_interval_ms": 1500})
    busy = Consumer(broker.bootstrap, group_id=name, **FAST)
    for c in (slow, busy):
        await c.start()
        c.subscribe([name])
    try:
        await drain([slow, busy], {}, lambda: all(len(a) == 1 for a in assigned([slow, busy])))
        await drain([busy], {}, lambda: len(busy.assignment()) == 2)  # slow stopped polling: it left
        assert slow.member_id is None
        await drain([slow, busy], {}, lambda: all(len(a) == 1 for a in assigned([slow, busy])))
        assert slow.member_id is not None
    finally:
        for c in (slow, busy):
            await c.close()


class ForeignMember:
    """A confluent-kafka or kafka-python group consumer polling in a thread."""

    def __init__(self, kind: str, bootstrap: str, group: str, topic: str, strategy: str = "range") -> None:
        self.kind = kind
        self.stop = False
        self.assignment: set[TopicPartition] = set()
        if kind == "confluent":
            from confluent_kafka import Consumer as CkConsumer
            self.c = CkConsumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "ck-member",
                                 "partition.assignment.strategy": strategy, "session.timeout.ms": 6000,
                                 "heartbeat.interval.ms": 300, "auto.offset.reset": "earliest"})
        else:
            from kafka import KafkaConsumer
            from kafka.coordinator.assignors.range import RangePartitionAssignor
            from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
            assignor = {"range": RangePartitionAssignor, "sticky": StickyPartitionAssignor}[strategy]
            self.c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, client_id="kp-member",
                                   partition_assignment_strategy=[assignor], session_timeout_ms=6000,
                                   heartbeat_interval_ms=300, auto_offset_reset="earliest",
                                   # kafka-python may lead its first rebalance before its metadata
                                   # names the topic (it then assigns nothing, "No partition metadata");
                                   # a refresh within a second makes it rebalance with the topic.
                                   metadata_max_age_ms=1000)
        self.c.subscribe([topic])
        self.thread = asyncio.get_running_loop().run_in_executor(None, self._run)

    def _run(self) -> None:
        while not self.stop:
            if self.kind == "confluent":
                self.c.poll(0.05)
            else:
                # longer than an fsync'd SyncGroup: kafka-python 3.0 drops a leader's SyncGroup
                # answer that comes after its poll returned (docs/pages/consumer-groups.md)
                self.c.poll(timeout_ms=1000)
            self.assignment = {TopicPartition(tp.topic, tp.partition) for tp in self.c.assignment()}
        self.c.close()

    async def close(self) -> None:
        self.stop = True
        await self.thread


@pytest.mark.slow
@pytest.mark.parametrize("kind,foreign_first", [("confluent", True), ("confluent", False),
                                                ("kafka-python", True), ("kafka-python", False)])
async def test_mixed_group_with_another_client_library_using_range(broker, name, kind, foreign_first):
    """Whichever member leads (the first to join), the combined assignment is Kafka's range."""
    from client.group.assignors import MemberSubscription, RangeAssignor

    await make_topic(broker.bootstrap, name, 6)
    ours = [Consumer(broker.bootstrap, group_id=name, partition_assignment_strategy=["range"], **FAST)
            for _ in range(2)]
    foreign = None
    try:
        if foreign_first:
            foreign = ForeignMember(kind, broker.bootstrap, name, name)
            await wait_for(lambda: len(foreign.assignment) == 6, what="the foreign member alone")
        for c in ours:
            await c.start()
            c.subscribe([name])
        if not foreign_first:
            await drain(ours, {}, lambda: is_partition_of(assigned(ours), name, 6))
            foreign = ForeignMember(kind, broker.bootstrap, name, name)

        def complete() -> bool:
            sets = assigned(ours) + [foreign.assignment]
            return is_partition_of(sets, name, 6) and all(len(s) == 2 for s in sets)

        await drain(ours, {}, complete, timeout=40)
        async with Admin(broker.bootstrap) as admin:
            desc = (await admin.describe_groups([name]))[name]
        assert desc.protocol == "range" and len(desc.members) == 3
        expected = RangeAssignor().assign({name: 6}, {m.member_id: MemberSubscription(m.member_id, None, [name])
                                                      for m in desc.members})
        assert {m.member_id: sorted(m.assignment) for m in desc.members} == expected
        assert {c.member_id: sorted(c.assignment()) for c in ours}.items() <= expected.items()
    finally:
        if foreign is not None:
            await foreign.close()
        for c in ours:
            await c.close()


@pytest.mark.slow
async def test_mixed_group_with_aiokafka_using_roundrobin(broker, name):
    from aiokafka import AIOKafkaConsumer
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    from client.group.assignors import MemberSubscription, RoundRobinAssignor

    await make_topic(broker.bootstrap, name, 5)
    aio = AIOKafkaConsumer(name, bootstrap_servers=broker.bootstrap, group_id=name, session_timeout_ms=6000,
                           heartbeat_interval_ms=300, partition_assignment_strategy=(RoundRobinPartitionAssignor,))
    ours = Consumer(broker.bootstrap, group_id=name, partition_assignment_strategy=["roundrobin"], **FAST)
    await aio.start()
    try:
        await ours.start()
        ours.subscribe([name])

        async def aio_poll() -> None:
            while True:
                await aio.getmany(timeout_ms=50)

        poller = asyncio.get_running_loop().create_task(aio_poll())
        try:
            def theirs() -> set[TopicPartition]:
                return {TopicPartition(tp.topic, tp.partition) for tp in aio.assignment()}

            await drain([ours], {}, lambda: is_partition_of([ours.assignment(), theirs()], name, 5)
                        and bool(ours.assignment()) and bool(theirs()), timeout=40)
            async with Admin(broker.bootstrap) as admin:
                desc = (await admin.describe_groups([name]))[name]
            assert desc.protocol == "roundrobin"
            expected = RoundRobinAssignor().assign({name: 5}, {
                m.member_id: MemberSubscription(m.member_id, None, [name]) for m in desc.members})
            assert {m.member_id: m.assignment for m in desc.members} == expected
            assert sorted(ours.assignment()) == expected[ours.member_id]
        finally:
            poller.cancel()
    finally:
        await ours.close()
        await aio.stop()


@pytest.fixture
def fixed_port_broker(tmp_path):
    """A broker on a port of its own, so that it restarts where its clients expect it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    b = BrokerProcess(str(tmp_path / "data"), port=port).start()
    try:
        yield b
    finally:
        b.stop()


@pytest.mark.slow
async def test_members_carry_on_across_a_broker_sigkill_and_restart(fixed_port_broker, name):
    """The coordinator connection breaks, the broker reloads the group from __consumer_offsets
    (answering COORDINATOR_LOAD_IN_PROGRESS meanwhile): the member finds it again, keeps or
    rejoins its membership, and reads on from the committed offsets."""
    broker = fixed_port_broker
    await make_topic(broker.bootstrap, name, 2, 5)
    async with Consumer(broker.bootstrap, group_id=name, **FAST) as c:
        c.subscribe([name])
        seen: dict[str, set[tuple[int, int]]] = {}
        await drain([c], seen, lambda: sum(len(v) for v in seen.values()) == 10)
        await c.commit()
        broker.kill()
        broker.start()
        async with Producer(broker.bootstrap) as p:
            for i in range(5, 10):
                for part in range(2):
                    p.send_nowait(name, f"{part}-{i}".encode(), partition=part)
            await p.flush()
        seen2: dict[str, set[tuple[int, int]]] = {}
        await drain([c], seen2, lambda: len(set().union(*seen2.values())) >= 10, timeout=40)
        assert set().union(*seen2.values()) == {(p, o) for p in range(2) for o in range(5, 10)}
        await c.commit()
        assert {tp.partition: om.offset for tp, om in (await c.committed([(name, 0), (name, 1)])).items()} \
            == {0: 10, 1: 10}


@pytest.fixture
def faulty_broker(tmp_path):
    b = BrokerProcess(str(tmp_path / "data"), faults=True).start()
    try:
        yield b
    finally:
        b.stop()


async def test_coordinator_errors_are_retried(faulty_broker, name):
    """FindCoordinator, JoinGroup, SyncGroup, OffsetFetch and OffsetCommit answered with the
    coordinator errors, a heartbeat with REBALANCE_IN_PROGRESS: the member gets there anyway."""
    broker = faulty_broker
    await make_topic(broker.bootstrap, name, 2, 3)
    f = broker.faults
    f.fail("FIND_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", 2)
    f.fail("JOIN_GROUP", "NOT_COORDINATOR", 1)
    f.fail("SYNC_GROUP", "COORDINATOR_LOAD_IN_PROGRESS", 1)
    f.fail("OFFSET_FETCH", "COORDINATOR_LOAD_IN_PROGRESS", 2)
    async with Consumer(broker.bootstrap, group_id=name, **FAST) as c:
        c.subscribe([name])
        seen: dict[str, set[tuple[int, int]]] = {}
        await drain([c], seen, lambda: sum(len(v) for v in seen.values()) == 6)
        assert f.rules() == []  # every fault was met (a rule goes once used up)
        gen = c.generation_id
        f.fail("HEARTBEAT", "REBALANCE_IN_PROGRESS", 1)
        await drain([c], seen, lambda: c.generation_id > gen and len(c.assignment()) == 2)
        f.fail("OFFSET_COMMIT", "NOT_COORDINATOR", 2)
        await c.commit()
        assert f.rules() == []
        assert {tp.partition: om.offset for tp, om in (await c.committed([(name, 0), (name, 1)])).items()} \
            == {0: 3, 1: 3}


async def test_sticky_group_keeps_partitions_when_a_member_leaves(broker, name):
    await make_topic(broker.bootstrap, name, 6)
    cs = [Consumer(broker.bootstrap, group_id=name, partition_assignment_strategy=["sticky"], **FAST)
          for _ in range(3)]
    for c in cs:
        await c.start()
        c.subscribe([name])
    try:
        await drain(cs, {}, lambda: is_partition_of(assigned(cs), name, 6) and all(len(a) == 2 for a in assigned(cs)))
        before = {id(c): c.assignment() for c in cs}
        await cs[0].close()
        rest = cs[1:]
        await drain(rest, {}, lambda: is_partition_of(assigned(rest), name, 6) and all(len(a) == 3 for a in assigned(rest)))
        for c in rest:
            assert before[id(c)] <= c.assignment()  # kept what it had, took one of the leaver's
        async with Admin(broker.bootstrap) as admin:
            assert (await admin.describe_groups([name]))[name].protocol == "sticky"
    finally:
        for c in cs:
            await c.close()


@pytest.mark.slow
@pytest.mark.parametrize("foreign_first", [True, False])
async def test_mixed_sticky_group_with_kafka_python(broker, name, foreign_first):
    """kafka-python 3 writes its sticky user data behind an int16 version (Java does not): our
    leader reads both, a kafka-python leader ignores ours; the assignment is complete and
    balanced either way, and our leader keeps members' partitions when one leaves."""
    await make_topic(broker.bootstrap, name, 6)
    ours = [Consumer(broker.bootstrap, group_id=name, partition_assignment_strategy=["sticky"], **FAST)
            for _ in range(2)]
    foreign = None
    try:
        if foreign_first:
            foreign = ForeignMember("kafka-python", broker.bootstrap, name, name, "sticky")
            await wait_for(lambda: len(foreign.assignment) == 6, what="the foreign member alone")
        for c in ours:
            await c.start()
            c.subscribe([name])
        if not foreign_first:
            await drain(ours, {}, lambda: is_partition_of(assigned(ours), name, 6))
            foreign = ForeignMember("kafka-python", broker.bootstrap, name, name, "sticky")

        def complete() -> bool:
            sets = assigned(ours) + [foreign.assignment]
            return is_partition_of(sets, name, 6) and all(len(s) == 2 for s in sets)

        await drain(ours, {}, complete, timeout=40)
        async with Admin(broker.bootstrap) as admin:
            assert (await admin.describe_groups([name]))[name].protocol == "sticky"
        if not foreign_first:  # our member leads: it keeps our members' partitions
            before = [c.assignment() for c in ours]
            await foreign.close()
            foreign = None
            await drain(ours, {}, lambda: all(len(a) == 3 for a in assigned(ours)), timeout=40)
            assert all(b <= c.assignment() for b, c in zip(before, ours))
    finally:
        if foreign is not None:
            await foreign.close()
        for c in ours:
            await c.close()


async def test_cooperative_sticky_members_keep_consuming_through_a_rebalance(broker, name):
    await make_topic(broker.bootstrap, name, 6)
    strat = {"partition_assignment_strategy": ["cooperative-sticky"]}
    recs = [Recorder() for _ in range(3)]
    cs = [Consumer(broker.bootstrap, group_id=name, **strat, **FAST) for _ in range(3)]
    try:
        for c, r in zip(cs[:2], recs):
            await c.start()
            c.subscribe([name], listener=r)
        await drain(cs[:2], {}, lambda: all(len(a) == 3 for a in assigned(cs[:2])))
        before = [c.assignment() for c in cs[:2]]
        # events from here on (the first member may have held all six before the second came,
        # on a slow machine, and revoked three then)
        seen = [len(r.events) for r in recs[:2]]
        await cs[2].start()
        cs[2].subscribe([name], listener=recs[2])
        await drain(cs, {}, lambda: is_partition_of(assigned(cs), name, 6) and all(len(a) == 2 for a in assigned(cs)))
        for c, r, b, n in zip(cs[:2], recs, before, seen):
            assert c.assignment() <= b  # kept two of its three
            revoked = [e for e in r.events[n:] if e[0] == "revoked"]
            assert revoked == [("revoked", b - c.assignment())]  # gave up only the partition that moved
        assert [e[0] for e in recs[2].events if e[1]] == ["assigned"]
        async with Admin(broker.bootstrap) as admin:
            assert (await admin.describe_groups([name]))[name].protocol == "cooperative-sticky"
    finally:
        for c in cs:
            await c.close()


@pytest.mark.slow
@pytest.mark.parametrize("foreign_first", [True, False])
async def test_mixed_cooperative_sticky_group_with_confluent_kafka(broker, name, foreign_first):
    await make_topic(broker.bootstrap, name, 6)
    ours = [Consumer(broker.bootstrap, group_id=name, partition_assignment_strategy=["cooperative-sticky"], **FAST)
            for _ in range(2)]
    foreign = None
    try:
        if foreign_first:
            foreign = ForeignMember("confluent", broker.bootstrap, name, name, "cooperative-sticky")
            await wait_for(lambda: len(foreign.assignment) == 6, what="the foreign member alone")
        for c in ours:
            await c.start()
            c.subscribe([name])
        if not foreign_first:
            await drain(ours, {}, lambda: is_partition_of(assigned(ours), name, 6))
            foreign = ForeignMember("confluent", broker.bootstrap, name, name, "cooperative-sticky")

        def complete() -> bool:
            sets = assigned(ours) + [foreign.assignment]
            return is_partition_of(sets, name, 6) and all(len(s) == 2 for s in sets)

        await drain(ours, {}, complete, timeout=40)
        async with Admin(broker.bootstrap) as admin:
            desc = (await admin.describe_groups([name]))[name]
        assert desc.protocol == "cooperative-sticky" and len(desc.members) == 3
        kept = [c.assignment() for c in ours]
        await foreign.close()
        foreign = None
        await drain(ours, {}, lambda: is_partition_of(assigned(ours), name, 6), timeout=40)
        assert all(k <= c.assignment() for k, c in zip(kept, ours))  # nobody gave anything up
    finally:
        if foreign is not None:
            await foreign.close()
        for c in ours:
            await c.close()
