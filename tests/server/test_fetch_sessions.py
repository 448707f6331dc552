"""Incremental fetch sessions (KIP-227, broker/fetch_session.py) over a real socket: a full
fetch opens a session, incremental fetches name only what changed and are answered with only
what changed, a long poll wakes for any partition of the session, the errors that make a client
start over, the cache's bound and eviction, and kafka-python's consumer (which uses sessions by
default) reading every record through them."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest

from broker.testing import BrokerProcess, parse_metrics
from client.protocol.api import ApiKey, ErrorCode
from tests.server.wire import Conn, batch, create_topic, produce

TOPIC = "sessions"
PARTS = 4


def _part(p: int, offset: int) -> dict[str, Any]:
    return {"partition": p, "current_leader_epoch": -1, "fetch_offset": offset, "last_fetched_epoch": -1,
            "log_start_offset": -1, "partition_max_bytes": 1 << 20}


def _fetch(c: Conn, version: int, sid: int, epoch: int, parts: dict[int, int], topic: str = TOPIC,
           forget: list[int] | None = None, max_wait_ms: int = 0, topic_id: uuid.UUID | None = None) -> dict[str, Any]:
    t: dict[str, Any] = {"topic": topic, "topic_id": topic_id, "partitions": [_part(p, o) for p, o in parts.items()]}
    body = {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 50 << 20,
            "isolation_level": 0, "session_id": sid, "session_epoch": epoch,
            "topics": [t] if parts else [],
            "forgotten_topics_data": [{"topic": topic, "topic_id": topic_id, "partitions": forget}] if forget else [],
            "rack_id": ""}
    return c.call(ApiKey.FETCH, version, body)


def _answered(resp: dict[str, Any]) -> dict[int, tuple[int, int, int]]:
    """partition -> (error, high watermark, record bytes) of every partition in the answer."""
    return {p["partition_index"]: (p["error_code"], p["high_watermark"], len(p["records"] or b""))
            for t in resp["responses"] for p in t["partitions"]}


@pytest.fixture(scope="module")
def conn(module_broker: BrokerProcess) -> Any:
    with Conn(module_broker.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 4, create_topic(TOPIC, PARTS))["topics"][0]["error_code"] == 0
        for p in range(PARTS):
            c.call(ApiKey.PRODUCE, 9, produce(TOPIC, p, batch(2)))
        yield c


@pytest.mark.parametrize("version", [7, 12])
def test_full_then_incremental_answers_only_what_changed(conn: Conn, version: int) -> None:
    c = conn
    full = _fetch(c, version, 0, 0, {p: 0 for p in range(PARTS)})
    sid = full["session_id"]
    assert full["error_code"] == 0 and sid != 0
    first = _answered(full)
    assert set(first) == set(range(PARTS)) and all(bytes_ > 0 for _, _, bytes_ in first.values())
    hws = {p: hw for p, (_, hw, _) in first.items()}
    # the client moves its offsets to the end: named partitions at their high watermark, no news
    resp = _fetch(c, version, sid, 1, dict(hws), max_wait_ms=50)
    assert (resp["error_code"], resp["session_id"], _answered(resp)) == (0, sid, {})
    # nothing named, nothing new: an empty answer after the long poll
    t0 = time.monotonic()
    resp = _fetch(c, version, sid, 2, {}, max_wait_ms=200)
    assert _answered(resp) == {} and time.monotonic() - t0 >= 0.15
    # an append to one partition: only that one comes back
    c.call(ApiKey.PRODUCE, 9, produce(TOPIC, 2, batch(3)))
    resp = _fetch(c, version, sid, 3, {})
    assert list(_answered(resp)) == [2]
    assert _answered(resp)[2][:2] == (0, hws[2] + 3)
    hws[2] += 3
    # answered once: the same high watermark is not answered again
    resp = _fetch(c, version, sid, 4, {2: hws[2]}, max_wait_ms=20)
    assert _answered(resp) == {}
    # a request sent twice (same epoch) is refused, the right one still works
    assert _fetch(c, version, sid, 4, {})["error_code"] == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert _fetch(c, version, sid, 5, {})["error_code"] == 0
    # a partition forgotten is no longer answered, even with records
    assert _fetch(c, version, sid, 6, {}, forget=[1])["error_code"] == 0
    c.call(ApiKey.PRODUCE, 9, produce(TOPIC, 1, batch(1)))
    assert _answered(_fetch(c, version, sid, 7, {}, max_wait_ms=50)) == {}
    # epoch -1 closes the session
    assert _fetch(c, version, sid, -1, {0: hws[0]})["session_id"] == 0
    assert _fetch(c, version, sid, 8, {})["error_code"] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_a_long_poll_wakes_for_any_partition_of_the_session(conn: Conn, module_broker: BrokerProcess) -> None:
    c = conn
    full = _fetch(c, 12, 0, 0, {p: 0 for p in range(PARTS)})
    sid = full["session_id"]
    hws = {p: hw for p, (_, hw, _) in _answered(full).items()}
    assert _answered(_fetch(c, 12, sid, 1, hws, max_wait_ms=10)) == {}

    def later() -> None:
        time.sleep(0.3)
        with Conn(module_broker.port) as other:
            other.call(ApiKey.PRODUCE, 9, produce(TOPIC, 3, batch(1)))
    threading.Thread(target=later).start()
    t0 = time.monotonic()
    resp = _fetch(c, 12, sid, 2, {}, max_wait_ms=10_000)  # the request names no partition at all
    assert list(_answered(resp)) == [3] and time.monotonic() - t0 < 5


def test_session_errors(conn: Conn, module_broker: BrokerProcess) -> None:
    c = conn
    assert _fetch(c, 12, 424242, 1, {})["error_code"] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    # opened by names (v12), continued by ids (v13): FETCH_SESSION_TOPIC_ID_ERROR
    sid = _fetch(c, 12, 0, 0, {0: 0})["session_id"]
    meta = c.call(ApiKey.METADATA, 12, {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False})
    tid = meta["topics"][0]["topic_id"]
    assert _fetch(c, 13, sid, 1, {}, topic_id=tid)["error_code"] == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
    # a session by ids works the same way, and an unknown id is answered UNKNOWN_TOPIC_ID
    sid = _fetch(c, 13, 0, 0, {0: 0}, topic_id=tid)["session_id"]
    assert sid != 0
    resp = _fetch(c, 13, sid, 1, {0: 10_000}, topic_id=uuid.uuid4())
    # partition 0 of the real topic is still at offset 0 (its records again), then the unknown id
    assert [(t["topic_id"], p["error_code"]) for t in resp["responses"] for p in t["partitions"]] == \
        [(tid, 0), (resp["responses"][1]["topic_id"], ErrorCode.UNKNOWN_TOPIC_ID)]
    assert resp["responses"][1]["topic_id"] != tid


def test_the_cache_is_bounded_and_evicts_the_smallest_session(tmp_path) -> None:
    b = BrokerProcess(str(tmp_path / "data"), overrides=["max.incremental.fetch.session.cache.slots=2"],
                      metrics=True).start()
    try:
        with Conn(b.port) as c:
            c.call(ApiKey.CREATE_TOPICS, 4, create_topic(TOPIC, PARTS))
            one = _fetch(c, 12, 0, 0, {0: 0})["session_id"]
            two = _fetch(c, 12, 0, 0, {0: 0, 1: 0})["session_id"]
            assert one and two
            # full: a session no larger than the smallest gets none (session id 0), as in Kafka
            assert _fetch(c, 12, 0, 0, {2: 0})["session_id"] == 0
            # a larger one evicts the smallest
            three = _fetch(c, 12, 0, 0, {0: 0, 1: 0, 2: 0})["session_id"]
            assert three
            assert _fetch(c, 12, one, 1, {})["error_code"] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
            assert _fetch(c, 12, two, 1, {})["error_code"] == 0
            assert _fetch(c, 12, three, 1, {})["error_code"] == 0
            m = parse_metrics(b.scrape())
            name = "kafka_server_fetchsessioncache_"
            assert [m[(name + n, frozenset())] for n in ("numincrementalfetchsessions", "numincrementalfetchpartitionscached",
                                                         "incrementalfetchsessionevictions_total")] == [2, 5, 1]
    finally:
        assert b.stop() == 0


def test_kafka_python_consumes_through_sessions(module_broker: BrokerProcess) -> None:
    kafka = pytest.importorskip("kafka")
    topic = "sessions-kp"
    with Conn(module_broker.port) as c:
        c.call(ApiKey.CREATE_TOPICS, 4, create_topic(topic, 3))
        for p in range(3):
            c.call(ApiKey.PRODUCE, 9, produce(topic, p, batch(5, tag=b"%d" % p)))
    consumer = kafka.KafkaConsumer(topic, bootstrap_servers=module_broker.bootstrap_servers,
                                   auto_offset_reset="earliest", enable_auto_commit=False, group_id=None,
                                   fetch_max_wait_ms=100)
    try:
        got: list[tuple[int, int]] = []
        deadline = time.monotonic() + 30
        while len(got) < 15 and time.monotonic() < deadline:
            for tp, recs in consumer.poll(timeout_ms=200).items():
                got += [(tp.partition, r.offset) for r in recs]
        with Conn(module_broker.port) as c:  # more records while the session is open
            for p in range(3):
                c.call(ApiKey.PRODUCE, 9, produce(topic, p, batch(2)))
        while len(got) < 21 and time.monotonic() < deadline:
            for tp, recs in consumer.poll(timeout_ms=200).items():
                got += [(tp.partition, r.offset) for r in recs]
        assert sorted(got) == [(p, o) for p in range(3) for o in range(7)]
        sessions = [h.next_metadata.session_id for h in consumer._fetcher._session_handlers.values()]
        assert sessions and all(s != 0 for s in sessions)  # it fetched through a session
    finally:
        consumer.close()


def test_an_idle_session_learns_of_deleted_records_and_a_deleted_topic(module_broker: BrokerProcess) -> None:
    """Changes that are not appends reach a session too: DeleteRecords' new log start offset,
    and the topic deleted (UNKNOWN_TOPIC_OR_PARTITION, an error: answered at once)."""
    topic = "sessions-changes"
    with Conn(module_broker.port) as c:
        c.call(ApiKey.CREATE_TOPICS, 4, create_topic(topic, 2))
        for p in range(2):
            c.call(ApiKey.PRODUCE, 9, produce(topic, p, batch(4)))
        full = _fetch(c, 12, 0, 0, {0: 4, 1: 4}, topic=topic)
        sid = full["session_id"]
        assert _answered(full) == {0: (0, 4, 0), 1: (0, 4, 0)}
        assert _answered(_fetch(c, 12, sid, 1, {}, topic=topic, max_wait_ms=20)) == {}
        r = c.call(ApiKey.DELETE_RECORDS, 2, {"topics": [{"name": topic, "partitions": [
            {"partition_index": 1, "offset": 3}]}], "timeout_ms": 5000})
        assert r["topics"][0]["partitions"][0]["low_watermark"] == 3
        # no records: the long poll runs its course (as Kafka's, which counts bytes), then tells
        resp = _fetch(c, 12, sid, 2, {}, topic=topic, max_wait_ms=200)
        (t,) = resp["responses"]
        assert [(p["partition_index"], p["log_start_offset"]) for p in t["partitions"]] == [(1, 3)]
        assert c.call(ApiKey.DELETE_TOPICS, 4, {"topic_names": [topic], "timeout_ms": 5000})["responses"][0][
            "error_code"] == 0
        t0 = time.monotonic()
        resp = _fetch(c, 12, sid, 3, {}, topic=topic, max_wait_ms=5000)
        assert time.monotonic() - t0 < 2
        assert {p: e for p, (e, _, _) in _answered(resp).items()} == {
            0: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 1: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
