"""Kafka 4.2's client-facing admin APIs over the wire, against an in-process broker:
DescribeQuorum (a one-voter KRaft quorum), DescribeTopicPartitions (cursor paging as Kafka's
broker pages) and ListConfigResources (v0's client-metrics resources, v1's config resource
types). Their authorization: tests/broker/test_authorization.py; kafka-python's admin calls:
tests/compat/test_kafka42_admin.py. UpdateFeatures and ApiVersions' features:
tests/broker/test_features.py."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from broker.storage.partition_metadata import topic_id_to_str
from broker.testing.inprocess import InProcessBroker
from broker.testing.wire import Conn
from client.protocol.api import ApiKey, ErrorCode


@pytest.fixture(scope="module")
def ib(tmp_path_factory) -> Iterator[InProcessBroker]:
    b = InProcessBroker(str(tmp_path_factory.mktemp("kafka42") / "data")).start()
    try:
        yield b
    finally:
        b.stop()


def quorum(topic: str = "__cluster_metadata", *partitions: int) -> dict:
    return {"topics": [{"topic_name": topic, "partitions": [{"partition_index": p} for p in (partitions or (0,))]}]}


def test_describe_quorum_one_voter_at_every_version(ib) -> None:
    state = ib.broker.state
    directory_id = ib.call(lambda: state.logs.directory_id)
    assert directory_id != uuid.UUID(int=0)
    with open(f"{ib.data_dir}/meta.properties") as f:
        assert f"directory.id={topic_id_to_str(directory_id)}\n" in f.read()
    epoch = ib.call(lambda: state.features.epoch)
    with Conn(ib.port) as c:
        for version in (0, 1, 2):
            before = int(time.time() * 1000)
            r = c.call(ApiKey.DESCRIBE_QUORUM, version, quorum())
            assert (r["error_code"], r["error_message"]) == (0, None)
            (t,) = r["topics"]
            (p,) = t["partitions"]
            assert t["topic_name"] == "__cluster_metadata"
            assert (p["partition_index"], p["error_code"], p["leader_id"], p["leader_epoch"]) == (0, 0, 0, 1)
            assert p["high_watermark"] == epoch + 1 and p["observers"] == []
            (voter,) = p["current_voters"]
            assert (voter["replica_id"], voter["log_end_offset"]) == (0, epoch + 1)
            if version >= 1:  # the leader's own timestamps are now
                assert voter["last_fetch_timestamp"] == voter["last_caught_up_timestamp"] >= before
            else:
                assert voter["last_fetch_timestamp"] == -1
            assert voter["replica_directory_id"] == (directory_id if version >= 2 else None)
            assert r["nodes"] == ([{"node_id": 0, "listeners": [{"name": "PLAINTEXT", "host": "127.0.0.1",
                                                                 "port": ib.port}]}] if version >= 2 else [])
        # not the metadata partition: each partition named is not hosted here
        for body in (quorum("__cluster_metadata", 1), quorum("orders", 0), quorum("__cluster_metadata", 0, 0),
                     {"topics": []}):
            r = c.call(ApiKey.DESCRIBE_QUORUM, 2, body)
            assert r["error_code"] == 0 and r["nodes"] == []
            named = [(t["topic_name"], p["partition_index"]) for t in body["topics"] for p in t["partitions"]]
            assert [(t["topic_name"], p["partition_index"], p["error_code"], p["error_message"])
                    for t in r["topics"] for p in t["partitions"]] == [
                (name, i, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
                for name, i in named]


def test_a_data_dir_without_a_directory_id_gets_one_and_keeps_it(tmp_path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "meta.properties").write_text("#\nversion=1\ncluster.id=abcdefghijklmnopqrstuv\nnode.id=0")
    with InProcessBroker(str(data)) as b:
        first = b.call(lambda: b.broker.state.logs.directory_id)
        assert b.call(lambda: b.broker.state.cluster_id) == "abcdefghijklmnopqrstuv"
    text = (data / "meta.properties").read_text()
    assert text == f"#\nversion=1\ncluster.id=abcdefghijklmnopqrstuv\nnode.id=0\ndirectory.id={topic_id_to_str(first)}\n"
    with InProcessBroker(str(data)) as b, Conn(b.port) as c:
        (voter,) = c.call(ApiKey.DESCRIBE_QUORUM, 2, quorum())["topics"][0]["partitions"][0]["current_voters"]
        assert voter["replica_directory_id"] == first


def test_an_invalid_directory_id_refuses_the_data_dir(tmp_path) -> None:
    from broker.storage.errors import InconsistentMetaPropertiesError
    from broker.storage.log_manager import LogManager

    (tmp_path / "meta.properties").write_text("version=1\ncluster.id=abc\nnode.id=0\ndirectory.id=not-an-id\n")
    with pytest.raises(InconsistentMetaPropertiesError, match="invalid directory.id"):
        LogManager(str(tmp_path)).startup()
