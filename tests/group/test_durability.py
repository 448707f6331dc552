"""Committed offsets survive a SIGKILL: every OffsetCommit that was answered is there after the
restart (the answer waits for the fsync), through OffsetFetch and in the ``__consumer_offsets``
segment files read with an independent decoder. Also the group placement on disk and the
internal topic's protections."""

from __future__ import annotations

import os
import time
from pathlib import Path

from broker.group.records import partition_for
from broker.testing import BrokerProcess, create_topic
from client.protocol.api import ApiKey
from client.protocol.api import ErrorCode as E
from client.records import build_batch
from tests.server.wire import Conn, produce

from .kafka_offsets_decoder import read_partition_dir

GROUPS = [f"group-{i}" for i in range(20)]


def commit_body(group: str, offset: int) -> dict[str, object]:
    return {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
            "topics": [{"name": "t", "partitions": [{"partition_index": p, "committed_offset": offset + p,
                                                      "committed_metadata": f"m{offset}"} for p in range(3)]}]}


def fetch(conn: Conn, group: str) -> dict[int, tuple[int, str]]:
    r = conn.call(ApiKey.OFFSET_FETCH, 1, {"group_id": group, "topics": [{"name": "t", "partition_indexes": [0, 1, 2]}]})
    return {p["partition_index"]: (p["committed_offset"], p["metadata"]) for p in r["topics"][0]["partitions"]}


def test_answered_commits_survive_sigkill(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    b = BrokerProcess(data).start()
    acked: dict[str, int] = {}
    try:
        create_topic(b.bootstrap_servers, "t", 3)
        with Conn(b.port) as c:
            # FindCoordinator creates __consumer_offsets
            assert c.call(ApiKey.FIND_COORDINATOR, 1, {"key": "group-0", "key_type": 0})["error_code"] == 0
            for round_ in range(5):
                sent = [(g, c.send(ApiKey.OFFSET_COMMIT, 2, commit_body(g, 100 * round_))) for g in GROUPS]
                for g, cid in sent:
                    got, resp = c.recv(ApiKey.OFFSET_COMMIT, 2)
                    assert got == cid
                    assert [p["error_code"] for p in resp["topics"][0]["partitions"]] == [0, 0, 0]
                    acked[g] = 100 * round_
    finally:
        b.kill()  # right after the last answer: nothing had time to be flushed later
    b = BrokerProcess(data).start()
    try:
        with Conn(b.port) as c:
            for g in GROUPS:
                for _ in range(50):  # the offsets topic loads in the background
                    got = fetch(c, g)
                    if got[0][0] != -1:
                        break
                    time.sleep(0.05)
                assert got == {p: (acked[g] + p, f"m{acked[g]}") for p in range(3)}
    finally:
        assert b.stop() == 0
    # The files, read with the independent decoder: each group in the partition Kafka would
    # use, the last record of each key what was acknowledged.
    for g in GROUPS:
        records = read_partition_dir(os.path.join(data, f"__consumer_offsets-{partition_for(g, 50)}"))
        last = {}
        for kind, key, value in records:
            if kind == "offset" and key["group"] == g:
                last[key["partition"]] = value
        assert {p: (v["offset"], v["metadata"], v["version"]) for p, v in last.items()} == \
            {p: (acked[g] + p, f"m{acked[g]}", 3) for p in range(3)}


def test_consumer_offsets_is_internal(tmp_path: Path) -> None:
    with BrokerProcess(str(tmp_path / "data")) as b, Conn(b.port) as c:
        c.call(ApiKey.FIND_COORDINATOR, 0, {"key": "g"})
        md = c.call(ApiKey.METADATA, 1, {"topics": [{"name": "__consumer_offsets"}]})
        t = md["topics"][0]
        assert t["error_code"] == 0 and t["is_internal"] is True and len(t["partitions"]) == 50
        r = c.call(ApiKey.PRODUCE, 3, produce("__consumer_offsets", 0, build_batch([(b"k", b"v")])))
        assert r["responses"][0]["partition_responses"][0]["error_code"] == E.INVALID_TOPIC_EXCEPTION
        r = c.call(ApiKey.DELETE_TOPICS, 1, {"topic_names": ["__consumer_offsets"], "timeout_ms": 1000})
        assert r["responses"][0]["error_code"] == E.INVALID_TOPIC_EXCEPTION
