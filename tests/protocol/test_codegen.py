"""The generated codecs (client/protocol/_codegen.py, used by ``Message.decode``/``encode``)
against the interpreted reference (``Message.interpreted``), for every message and version:

- random valid values encode to the same bytes, and decode to equal dicts with the same key
  order and the same end position;
- truncated, mutated and random bytes either fail with DecodeError in both codecs or decode
  to the same dict in both (a mutation can leave a valid encoding);
- Produce, the hottest request, gets its own cases: null transactional_id, null records,
  several topics and partitions, v8+ record errors, v10+ tags (unknown tags skipped).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from client.protocol.messages import REQUESTS, RESPONSES
from client.protocol.messages.produce import ProduceRequest, ProduceResponse
from client.protocol.primitives import DecodeError, Reader, Writer
from client.protocol.schema import Message

from .strategies import all_versions, message_values

ALL = all_versions(list(REQUESTS.values()) + list(RESPONSES.values()))
PRODUCE = all_versions([ProduceRequest, ProduceResponse])


def _id(p: Any) -> str:
    return f"{p[0].name}-v{p[1]}" if isinstance(p, tuple) else str(p)


def _norm(x: Any) -> Any:
    """Key order and memoryview-vs-bytes made visible to ==."""
    if isinstance(x, dict):
        return [(k, _norm(v)) for k, v in x.items()]
    if isinstance(x, list):
        return [_norm(v) for v in x]
    if isinstance(x, memoryview):
        return ("mv", bytes(x))
    return x


def _both_decode(msg: Message, raw: bytes, version: int) -> Any:
    """Decode with both codecs; they must agree on the value and end position, or both raise
    DecodeError (and nothing else)."""
    results = []
    for dec in (msg.interpreted(version)[0], lambda r: msg.decode(r, version)):
        r = Reader(raw)
        try:
            results.append((_norm(dec(r)), r.pos))
        except DecodeError:
            results.append(DecodeError)
    assert results[0] == results[1]
    return results[0]


def _both_encode(msg: Message, value: dict[str, Any], version: int) -> bytes:
    ref = Writer()
    msg.interpreted(version)[1](ref, value)
    gen = bytes(msg.encode(value, version).buf)
    assert gen == bytes(ref.buf)
    return gen


@pytest.mark.parametrize("mv", ALL, ids=_id)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_same_bytes_and_dicts(mv: tuple[Message, int], data: st.DataObject) -> None:
    msg, version = mv
    value = data.draw(message_values(msg, version))
    raw = _both_encode(msg, value, version)
    got = _both_decode(msg, raw, version)
    assert got is not DecodeError and got[1] == len(raw)
    assert msg.decode(Reader(raw), version) == value
    # every strict prefix is truncated input: DecodeError from both
    for cut in {0, len(raw) // 2, len(raw) - 1} if raw else ():
        assert _both_decode(msg, raw[:cut], version) is DecodeError


@pytest.mark.parametrize("mv", PRODUCE, ids=_id)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_produce_round_trips_and_mutations(mv: tuple[Message, int], data: st.DataObject) -> None:
    msg, version = mv
    value = data.draw(message_values(msg, version))
    raw = bytearray(_both_encode(msg, value, version))
    r = Reader(raw)
    assert msg.decode(r, version) == value and r.remaining == 0
    for _ in range(data.draw(st.integers(0, 4))):
        pos = data.draw(st.integers(0, len(raw) - 1))
        raw[pos] = data.draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF]))
    if data.draw(st.booleans()):
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    _both_decode(msg, bytes(raw), version)


@settings(max_examples=600, deadline=None)
@given(mv=st.sampled_from(all_versions(list(REQUESTS.values()))), raw=st.binary(max_size=64))
def test_random_bytes_agree(mv: tuple[Message, int], raw: bytes) -> None:
    _both_decode(mv[0], raw, mv[1])


def _produce_request(version: int) -> dict[str, Any]:
    """Topics by name (v0-12) or by id (v13+); the field a version does not carry holds the
    default its decoder fills in."""
    def topic(name: str, n: int) -> dict[str, Any]:
        if version >= 13:
            return {"name": "", "topic_id": uuid.UUID(int=n)}
        return {"name": name, "topic_id": None}

    return {
        "transactional_id": None, "acks": 1, "timeout_ms": 1500,
        "topic_data": [
            {**topic("a", 1), "partition_data": [{"index": 0, "records": b"xyz"}, {"index": 3, "records": None}]},
            {**topic("bé", 2), "partition_data": []},
        ],
    }


@pytest.mark.parametrize("version", range(14))
def test_produce_request_null_transactional_id_and_records(version: int) -> None:
    value = _produce_request(version)
    raw = _both_encode(ProduceRequest, value, version)
    assert ProduceRequest.decode(Reader(raw), version) == value
    value["transactional_id"] = "tx"
    raw = _both_encode(ProduceRequest, value, version)
    assert ProduceRequest.decode(Reader(raw), version)["transactional_id"] == ("tx" if version >= 3 else None)


@pytest.mark.parametrize("version", range(9, 14))
def test_unknown_tags_are_skipped_like_the_interpreted_codec(version: int) -> None:
    """v9+ request with a tag buffer of two unknown tags after the request and after a partition."""
    raw = bytearray(_both_encode(ProduceRequest, _produce_request(version), version))
    assert raw[-1] == 0  # top-level tag buffer, empty
    tags = b"\x02" + b"\x05\x02hi" + b"\x7f\x00"
    raw[-1:] = tags
    got = _both_decode(ProduceRequest, bytes(raw), version)
    assert got is not DecodeError and got[1] == len(raw)
    raw[-len(tags):] = b"\x02\x05\x09hi"  # a tag whose size runs past the end
    assert _both_decode(ProduceRequest, bytes(raw), version) is DecodeError


@pytest.mark.parametrize("version", range(8, 14))
def test_produce_response_record_errors_and_leader_hints(version: int) -> None:
    part = {"index": 1, "error_code": 6, "base_offset": -1, "log_append_time_ms": -1,
            "log_start_offset": 0, "record_errors": [{"batch_index": 0, "batch_index_error_message": None},
                                                     {"batch_index": 2, "batch_index_error_message": "bad"}],
            "error_message": "not leader", "current_leader": {"leader_id": 1, "leader_epoch": 4}}
    topic = {"name": "", "topic_id": uuid.UUID(int=7)} if version >= 13 else {"name": "t", "topic_id": None}
    value = {"responses": [{**topic, "partition_responses": [part, dict(part, index=2, current_leader=None)]}],
             "throttle_time_ms": 0,
             "node_endpoints": [{"node_id": 1, "host": "h", "port": 9092, "rack": None}]}
    raw = _both_encode(ProduceResponse, value, version)
    got = ProduceResponse.decode(Reader(raw), version)
    if version >= 10:
        assert got == value
    else:
        assert got["responses"][0]["partition_responses"][0]["record_errors"] == part["record_errors"]
        assert got["node_endpoints"] == []
