"""``client.share_consumer.ShareConsumer`` against a real broker process: one member alone, a
group shared with confluent-kafka's ShareConsumer (each record delivered once), explicit
RELEASE (redelivered, delivery count 2) and REJECT (never again), the admin's share-group
calls."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

from client.admin import Admin
from client.errors import KafkaError
from client.producer import Producer
from client.share_consumer import AcknowledgeType, ShareConsumer, ShareConsumerRecord
from client.structs import TopicPartition
from tests.broker_process import REPO, BrokerProcess

FAST = {"fetch_max_wait_ms": 200, "request_timeout_ms": 10000, "connect_timeout_ms": 5000}
OVERRIDES = ["group.share.heartbeat.interval.ms=200", "group.share.record.lock.duration.ms=15000"]
#: where a confluent-kafka with ShareConsumer (2.16+) is, if not in this environment
CK_PATH = os.environ.get("MINIBROKER_CK_SHARE_PATH", "")


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    b = BrokerProcess(str(tmp_path_factory.mktemp("share") / "data"), overrides=OVERRIDES).start()
    try:
        yield b
    finally:
        assert b.stop() == 0, b.log_text()


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    return re.sub(r"[^a-zA-Z0-9._-]+", "-", request.node.name).strip("-")[:200]


async def setup_topic(bootstrap: str, topic: str, group: str, n: int, partitions: int = 1) -> None:
    """A topic with ``n`` records on partition 0, and the group's start offsets at 0 (so that
    records produced before the consumers start are theirs: share.auto.offset.reset is latest)."""
    async with Admin(bootstrap) as admin:
        await admin.create_topic(topic, partitions)
        async with Producer(bootstrap) as p:
            for i in range(n):
                await p.send(topic, f"v{i}".encode(), partition=0)
        await admin.alter_share_group_offsets(group, {(topic, p): 0 for p in range(partitions)})


async def drain(c: ShareConsumer, want: int, timeout: float = 15.0) -> list[ShareConsumerRecord]:
    out: list[ShareConsumerRecord] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while len(out) < want and loop.time() < deadline:
        out += await c.poll(timeout_ms=500)
    return out


async def test_one_member_consumes_everything_once(broker: BrokerProcess, name: str) -> None:
    await setup_topic(broker.bootstrap, name, name, 30, partitions=2)
    async with ShareConsumer(broker.bootstrap, group_id=name, **FAST) as c:
        c.subscribe([name])
        got = await drain(c, 30)
        assert sorted(r.offset for r in got) == list(range(30))
        assert {r.delivery_count for r in got} == {1}
        assert {r.value for r in got} == {f"v{i}".encode() for i in range(30)}
        assert await c.poll(timeout_ms=300) == []  # implicit: the 30 accepted with this poll
        assert c.assignment() == {TopicPartition(name, 0), TopicPartition(name, 1)}
        async with Admin(broker.bootstrap) as admin:
            d = (await admin.describe_share_groups([name]))[name]
            assert d.state == "Stable" and [m.member_id for m in d.members] == [c.member_id]
            groups = [g.group_id for g in await admin.list_share_groups()]
            assert name in groups
    async with Admin(broker.bootstrap) as admin:
        offsets = await admin.list_share_group_offsets(name)
        assert offsets[TopicPartition(name, 0)].start_offset == 30
        assert offsets[TopicPartition(name, 0)].lag == 0
        assert (await admin.describe_share_groups([name]))[name].state == "Empty"


async def test_explicit_release_redelivers_and_reject_archives(broker: BrokerProcess, name: str) -> None:
    await setup_topic(broker.bootstrap, name, name, 3)
    async with ShareConsumer(broker.bootstrap, group_id=name, share_acknowledgement_mode="explicit", **FAST) as c:
        c.subscribe([name])
        first = await drain(c, 3)
        assert [(r.offset, r.delivery_count) for r in first] == [(0, 1), (1, 1), (2, 1)]
        c.acknowledge(first[0], AcknowledgeType.ACCEPT)
        c.acknowledge(first[1], AcknowledgeType.RELEASE)
        c.acknowledge(first[2], AcknowledgeType.REJECT)
        assert await c.commit_sync() == {TopicPartition(name, 0): None}
        again = await drain(c, 1)
        assert [(r.offset, r.delivery_count, r.value) for r in again] == [(1, 2, b"v1")]
        with pytest.raises(KafkaError):  # explicit mode: acknowledge before polling again
            await c.poll(timeout_ms=100)
        c.acknowledge(again[0])
        assert await c.poll(timeout_ms=500) == []  # the rejected record never comes back
    async with Admin(broker.bootstrap) as admin:
        assert (await admin.list_share_group_offsets(name))[TopicPartition(name, 0)].start_offset == 3


async def test_two_of_ours_share_one_partition(broker: BrokerProcess, name: str) -> None:
    await setup_topic(broker.bootstrap, name, name, 200)
    async with ShareConsumer(broker.bootstrap, group_id=name, max_poll_records=10, **FAST) as a, \
            ShareConsumer(broker.bootstrap, group_id=name, max_poll_records=10, **FAST) as b:
        a.subscribe([name])
        b.subscribe([name])
        got: dict[str, list[int]] = {"a": [], "b": []}

        async def run(key: str, c: ShareConsumer) -> None:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 20
            while len(got["a"]) + len(got["b"]) < 200 and loop.time() < deadline:
                got[key] += [r.offset for r in await c.poll(timeout_ms=300)]
                await asyncio.sleep(0.01)

        await asyncio.gather(run("a", a), run("b", b))
    assert sorted(got["a"] + got["b"]) == list(range(200))
    assert got["a"] and got["b"]


async def test_admin_refuses_while_members_and_deletes(broker: BrokerProcess, name: str) -> None:
    await setup_topic(broker.bootstrap, name, name, 5)
    async with Admin(broker.bootstrap) as admin:
        assert (await admin.reset_share_group_offsets(name, [(name, 0)], to_latest=True)) == {
            TopicPartition(name, 0): 5}
        assert (await admin.list_share_group_offsets(name))[TopicPartition(name, 0)].start_offset == 5
        await admin.reset_share_group_offsets(name, [(name, 0)], to_offset=2)
        async with ShareConsumer(broker.bootstrap, group_id=name, **FAST) as c:
            c.subscribe([name])
            assert sorted(r.offset for r in await drain(c, 3)) == [2, 3, 4]
            with pytest.raises(KafkaError, match="NON_EMPTY_GROUP|not empty"):
                await admin.alter_share_group_offsets(name, {(name, 0): 0})
        await admin.delete_share_group_offsets(name, [name])
        assert (await admin.list_share_group_offsets(name, [(name, 0)]))[TopicPartition(name, 0)].start_offset == -1
        await admin.delete_groups([name])
        assert (await admin.describe_share_groups([name]))[name].state == "Dead"


CK_SCRIPT = textwrap.dedent("""
    import sys, time
    from confluent_kafka import ShareConsumer
    bootstrap, group, topic, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
    c.subscribe([topic])
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for m in c.poll(0.3) or []:
            if m.error() is None:
                print(m.offset(), flush=True)
    c.close()
""")


def _ck_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (CK_PATH, REPO, env.get("PYTHONPATH", "")) if p)
    return env


def _ck_has_share_consumer() -> bool:
    r = subprocess.run([sys.executable, "-c", "import confluent_kafka as c; assert hasattr(c, 'ShareConsumer')"],
                       env=_ck_env(), capture_output=True)
    return r.returncode == 0


async def test_a_group_shared_with_confluent_kafka(broker: BrokerProcess, name: str) -> None:
    if not _ck_has_share_consumer():
        pytest.skip("confluent-kafka with ShareConsumer (2.16+) is not installed (MINIBROKER_CK_SHARE_PATH)")
    await setup_topic(broker.bootstrap, name, name, 0)
    ck = subprocess.Popen([sys.executable, "-c", CK_SCRIPT, broker.bootstrap, name, name, "12"],
                          env=_ck_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        async with ShareConsumer(broker.bootstrap, group_id=name, max_poll_records=5, **FAST) as c:
            c.subscribe([name])
            async with Admin(broker.bootstrap) as admin:  # wait for both members
                for _ in range(100):
                    if len((await admin.describe_share_groups([name]))[name].members) == 2:
                        break
                    await asyncio.sleep(0.1)
            async with Producer(broker.bootstrap) as p:
                for i in range(300):
                    await p.send(name, f"v{i}".encode(), partition=0)
            ours: list[int] = []
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 8
            while loop.time() < deadline:
                ours += [r.offset for r in await c.poll(timeout_ms=300)]
                await asyncio.sleep(0.02)  # leave some to the other member
        out, err = ck.communicate(timeout=30)
    finally:
        if ck.poll() is None:
            ck.kill()
    theirs = [int(x) for x in out.split()]
    # every record once, whichever member got it (how they split depends on who fetches first:
    # librdkafka acquires up to 500 records per ShareFetch, this test's member 5)
    assert sorted(ours + theirs) == list(range(300)), err[-2000:]
