"""DeleteTopics against broker processes: every group's committed offsets of a deleted topic go
with it (tombstones in ``__consumer_offsets``, durable before the answer), so a re-created topic
of the same name starts with no committed offsets, also after a restart, even one by SIGKILL
right after the answer."""

from __future__ import annotations

import time
from pathlib import Path

from client.protocol.api import ApiKey
from tests.broker_process import BrokerProcess
from tests.server.wire import Conn, create_topic

from .test_offset_commit import commit, fetch


def _fetch_when_loaded(c: Conn, group: str, tps: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """OffsetFetch, retried while ``__consumer_offsets`` loads after a restart."""
    deadline = time.monotonic() + 10
    while True:
        r = c.call(ApiKey.OFFSET_FETCH, 7, {"group_id": group, "require_stable": False, "topics": [
            {"name": t, "partition_indexes": [p]} for t, p in tps]})
        if r["error_code"] == 0 or time.monotonic() > deadline:
            assert r["error_code"] == 0, r
            return {(t["name"], p["partition_index"]): p["committed_offset"] for t in r["topics"]
                    for p in t["partitions"]}
        time.sleep(0.05)


def test_deleting_a_topic_removes_its_committed_offsets_from_every_group(tmp_path: Path) -> None:
    """Two groups commit to ``t`` (and one to ``other``); ``t`` is deleted and re-created: both
    groups fetch -1 for it, ``other`` keeps its offset. The broker is SIGKILLed right after
    and restarted: still -1 (the tombstones were durable before the answer), and a commit to
    the new topic is kept."""
    data = str(tmp_path / "data")
    b = BrokerProcess(data).start()
    try:
        with Conn(b.port) as c:
            for name, n in (("t", 2), ("other", 1)):
                assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic(name, n))["topics"][0]["error_code"] == 0
            assert commit(c, "g1", {("t", 0): 5, ("t", 1): 6, ("other", 0): 7}) == dict.fromkeys(
                [("t", 0), ("t", 1), ("other", 0)], 0)
            assert commit(c, "g2", {("t", 1): 8}) == {("t", 1): 0}
            r = c.call(ApiKey.DELETE_TOPICS, 4, {"topic_names": ["t"], "timeout_ms": 5000})
            assert r["responses"][0]["error_code"] == 0, r
            assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("t", 2))["topics"][0]["error_code"] == 0
            assert fetch(c, "g1", [("t", 0), ("t", 1), ("other", 0)]) == {("t", 0): -1, ("t", 1): -1,
                                                                           ("other", 0): 7}
            assert fetch(c, "g2", [("t", 1)]) == {("t", 1): -1}
    finally:
        b.kill()
    b = BrokerProcess(data).start()
    try:
        with Conn(b.port) as c:
            assert _fetch_when_loaded(c, "g1", [("t", 0), ("t", 1), ("other", 0)]) == {
                ("t", 0): -1, ("t", 1): -1, ("other", 0): 7}
            assert _fetch_when_loaded(c, "g2", [("t", 1)]) == {("t", 1): -1}
            assert commit(c, "g1", {("t", 0): 1}) == {("t", 0): 0}
    finally:
        assert b.stop() == 0, b.log_text()
    b = BrokerProcess(data).start()
    try:
        with Conn(b.port) as c:
            assert _fetch_when_loaded(c, "g1", [("t", 0), ("t", 1)]) == {("t", 0): 1, ("t", 1): -1}
    finally:
        assert b.stop() == 0, b.log_text()
