"""Tests for ``client/protocol/messages.py``: every request and response schema at every
version we serve.

- field lists (name, type, nullability, tag) per version equal to Kafka's JSON message specs,
  as bundled with kafka-python 3;
- round trips ``decode(encode(x)) == x`` (hypothesis, values drawn from the schema itself),
  checked against an independent oracle: kafka-python 3's codec (generated from Kafka's JSON
  specs) decodes our bytes and re-encodes them to the same bytes;
- known byte layouts written out by hand from the reference (ApiVersions v0/v3 responses,
  ApiVersions v3 request, Metadata v4 request, Fetch v11 request, Produce v7 request);
- hostile input: huge element counts in tiny buffers fail fast with DecodeError, and random or
  mutated bytes never raise anything but DecodeError from any request decoder.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import struct
import time
import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from client.protocol.header import encode_request_header, encode_response_header
from client.protocol.messages import REQUESTS, RESPONSES
from client.protocol.primitives import DecodeError, Reader, Writer
from client.protocol.schema import Array, Message, Struct, parse_versions

from .strategies import all_versions, is_present, message_values

ALL = all_versions(list(REQUESTS.values()) + list(RESPONSES.values()))
ALL_REQUESTS = all_versions(list(REQUESTS.values()))


def _id(p: Any) -> str:
    return f"{p[0].name}-v{p[1]}" if isinstance(p, tuple) else str(p)


def encode(msg: Message, value: dict[str, Any], version: int) -> bytes:
    return bytes(msg.encode(value, version).buf)


def decode_all(msg: Message, raw: bytes, version: int) -> dict[str, Any]:
    r = Reader(raw)
    out = msg.decode(r, version)
    assert r.remaining == 0
    return out


# ------------------------------------------------------------------ kafka-python as an oracle


def _kafka_python_classes() -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            import kafka.protocol as kp
        except ImportError:
            return {}
        found: dict[str, Any] = {}
        for mi in pkgutil.walk_packages(kp.__path__, "kafka.protocol."):
            try:
                mod = importlib.import_module(mi.name)
            except Exception:  # noqa: BLE001 - optional modules of an optional oracle
                continue
            for obj in vars(mod).values():
                j = getattr(obj, "_json", None) if isinstance(obj, type) else None
                if isinstance(j, dict) and j.get("name"):
                    found.setdefault(j["name"], obj)
    return found


_KP = _kafka_python_classes()


def kafka_python_reencode(msg: Message, version: int, raw: bytes) -> bytes | None:
    """kafka-python 3's codec is generated from Kafka's own JSON specs, independently of ours:
    decode our bytes with it and encode them back. None when it has no class for the message.
    (It ignores the specs' minimum versions, so Kafka 4 dropping e.g. CreateTopics v0-1 does not
    matter: their fields are still in the JSON.)"""
    cls = _KP.get(msg.name)
    if cls is None or version > cls.max_version:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = cls[version].decode(raw)
        if getattr(theirs, "header", None) is None:
            theirs.with_header()  # some classes' encode() expects one
        return bytes(theirs.encode())


def test_kafka_python_oracle_is_available() -> None:
    if not _KP:
        pytest.skip("kafka-python 3 (JSON-generated protocol classes) is not installed")
    missing = [m.name for m, _ in ALL if m.name not in _KP and m.api_key not in NOT_IN_KAFKA_PYTHON]
    assert not missing


#: APIs kafka-python 3 has no classes for (it has no KIP-848 or share-group client): their
#: schemas are checked by the real clients that speak them instead (librdkafka's
#: group.protocol=consumer in tests/compat/test_consumer_protocol.py, its ShareConsumer in
#: tests/compat/test_share_groups.py)
NOT_IN_KAFKA_PYTHON = {68, 69, 76, 77, 78, 79, 90, 91, 92}


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)).lower()


def _in(spec: str | None, v: int) -> bool:
    lo, hi = parse_versions(spec)
    return lo <= v <= hi


def _spec_fields(fields: list[dict[str, Any]], v: int, flexible: bool, prefix: str = "") -> list[tuple]:
    """(path, type, nullable, tag) of every field a version of a Kafka JSON spec carries."""
    out: list[tuple] = []
    for f in fields:
        if "tag" in f:
            if not (flexible and _in(f.get("taggedVersions", f["versions"]), v)):
                continue
        elif not _in(f["versions"], v):
            continue
        name, t = prefix + _snake(f["name"]), f["type"]
        inner = t[2:] if t.startswith("[]") else t
        is_struct = inner[:1].isupper()
        kind = ("[]" if t.startswith("[]") else "") + ("struct" if is_struct else inner.replace("records", "bytes"))
        out.append((name, kind, _in(f.get("nullableVersions"), v), f.get("tag")))
        if is_struct:
            out += _spec_fields(f["fields"], v, flexible, name + ".")
    return out


def _our_fields(fields: list[Any], v: int, flexible: bool, prefix: str = "") -> list[tuple]:
    out: list[tuple] = []
    for f in fields:
        if not is_present(f, v, flexible):
            continue
        t = f.type
        nullable = _in(f.nullable, v)
        if isinstance(t, Array):
            is_struct = not isinstance(t.of, str)
            out.append((prefix + f.name, "[]" + ("struct" if is_struct else t.of), nullable, f.tag))
            if is_struct:
                out += _our_fields(t.of, v, flexible, prefix + f.name + ".")
        elif isinstance(t, Struct):
            out.append((prefix + f.name, "struct", nullable, f.tag))
            out += _our_fields(t.fields, v, flexible, prefix + f.name + ".")
        else:
            out.append((prefix + f.name, t.replace("records", "bytes"), nullable, f.tag))
    return out


@pytest.mark.parametrize("mv", ALL, ids=_id)
def test_fields_match_kafka_json_specs(mv: tuple[Message, int]) -> None:
    """Field by field (name in snake_case, type, nullability, tag) against Kafka's own JSON
    message specs, which kafka-python 3 ships in kafka/protocol/schemas/resources."""
    msg, version = mv
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from kafka.protocol.schemas import load_json
            spec = load_json(msg.name)
    except (ImportError, FileNotFoundError):
        pytest.skip("Kafka's JSON specs (kafka-python 3) are not installed")
    flexible = msg.is_flexible(version)
    assert flexible == _in(spec.get("flexibleVersions", "none"), version)
    assert version <= parse_versions(spec["validVersions"])[1]
    assert _our_fields(msg.fields, version, flexible) == _spec_fields(spec["fields"], version, flexible)


# ------------------------------------------------------------------ round trips


@pytest.mark.parametrize("mv", ALL, ids=_id)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_round_trip(mv: tuple[Message, int], data: st.DataObject) -> None:
    msg, version = mv
    value = data.draw(message_values(msg, version))
    if msg.name == "ApiVersionsResponse" and value["error_code"] != 0 and version > 0:
        value["error_code"] = 0  # the oracle reads any error body as v0 (KIP-511), as clients do
    raw = encode(msg, value, version)
    assert decode_all(msg, raw, version) == value
    # encoding is deterministic: the decoded value encodes to the same bytes
    assert encode(msg, decode_all(msg, raw, version), version) == raw
    theirs = kafka_python_reencode(msg, version, raw)
    assert theirs is None or theirs == raw


# ------------------------------------------------------------------ known layouts


def _framed_response(key: int, version: int, cid: int, body: dict[str, Any]) -> bytes:
    w = Writer(bytearray(4))
    encode_response_header(w, key, version, cid)
    RESPONSES[key].encode(body, version, w)
    struct.pack_into(">i", w.buf, 0, len(w.buf) - 4)
    return bytes(w.buf)


API_KEYS = [{"api_key": 0, "min_version": 3, "max_version": 7},
            {"api_key": 18, "min_version": 0, "max_version": 4}]


def test_api_versions_v3_response_bytes() -> None:
    raw = _framed_response(18, 3, 0x01020304, {"error_code": 0, "api_keys": API_KEYS, "throttle_time_ms": 0})
    body = (
        b"\x01\x02\x03\x04"  # response header v0: correlation id, NO tag buffer (KIP-511)
        + b"\x00\x00"  # error_code
        + b"\x03"  # compact array: 2 entries + 1
        + b"\x00\x00\x00\x03\x00\x07\x00"  # key 0, 3..7, entry tag buffer
        + b"\x00\x12\x00\x00\x00\x04\x00"  # key 18, 0..4, entry tag buffer
        + b"\x00\x00\x00\x00"  # throttle_time_ms
        + b"\x00"  # body tag buffer
    )
    assert raw == struct.pack(">i", len(body)) + body


def test_api_versions_v0_and_v1_response_bytes() -> None:
    v0 = _framed_response(18, 0, 7, {"error_code": 35, "api_keys": API_KEYS[1:]})
    assert v0 == struct.pack(">iihihhh", 16, 7, 35, 1, 18, 0, 4)
    v1 = _framed_response(18, 1, 7, {"error_code": 0, "api_keys": [], "throttle_time_ms": 5})
    assert v1 == struct.pack(">iihii", 14, 7, 0, 0, 5)


def test_api_versions_v3_request_bytes() -> None:
    w = Writer()
    encode_request_header(w, 18, 3, 1, "rdkafka")
    REQUESTS[18].encode({"client_software_name": "librdkafka", "client_software_version": "2.0.2"}, 3, w)
    assert bytes(w.buf) == (struct.pack(">hhih", 18, 3, 1, 7) + b"rdkafka" + b"\x00"
                            + b"\x0blibrdkafka" + b"\x062.0.2" + b"\x00")


def test_metadata_v4_request_null_topics_bytes() -> None:
    assert encode(REQUESTS[3], {"topics": None, "allow_auto_topic_creation": True}, 4) == b"\xff\xff\xff\xff\x01"
    assert encode(REQUESTS[3], {"topics": []}, 0) == b"\x00\x00\x00\x00"
    with pytest.raises(ValueError):
        encode(REQUESTS[3], {"topics": None}, 0)  # v0 has no null (empty = all)


FETCH_V11 = {
    "replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 52428800,
    "isolation_level": 1, "session_id": 0, "session_epoch": -1,
    "topics": [{"topic": "t", "topic_id": None, "partitions": [{
        "partition": 2, "current_leader_epoch": -1, "fetch_offset": 100, "last_fetched_epoch": -1,
        "log_start_offset": -1, "partition_max_bytes": 1048576, "replica_directory_id": None,
        "high_watermark": 0x7FFFFFFFFFFFFFFF}]}],
    "forgotten_topics_data": [], "rack_id": "", "cluster_id": None, "replica_state": None,
}
FETCH_V11_BYTES = (
    struct.pack(">iiiibii", -1, 500, 1, 52428800, 1, 0, -1)
    + struct.pack(">i", 1) + b"\x00\x01t"
    + struct.pack(">i", 1) + struct.pack(">iiqqi", 2, -1, 100, -1, 1048576)
    + struct.pack(">i", 0)  # forgotten_topics_data
    + b"\x00\x00"  # rack_id ""
)


def test_fetch_v11_request_bytes() -> None:
    assert encode(REQUESTS[1], FETCH_V11, 11) == FETCH_V11_BYTES
    assert decode_all(REQUESTS[1], FETCH_V11_BYTES, 11) == FETCH_V11


def test_fetch_v4_request_drops_later_fields() -> None:
    raw = encode(REQUESTS[1], FETCH_V11, 4)
    assert raw == (struct.pack(">iiiib", -1, 500, 1, 52428800, 1) + struct.pack(">i", 1) + b"\x00\x01t"
                   + struct.pack(">i", 1) + struct.pack(">iqi", 2, 100, 1048576))


#: Fetch v0-3 as Kafka 3.9 defines them (clients/src/main/resources/common/message/FetchRequest.json
#: and FetchResponse.json at the 3.9 branch: validVersions 0-17, deprecatedVersions 0-3), written
#: out by hand: Kafka 4 removed these versions, and kafka-python 3's specs (Kafka 4.2's) start at
#: 4, so test_fields_match_kafka_json_specs checks v0-3 only against field ranges 4.2 kept.
FETCH_REQUEST_V0_3 = [
    ("replica_id", "int32"), ("max_wait_ms", "int32"), ("min_bytes", "int32"),
    ("max_bytes", "int32"),  # v3+ (KIP-74)
    ("topics", "[]struct"), ("topics.topic", "string"), ("topics.partitions", "[]struct"),
    ("topics.partitions.partition", "int32"), ("topics.partitions.fetch_offset", "int64"),
    ("topics.partitions.partition_max_bytes", "int32"),
]
FETCH_RESPONSE_V0_3 = [
    ("throttle_time_ms", "int32"),  # v1+
    ("responses", "[]struct"), ("responses.topic", "string"), ("responses.partitions", "[]struct"),
    ("responses.partitions.partition_index", "int32"), ("responses.partitions.error_code", "int16"),
    ("responses.partitions.high_watermark", "int64"), ("responses.partitions.records", "bytes"),
]


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_fetch_v0_to_v3_fields_are_kafka_39s(version: int) -> None:
    request = [(n, t) for n, t, _, _ in _our_fields(REQUESTS[1].fields, version, False)]
    response = [(n, t, nullable) for n, t, nullable, _ in _our_fields(RESPONSES[1].fields, version, False)]
    assert request == [f for f in FETCH_REQUEST_V0_3 if version >= 3 or f[0] != "max_bytes"]
    assert response == [(n, t, n.endswith("records")) for n, t in FETCH_RESPONSE_V0_3
                        if version >= 1 or n != "throttle_time_ms"]


def test_fetch_v0_and_v3_request_bytes() -> None:
    assert encode(REQUESTS[1], FETCH_V11, 0) == (
        struct.pack(">iii", -1, 500, 1) + struct.pack(">i", 1) + b"\x00\x01t"
        + struct.pack(">i", 1) + struct.pack(">iqi", 2, 100, 1048576))
    assert encode(REQUESTS[1], FETCH_V11, 3) == (
        struct.pack(">iiii", -1, 500, 1, 52428800) + struct.pack(">i", 1) + b"\x00\x01t"
        + struct.pack(">i", 1) + struct.pack(">iqi", 2, 100, 1048576))


def test_produce_v7_request_bytes() -> None:
    batch = b"B" * 70
    value = {"transactional_id": None, "acks": -1, "timeout_ms": 30000,
             "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": batch}]}]}
    raw = encode(REQUESTS[0], value, 7)
    assert raw == (struct.pack(">hhi", -1, -1, 30000) + struct.pack(">i", 1) + b"\x00\x01t"
                   + struct.pack(">iii", 1, 0, len(batch)) + batch)
    out = decode_all(REQUESTS[0], raw, 7)
    records = out["topic_data"][0]["partition_data"][0]["records"]
    assert isinstance(records, memoryview) and records == batch


def test_produce_v7_response_throttle_is_last() -> None:
    body = {"responses": [{"name": "t", "partition_responses": [
        {"index": 0, "error_code": 0, "base_offset": 5, "log_append_time_ms": -1, "log_start_offset": 0}]}],
        "throttle_time_ms": 9}
    raw = encode(RESPONSES[0], body, 7)
    assert raw.endswith(struct.pack(">qqqi", 5, -1, 0, 9))


# ------------------------------------------------------------------ hostile input


def _body_prefix_with_count(key: int, version: int) -> bytes:
    """Bytes of a request body up to (not including) its first array count."""
    if key == 0:  # [transactional_id v3+], acks, timeout
        return (b"\xff\xff" if version >= 3 else b"") + struct.pack(">hi", 1, 1000)
    if key == 1:  # replica_id, max_wait, min_bytes, max_bytes, isolation, [session id, epoch v7+]
        return struct.pack(">iiiib", -1, 500, 1, 1 << 20, 0) + (struct.pack(">ii", 0, -1) if version >= 7 else b"")
    if key == 2:  # replica_id, [isolation v2+]
        return struct.pack(">i", -1) + (b"\x00" if version >= 2 else b"")
    return b""  # Metadata, CreateTopics, DeleteTopics, DescribeConfigs: the array comes first


_WITH_ARRAYS = (0, 1, 2, 3, 19, 20, 32)


# int32 counts: the non-flexible versions (compact counts: test_huge_compact_count_fails_fast)
@pytest.mark.parametrize("mv", [mv for mv in ALL_REQUESTS if mv[0].api_key in _WITH_ARRAYS
                                and not mv[0].is_flexible(mv[1])], ids=_id)
def test_huge_array_count_fails_fast(mv: tuple[Message, int]) -> None:
    msg, version = mv
    raw = _body_prefix_with_count(msg.api_key, version) + struct.pack(">i", 0x7FFFFFFF) + bytes(16)
    t0 = time.perf_counter()
    with pytest.raises(DecodeError, match="cannot fit"):
        msg.decode(Reader(raw), version)
    assert time.perf_counter() - t0 < 0.1


def test_huge_compact_count_fails_fast() -> None:
    # ApiVersions v3 request: a 4 GiB compact string
    with pytest.raises(DecodeError):
        REQUESTS[18].decode(Reader(b"\xff\xff\xff\xff\x0f" + bytes(10)), 3)
    # ApiVersions v3 response: 2^35 entries in 10 bytes
    with pytest.raises(DecodeError, match="cannot fit"):
        RESPONSES[18].decode(Reader(b"\x00\x00" + b"\xff\xff\xff\xff\x7f" + bytes(10)), 3)


def test_nested_counts_each_checked() -> None:
    # Produce v3: 1 topic "t" with 2^31-1 partitions
    raw = struct.pack(">hhi", -1, 1, 1000) + struct.pack(">i", 1) + b"\x00\x01t" + struct.pack(">i", 0x7FFFFFFF) + bytes(8)
    with pytest.raises(DecodeError, match="cannot fit"):
        REQUESTS[0].decode(Reader(raw), 3)
    # ... and a 2 GiB records blob
    raw = (struct.pack(">hhi", -1, 1, 1000) + struct.pack(">i", 1) + b"\x00\x01t" + struct.pack(">i", 1)
           + struct.pack(">ii", 0, 0x7FFFFFFF) + bytes(8))
    with pytest.raises(DecodeError):
        REQUESTS[0].decode(Reader(raw), 3)


@settings(max_examples=800, deadline=None)
@given(mv=st.sampled_from(ALL_REQUESTS), raw=st.binary(max_size=64))
def test_random_bytes_raise_only_decode_error(mv: tuple[Message, int], raw: bytes) -> None:
    msg, version = mv
    try:
        msg.decode(Reader(raw), version)
    except DecodeError:
        pass


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mv=st.sampled_from(ALL_REQUESTS), data=st.data())
def test_mutated_valid_bytes_raise_only_decode_error(mv: tuple[Message, int], data: st.DataObject) -> None:
    """Valid encodings, then truncated, or with bytes overwritten by boundary values (0x00,
    0x7f, 0x80, 0xff) that turn lengths and counts hostile."""
    msg, version = mv
    raw = bytearray(encode(msg, data.draw(message_values(msg, version)), version))
    if data.draw(st.booleans()) and raw:
        raw = raw[: data.draw(st.integers(0, len(raw) - 1))]
    for _ in range(data.draw(st.integers(0, 4))):
        if not raw:
            break
        pos = data.draw(st.integers(0, len(raw) - 1))
        raw[pos] = data.draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF]))
    try:
        msg.decode(Reader(raw), version)
    except DecodeError:
        pass
