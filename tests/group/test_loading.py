"""Start-up loading of ``__consumer_offsets`` (broker/group/runtime.py): a broker restarted over
a data dir with many committed groups serves produce and fetch on ordinary topics while the
groups load, answers COORDINATOR_LOAD_IN_PROGRESS for groups not loaded yet (OffsetFetch,
JoinGroup), and once loaded every group has exactly the offsets committed before the restart;
a group consumer started during the load retries and resumes from them.

The load window is made long (seconds) so the test can look into it: ``__consumer_offsets-0``,
which is replayed first, holds a filler group's large commits, and ``offsets.load.buffer.size``
is lowered so each chunk is one batch. The window is bracketed by ``/healthz``: it says
``loading: groups`` before and after the requests that must be answered during the load.
"""

from __future__ import annotations

import asyncio
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from broker.group.records import partition_for
from broker.testing import BrokerProcess, create_topic
from client.consumer import Consumer
from client.protocol.api import ApiKey
from client.protocol.api import ErrorCode as E
from client.protocol.messages import REQUESTS
from client.protocol.primitives import Writer
from client.records import build_batch
from tests.server.wire import Conn, fetch, produce

pytestmark = pytest.mark.slow

GROUPS = 500  # committed groups, three partitions of "t" each, in every partition of the topic
FILLER_COMMITS, FILLER_PARTITIONS = 300, 500  # records in __consumer_offsets-0 that make the load slow
RECORDS = 50  # per partition of "t"


def named_in(partition: int, prefix: str) -> str:
    """A group name that ``__consumer_offsets`` places in ``partition`` (of 50)."""
    return next(f"{prefix}-{i}" for i in range(10_000) if partition_for(f"{prefix}-{i}", 50) == partition)


def committed_by(i: int) -> dict[int, int]:
    """What group ``g-{i}`` commits for the partitions of "t"."""
    return {p: (i + 7 * p) % RECORDS for p in range(3)}


def commit_body(group: str, topic: str, offsets: dict[int, int]) -> dict[str, Any]:
    return {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
            "topics": [{"name": topic, "partitions": [{"partition_index": p, "committed_offset": o,
                                                        "committed_metadata": ""} for p, o in offsets.items()]}]}


def pipelined_commits(c: Conn, bodies: list[dict[str, Any] | bytes], window: int = 32) -> None:
    """OffsetCommit v2 of each body, ``window`` in flight; every partition answered with no error."""
    sent: list[int] = []

    def answer() -> None:
        cid, resp = c.recv(ApiKey.OFFSET_COMMIT, 2)
        assert cid == sent.pop(0)
        assert {p["error_code"] for t in resp["topics"] for p in t["partitions"]} == {0}

    for body in bodies:
        sent.append(c.send(ApiKey.OFFSET_COMMIT, 2, body))
        if len(sent) >= window:
            answer()
    while sent:
        answer()


def healthz(b: BrokerProcess) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(b.metrics_url.replace("/metrics", "/healthz"), timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def fetch_offsets(c: Conn, group: str) -> tuple[int, dict[int, int]]:
    r = c.call(ApiKey.OFFSET_FETCH, 5, {"group_id": group, "topics": [{"name": "t", "partition_indexes": [0, 1, 2]}],
                                        "require_stable": False})
    return r["error_code"], {p["partition_index"]: p["committed_offset"] for t in r["topics"] for p in t["partitions"]}


def test_groups_load_in_the_background_while_produce_and_fetch_are_served(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    last = named_in(49, "last")  # replayed last, after the filler
    filler = named_in(0, "filler")  # replayed first
    b = BrokerProcess(data).start()
    try:
        create_topic(b.bootstrap_servers, "t", 3)
        with Conn(b.port) as c:
            for p in range(3):
                resp = c.call(ApiKey.PRODUCE, 3, produce("t", p, build_batch([(None, b"%d-%d" % (p, i))
                                                                             for i in range(RECORDS)])))
                assert resp["responses"][0]["partition_responses"][0]["error_code"] == 0
            assert c.call(ApiKey.FIND_COORDINATOR, 1, {"key": last, "key_type": 0})["error_code"] == 0
            # the filler: the same large commit, encoded once, sent FILLER_COMMITS times (its
            # partitions must exist: commits of unknown partitions are refused)
            create_topic(b.bootstrap_servers, "filler-topic", FILLER_PARTITIONS)
            w = Writer(bytearray())
            REQUESTS[ApiKey.OFFSET_COMMIT].encode(
                commit_body(filler, "filler-topic", dict.fromkeys(range(FILLER_PARTITIONS), 1)), 2, w)
            pipelined_commits(c, [bytes(w.buf)] * FILLER_COMMITS, window=4)
            # each group commits twice: the replay must keep the last value of each key
            stale = {p: RECORDS - 1 for p in range(3)}
            pipelined_commits(c, [commit_body(f"g-{i}", "t", stale) for i in range(GROUPS)])
            pipelined_commits(c, [commit_body(f"g-{i}", "t", committed_by(i)) for i in range(GROUPS)])
            pipelined_commits(c, [commit_body(last, "t", {0: 10, 1: 20, 2: 30})])
    finally:
        assert b.stop() == 0

    b = BrokerProcess(data, ["offsets.load.buffer.size=1"], metrics=True).start()
    try:
        # the load runs in the background from before the broker said it was listening
        assert healthz(b) == (503, "loading: groups\n")
        with Conn(b.port) as c:
            assert fetch_offsets(c, last) == (E.COORDINATOR_LOAD_IN_PROGRESS, {})
            r = c.call(ApiKey.OFFSET_FETCH, 8, {"groups": [{"group_id": last, "topics": None}], "require_stable": False})
            assert [(g["group_id"], g["error_code"]) for g in r["groups"]] == [(last, E.COORDINATOR_LOAD_IN_PROGRESS)]
            r = c.call(ApiKey.JOIN_GROUP, 5, {"group_id": last, "session_timeout_ms": 10000,
                                              "rebalance_timeout_ms": 10000, "member_id": "", "group_instance_id": None,
                                              "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b""}]})
            assert r["error_code"] == E.COORDINATOR_LOAD_IN_PROGRESS
            # ordinary topics are served meanwhile
            r = c.call(ApiKey.PRODUCE, 3, produce("t", 0, build_batch([(None, b"during-load")])))
            pr = r["responses"][0]["partition_responses"][0]
            assert (pr["error_code"], pr["base_offset"]) == (0, RECORDS)
            pf = c.call(ApiKey.FETCH, 4, fetch("t", 0, RECORDS))["responses"][0]["partitions"][0]
            assert (pf["error_code"], pf["high_watermark"]) == (0, RECORDS + 1)
            assert b"during-load" in bytes(pf["records"])
            assert healthz(b) == (503, "loading: groups\n"), "the load ended before the test could look into it"

            # A group consumer started now retries until its group is loaded, then resumes at
            # the committed offsets (10, 20, 30), the record produced during the load included.
            expected = {(0, o) for o in range(10, RECORDS + 1)} | {(1, o) for o in range(20, RECORDS)} | \
                {(2, o) for o in range(30, RECORDS)}

            async def consume() -> set[tuple[int, int]]:
                seen: set[tuple[int, int]] = set()
                async with Consumer(b.bootstrap, group_id=last, auto_offset_reset="earliest", fetch_max_wait_ms=100,
                                    request_timeout_ms=30000, enable_auto_commit=False) as consumer:
                    consumer.subscribe(["t"])
                    deadline = time.monotonic() + 60
                    while not seen >= expected and time.monotonic() < deadline:
                        for tp, rows in (await consumer.getmany(timeout_ms=200)).items():
                            seen.update((tp.partition, r.offset) for r in rows)
                return seen

            assert asyncio.run(consume()) == expected
            # every group has what it committed before the restart
            for i in range(GROUPS):
                deadline = time.monotonic() + 60
                while (got := fetch_offsets(c, f"g-{i}"))[0] == E.COORDINATOR_LOAD_IN_PROGRESS:
                    assert time.monotonic() < deadline, "still loading after 60 s"
                    time.sleep(0.05)
                assert got == (0, committed_by(i))
        assert healthz(b) == (200, "ok\n")
    finally:
        assert b.stop() == 0
