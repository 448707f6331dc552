"""What the newer versions of the data-path APIs bring, over a real socket: topic ids (Metadata
v10+, Fetch v13+, Produce v13, CreateTopics v7, DeleteTopics v6) kept across a restart, leader epochs and
diverging epochs, ListOffsets' special timestamps, Produce v8+'s error_message, and the
advertised ranges. Fetch sessions: test_fetch_sessions.py."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from client.protocol.api import SUPPORTED_VERSIONS, ApiKey, ErrorCode
from client.records import Record, build_batch
from tests.broker_process import BrokerProcess

from .wire import Conn, batch, create_topic, fetch, partition_response, produce

ZERO = uuid.UUID(int=0)


def _topic_id(c: Conn, name: str) -> uuid.UUID:
    (t,) = c.call(ApiKey.METADATA, 12, {"topics": [{"name": name}], "allow_auto_topic_creation": False})["topics"]
    assert t["error_code"] == 0
    return t["topic_id"]  # type: ignore[no-any-return]


def _fetch_by_id(topic_id: uuid.UUID, offset: int, **partition: Any) -> dict[str, Any]:
    body = fetch("", 0, offset)
    body["topics"][0]["topic_id"] = topic_id
    body["topics"][0]["partitions"][0].update(partition)
    return body


@pytest.mark.parametrize("key,expected", [
    (ApiKey.PRODUCE, (0, 13)), (ApiKey.FETCH, (0, 18)), (ApiKey.LIST_OFFSETS, (0, 11)), (ApiKey.METADATA, (0, 13)),
    (ApiKey.CREATE_TOPICS, (0, 7)), (ApiKey.DELETE_TOPICS, (0, 6)), (ApiKey.INIT_PRODUCER_ID, (0, 5)),
    (ApiKey.ADD_PARTITIONS_TO_TXN, (0, 5)), (ApiKey.END_TXN, (0, 5)), (ApiKey.TXN_OFFSET_COMMIT, (0, 5)),
    (ApiKey.WRITE_TXN_MARKERS, (0, 2)),
    (ApiKey.API_VERSIONS, (0, 4)), (ApiKey.FIND_COORDINATOR, (0, 6)), (ApiKey.OFFSET_COMMIT, (0, 10)),
    (ApiKey.OFFSET_FETCH, (0, 10)),
])
def test_ranges(key: ApiKey, expected: tuple[int, int]) -> None:
    """Kafka 4.2's maxima as they land; the minima old clients need (Produce 0 for old librdkafka, Fetch 0
    for clients pinned before Kafka 0.11 (pykafka, kafka-node, Burrow's old kafka-version), ListOffsets 0 for
    Burrow and Sarama)."""
    assert SUPPORTED_VERSIONS[key] == expected


def test_topic_ids_through_create_metadata_fetch_delete_and_restart(tmp_path) -> None:
    b = BrokerProcess(str(tmp_path / "data")).start()
    try:
        with Conn(b.port) as c:
            (created,) = c.call(ApiKey.CREATE_TOPICS, 7, create_topic("ids", 2))["topics"]
            assert created["error_code"] == 0 and created["topic_id"] not in (None, ZERO)
            assert (created["num_partitions"], created["replication_factor"]) == (2, 1)
            assert {e["name"] for e in created["configs"]} >= {"retention.ms", "cleanup.policy"}
            tid = created["topic_id"]
            assert _topic_id(c, "ids") == tid
            assert partition_response(c.call(ApiKey.PRODUCE, 11, produce("ids", 0, batch(4))))["error_code"] == 0
            # Metadata v12 by id only: the name comes back
            (t,) = c.call(ApiKey.METADATA, 12, {"topics": [{"name": None, "topic_id": tid}]})["topics"]
            assert (t["error_code"], t["name"], t["topic_id"], len(t["partitions"])) == (0, "ids", tid, 2)
            assert t["partitions"][0]["leader_epoch"] == 0
            unknown = uuid.uuid4()
            (t,) = c.call(ApiKey.METADATA, 12, {"topics": [{"name": None, "topic_id": unknown}]})["topics"]
            assert (t["error_code"], t["name"], t["topic_id"]) == (ErrorCode.UNKNOWN_TOPIC_ID, None, unknown)
            # Fetch v13+ by id; an unknown id is UNKNOWN_TOPIC_ID, answered at once
            p = partition_response(c.call(ApiKey.FETCH, 17, _fetch_by_id(tid, 0)), "partitions")
            assert p["error_code"] == 0 and p["high_watermark"] == 4 and len(p["records"]) > 0
            started = time.monotonic()
            resp = c.call(ApiKey.FETCH, 13, {**_fetch_by_id(unknown, 0), "max_wait_ms": 5000, "min_bytes": 1})
            assert time.monotonic() - started < 4
            assert resp["responses"][0]["topic_id"] == unknown
            assert partition_response(resp, "partitions")["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID
        b.stop()
        b.start()
        with Conn(b.port) as c:
            assert _topic_id(c, "ids") == tid  # kept in partition.metadata
            # DeleteTopics v6 by id; then the id is unknown
            (r,) = c.call(ApiKey.DELETE_TOPICS, 6, {"topics": [{"name": None, "topic_id": tid}],
                                                    "timeout_ms": 1000})["responses"]
            assert (r["error_code"], r["name"], r["topic_id"]) == (0, "ids", tid)
            (r,) = c.call(ApiKey.DELETE_TOPICS, 6, {"topics": [{"name": None, "topic_id": tid}],
                                                    "timeout_ms": 1000})["responses"]
            assert r["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID
            (r,) = c.call(ApiKey.DELETE_TOPICS, 6, {"topics": [{"name": "x", "topic_id": tid}],
                                                    "timeout_ms": 1000})["responses"]
            assert r["error_code"] == ErrorCode.INVALID_REQUEST
            p = partition_response(c.call(ApiKey.FETCH, 13, _fetch_by_id(tid, 0)), "partitions")
            assert p["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID
    finally:
        assert b.stop() == 0


def test_fetch_leader_epochs(module_broker) -> None:
    with Conn(module_broker.port) as c:
        c.call(ApiKey.CREATE_TOPICS, 4, create_topic("epochs"))
        c.call(ApiKey.PRODUCE, 9, produce("epochs", 0, batch(3)))

        def part(version: int, offset: int, **fields: Any) -> dict[str, Any]:
            body = fetch("epochs", 0, offset)
            body["topics"][0]["partitions"][0].update(fields)
            return partition_response(c.call(ApiKey.FETCH, version, body), "partitions")

        assert part(12, 0, current_leader_epoch=0)["error_code"] == 0
        assert part(9, 0, current_leader_epoch=1)["error_code"] == ErrorCode.UNKNOWN_LEADER_EPOCH
        # last_fetched_epoch (v12+): epoch 0 ends at the log end offset
        p = part(12, 2, last_fetched_epoch=0)
        assert p["error_code"] == 0 and p["diverging_epoch"] is None and len(p["records"]) > 0
        p = part(12, 7, last_fetched_epoch=0)
        assert p["error_code"] == 0 and p["diverging_epoch"] == {"epoch": 0, "end_offset": 3} and p["records"] == b""
        assert part(12, 1, last_fetched_epoch=4)["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE
        # without last_fetched_epoch, past the end is out of range as before
        assert part(11, 7)["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE


def _list_offset(c: Conn, version: int, topic: str, timestamp: int, **fields: Any) -> dict[str, Any]:
    body = {"replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
        {"partition_index": 0, "timestamp": timestamp, **fields}]}]}
    return partition_response(c.call(ApiKey.LIST_OFFSETS, version, body), "partitions")


def test_list_offsets_special_timestamps(module_broker) -> None:
    with Conn(module_broker.port) as c:
        c.call(ApiKey.CREATE_TOPICS, 4, create_topic("lo"))
        empty = _list_offset(c, 9, "lo", -1)
        assert (empty["offset"], empty["leader_epoch"]) == (0, -1)
        now = int(time.time() * 1000)
        # one batch, timestamps +100, +400, +250: the largest is the record at offset 1 (KAFKA-16310)
        records = build_batch([Record(i, now + d, None, b"v") for i, d in enumerate((100, 400, 250))])
        assert partition_response(c.call(ApiKey.PRODUCE, 9, produce("lo", 0, bytes(records))))["error_code"] == 0
        assert partition_response(c.call(ApiKey.PRODUCE, 9, produce("lo", 0, batch(2))))["error_code"] == 0
        answers = {ts: _list_offset(c, 11, "lo", ts) for ts in (-1, -2, -3, -4, -5, -6)}
        assert {ts: (a["error_code"], a["offset"]) for ts, a in answers.items()} == {
            -1: (0, 5), -2: (0, 0), -3: (0, 1), -4: (0, 0), -5: (0, -1), -6: (0, -1)}
        assert answers[-3]["timestamp"] == now + 400
        assert [answers[ts]["leader_epoch"] for ts in (-1, -2, -3, -4, -5, -6)] == [0, 0, 0, 0, -1, -1]
        assert _list_offset(c, 4, "lo", now + 300)["offset"] == 1
        assert _list_offset(c, 1, "lo", -1)["offset"] == 5
        assert _list_offset(c, 4, "lo", -1, current_leader_epoch=3)["error_code"] == ErrorCode.UNKNOWN_LEADER_EPOCH


def test_list_offsets_v0_old_style_offsets(module_broker) -> None:
    """v0: up to max_num_offsets offsets, descending: for -1 the log end offset, then each
    segment's base offset; for -2 the log start offset; for a timestamp, the segments whose
    files were modified at or before it (Kafka's legacyFetchOffsetsBefore)."""
    with Conn(module_broker.port) as c:
        c.call(ApiKey.CREATE_TOPICS, 4, create_topic("lo0", configs={"segment.bytes": "500"}))
        assert _list_offset(c, 0, "lo0", -1, max_num_offsets=5)["old_style_offsets"] == [0]  # empty: base 0
        for _ in range(3):  # two batches (~400 bytes each) do not fit in 500: one segment per batch
            assert partition_response(c.call(ApiKey.PRODUCE, 7, produce("lo0", 0, batch(3, 100))))["error_code"] == 0
        latest = _list_offset(c, 0, "lo0", -1, max_num_offsets=10)
        assert (latest["error_code"], latest["old_style_offsets"]) == (0, [9, 6, 3, 0])
        assert _list_offset(c, 0, "lo0", -1, max_num_offsets=1)["old_style_offsets"] == [9]
        assert _list_offset(c, 0, "lo0", -2, max_num_offsets=3)["old_style_offsets"] == [0]
        future = int(time.time() * 1000) + 3_600_000
        assert _list_offset(c, 0, "lo0", future, max_num_offsets=2)["old_style_offsets"] == [9, 6]
        assert _list_offset(c, 0, "lo0", 1, max_num_offsets=2)["old_style_offsets"] == []  # nothing that old
        unknown = _list_offset(c, 0, "no-such-topic", -1, max_num_offsets=1)
        assert (unknown["error_code"], unknown["old_style_offsets"]) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])


def test_produce_v8_plus_says_why(module_broker) -> None:
    with Conn(module_broker.port) as c:
        c.call(ApiKey.CREATE_TOPICS, 4, create_topic("why"))
        bad = bytearray(batch(2))
        bad[-1] ^= 0xFF  # breaks the CRC
        for version in (7, 8, 11):
            p = partition_response(c.call(ApiKey.PRODUCE, version, produce("why", 0, bytes(bad))))
            assert p["error_code"] == ErrorCode.CORRUPT_MESSAGE
            assert (p["error_message"] is not None) == (version >= 8)
            assert p["current_leader"] is None  # KIP-951 hints only come with NOT_LEADER_OR_FOLLOWER


def _produce_by_id(topics: dict[uuid.UUID, list[tuple[int, bytes]]], acks: int = 1) -> dict[str, Any]:
    return {"transactional_id": None, "acks": acks, "timeout_ms": 30000, "topic_data": [
        {"topic_id": tid, "partition_data": [{"index": i, "records": r} for i, r in parts]}
        for tid, parts in topics.items()]}


def _high_watermark(c: Conn, topic: str, partition: int = 0) -> int:
    body = {"replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
        {"partition_index": partition, "timestamp": -1}]}]}
    return int(partition_response(c.call(ApiKey.LIST_OFFSETS, 5, body), "partitions")["offset"])


def test_produce_v12_is_v11_and_v13_names_topics_by_id(module_broker) -> None:
    """v12 is v11 on the wire (by name); v13 (KIP-516) by topic id in the request and the
    response: an unknown id (or the zero id) is UNKNOWN_TOPIC_ID per partition and writes
    nothing, the other topics of the request are written; a partition past the topic's count
    is UNKNOWN_TOPIC_OR_PARTITION as by name; acks=0 with an unknown id closes the connection."""
    with Conn(module_broker.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 7, create_topic("pv13", 2))["topics"][0]["error_code"] == 0
        tid = _topic_id(c, "pv13")
        r = c.call(ApiKey.PRODUCE, 12, produce("pv13", 0, batch(2)))
        assert (r["responses"][0]["name"], partition_response(r)["error_code"]) == ("pv13", 0)
        assert partition_response(r)["base_offset"] == 0
        r = c.call(ApiKey.PRODUCE, 13, _produce_by_id({tid: [(0, batch(3)), (1, batch(1))]}))
        (t,) = r["responses"]
        assert (t["topic_id"], t["name"]) == (tid, "")  # v13 answers by id: the name is not on the wire
        assert [(p["index"], p["error_code"], p["base_offset"]) for p in t["partition_responses"]] == [
            (0, 0, 2), (1, 0, 0)]
        assert t["partition_responses"][0]["log_start_offset"] == 0
        unknown = uuid.uuid4()
        r = c.call(ApiKey.PRODUCE, 13, _produce_by_id({unknown: [(0, batch(1)), (1, batch(1))], tid: [(0, batch(1))],
                                                       ZERO: [(0, batch(1))]}))
        by_id = {t["topic_id"]: [(p["index"], p["error_code"], p["base_offset"]) for p in t["partition_responses"]]
                 for t in r["responses"]}
        assert by_id == {unknown: [(0, ErrorCode.UNKNOWN_TOPIC_ID, -1), (1, ErrorCode.UNKNOWN_TOPIC_ID, -1)],
                         tid: [(0, 0, 5)], ZERO: [(0, ErrorCode.UNKNOWN_TOPIC_ID, -1)]}
        p = partition_response(c.call(ApiKey.PRODUCE, 13, _produce_by_id({tid: [(2, batch(1))]})))
        assert p["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert (_high_watermark(c, "pv13", 0), _high_watermark(c, "pv13", 1)) == (6, 1)
        # what v13 wrote reads back, by id (Fetch v13+) and by name
        p = partition_response(c.call(ApiKey.FETCH, 17, _fetch_by_id(tid, 0)), "partitions")
        assert (p["error_code"], p["high_watermark"]) == (0, 6) and len(p["records"]) > 0
        # a topic deleted and made again under the same name has a new id: the old one is unknown
        (d,) = c.call(ApiKey.DELETE_TOPICS, 6, {"topics": [{"name": None, "topic_id": tid}],
                                                "timeout_ms": 1000})["responses"]
        assert d["error_code"] == 0
        assert c.call(ApiKey.CREATE_TOPICS, 7, create_topic("pv13", 1))["topics"][0]["error_code"] == 0
        new = _topic_id(c, "pv13")
        assert new != tid
        assert partition_response(c.call(ApiKey.PRODUCE, 13, _produce_by_id({tid: [(0, batch(1))]})))[
            "error_code"] == ErrorCode.UNKNOWN_TOPIC_ID
        assert partition_response(c.call(ApiKey.PRODUCE, 13, _produce_by_id({new: [(0, batch(1))]})))[
            "error_code"] == 0
        assert _high_watermark(c, "pv13") == 1
        # acks=0 answers nothing; an unknown id is an error, so the connection is closed
        c.send(ApiKey.PRODUCE, 13, _produce_by_id({new: [(0, batch(1))]}, acks=0))
        c.send(ApiKey.PRODUCE, 13, _produce_by_id({unknown: [(0, batch(1))]}, acks=0))
        assert c.is_closed_by_peer()
    with Conn(module_broker.port) as c:
        assert _high_watermark(c, "pv13") == 2


def test_metadata_authorized_operations_without_an_authorizer(module_broker) -> None:
    with Conn(module_broker.port) as c:
        c.call(ApiKey.CREATE_TOPICS, 4, create_topic("ops"))
        for version in (8, 10, 12):
            resp = c.call(ApiKey.METADATA, version, {"topics": [{"name": "ops"}],
                                                     "include_cluster_authorized_operations": True,
                                                     "include_topic_authorized_operations": True})
            ops = resp["topics"][0]["topic_authorized_operations"]
            # READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS
            assert {i for i in range(32) if ops >> i & 1} == {3, 4, 5, 6, 7, 8, 10, 11}
            if version <= 10:
                assert resp["cluster_authorized_operations"] > 0
            resp = c.call(ApiKey.METADATA, version, {"topics": [{"name": "ops"}]})
            assert resp["topics"][0]["topic_authorized_operations"] == -(1 << 31)


def test_find_coordinator_share_key_type(module_broker) -> None:
    """v6 (KIP-932) adds key type 2, share groups: COORDINATOR_NOT_AVAILABLE as Kafka 3.9 answers
    without a share coordinator; before v6 (and for undefined types) INVALID_REQUEST."""
    with Conn(module_broker.port) as c:
        def codes(version: int, key_type: int) -> list[int]:
            resp = c.call(ApiKey.FIND_COORDINATOR, version, {"key_type": key_type, "coordinator_keys": ["g"]})
            return [x["error_code"] for x in resp["coordinators"]]

        assert codes(6, 0) == [0]
        assert codes(6, 2) == [ErrorCode.COORDINATOR_NOT_AVAILABLE]
        assert codes(5, 2) == [ErrorCode.INVALID_REQUEST]
        assert codes(6, 3) == [ErrorCode.INVALID_REQUEST]
