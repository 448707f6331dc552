"""Damaged files in the data directory never keep the broker from starting, and cost only what
is damaged (broker processes, real restarts):

- junk or zeros appended to the active ``.log`` (a power loss on some file systems), after a
  clean or an unclean stop: truncated and logged as recovery does; every record stays;
- a batch whose length field is broken in the middle of a segment: a fetch from before it
  returns exactly the batches before it, a fetch of its offset gets CORRUPT_MESSAGE, a fetch
  after it is served (before, the whole segment was unreadable);
- a garbage ``partition.metadata``: rewritten with the id the topic's other partitions hold,
  else that one partition is offline (Metadata: LEADER_NOT_AVAILABLE; Produce:
  KAFKA_STORAGE_ERROR) while the other topics serve.
"""

from __future__ import annotations

import glob
import os
import struct
from pathlib import Path

import pytest

from broker.testing import BrokerProcess, create_topic
from client.protocol.api import ApiKey
from client.protocol.api import ErrorCode as E
from client.records import build_batch
from client.records.batch import iter_batch_headers
from tests.server.wire import Conn, fetch, produce

RECORDS = 300


def fill(b: BrokerProcess, topic: str, partitions: int = 1, records: int = RECORDS) -> None:
    create_topic(b.bootstrap, topic, partitions)
    with Conn(b.port) as c:
        for p in range(partitions):
            for i in range(records):
                resp = c.call(ApiKey.PRODUCE, 7, produce(topic, p, build_batch([(None, b"v%d" % i)])))
                assert resp["responses"][0]["partition_responses"][0]["error_code"] == 0


def fetched(c: Conn, topic: str, offset: int, partition: int = 0) -> tuple[int, list[int]]:
    """(error code, base offsets of the whole batches returned) of one Fetch v11."""
    p = c.call(ApiKey.FETCH, 11, fetch(topic, partition, offset))["responses"][0]["partitions"][0]
    return int(p["error_code"]), [h.base_offset for h in iter_batch_headers(p["records"] or b"")]


def batch_position(path: str, index: int) -> int:
    data = Path(path).read_bytes()
    pos = 0
    for _ in range(index):
        pos += struct.unpack_from(">i", data, pos + 8)[0] + 12
    return pos


def only_segment(data: str, topic: str, partition: int = 0) -> str:
    (seg,) = glob.glob(f"{data}/{topic}-{partition}/*.log")
    return seg


@pytest.mark.parametrize("stop", ["clean", "kill"])
@pytest.mark.parametrize("junk", ["zeros", "random"])
def test_junk_after_the_active_segment_is_truncated(tmp_path, stop: str, junk: str) -> None:
    data = str(tmp_path / "data")
    b = BrokerProcess(data).start()
    fill(b, "t")
    b.stop() if stop == "clean" else b.kill()
    seg = only_segment(data, "t")
    size = os.path.getsize(seg)
    with open(seg, "ab") as f:
        f.write(bytes(8192) if junk == "zeros" else os.urandom(8192))
    with BrokerProcess(data) as b, Conn(b.port) as c:
        err, bases = fetched(c, "t", 0)
        assert err == 0 and bases == list(range(RECORDS))
        resp = c.call(ApiKey.PRODUCE, 7, produce("t", 0, build_batch([(None, b"next")])))
        assert resp["responses"][0]["partition_responses"][0]["base_offset"] == RECORDS
        log = b.log_text()
    assert "Traceback" not in log
    assert "Truncated 8192 invalid bytes" in log or "8192 bytes that are not valid batches" in log, log
    assert os.path.getsize(seg) > size  # the junk went, the new batch came


def test_a_broken_length_costs_only_its_batch_for_fetches(tmp_path) -> None:
    data = str(tmp_path / "data")
    with BrokerProcess(data) as b:
        fill(b, "t")
    seg = only_segment(data, "t")
    bad = 250
    with open(seg, "r+b") as f:
        f.seek(batch_position(seg, bad) + 8)
        f.write(b"\xff\xff\x00\x00")
    with BrokerProcess(data) as b, Conn(b.port) as c:
        assert fetched(c, "t", 0) == (0, list(range(bad)))  # exactly the batches before the damage
        assert fetched(c, "t", bad - 1) == (0, [bad - 1])
        assert fetched(c, "t", bad) == (E.CORRUPT_MESSAGE, [])
        assert fetched(c, "t", bad + 1) == (0, list(range(bad + 1, RECORDS)))
        log = b.log_text()
    assert f"where offsets {bad}..{bad} were due" in log and "Traceback" not in log


def test_a_damaged_partition_metadata_is_rewritten_from_its_siblings(tmp_path) -> None:
    data = str(tmp_path / "data")
    with BrokerProcess(data) as b:
        fill(b, "t", partitions=3, records=5)
        with Conn(b.port) as c:
            topic_id = c.call(ApiKey.METADATA, 12, {"topics": [{"topic_id": None, "name": "t"}],
                                                    "allow_auto_topic_creation": False,
                                                    "include_topic_authorized_operations": False})["topics"][0]["topic_id"]
    meta = Path(data) / "t-1" / "partition.metadata"
    meta.write_bytes(os.urandom(40))
    with BrokerProcess(data) as b, Conn(b.port) as c:
        md = c.call(ApiKey.METADATA, 12, {"topics": [{"topic_id": None, "name": "t"}], "allow_auto_topic_creation": False,
                                          "include_topic_authorized_operations": False})["topics"][0]
        assert md["topic_id"] == topic_id
        assert [p["error_code"] for p in md["partitions"]] == [0, 0, 0]
        assert fetched(c, "t", 0, partition=1) == (0, [0, 1, 2, 3, 4])
        log = b.log_text()
    assert "rewrote it with topic t's id" in log
    assert meta.read_text().startswith("version: 0\ntopic_id: ")


def test_a_partition_that_cannot_load_is_offline_and_the_others_serve(tmp_path) -> None:
    data = str(tmp_path / "data")
    with BrokerProcess(data) as b:
        fill(b, "lonely", records=5)
        fill(b, "fine", records=5)
    (Path(data) / "lonely-0" / "partition.metadata").write_bytes(b"version: 0\ntopic_id: not-an-id\n")
    with BrokerProcess(data) as b, Conn(b.port) as c:
        md = c.call(ApiKey.METADATA, 9, {"topics": [{"name": "lonely"}, {"name": "fine"}],
                                         "allow_auto_topic_creation": False,
                                         "include_cluster_authorized_operations": False,
                                         "include_topic_authorized_operations": False})
        by_name = {t["name"]: t["partitions"][0] for t in md["topics"]}
        assert by_name["lonely"]["error_code"] == E.LEADER_NOT_AVAILABLE and by_name["lonely"]["leader_id"] == -1
        assert by_name["lonely"]["offline_replicas"] == [0]
        assert by_name["fine"]["error_code"] == 0
        resp = c.call(ApiKey.PRODUCE, 7, produce("lonely", 0, build_batch([(None, b"x")])))
        assert resp["responses"][0]["partition_responses"][0]["error_code"] == E.KAFKA_STORAGE_ERROR
        assert fetched(c, "lonely", 0) == (E.KAFKA_STORAGE_ERROR, [])
        assert fetched(c, "fine", 0) == (0, [0, 1, 2, 3, 4])
        log = b.log_text()
    assert "partition lonely-0 is offline" in log and "Traceback" not in log
    # untouched on disk, for the operator
    assert (Path(data) / "lonely-0" / "partition.metadata").read_bytes() == b"version: 0\ntopic_id: not-an-id\n"
