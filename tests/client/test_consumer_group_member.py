"""``Consumer(group_protocol="consumer")`` (client/group/consumer_member.py) against a real broker
process: members share a topic as the broker assigns it, the rebalance listener hears only of
the partitions that move, a member leaving hands its partitions over, commits carry the member
epoch, a pattern subscription is resolved by the broker, and our members share a group with
confluent-kafka's."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer as ConfluentConsumer

from broker.testing import BrokerProcess
from client.consumer import Consumer, ConsumerRebalanceListener
from client.structs import TopicPartition

from .test_group_consumer import drain, make_topic

FAST_BROKER = ["group.consumer.session.timeout.ms=6000", "group.consumer.min.session.timeout.ms=6000",
               "group.consumer.heartbeat.interval.ms=300", "group.consumer.min.heartbeat.interval.ms=300"]
OPTS = {"fetch_max_wait_ms": 100, "request_timeout_ms": 10000, "auto_offset_reset": "earliest",
        "group_protocol": "consumer"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    b = BrokerProcess(str(tmp_path_factory.mktemp("cg") / "data"), overrides=FAST_BROKER).start()
    yield b
    b.kill()


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    return re.sub(r"[^a-zA-Z0-9._-]+", "-", request.node.name).strip("-")[:200]


class Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.events: list[tuple[str, set[int]]] = []

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.events.append(("assigned", {tp.partition for tp in assigned}))

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.events.append(("revoked", {tp.partition for tp in revoked}))


def parts(c: Consumer) -> set[int]:
    return {tp.partition for tp in c.assignment()}


async def test_members_share_incrementally_and_a_leaver_hands_over(broker: BrokerProcess, name: str) -> None:
    bs = broker.bootstrap_servers
    await make_topic(bs, name, 6, 10)
    listeners = [Recorder() for _ in range(3)]
    cs = [Consumer(bs, group_id=name, **OPTS) for _ in range(3)]  # type: ignore[arg-type]
    seen: dict[str, set[tuple[int, int]]] = {}
    try:
        await cs[0].start()
        cs[0].subscribe([name], listener=listeners[0])
        await drain(cs[:1], seen, lambda: parts(cs[0]) == set(range(6)))
        first = parts(cs[0])
        for c, rec in zip(cs[1:], listeners[1:]):
            await c.start()
            c.subscribe([name], listener=rec)
        await drain(cs, seen, lambda: all(len(parts(c)) == 2 for c in cs)
                    and set().union(*(parts(c) for c in cs)) == set(range(6)))
        # the first member only gave partitions away: what it kept it never revoked
        revoked = set().union(*(p for kind, p in listeners[0].events if kind == "revoked"))
        assert revoked == first - parts(cs[0]) and len(revoked) == 4
        assert [k for k, _ in listeners[0].events] == ["assigned", "revoked"]
        await drain(cs, seen, lambda: sum(len(v) for v in seen.values()) >= 60)
        assert sum(len(v) for v in seen.values()) == 60  # each record once
        epochs = {c.generation_id for c in cs}
        assert min(epochs) >= 1
        await cs[0].close()  # commits, then leaves with epoch -1
        rest = cs[1:]
        await drain(rest, seen, lambda: set().union(*(parts(c) for c in rest)) == set(range(6)), timeout=10)
        await asyncio.sleep(0.3)
        for c in rest:
            for rows in (await c.getmany(timeout_ms=200)).values():
                raise AssertionError(f"read again: {rows[:3]}")
    finally:
        for c in cs:
            await c.close()


async def test_commits_carry_the_member_epoch(broker: BrokerProcess, name: str) -> None:
    bs = broker.bootstrap_servers
    await make_topic(bs, name, 1, 5)
    async with Consumer(bs, group_id=name, enable_auto_commit=False, **OPTS) as c:  # type: ignore[arg-type]
        c.subscribe([name])
        got: list[int] = []
        deadline = time.monotonic() + 20
        while len(got) < 5 and time.monotonic() < deadline:
            for rows in (await c.getmany(timeout_ms=200)).values():
                got.extend(r.offset for r in rows)
        assert got == [0, 1, 2, 3, 4] and c.generation_id >= 1
        await c.commit()
        assert (await c.committed([(name, 0)]))[TopicPartition(name, 0)].offset == 5  # type: ignore[union-attr]


async def test_pattern_subscription_resolved_by_the_broker(broker: BrokerProcess, name: str) -> None:
    bs = broker.bootstrap_servers
    await make_topic(bs, f"{name}.a", 1, 1)
    async with Consumer(bs, group_id=name, **OPTS) as c:  # type: ignore[arg-type]
        c.subscribe(pattern=re.escape(name) + r"\..*")
        seen: dict[str, set[tuple[int, int]]] = {}
        await drain([c], seen, lambda: {tp.topic for tp in c.assignment()} == {f"{name}.a"})
        await make_topic(bs, f"{name}.b", 2, 1)
        await drain([c], seen, lambda: {tp.topic for tp in c.assignment()} == {f"{name}.a", f"{name}.b"}, timeout=10)


async def test_a_group_shared_with_confluent_kafka(broker: BrokerProcess, name: str) -> None:
    bs = broker.bootstrap_servers
    await make_topic(bs, name, 4, 5)
    ours = Consumer(bs, group_id=name, **OPTS)  # type: ignore[arg-type]
    # With auto-commit, librdkafka commits a revoked partition's offsets asynchronously, and its
    # heartbeat saying it no longer owns the partition may reach the broker first: the new
    # owner then starts from the previous commit (at least once). Committing each record
    # synchronously as it is read makes "nobody reads what the other read" hold whatever the
    # timing of the rebalance.
    theirs = ConfluentConsumer({"bootstrap.servers": bs, "group.id": name, "group.protocol": "consumer",
                                "auto.offset.reset": "earliest", "enable.auto.commit": False})
    seen: dict[str, set[tuple[int, int]]] = {}
    try:
        await ours.start()
        ours.subscribe([name])
        theirs.subscribe([name])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for rows in (await ours.getmany(timeout_ms=50)).values():
                seen.setdefault("ours", set()).update((r.partition, r.offset) for r in rows)
            m = await asyncio.to_thread(theirs.poll, 0.05)
            if m is not None and m.error() is None:
                seen.setdefault("theirs", set()).add((m.partition(), m.offset()))
                await asyncio.to_thread(theirs.commit, m, asynchronous=False)
            theirs_parts = {tp.partition for tp in theirs.assignment()}
            if len(parts(ours)) == 2 and len(theirs_parts) == 2 and sum(len(v) for v in seen.values()) == 20:
                break
        assert parts(ours) | {tp.partition for tp in theirs.assignment()} == set(range(4))
        assert not parts(ours) & {tp.partition for tp in theirs.assignment()}
        assert set().union(*seen.values()) == {(p, o) for p in range(4) for o in range(5)}
        assert sum(len(v) for v in seen.values()) == 20, seen  # nobody read a record the other read
    finally:
        await ours.close()
        await asyncio.to_thread(theirs.close)


async def test_admin_and_cli_describe_member_epochs_and_targets(broker: BrokerProcess, name: str) -> None:
    from client.admin import Admin
    from tests.client.cli.test_cli import ok

    bs = broker.bootstrap_servers
    await make_topic(bs, name, 3, 1)
    async with Consumer(bs, group_id=name, **OPTS) as c:  # type: ignore[arg-type]
        c.subscribe([name])
        seen: dict[str, set[tuple[int, int]]] = {}
        await drain([c], seen, lambda: len(c.assignment()) == 3)
        async with Admin(bs) as admin:
            d = (await admin.describe_groups([name]))[name]
        assert (d.group_type, d.state, d.protocol) == ("consumer", "Stable", "uniform")
        assert d.group_epoch == d.assignment_epoch == 1
        (m,) = d.members
        assert m.member_id == c.member_id and m.member_epoch == 1 and m.topics == [name]
        assert m.assignment == m.target_assignment == [TopicPartition(name, p) for p in range(3)]
        state = await asyncio.to_thread(ok, "groups", "describe", name, "--state", "--verbose", "--bootstrap-server", bs)
        assert state.split("\n")[0].split() == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE",
                                                "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"]
        assert state.split("\n")[1].split()[-4:] == ["Stable", "1", "1", "1"]
        members = await asyncio.to_thread(ok, "groups", "describe", name, "--members", "--verbose",
                                          "--bootstrap-server", bs)
        row = members.split("\n")[1].split()
        parts_text = ",".join(f"{name}-{p}" for p in range(3))
        assert row[1] == c.member_id and row[-4:] == ["1", parts_text, "1", parts_text]
        listed = await asyncio.to_thread(ok, "groups", "list", "--state", "--bootstrap-server", bs)
        assert [name, "Stable"] in [ln.split() for ln in listed.splitlines()]


@pytest.mark.parametrize("protocol", ["consumer", "classic"])
async def test_no_record_of_a_revoked_partition_is_handed_out_after_its_commit(tmp_path: Path, protocol: str) -> None:
    """A revoked partition stops handing out records before its positions are committed: with
    OffsetCommit answered 1 s late, an application reading one record at a time meanwhile gets
    nothing more of it, so the committed offset is right after the last record it got (and its
    next owner starts there). KIP-848 members and classic (eager) ones alike."""
    opts = dict(OPTS, group_protocol=protocol)
    from broker.testing.faults import Fault
    from client.protocol.api import ApiKey

    with BrokerProcess(str(tmp_path / "data"), overrides=FAST_BROKER, faults=True) as b:
        bs, topic = b.bootstrap_servers, "revoked"
        await make_topic(bs, topic, 2, 3000)
        first = Consumer(bs, group_id="rv", **opts)  # type: ignore[arg-type]
        second = Consumer(bs, group_id="rv", enable_auto_commit=False, **opts)  # type: ignore[arg-type]
        got: dict[int, int] = {}  # partition -> the last offset handed to the application
        try:
            await first.start()
            first.subscribe([topic])
            while len(got) < 2:  # both partitions fetched, most of their records still buffered
                for rows in (await first.getmany(timeout_ms=100, max_records=1)).values():
                    got.update((r.partition, r.offset) for r in rows)
                await asyncio.sleep(0.005)
            b.faults.add(Fault(api=int(ApiKey.OFFSET_COMMIT), action="delay", delay_ms=1000, count=-1))
            await second.start()
            second.subscribe([topic])
            deadline = time.monotonic() + 20
            while len(parts(first)) != 1 and time.monotonic() < deadline:  # an application at ~200 records/s
                for rows in (await first.getmany(timeout_ms=10, max_records=1)).values():
                    got.update((r.partition, r.offset) for r in rows)
                await asyncio.sleep(0.005)
            assert len(parts(first)) == 1
            (revoked,) = {0, 1} - parts(first)
            for _ in range(20):  # still reading while the revocation's commit is answered
                for rows in (await first.getmany(timeout_ms=10, max_records=1)).values():
                    assert all(r.partition != revoked for r in rows)
                    got.update((r.partition, r.offset) for r in rows)
                await asyncio.sleep(0.005)
            b.faults.clear()
            await wait_for_committed(bs, topic, revoked, got[revoked] + 1)
        finally:
            await first.close()
            await second.close()



async def wait_for_committed(bs: str, topic: str, partition: int, expected: int) -> None:
    """The group "rv" has committed ``expected`` for the partition (within 10 s)."""
    from client.admin import Admin
    async with Admin(bs) as admin:
        deadline = time.monotonic() + 10
        while True:
            at = (await admin.list_group_offsets("rv", [(topic, partition)])).get(TopicPartition(topic, partition))
            offset = None if at is None else at.committed
            if offset == expected or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)
    assert offset == expected, (offset, expected)
