"""A damaged ``__consumer_offsets`` costs one batch, not every group's commits.

A broker commits one offset per group (one batch each), stops cleanly, and a byte of one
commit batch is damaged on disk: a bit in the CRC-covered part, the length field, or junk /
zeros appended to the segment. After a restart every other group's commit loads, the damaged
one is logged with its file and position, a new commit lands and survives the next restart
too (before, one bad byte gave ``loaded 0 groups`` at every start, or no start at all)."""

from __future__ import annotations

import glob
import os
import struct
import time
from pathlib import Path

import pytest

from broker.testing import BrokerProcess, create_topic
from client.protocol.api import ApiKey
from tests.server.wire import Conn

GROUPS = 20
OVERRIDES = ["offsets.topic.num.partitions=1"]  # every group in one partition, one segment


def commit(c: Conn, group: str, offset: int) -> int:
    resp = c.call(ApiKey.OFFSET_COMMIT, 2, {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": offset,
                                                 "committed_metadata": ""}]}]})
    return int(resp["topics"][0]["partitions"][0]["error_code"])


def committed(c: Conn, group: str) -> int:
    """The group's committed offset of t-0 (-1 for none), retrying while the groups load."""
    for _ in range(200):
        resp = c.call(ApiKey.OFFSET_FETCH, 1, {"group_id": group, "topics": [{"name": "t", "partition_indexes": [0]}]})
        part = resp["topics"][0]["partitions"][0]
        if part["error_code"] == 0:
            return int(part["committed_offset"])
        assert part["error_code"] == 14, part  # COORDINATOR_LOAD_IN_PROGRESS
    raise AssertionError("the groups never loaded")


def batch_positions(path: str) -> list[int]:
    data = Path(path).read_bytes()
    out, pos = [], 0
    while pos + 12 <= len(data):
        out.append(pos)
        pos += struct.unpack_from(">i", data, pos + 8)[0] + 12
    return out


def damage(path: str, how: str, batch: int) -> int:
    """Damage the file as ``how`` says; the position of the damaged batch (or the junk)."""
    pos = batch_positions(path)[batch]
    with open(path, "r+b") as f:
        if how == "crc_covered":
            f.seek(pos + 70)
            b = f.read(1)[0]
            f.seek(pos + 70)
            f.write(bytes([b ^ 0x10]))
        elif how == "length":
            f.seek(pos + 8)
            f.write(b"\xff\x00\x00\x00")
        else:
            pos = os.path.getsize(path)
            f.seek(pos)
            f.write(bytes(4096) if how == "zeros_appended" else os.urandom(3000))
    return pos


@pytest.mark.parametrize("how", ["crc_covered", "length", "zeros_appended", "junk_appended"])
def test_a_damaged_commit_costs_only_its_group(tmp_path, how: str) -> None:
    data = str(tmp_path / "data")
    with BrokerProcess(data, OVERRIDES) as b, Conn(b.port) as c:
        create_topic(b.bootstrap, "t", 1)
        assert [commit(c, f"g{i}", 100 + i) for i in range(GROUPS)] == [0] * GROUPS
    seg = sorted(glob.glob(f"{data}/__consumer_offsets-0/*.log"))[-1]
    bad = 7
    pos = damage(seg, how, bad)
    appended = how.endswith("appended")
    with BrokerProcess(data, OVERRIDES) as b, Conn(b.port) as c:
        got = [committed(c, f"g{i}") for i in range(GROUPS)]
        assert got == [-1 if (i == bad and not appended) else 100 + i for i in range(GROUPS)]
        assert commit(c, "after", 7) == 0
        log = b.log_text()
    if appended:
        assert "truncated them" in log and "Traceback" not in log
    else:
        assert f"{pos} of {seg}" in log, log  # the damage is named by file and position
        assert "loaded 19 groups" in log
    with BrokerProcess(data, OVERRIDES) as b, Conn(b.port) as c:
        assert committed(c, "after") == 7
        assert committed(c, f"g{GROUPS - 1}") == 100 + GROUPS - 1


def test_a_damaged_transaction_state_record_costs_only_its_id(tmp_path) -> None:
    """The same loader replays ``__transaction_state``: one damaged batch loses one
    transactional id's record, the others load."""
    data = str(tmp_path / "data")
    overrides = ["transaction.state.log.num.partitions=1"]
    ids = [f"tx{i}" for i in range(10)]
    with BrokerProcess(data, overrides) as b, Conn(b.port) as c:
        for tid in ids:
            resp = c.call(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": tid, "transaction_timeout_ms": 60000})
            assert resp["error_code"] == 0, resp
    seg = sorted(glob.glob(f"{data}/__transaction_state-0/*.log"))[-1]
    assert len(batch_positions(seg)) == len(ids)  # one record (one batch) per id
    pos = damage(seg, "crc_covered", 4)
    with BrokerProcess(data, overrides) as b, Conn(b.port) as c:
        for _ in range(200):
            resp = c.call(ApiKey.LIST_TRANSACTIONS, 0, {"state_filters": [], "producer_id_filters": []})
            if resp["error_code"] == 0:
                break
        assert sorted(t["transactional_id"] for t in resp["transaction_states"]) == ids[:4] + ids[5:]
        for _ in range(100):  # the loader's summary line reaches the log just after it answers
            if "loaded 9 transactional ids" in b.log_text():
                break
            time.sleep(0.05)
        log = b.log_text()
    assert f"{pos} of {seg}" in log and "loaded 9 transactional ids" in log, log
