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


# ------------------------------------------------------------------ DescribeTopicPartitions

#: every operation Kafka defines on a topic: what a topic answers without an authorizer
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))


def dtp(topics: list[str], limit: int = 2000, cursor: tuple[str, int] | None = None) -> dict:
    return {"topics": [{"name": t} for t in topics], "response_partition_limit": limit,
            "cursor": None if cursor is None else {"topic_name": cursor[0], "partition_index": cursor[1]}}


def page(c: Conn, *args, **kwargs) -> tuple[list[tuple[str, int, list[int]]], tuple[str, int] | None]:
    """(name, error, partition indexes) of each topic answered, and the next cursor."""
    r = c.call(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, dtp(*args, **kwargs))
    nc = r["next_cursor"]
    return ([(t["name"], t["error_code"], [p["partition_index"] for p in t["partitions"]]) for t in r["topics"]],
            None if nc is None else (nc["topic_name"], nc["partition_index"]))


@pytest.fixture(scope="module")
def paged(tmp_path_factory) -> Iterator[InProcessBroker]:
    """A broker of its own (every topic is asked for) whose page holds at most 5 partitions."""
    b = InProcessBroker(str(tmp_path_factory.mktemp("dtp") / "data"),
                        {"max.request.partition.size.limit": "5"}).start()
    try:
        for name, n in (("dtp-a", 3), ("dtp-b", 1), ("dtp-c", 2)):
            b.call(lambda name=name, n=n: b.broker.state.logs.create_topic(name, n))
        with Conn(b.port) as c:  # and the group coordinator's, created as a client's Metadata creates it
            c.call(ApiKey.METADATA, 9, {"topics": [{"name": "__consumer_offsets"}], "allow_auto_topic_creation": True,
                                        "include_topic_authorized_operations": False})
        yield b
    finally:
        b.stop()


def test_describe_topic_partitions_answers_each_partition(paged) -> None:
    logs = paged.broker.state.logs
    with Conn(paged.port) as c:
        r = c.call(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, dtp(["dtp-a"]))
        (t,) = r["topics"]
        assert r["next_cursor"] is None
        assert (t["error_code"], t["name"], t["is_internal"]) == (0, "dtp-a", False)
        assert t["topic_id"] == paged.call(lambda: logs.topic_id("dtp-a")) != uuid.UUID(int=0)
        assert t["topic_authorized_operations"] == TOPIC_OPERATIONS
        assert t["partitions"] == [{"error_code": 0, "partition_index": p, "leader_id": 0, "leader_epoch": 0,
                                    "replica_nodes": [0], "isr_nodes": [0], "eligible_leader_replicas": [],
                                    "last_known_elr": [], "offline_replicas": []} for p in range(3)]
        # unknown and illegal names, after the cursor rules; they cost no partition
        assert page(c, ["dtp-b", "bad name!", "dtp-0-ghost"]) == ([
            ("bad name!", ErrorCode.INVALID_TOPIC_EXCEPTION, []), ("dtp-0-ghost", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []),
            ("dtp-b", 0, [0])], None)
        # the coordinators' topics are internal
        (t,) = c.call(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, dtp(["__consumer_offsets"], limit=1))["topics"]
        assert (t["name"], t["is_internal"], len(t["partitions"])) == ("__consumer_offsets", True, 1)


def test_describe_topic_partitions_pages_with_a_cursor(paged) -> None:
    named = ["dtp-c", "dtp-a", "dtp-b", "dtp-a"]  # any order, a name twice: answered once, by name
    with Conn(paged.port) as c:
        assert page(c, named, limit=2) == ([("dtp-a", 0, [0, 1])], ("dtp-a", 2))
        # a topic's last partitions, then the next topic; full exactly at its end: the cursor is the next topic
        assert page(c, named, limit=2, cursor=("dtp-a", 2)) == ([("dtp-a", 0, [2]), ("dtp-b", 0, [0])], ("dtp-c", 0))
        assert page(c, named, limit=2, cursor=("dtp-c", 0)) == ([("dtp-c", 0, [0, 1])], None)
        # a limit below 1 is 1; the broker's max.request.partition.size.limit (5) caps a larger one
        assert page(c, named, limit=0) == ([("dtp-a", 0, [0])], ("dtp-a", 1))
        assert page(c, named, limit=100) == ([("dtp-a", 0, [0, 1, 2]), ("dtp-b", 0, [0]), ("dtp-c", 0, [0])],
                                             ("dtp-c", 1))
        # a cursor past a topic's partitions: that topic with none
        assert page(c, ["dtp-b", "dtp-c"], cursor=("dtp-b", 7)) == ([("dtp-b", 0, []), ("dtp-c", 0, [0, 1])], None)
        # an unknown topic the page stopped before is the next cursor all the same
        assert page(c, ["dtp-a", "dtp-b2"], limit=3) == ([("dtp-a", 0, [0, 1, 2])], ("dtp-b2", 0))
        # every topic (__consumer_offsets first: "_" sorts before "d"), or those at or after the
        # cursor's, which need not exist
        assert page(c, [], limit=4) == ([("__consumer_offsets", 0, [0, 1, 2, 3])], ("__consumer_offsets", 4))
        assert page(c, [], limit=4, cursor=("dtp-", 9)) == ([("dtp-a", 0, [0, 1, 2]), ("dtp-b", 0, [0])],
                                                           ("dtp-c", 0))
        assert page(c, [], cursor=("dtp-b0", 0)) == ([("dtp-c", 0, [0, 1])], None)
        # a cursor whose topic is not named, or a negative partition: INVALID_REQUEST for every topic named
        assert page(c, ["dtp-a", "dtp-c"], cursor=("dtp-b", 0)) == (
            [("dtp-a", ErrorCode.INVALID_REQUEST, []), ("dtp-c", ErrorCode.INVALID_REQUEST, [])], None)
        assert page(c, ["dtp-a"], cursor=("dtp-a", -1)) == ([("dtp-a", ErrorCode.INVALID_REQUEST, [])], None)
        assert page(c, [], cursor=("dtp-a", -1)) == ([], None)


# ------------------------------------------------------------------ ListConfigResources


def test_list_config_resources(paged) -> None:
    with Conn(paged.port) as c:
        def listed(version: int, *types: int) -> tuple[int, list[tuple[int, str]]]:
            r = c.call(ApiKey.LIST_CONFIG_RESOURCES, version, {"resource_types": list(types)})
            return r["error_code"], [(x["resource_type"], x["resource_name"]) for x in r["config_resources"]]

        topics = [(2, t) for t in ("__consumer_offsets", "dtp-a", "dtp-b", "dtp-c")]
        # v0: client-metrics resources, of which this broker keeps none
        assert listed(0) == (0, [])
        # v1: the types asked for (all of them when none is), brokers before topics
        assert listed(1) == (0, [(4, "0"), *topics])
        assert listed(1, 2, 2) == (0, topics)
        assert listed(1, 2, 4) == listed(1, 4, 2) == (0, [(4, "0"), *topics])
        assert listed(1, 8, 16, 32) == (0, [])  # broker loggers, client metrics, groups: none kept
        # a type v1 does not know fails the request
        assert listed(1, 2, 1) == (ErrorCode.UNSUPPORTED_VERSION, [])
        assert listed(1, 64) == (ErrorCode.UNSUPPORTED_VERSION, [])
