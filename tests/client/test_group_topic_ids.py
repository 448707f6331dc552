"""Our client's group offsets at OffsetCommit/OffsetFetch v10 (topics by id, KIP-848's topic
ids) against a broker that serves them (in-process, with its metrics counting each API and
version): the consumer's commits and fetches and the Admin's group offsets name topics by the
ids Metadata gave and read the answers back by id; a topic deleted and made again under the
same name (a stale id in the consumer's metadata) is committed and read by name at v9 after
UNKNOWN_TOPIC_ID."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from broker.testing.inprocess import InProcessBroker
from client.admin import Admin
from client.consumer import Consumer
from client.producer import Producer
from client.structs import TopicPartition

FAST = {"fetch_max_wait_ms": 100, "request_timeout_ms": 10000, "auto_offset_reset": "earliest",
        "heartbeat_interval_ms": 300, "session_timeout_ms": 6000}


@pytest.fixture(scope="module")
def ib(tmp_path_factory) -> Iterator[InProcessBroker]:
    b = InProcessBroker(str(tmp_path_factory.mktemp("gids") / "data"), metrics=True).start()
    try:
        yield b
    finally:
        b.stop()


def versions(ib: InProcessBroker, api: str) -> dict[int, float]:
    """Requests answered so far, by version, of one API (its metrics' name: OFFSET_COMMIT, ...)."""
    return {int(v): float(n) for v, n in re.findall(
        rf'^minibroker_requests_total\{{api="{api}",version="(\d+)"\}} (\S+)$', ib.scrape(), re.M)}


async def test_consumer_and_admin_commit_and_fetch_by_topic_id(ib) -> None:
    bs = f"127.0.0.1:{ib.port}"
    async with Admin(bs) as admin:
        await admin.create_topic("gid", 2)
    async with Producer(bs, linger_ms=1) as p:
        for i in range(6):
            await p.send("gid", b"%d" % i, partition=i % 2)
    commits, fetches = versions(ib, "OFFSET_COMMIT"), versions(ib, "OFFSET_FETCH")
    async with Consumer(bs, group_id="gid-group", enable_auto_commit=False, **FAST) as c:
        c.subscribe(["gid"])
        seen = 0
        while seen < 6:
            seen += sum(len(rows) for rows in (await c.getmany(timeout_ms=3000)).values())
        await c.commit()
        assert c._group is not None and c._group.cluster.topics["gid"].topic_id is not None
        got = await c.committed([("gid", 0), ("gid", 1)])
        assert {tp: om.offset for tp, om in got.items() if om is not None} == {
            TopicPartition("gid", 0): 3, TopicPartition("gid", 1): 3}
    async with Admin(bs) as admin:
        await admin.alter_group_offsets("gid-group", {("gid", 0): 1})
        every = await admin.fetch_group_offsets("gid-group", None)
        assert {tp: om.offset for tp, om in every.items()} == {TopicPartition("gid", 0): 1, TopicPartition("gid", 1): 3}
        assert (await admin.fetch_group_offsets("gid-group", [TopicPartition("gid", 1)]))[
            TopicPartition("gid", 1)].offset == 3
        # a topic with no id (it does not exist): v9, by name, as before
        assert await admin.fetch_group_offsets("gid-group", [TopicPartition("nowhere", 0)]) == {}
    new_commits = {v: n - commits.get(v, 0) for v, n in versions(ib, "OFFSET_COMMIT").items() if n > commits.get(v, 0)}
    new_fetches = {v: n - fetches.get(v, 0) for v, n in versions(ib, "OFFSET_FETCH").items() if n > fetches.get(v, 0)}
    assert set(new_commits) == {10}
    assert set(new_fetches) == {9, 10} and new_fetches[9] == 1  # "nowhere" only


async def test_a_stale_topic_id_is_committed_and_read_by_name(ib) -> None:
    bs = f"127.0.0.1:{ib.port}"
    async with Admin(bs) as admin:
        await admin.create_topic("gid-again", 1)
    async with Producer(bs, linger_ms=1) as p:
        await p.send("gid-again", b"x")
    async with Consumer(bs, group_id="gid-again-group", enable_auto_commit=False, **FAST) as c:
        c.assign([("gid-again", 0)])
        assert (await c.getone()).value == b"x"
        await c.commit()
        async with Admin(bs) as admin:
            await admin.delete_topic("gid-again")
            await admin.create_topic("gid-again", 1)
        # the consumer still has the old id: UNKNOWN_TOPIC_ID, then named at v9
        before = versions(ib, "OFFSET_COMMIT").get(9, 0)
        await c.commit({("gid-again", 0): 7})
        assert versions(ib, "OFFSET_COMMIT").get(9, 0) == before + 1
        assert (await c.committed([("gid-again", 0)]))[TopicPartition("gid-again", 0)].offset == 7  # type: ignore[union-attr]
