"""Tests for ``broker/socket_server.py`` and the handlers behind it, against a real broker process
(``python -m broker serve``), over raw sockets with our codec: in-order pipelined responses,
ApiVersions and its v0 fallback, connections closed on unsupported requests, Produce acks and
errors (nothing written on a bad batch), Fetch long-poll, errors, KIP-74 and byte equality
with the ``.log`` file."""

from __future__ import annotations

import os
import signal
import socket
import struct
import time
from collections.abc import Iterator
from typing import Any

import crc32c
import pytest

from client.protocol.api import SUPPORTED_VERSIONS, ApiKey, ErrorCode
from client.protocol.messages import RESPONSES
from client.protocol.primitives import Reader
from client.records import decode_batch, iter_batch_headers
from tests.broker_process import BrokerProcess

from .wire import (
    Conn,
    batch,
    create_topic,
    decode_response,
    fetch,
    list_offsets,
    log_bytes,
    log_file,
    metadata,
    open_fds,
    partition_response,
    produce,
    request_bytes,
    wait_until,
)

P, F, LO, MD, AV, CT = (ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.METADATA,
                        ApiKey.API_VERSIONS, ApiKey.CREATE_TOPICS)


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for the module; each test uses its own topics."""
    b = BrokerProcess(str(tmp_path_factory.mktemp("server") / "data")).start()
    try:
        yield b
    finally:
        rc = b.stop()
        assert rc == 0, f"broker exited with {rc}:\n{b.log_text()}"


def new_topic(b: BrokerProcess, name: str, partitions: int = 1, **configs: str) -> None:
    with Conn(b.port) as c:
        r = c.call(CT, 3, create_topic(name, partitions, {k.replace("_", "."): v for k, v in configs.items()}))
        assert r["topics"][0]["error_code"] == 0, r


def produce_ok(c: Conn, topic: str, records: bytes, acks: int = 1, partition: int = 0) -> int:
    p = partition_response(c.call(P, 7, produce(topic, partition, records, acks)))
    assert p["error_code"] == 0, p
    return p["base_offset"]


def fetch_one(c: Conn, topic: str, offset: int, version: int = 11, **kw: Any) -> dict[str, Any]:
    return partition_response(c.call(F, version, fetch(topic, 0, offset, **kw)), "partitions")


# ------------------------------------------------------------------ ordering


def test_pipelined_mixed_requests_answered_in_order(srv: BrokerProcess) -> None:
    new_topic(srv, "pipe")
    with Conn(srv.port) as c:
        produce_ok(c, "pipe", batch(2))
        plan: list[tuple[int, int, dict[str, Any]]] = []
        for i in range(50):
            kind = i % 5
            if kind == 0:
                plan.append((MD, 4, metadata(["pipe"])))
            elif kind == 1:
                plan.append((AV, 3, {"client_software_name": "t", "client_software_version": "1"}))
            elif kind == 2:
                plan.append((P, 7, produce("pipe", 0, batch(1, tag=b"%d" % i), acks=1)))
            elif kind == 3:
                # at the log end with min_bytes: held until the next produce of this pipeline
                # (or max_wait_ms); the replies queued behind it must wait for it
                leo = 2 + sum(1 for j in range(i) if j % 5 == 2)
                plan.append((F, 11, fetch("pipe", 0, 10**6 if i == 3 else leo, max_wait_ms=300, min_bytes=1)))
            else:
                plan.append((LO, 2, list_offsets("pipe", 0, -1)))
        # one write for all 50
        c.sock.sendall(b"".join(request_bytes(k, v, 1000 + i, body) for i, (k, v, body) in enumerate(plan)))
        offsets = []
        for i, (k, v, _) in enumerate(plan):
            cid, body = c.recv(k, v)
            assert cid == 1000 + i
            if k == P:
                offsets.append(partition_response(body)["base_offset"])
            if k == F:
                p = partition_response(body, "partitions")
                if i == 3:
                    assert p["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE
                elif i < 48:  # woken by the produce that follows it
                    assert p["error_code"] == 0 and len(decode_batch(p["records"])) == 1
        assert offsets == list(range(2, 12))


def test_acks0_in_pipeline_gets_no_response(srv: BrokerProcess) -> None:
    new_topic(srv, "acks0")
    with Conn(srv.port) as c:
        c.sock.sendall(request_bytes(P, 7, 1, produce("acks0", 0, batch(1), acks=0))
                       + request_bytes(AV, 0, 2, {}))
        cid, body = c.recv(AV, 0)
        assert cid == 2 and body["error_code"] == 0
        assert fetch_one(c, "acks0", 0)["high_watermark"] == 1


# ------------------------------------------------------------------ ApiVersions


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_api_versions(srv: BrokerProcess, version: int) -> None:
    with Conn(srv.port) as c:
        r = c.call(AV, version, {"client_software_name": "wire", "client_software_version": "1.0"})
        assert r["error_code"] == 0
        got = {e["api_key"]: (e["min_version"], e["max_version"]) for e in r["api_keys"]}
        assert got == {int(k): v for k, v in SUPPORTED_VERSIONS.items()}
        # keep lower bounds old librdkafka needs (exact-version feature checks)
        assert got[0][0] <= 3 and got[1][0] <= 4 and got[18][0] == 0 and got[2][0] <= 1


def test_api_versions_v3_response_header_has_no_tag_buffer(srv: BrokerProcess) -> None:
    with Conn(srv.port) as c:
        c.send(AV, 3, {"client_software_name": "x", "client_software_version": "y"}, cid=77)
        frame = c.recv_frame()
        assert isinstance(frame, bytes)
        assert frame[:4] == struct.pack(">i", 77)
        r = Reader(frame, 4)  # body straight after the correlation id
        RESPONSES[AV].decode(r, 3)
        assert r.remaining == 0


@pytest.mark.parametrize("version", [5, 6, 127, 0x7FFF])
def test_api_versions_above_max_gets_v0_fallback_and_stays_open(srv: BrokerProcess, version: int) -> None:
    with Conn(srv.port) as c:
        # the body may be in an unknown format: the broker must parse the header only
        cid = c.send(AV, version, b"\xde\xad\xbe\xef garbage")
        frame = c.recv_frame()
        assert frame == struct.pack(">ihihhh", cid, 35, 1, 18, 0, 4)
        got_cid, body = decode_response(AV, 0, frame)  # type: ignore[arg-type]
        assert got_cid == cid and body["error_code"] == ErrorCode.UNSUPPORTED_VERSION
        assert body["api_keys"] == [{"api_key": 18, "min_version": 0, "max_version": 4}]
        # the connection stays usable
        assert c.call(AV, 4, {"client_software_name": "a", "client_software_version": "b"})["error_code"] == 0


@pytest.mark.parametrize("key,version", [
    (1000, 0),  # unknown API key
    (-1, 0),
    (int(ApiKey.CREATE_DELEGATION_TOKEN), 0),  # a key Kafka has but this broker does not serve
    (int(MD), 14),  # above our max
    (int(F), -1),  # below our min (Fetch starts at 0 since down-conversion)
    (int(F), 19),
    (int(LO), 12),
    (int(MD), -1),
])
def test_unsupported_request_closes_only_that_connection(srv: BrokerProcess, key: int, version: int) -> None:
    served = key in SUPPORTED_VERSIONS and SUPPORTED_VERSIONS[key][0] <= version <= SUPPORTED_VERSIONS[key][1]
    assert not served, f"API {key} v{version} is served now: pick another unsupported case"
    with Conn(srv.port) as other:
        assert other.call(MD, 1, metadata([]))["brokers"]
        with Conn(srv.port) as c:
            c.sock.sendall(request_bytes(key, version, 5, b"\x00" * 16))
            assert c.is_closed_by_peer()
        assert other.call(MD, 1, metadata([]))["brokers"]  # opened before, still served
    with Conn(srv.port) as fresh:
        assert fresh.call(AV, 3, {"client_software_name": "a", "client_software_version": "b"})["error_code"] == 0


@pytest.mark.parametrize("raw", [
    struct.pack(">i", -1),
    struct.pack(">i", -(1 << 31)),
    struct.pack(">i", 0),  # empty frame: no header
    struct.pack(">i", 3) + b"\x00\x03\x00",  # truncated header
    struct.pack(">i", 104857600 + 1),  # above socket.request.max.bytes
    struct.pack(">i", 0x7FFFFFFF),
    request_bytes(MD, 1, 1, struct.pack(">i", 0x7FFFFFFF)),  # 2^31-1 topics in 4 bytes
    request_bytes(P, 7, 1, b"\xff\xff\x00\x01\x00\x00\x03\xe8" + struct.pack(">i", 0x7FFFFFFF)),
])
def test_malformed_frames_close_the_connection(srv: BrokerProcess, raw: bytes) -> None:
    with Conn(srv.port) as other:
        with Conn(srv.port) as c:
            t0 = time.monotonic()
            c.sock.sendall(raw)
            assert c.is_closed_by_peer()
            assert time.monotonic() - t0 < 3
        assert other.call(AV, 0, {})["error_code"] == 0


# ------------------------------------------------------------------ Metadata


def test_metadata_topic_lists(srv: BrokerProcess) -> None:
    new_topic(srv, "md-a", 3)
    with Conn(srv.port) as c:
        r = c.call(MD, 4, metadata(None))
        assert {t["name"] for t in r["topics"]} >= {"md-a"}
        (b,) = r["brokers"]
        assert (b["host"], b["port"]) == ("127.0.0.1", srv.port)
        assert r["controller_id"] == b["node_id"]
        assert c.call(MD, 1, metadata([]))["topics"] == []  # v1+: empty = none
        assert "md-a" in {t["name"] for t in c.call(MD, 0, {"topics": []})["topics"]}  # v0: empty = all
        (t,) = c.call(MD, 4, metadata(["md-a"]))["topics"]
        assert [p["partition_index"] for p in t["partitions"]] == [0, 1, 2]
        (t,) = c.call(MD, 4, metadata(["md-auto"]))["topics"]  # auto-created
        assert t["error_code"] == 0 and len(t["partitions"]) == 1
        (t,) = c.call(MD, 4, metadata(["md-none"], auto_create=False))["topics"]
        assert t["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        (t,) = c.call(MD, 4, metadata(["bad/name"]))["topics"]
        assert t["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION


# ------------------------------------------------------------------ Produce


@pytest.mark.parametrize("acks", [1, -1])
def test_produce_acks(srv: BrokerProcess, acks: int) -> None:
    topic = f"produce-acks{acks}"
    new_topic(srv, topic)
    with Conn(srv.port) as c:
        for version in range(3, 8):
            p = partition_response(c.call(P, version, produce(topic, 0, batch(2), acks)))
            assert p["error_code"] == 0
            assert p["base_offset"] == 2 * (version - 3)
            if version >= 5:
                assert p["log_start_offset"] == 0
        assert fetch_one(c, topic, 0)["high_watermark"] == 10


def test_produce_acks0_with_error_closes_connection(srv: BrokerProcess) -> None:
    with Conn(srv.port) as c:
        c.send(P, 7, produce("no-such-topic-acks0", 0, batch(1), acks=0))
        assert c.is_closed_by_peer()


def _produce_error(c: Conn, topic: str, records: bytes | None, acks: int = 1, partition: int = 0) -> int:
    return partition_response(c.call(P, 7, produce(topic, partition, records, acks)))["error_code"]


def test_produce_invalid_acks(srv: BrokerProcess) -> None:
    new_topic(srv, "badacks")
    with Conn(srv.port) as c:
        for acks in (2, -2, 100):
            assert _produce_error(c, "badacks", batch(1), acks=acks) == ErrorCode.INVALID_REQUIRED_ACKS
        assert fetch_one(c, "badacks", 0)["high_watermark"] == 0
    assert os.path.getsize(log_file(srv.data_dir, "badacks")) == 0


def test_produce_corrupt_batch_writes_nothing(srv: BrokerProcess) -> None:
    new_topic(srv, "corrupt")
    with Conn(srv.port) as c:
        good = batch(2)
        produce_ok(c, "corrupt", good)
        size = os.path.getsize(log_file(srv.data_dir, "corrupt"))
        bad = bytearray(batch(2))
        bad[-1] ^= 0xFF  # a record byte: CRC mismatch
        assert _produce_error(c, "corrupt", bytes(bad)) == ErrorCode.CORRUPT_MESSAGE
        bad_crc = bytearray(batch(2))
        bad_crc[17:21] = b"\x00\x00\x00\x00"
        assert _produce_error(c, "corrupt", bytes(bad_crc)) == ErrorCode.CORRUPT_MESSAGE
        # a good batch followed by a bad one in the same blob: nothing of either is written
        assert partition_response(c.call(P, 2, produce("corrupt", 0, batch(1) + bytes(bad))))["error_code"] \
            == ErrorCode.CORRUPT_MESSAGE  # v2: several batches allowed (from v3: INVALID_RECORD, Kafka)
        truncated = batch(3)[:-5]
        assert _produce_error(c, "corrupt", truncated) == ErrorCode.CORRUPT_MESSAGE
        assert _produce_error(c, "corrupt", b"") == ErrorCode.CORRUPT_MESSAGE
        assert _produce_error(c, "corrupt", None) == ErrorCode.CORRUPT_MESSAGE
        assert _produce_error(c, "corrupt", b"\x00" * 100) != 0
        p = fetch_one(c, "corrupt", 0)
        assert p["high_watermark"] == 2
        assert p["records"] == log_bytes(srv.data_dir, "corrupt")
        assert [r.value for r in decode_batch(p["records"])] == [r.value for r in decode_batch(good)]
    assert os.path.getsize(log_file(srv.data_dir, "corrupt")) == size


def test_produce_records_that_do_not_parse_behind_a_good_crc(srv: BrokerProcess) -> None:
    new_topic(srv, "badrecords")
    with Conn(srv.port) as c:
        b = bytearray(batch(2)[:61]) + b"\x05 this is not a record"
        struct.pack_into(">i", b, 8, len(b) - 12)
        struct.pack_into(">I", b, 17, crc32c.crc32c(bytes(b[21:])))
        assert _produce_error(c, "badrecords", bytes(b)) == ErrorCode.INVALID_RECORD
        assert fetch_one(c, "badrecords", 0)["high_watermark"] == 0
        produce_ok(c, "badrecords", batch(1))  # the partition and the connection still work
    assert os.path.getsize(log_file(srv.data_dir, "badrecords")) == len(batch(1))


def test_produce_magic_1_is_unsupported(srv: BrokerProcess) -> None:
    new_topic(srv, "magic1")
    with Conn(srv.port) as c:
        b = bytearray(batch(1))
        b[16] = 1
        assert _produce_error(c, "magic1", bytes(b)) == ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT
        # a legacy v1 message set: offset, size, crc, magic 1, attributes, timestamp, key, value
        msg = struct.pack(">bbqii", 1, 0, 0, -1, 1) + b"v"
        legacy = struct.pack(">qiI", 0, len(msg) + 4, 0) + msg
        assert _produce_error(c, "magic1", legacy) in (ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT,
                                                       ErrorCode.CORRUPT_MESSAGE)
        assert fetch_one(c, "magic1", 0)["high_watermark"] == 0


def test_produce_too_large(srv: BrokerProcess) -> None:
    new_topic(srv, "toolarge", max_message_bytes="2000")
    with Conn(srv.port) as c:
        assert _produce_error(c, "toolarge", batch(1, value_size=3000)) == ErrorCode.MESSAGE_TOO_LARGE
        produce_ok(c, "toolarge", batch(1, value_size=1000))
        assert fetch_one(c, "toolarge", 0)["high_watermark"] == 1


def test_produce_unknown_topic_or_partition(srv: BrokerProcess) -> None:
    new_topic(srv, "known", 2)
    with Conn(srv.port) as c:
        assert _produce_error(c, "known", batch(1), partition=2) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert _produce_error(c, "known", batch(1), partition=-1) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert _produce_error(c, "never-created", batch(1)) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert not os.path.exists(os.path.join(srv.data_dir, "never-created-0"))


def test_produce_offsets_are_patched_in_place(srv: BrokerProcess) -> None:
    new_topic(srv, "patch")
    with Conn(srv.port) as c:
        sent = [batch(3, tag=b"a"), batch(2, tag=b"b"), batch(1, tag=b"c")]
        for s in sent:
            produce_ok(c, "patch", s)
    data = log_bytes(srv.data_dir, "patch")
    pos = 0
    for s, base in zip(sent, (0, 3, 5)):
        stored = data[pos : pos + len(s)]
        assert struct.unpack_from(">q", stored)[0] == base
        assert stored[8:] == s[8:]  # everything after the base offset byte for byte
        pos += len(s)
    assert pos == len(data)


# ------------------------------------------------------------------ Fetch


def test_fetch_long_poll_returns_when_data_arrives(srv: BrokerProcess) -> None:
    new_topic(srv, "poll")
    with Conn(srv.port) as waiter, Conn(srv.port) as producer:
        t0 = time.monotonic()
        waiter.send(F, 11, fetch("poll", 0, 0, max_wait_ms=10000, min_bytes=1))
        time.sleep(0.3)
        produce_ok(producer, "poll", batch(2))
        _, r = waiter.recv(F, 11)
        elapsed = time.monotonic() - t0
        p = partition_response(r, "partitions")
        assert p["error_code"] == 0 and len(decode_batch(p["records"])) == 2
        assert 0.25 < elapsed < 5, elapsed


def test_fetch_long_poll_waits_max_wait(srv: BrokerProcess) -> None:
    new_topic(srv, "pollwait")
    with Conn(srv.port) as c:
        t0 = time.monotonic()
        p = fetch_one(c, "pollwait", 0, max_wait_ms=400, min_bytes=1)
        elapsed = time.monotonic() - t0
        assert p["error_code"] == 0 and p["records"] == b""
        assert 0.35 < elapsed < 5, elapsed
        # min_bytes already satisfied: no wait
        produce_ok(c, "pollwait", batch(1))
        t0 = time.monotonic()
        fetch_one(c, "pollwait", 0, max_wait_ms=5000, min_bytes=1)
        assert time.monotonic() - t0 < 2


def test_fetch_long_poll_min_bytes_accumulates(srv: BrokerProcess) -> None:
    new_topic(srv, "pollmin")
    one = batch(1)
    with Conn(srv.port) as waiter, Conn(srv.port) as producer:
        waiter.send(F, 11, fetch("pollmin", 0, 0, max_wait_ms=10000, min_bytes=len(one) * 3))
        t0 = time.monotonic()
        for _ in range(3):
            time.sleep(0.1)
            produce_ok(producer, "pollmin", one)
        _, r = waiter.recv(F, 11)
        assert time.monotonic() - t0 < 5
        assert len(partition_response(r, "partitions")["records"]) == 3 * len(one)


def test_fetch_offset_out_of_range(srv: BrokerProcess) -> None:
    new_topic(srv, "oor")
    with Conn(srv.port) as c:
        produce_ok(c, "oor", batch(3))
        p = fetch_one(c, "oor", 4)
        assert p["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE
        assert p["records"] == b""  # never null (librdkafka rejects -1)
        assert p["high_watermark"] == 3
        p = fetch_one(c, "oor", 3)  # at the high watermark: no error, no records
        assert p["error_code"] == 0 and p["records"] == b""
        p = fetch_one(c, "oor", -1)
        assert p["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE
        # an error answers at once, even with min_bytes and max_wait
        t0 = time.monotonic()
        assert fetch_one(c, "oor", 100, max_wait_ms=5000, min_bytes=1)["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE
        assert time.monotonic() - t0 < 2
        r = c.call(F, 11, fetch("oor-none", 0, 0))
        assert partition_response(r, "partitions")["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_fetch_first_batch_is_whole_kip74(srv: BrokerProcess) -> None:
    new_topic(srv, "kip74")
    big = batch(2, value_size=50_000)
    with Conn(srv.port) as c:
        produce_ok(c, "kip74", big)
        produce_ok(c, "kip74", batch(1))
        for pmax, mmax in ((100, 50 << 20), (1 << 20, 100), (1, 1), (0, 0)):
            p = fetch_one(c, "kip74", 0, partition_max_bytes=pmax, max_bytes=mmax)
            assert p["error_code"] == 0
            assert bytes(p["records"][8:len(big)]) == big[8:]
            assert len(p["records"]) == len(big)  # the first batch whole, nothing more


def test_fetch_limits_may_cut_mid_batch(srv: BrokerProcess) -> None:
    new_topic(srv, "cut")
    b = batch(1, value_size=1000)
    with Conn(srv.port) as c:
        for _ in range(5):
            produce_ok(c, "cut", b)
        p = fetch_one(c, "cut", 0, partition_max_bytes=len(b) * 2 + 10)
        assert len(p["records"]) == len(b) * 2 + 10
        assert [h.base_offset for h in iter_batch_headers(p["records"])] == [0, 1]  # tail is partial
        p = fetch_one(c, "cut", 2)  # from the batch holding offset 2
        assert [h.base_offset for h in iter_batch_headers(p["records"])] == [2, 3, 4]


def test_fetch_records_equal_log_bytes(srv: BrokerProcess) -> None:
    new_topic(srv, "bytes-eq")
    with Conn(srv.port) as c:
        for i in range(20):
            produce_ok(c, "bytes-eq", batch(1 + i % 4, value_size=50 + i, tag=b"%x" % i))
        on_disk = log_bytes(srv.data_dir, "bytes-eq")
        for version in range(4, 12):
            p = fetch_one(c, "bytes-eq", 0, version=version)
            assert p["records"] == on_disk
            assert p["high_watermark"] == 50
            assert p["last_stable_offset"] == 50
            if version >= 5:
                assert p["log_start_offset"] == 0
            if version >= 11:
                assert p["preferred_read_replica"] == -1
        # from the middle: starts at the batch holding the offset
        headers = list(iter_batch_headers(on_disk))
        h = headers[5]
        p = fetch_one(c, "bytes-eq", h.base_offset + h.last_offset_delta)
        assert p["records"] == on_disk[sum(x.size_in_bytes for x in headers[:5]):]


def test_fetch_many_partitions_and_versions_decode_exactly(srv: BrokerProcess) -> None:
    """Fetch replies are written by hand (for sendfile); every version must decode with the
    FetchResponse schema to the last byte (wire.decode_response asserts it)."""
    new_topic(srv, "multi", 3)
    with Conn(srv.port) as c:
        for part in range(3):
            for _ in range(part + 1):
                produce_ok(c, "multi", batch(1), partition=part)
        req = fetch("multi", 0, 0)
        req["topics"][0]["partitions"] = [
            {"partition": i, "current_leader_epoch": -1, "fetch_offset": 0, "log_start_offset": -1,
             "partition_max_bytes": 1 << 20} for i in (0, 1, 2, 7)]
        req["topics"].append({"topic": "multi-none", "partitions": [req["topics"][0]["partitions"][0]]})
        for version in range(4, 12):
            r = c.call(F, version, req)
            t0, t1 = r["responses"]
            assert [p["error_code"] for p in t0["partitions"]] == [0, 0, 0, 3]
            assert [len(decode_batch(p["records"])) if p["records"] else 0 for p in t0["partitions"]] == [1, 1, 1, 0]
            assert [p["high_watermark"] for p in t0["partitions"]][:3] == [1, 2, 3]
            assert t1["partitions"][0]["error_code"] == 3


def test_list_offsets(srv: BrokerProcess) -> None:
    new_topic(srv, "lo")
    with Conn(srv.port) as c:
        produce_ok(c, "lo", batch(2))
        for version in (1, 2):
            p = partition_response(c.call(LO, version, list_offsets("lo", 0, -1)), "partitions")
            assert (p["error_code"], p["offset"]) == (0, 2)
            p = partition_response(c.call(LO, version, list_offsets("lo", 0, -2)), "partitions")
            assert (p["error_code"], p["offset"]) == (0, 0)
        p = partition_response(c.call(LO, 2, list_offsets("lo-none", 0, -1)), "partitions")
        assert p["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


# ------------------------------------------------------------------ connections


def test_closed_client_with_pending_long_poll_releases_its_socket(srv: BrokerProcess) -> None:
    """A client that sends a long-poll Fetch and disconnects must not pin a socket (and its
    file descriptor) in the broker until max_wait_ms runs out."""
    assert srv.proc is not None
    new_topic(srv, "gone")
    pid = srv.proc.pid
    with Conn(srv.port) as c:
        c.call(AV, 0, {})
    base = open_fds(pid, "socket:")
    for _ in range(20):
        c = Conn(srv.port)
        c.send(F, 11, fetch("gone", 0, 0, max_wait_ms=600_000, min_bytes=1))
        time.sleep(0.01)
        c.close()
    assert wait_until(lambda: open_fds(pid, "socket:") <= base + 2, timeout=5), (open_fds(pid, "socket:"), base)
    with Conn(srv.port) as c:
        assert c.call(AV, 0, {})["error_code"] == 0


def test_many_connections_and_a_slow_reader(srv: BrokerProcess) -> None:
    """A client that does not read its replies (about 20 MB, more than the socket buffers hold)
    holds up only its own connection."""
    new_topic(srv, "slow")
    with Conn(srv.port) as c:
        for _ in range(10):
            produce_ok(c, "slow", batch(10, value_size=10_000))
    conns = [Conn(srv.port) for _ in range(30)]
    slow = Conn(srv.port)
    try:
        slow.sock.sendall(b"".join(request_bytes(F, 11, i, fetch("slow", 0, 0)) for i in range(20)))
        time.sleep(0.2)
        for k in conns:
            assert k.call(AV, 0, {})["error_code"] == 0
            assert k.call(MD, 1, metadata(["slow"]))["topics"][0]["error_code"] == 0
        for i in range(20):
            cid, r = slow.recv(F, 11)
            assert cid == i
            assert len(decode_batch(partition_response(r, "partitions")["records"])) == 10
    finally:
        slow.close()
        for k in conns:
            k.close()


def test_stop_answers_the_requests_already_read(tmp_path) -> None:
    """SIGTERM: the broker reads no more requests but answers those it has, in order. A
    JoinGroup parked for the group's initial rebalance delay when the stop begins gets its
    answer, then the ApiVersions queued behind it; then the connection closes, exit status 0."""
    b = BrokerProcess(str(tmp_path / "data"), overrides=["group.initial.rebalance.delay.ms=1500"]).start()
    try:
        assert b.proc is not None
        with Conn(b.port) as c:
            c.send(ApiKey.JOIN_GROUP, 3, {
                "group_id": "stopping", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
                "member_id": "", "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b""}]})
            c.send(AV, 0, {})
            time.sleep(0.5)  # both read; the JoinGroup waits for the rebalance delay
            t0 = time.monotonic()
            b.proc.send_signal(signal.SIGTERM)
            cid, join = c.recv(ApiKey.JOIN_GROUP, 3)
            assert cid == 1 and join["error_code"] == 0 and join["leader"] == join["member_id"] != ""
            assert time.monotonic() - t0 > 0.5  # answered by the rebalance, not refused by the stop
            cid, av = c.recv(AV, 0)
            assert cid == 2 and av["error_code"] == 0
            assert c.is_closed_by_peer(timeout=10)
        assert b.proc.wait(30) == 0
    finally:
        assert b.stop() == 0, b.log_text()


# ------------------------------------------------------------------ corrupt data on the read path


def test_fetch_over_a_corrupt_batch_length_is_an_error_not_a_skip(broker: BrokerProcess) -> None:
    """A batchLength of 0x7fffffff in a closed segment: a Fetch of an offset behind it gets
    CORRUPT_MESSAGE and the broker logs why, instead of answering with the next segment's
    records as if the damaged range were empty; the rest of the log is still served."""
    new_topic(broker, "dmg", segment_bytes="2000")
    with Conn(broker.port) as c:
        for _ in range(12):
            produce_ok(c, "dmg", batch(5, value_size=40))  # ~330 bytes per batch: segments of ~6 batches
    broker.stop()
    seg0 = os.path.join(broker.data_dir, "dmg-0", "0" * 20 + ".log")
    raw = open(seg0, "rb").read()
    positions = [0]
    while positions[-1] < len(raw):
        positions.append(positions[-1] + 12 + struct.unpack_from(">i", raw, positions[-1] + 8)[0])
    damaged = positions[2]  # offsets 10-14
    with open(seg0, "r+b") as f:
        f.seek(damaged + 8)
        f.write(struct.pack(">i", 0x7FFFFFFF))
    broker.start()
    with Conn(broker.port) as c:
        assert fetch_one(c, "dmg", 0, partition_max_bytes=400)["error_code"] == 0
        p = fetch_one(c, "dmg", 12)
        assert p["error_code"] == ErrorCode.CORRUPT_MESSAGE and p["records"] == b""
        later = fetch_one(c, "dmg", 40)  # a later segment: intact and served
        assert later["error_code"] == 0 and decode_batch(later["records"])[0].offset <= 40
    assert "corrupt data while reading offset 12" in broker.log_text()


def test_client_that_pipelines_fetches_without_reading_then_closes_leaks_nothing(tmp_path) -> None:
    """The reader parks when ``queued.max.requests`` replies are pending; a client that never
    reads and then closes must still get its connection (fd, state) freed: the writer's error
    path releases the parked reader."""
    b = BrokerProcess(str(tmp_path / "data"), overrides=["queued.max.requests=8"]).start()
    try:
        new_topic(b, "leak")
        with Conn(b.port) as c:
            for _ in range(8):
                produce_ok(c, "leak", batch(50, value_size=2000))  # ~800 KB
            fetch_one(c, "leak", 0)  # maps the index (its fd stays): part of the baseline
        fd_dir = f"/proc/{b.proc.pid}/fd"  # type: ignore[union-attr]
        baseline = len(os.listdir(fd_dir))
        for _ in range(3):
            c = Conn(b.port)
            req = b"".join(request_bytes(F, 11, i, fetch("leak", 0, 0, partition_max_bytes=1 << 20))
                           for i in range(64))
            c.sock.sendall(req)  # 64 fetches of ~800 KB each, never read
            time.sleep(0.3)
            c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST
            c.close()
        deadline = time.monotonic() + 10
        while len(os.listdir(fd_dir)) > baseline and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(os.listdir(fd_dir)) <= baseline
        with Conn(b.port) as c2:  # still serving
            assert fetch_one(c2, "leak", 0, partition_max_bytes=1000)["error_code"] == 0
    finally:
        assert b.stop(timeout=15) == 0
