"""OffsetFetch v8+ over the wire in its multi-group form (broker/handlers/offset_fetch.py): one
request names several groups, each with its own topics (or null: every committed offset), and
the response answers each group in its own entry with its own error code. An unknown group
answers -1 per asked partition (nothing at all when it asked for every offset) and no error."""

from __future__ import annotations

from typing import Any

import pytest

from broker.testing import BrokerProcess, create_topic
from client.protocol.api import ApiKey
from tests.server.wire import Conn


def commit(conn: Conn, group: str, offsets: dict[tuple[str, int], tuple[int, int, str]]) -> None:
    """OffsetCommit v8 (flexible, leader epochs) with generation -1: a simple group."""
    by: dict[str, list[dict[str, Any]]] = {}
    for (t, p), (o, epoch, meta) in offsets.items():
        by.setdefault(t, []).append({"partition_index": p, "committed_offset": o, "committed_leader_epoch": epoch,
                                     "committed_metadata": meta})
    r = conn.call(ApiKey.OFFSET_COMMIT, 8, {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                                            "group_instance_id": None,
                                            "topics": [{"name": t, "partitions": ps} for t, ps in by.items()]})
    assert [p["error_code"] for t in r["topics"] for p in t["partitions"]] == [0] * len(offsets)


def answered(group: dict[str, Any]) -> dict[tuple[str, int], tuple[int, int, str | None, int]]:
    return {(t["name"], p["partition_index"]): (p["committed_offset"], p["committed_leader_epoch"], p["metadata"],
                                                p["error_code"])
            for t in group["topics"] for p in t["partitions"]}


@pytest.mark.parametrize("version", [8, 9])
def test_one_request_fetches_the_offsets_of_several_groups(broker: BrokerProcess, version: int) -> None:
    a, b, unknown = f"multi-a-v{version}", f"multi-b-v{version}", f"multi-never-committed-v{version}"
    with Conn(broker.port) as c:
        for topic in ("t1", "t2", "t3"):  # commits of unknown topics are refused
            create_topic(broker.bootstrap_servers, topic, 3)
        commit(c, a, {("t1", 0): (10, 3, "a-t1-0"), ("t1", 1): (11, 3, ""), ("t2", 0): (20, -1, "a-t2")})
        commit(c, b, {("t1", 0): (100, 5, "b-t1-0"), ("t3", 2): (300, 7, "b-t3")})
        commit(c, a, {("t1", 1): (12, 4, "again")})  # the last commit of a key wins
        extra: dict[str, Any] = {"member_id": None, "member_epoch": -1} if version >= 9 else {}
        r = c.call(ApiKey.OFFSET_FETCH, version, {"require_stable": True, "groups": [
            {"group_id": a, **extra, "topics": [{"name": "t1", "partition_indexes": [0, 1, 2]},
                                                {"name": "t2", "partition_indexes": [0]}]},
            {"group_id": b, **extra, "topics": None},  # every committed offset of b
            {"group_id": unknown, **extra, "topics": [{"name": "t1", "partition_indexes": [0, 5]}]},
            {"group_id": unknown + "-all", **extra, "topics": None},
        ]})
    assert r["throttle_time_ms"] == 0
    assert [(g["group_id"], g["error_code"]) for g in r["groups"]] == \
        [(a, 0), (b, 0), (unknown, 0), (unknown + "-all", 0)]
    ga, gb, gu, gall = r["groups"]
    assert answered(ga) == {("t1", 0): (10, 3, "a-t1-0", 0), ("t1", 1): (12, 4, "again", 0),
                            ("t1", 2): (-1, -1, "", 0), ("t2", 0): (20, -1, "a-t2", 0)}
    assert answered(gb) == {("t1", 0): (100, 5, "b-t1-0", 0), ("t3", 2): (300, 7, "b-t3", 0)}
    assert answered(gu) == {("t1", 0): (-1, -1, "", 0), ("t1", 5): (-1, -1, "", 0)}
    assert gall["topics"] == []
