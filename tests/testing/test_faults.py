"""broker/testing/faults.py: fault rules on a real broker (in-process and subprocess), seen
over a raw socket; error responses built for every API decode with the response schema."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

import broker.testing as bt
from broker.testing.faults import Fault, FaultInjector, error_response, request_partitions
from client.protocol.api import SUPPORTED_VERSIONS, ApiKey, ErrorCode
from client.protocol.messages import REQUESTS, RESPONSES
from client.protocol.primitives import Reader, Writer
from client.records import build_batch
from tests.server.wire import CLOSED, Conn, fetch, metadata, produce

NLOF = ErrorCode.NOT_LEADER_OR_FOLLOWER


@pytest.fixture(scope="module")
def inproc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[bt.InProcessBroker]:
    b = bt.InProcessBroker(str(tmp_path_factory.mktemp("faults") / "data")).start()
    try:
        yield b
    finally:
        b.faults.clear()
        b.stop()


@pytest.fixture
def b(inproc: bt.InProcessBroker) -> Iterator[bt.InProcessBroker]:
    yield inproc
    inproc.faults.clear()


def _topic(b: Any, name: str, partitions: int = 1) -> str:
    bt.create_topic(b.bootstrap_servers, name, partitions)
    return name


def _leo(b: bt.InProcessBroker, topic: str, partition: int = 0) -> int:
    return b.call(lambda: b.broker.logs.get_log(topic, partition).log_end_offset)


def _batch(n: int = 1) -> bytes:
    return build_batch([(None, b"v%d" % i) for i in range(n)])


# ---------------------------------------------------------------- error responses, by schema


@pytest.mark.parametrize("key", sorted(SUPPORTED_VERSIONS))
def test_error_response_encodes_for_every_api_and_version(key: int) -> None:
    lo, hi = SUPPORTED_VERSIONS[key]
    request = {ApiKey.PRODUCE: produce("t", 3, b""), ApiKey.FETCH: fetch("t", 3, 0),
               ApiKey.METADATA: metadata(["t"]),
               ApiKey.WRITE_TXN_MARKERS: {"markers": [{"producer_id": 0, "topics": [
                   {"name": "t", "partition_indexes": [3]}]}]},
               }.get(key, {"topics": [{"name": "t", "partitions": [{"partition_index": 3}]}]})
    for v in range(lo, hi + 1):
        body = error_response(key, v, request, NLOF)
        w = Writer()
        RESPONSES[key].encode(body, v, w)
        decoded = RESPONSES[key].decode(Reader(bytes(w.buf)), v)
        assert NLOF in _error_codes(decoded), (ApiKey(key).name, v, decoded)


def _error_codes(x: Any) -> list[int]:
    if isinstance(x, dict):
        return [c for k, val in x.items()
                for c in ([val] if k in ("error_code", "partition_error_code") else _error_codes(val))]
    if isinstance(x, list):
        return [c for i in x for c in _error_codes(i)]
    return []


def test_error_response_mirrors_partitions_and_sets_the_innermost_error() -> None:
    req = {"topic_data": [{"name": "a", "partition_data": [{"index": 0}, {"index": 2}]},
                          {"name": "b", "partition_data": [{"index": 1}]}]}
    body = error_response(ApiKey.PRODUCE, 7, req, NLOF)
    assert [(t["name"], [(p["index"], p["error_code"]) for p in t["partition_responses"]]) for t in body["responses"]] \
        == [("a", [(0, NLOF), (2, NLOF)]), ("b", [(1, NLOF)])]
    f = error_response(ApiKey.FETCH, 11, fetch("t", 5, 0), NLOF)
    assert f["error_code"] == 0  # top level untouched: the partitions carry it
    assert f["responses"][0]["topic"] == "t" and f["responses"][0]["partitions"][0]["partition_index"] == 5
    assert f["responses"][0]["partitions"][0]["error_code"] == NLOF
    assert error_response(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": None}, 15)["error_code"] == 15
    add = error_response(ApiKey.ADD_PARTITIONS_TO_TXN, 3, {
        "v3_and_below_transactional_id": "t", "v3_and_below_producer_id": 1, "v3_and_below_producer_epoch": 0,
        "v3_and_below_topics": [{"name": "a", "partitions": [0, 1]}]}, 51)
    assert add["results_by_topic_v3_and_below"] == [{"name": "a", "results_by_partition": [
        {"partition_index": 0, "partition_error_code": 51}, {"partition_index": 1, "partition_error_code": 51}]}]


def test_request_partitions_by_shape() -> None:
    assert request_partitions(produce("t", 2, b"")) == [("t", {2})]
    assert request_partitions(fetch("u", 1, 0)) == [("u", {1})]
    assert request_partitions(metadata(["m"])) == [("m", None)]
    assert request_partitions({"topics": [{"name": "x", "partition_indexes": [4, 5]}]}) == [("x", {4, 5})]


def test_fault_validation() -> None:
    with pytest.raises(ValueError):
        Fault(0, "explode")
    with pytest.raises(ValueError):
        Fault(0, "error")  # no error code
    with pytest.raises(ValueError):
        Fault(0, "drop", count=0)
    with pytest.raises(ValueError):
        Fault.from_json({"api": "PRODUCE", "action": "drop", "colour": "red"})
    with pytest.raises(KeyError):
        FaultInjector().fail("NO_SUCH_API", NLOF)


# ---------------------------------------------------------------- in-process broker


def test_error_n_times_then_normal(b: bt.InProcessBroker) -> None:
    t = _topic(b, "err-n")
    b.faults.fail(ApiKey.PRODUCE, "NOT_LEADER_OR_FOLLOWER", count=2)
    assert b.broker.server.request_hook is not None  # armed
    with Conn(b.port) as c:
        for _ in range(2):
            r = c.call(ApiKey.PRODUCE, 7, produce(t, 0, _batch()))
            assert r["responses"][0]["partition_responses"][0]["error_code"] == NLOF
        assert _leo(b, t) == 0  # nothing written while failing
        r = c.call(ApiKey.PRODUCE, 7, produce(t, 0, _batch()))
        assert r["responses"][0]["partition_responses"][0]["error_code"] == 0
    assert _leo(b, t) == 1
    assert b.faults.rules() == []
    assert b.broker.server.request_hook is None  # disarmed once used up: no cost afterwards


def test_rule_for_a_topic_and_partition_only_matches_requests_carrying_it(b: bt.InProcessBroker) -> None:
    t = _topic(b, "err-tp", 2)
    other = _topic(b, "err-tp-other")
    b.faults.fail("PRODUCE", NLOF, count=1, topic=t, partition=1)
    with Conn(b.port) as c:
        assert c.call(ApiKey.PRODUCE, 7, produce(other, 0, _batch()))["responses"][0]["partition_responses"][0]["error_code"] == 0
        assert c.call(ApiKey.PRODUCE, 7, produce(t, 0, _batch()))["responses"][0]["partition_responses"][0]["error_code"] == 0
        assert b.faults.rules()[0]["hits"] == 0
        assert c.call(ApiKey.PRODUCE, 7, produce(t, 1, _batch()))["responses"][0]["partition_responses"][0]["error_code"] == NLOF
    assert b.faults.rules() == []


@pytest.mark.parametrize("acks", [1, -1])
def test_produce_rule_for_one_partition_fails_only_that_partition(b: bt.InProcessBroker, acks: int) -> None:
    t = _topic(b, f"partly-{acks + 1}", 3)
    b.faults.fail("PRODUCE", NLOF, topic=t, partition=1)
    req = produce(t, 0, _batch(2), acks=acks)
    req["topic_data"][0]["partition_data"] += [{"index": 1, "records": _batch(3)}, {"index": 2, "records": _batch(4)}]
    with Conn(b.port) as c:
        r = c.call(ApiKey.PRODUCE, 7, req)
    answers = {p["index"]: (p["error_code"], p["base_offset"]) for t_ in r["responses"] for p in t_["partition_responses"]}
    assert answers == {0: (0, 0), 1: (NLOF, -1), 2: (0, 0)}
    assert [_leo(b, t, p) for p in range(3)] == [2, 0, 4]


def test_fetch_and_metadata_errors(b: bt.InProcessBroker) -> None:
    t = _topic(b, "err-fetch")
    b.faults.fail("FETCH", "UNKNOWN_LEADER_EPOCH")
    b.faults.fail("METADATA", "LEADER_NOT_AVAILABLE", topic=t)
    with Conn(b.port) as c:
        r = c.call(ApiKey.FETCH, 11, fetch(t, 0, 0))
        assert r["responses"][0]["partitions"][0]["error_code"] == ErrorCode.UNKNOWN_LEADER_EPOCH
        r = c.call(ApiKey.METADATA, 4, metadata([t]))
        assert r["topics"][0]["error_code"] == ErrorCode.LEADER_NOT_AVAILABLE
        assert r["brokers"], "the real answer, with the error added"
        r = c.call(ApiKey.METADATA, 4, metadata([t]))
        assert r["topics"][0]["error_code"] == 0


def test_fetch_rule_naming_a_topic_matches_fetches_by_topic_id(b: bt.InProcessBroker) -> None:
    """Fetch v13+ name topics by id: a rule naming the topic still applies, and the error answer
    carries the id."""
    t = _topic(b, "err-fetch-id")
    other = _topic(b, "err-fetch-id-other")
    b.faults.fail("FETCH", "NOT_LEADER_OR_FOLLOWER", topic=t)
    with Conn(b.port) as c:
        ids = {name: c.call(ApiKey.METADATA, 12, metadata([name]))["topics"][0]["topic_id"] for name in (t, other)}
        for name in (other, t):
            req = fetch("", 0, 0)
            req["topics"][0]["topic_id"] = ids[name]
            r = c.call(ApiKey.FETCH, 13, req)
            assert r["responses"][0]["topic_id"] == ids[name]
            assert r["responses"][0]["partitions"][0]["error_code"] == (NLOF if name == t else 0)
    assert b.faults.rules() == []


def test_delay_holds_this_reply_and_the_ones_behind_it(b: bt.InProcessBroker) -> None:
    t = _topic(b, "delay")
    b.faults.delay("PRODUCE", 300)
    with Conn(b.port) as c:
        t0 = time.monotonic()
        first = c.send(ApiKey.PRODUCE, 7, produce(t, 0, _batch()))
        second = c.send(ApiKey.METADATA, 4, metadata([t]))
        assert c.recv(ApiKey.PRODUCE, 7)[0] == first
        assert c.recv(ApiKey.METADATA, 4)[0] == second
        assert time.monotonic() - t0 >= 0.3
    assert _leo(b, t) == 1


def test_drop_closes_the_connection_before_handling(b: bt.InProcessBroker) -> None:
    t = _topic(b, "drop")
    b.faults.drop("PRODUCE")
    with Conn(b.port) as c:
        c.send(ApiKey.PRODUCE, 7, produce(t, 0, _batch()))
        assert c.recv_frame() is CLOSED
    assert _leo(b, t) == 0
    with Conn(b.port) as c:  # the broker itself is fine
        assert c.call(ApiKey.PRODUCE, 7, produce(t, 0, _batch()))["responses"][0]["partition_responses"][0]["error_code"] == 0


@pytest.mark.parametrize("acks", [1, -1])
def test_drop_after_applies_the_request_but_never_answers(b: bt.InProcessBroker, acks: int) -> None:
    t = _topic(b, f"drop-after-{acks + 1}")
    b.faults.drop("PRODUCE", after=True)
    with Conn(b.port) as c:
        c.send(ApiKey.PRODUCE, 7, produce(t, 0, _batch(3), acks=acks))
        assert c.recv_frame() is CLOSED
    assert _leo(b, t) == 3


def test_until_cleared(b: bt.InProcessBroker) -> None:
    t = _topic(b, "forever")
    b.faults.fail("PRODUCE", NLOF, count=-1)
    with Conn(b.port) as c:
        for _ in range(5):
            assert c.call(ApiKey.PRODUCE, 7, produce(t, 0, _batch()))["responses"][0]["partition_responses"][0]["error_code"] == NLOF
        assert b.faults.rules()[0]["hits"] == 5
        b.faults.clear()
        assert c.call(ApiKey.PRODUCE, 7, produce(t, 0, _batch()))["responses"][0]["partition_responses"][0]["error_code"] == 0


def test_acks0_produce_error_closes_the_connection(b: bt.InProcessBroker) -> None:
    t = _topic(b, "acks0")
    b.faults.fail("PRODUCE", NLOF)
    with Conn(b.port) as c:
        c.send(ApiKey.PRODUCE, 7, produce(t, 0, _batch(), acks=0))
        assert c.is_closed_by_peer()
    assert _leo(b, t) == 0


# ---------------------------------------------------------------- subprocess broker: the control listener


def test_subprocess_broker_control_listener(tmp_path: Any) -> None:
    with bt.run("process", data_dir=str(tmp_path / "data")) as p:
        assert isinstance(p, bt.BrokerProcess)
        t = _topic(p, "remote")
        p.faults.fail("PRODUCE", "NOT_LEADER_OR_FOLLOWER", count=1, topic=t)
        [rule] = p.faults.rules()
        assert rule["api"] == "PRODUCE" and rule["error"] == "NOT_LEADER_OR_FOLLOWER" and rule["count"] == 1
        with Conn(p.port) as c:
            assert c.call(ApiKey.PRODUCE, 7, produce(t, 0, _batch()))["responses"][0]["partition_responses"][0]["error_code"] == NLOF
            assert c.call(ApiKey.PRODUCE, 7, produce(t, 0, _batch()))["responses"][0]["partition_responses"][0]["error_code"] == 0
        assert p.faults.rules() == []
        url = p.faults.url
        bad = urllib.request.Request(url, data=json.dumps({"api": "PRODUCE", "action": "nope"}).encode(), method="POST")
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(bad, timeout=10)
        assert e.value.code == 400
        with urllib.request.urlopen(url.replace("/faults", "/healthz"), timeout=10) as r:
            assert r.status == 200 and r.read() == b"ok\n"


def test_no_control_listener_unless_asked(tmp_path: Any) -> None:
    with bt.run("process", data_dir=str(tmp_path / "data"), faults=False) as p:
        assert isinstance(p, bt.BrokerProcess)
        assert p.http_ports == {}
        with pytest.raises(RuntimeError):
            p.faults
        assert "fault injection" not in p.log_text()


def test_control_listener_refuses_non_loopback_addresses(tmp_path: Any) -> None:
    p = bt.BrokerProcess(str(tmp_path / "data"), ["fault.injection.listener=http://0.0.0.0:0"])
    with pytest.raises(bt.BrokerStartError, match="loopback"):
        p.start()


def test_request_body_of_every_error_response_decodes_as_a_request_would() -> None:
    # error_response only reads the request: a decoded request (memoryviews, nulls) works too
    raw = Writer()
    REQUESTS[ApiKey.PRODUCE].encode(produce("t", 0, _batch()), 7, raw)
    req = REQUESTS[ApiKey.PRODUCE].decode(Reader(bytes(raw.buf)), 7)
    body = error_response(ApiKey.PRODUCE, 7, req, NLOF)
    assert body["responses"][0]["partition_responses"][0] == {"index": 0, "error_code": NLOF, "base_offset": -1,
                                                               "log_start_offset": -1}
