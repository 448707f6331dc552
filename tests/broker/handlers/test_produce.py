"""Produce against a broker process: one batch per partition from v3, records refused one by
one answered in ``record_errors`` (KIP-467), and what decompressing producers' batches may cost
(storage/inflation.py): bounds no topic config raises, and the inflating done off the event
loop, so that other clients are answered meanwhile."""

from __future__ import annotations

import os
import struct
import threading
import time

import cramjam

from client.protocol.api import ApiKey, ErrorCode
from client.records import Compression, RecordBatchBuilder, build_batch
from client.records.batch import RECORDS_OFFSET, compute_crc
from tests.broker_process import BrokerProcess
from tests.server.wire import Conn, batch, create_topic, fetch, produce

P = ApiKey.PRODUCE


def _varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b, z = z & 0x7F, z >> 7
        out.append(b | (0x80 if z else 0))
        if not z:
            return bytes(out)


def zstd_bomb(inflate: int) -> bytes:
    """A zstd batch of one valid record (null key, a value of zeros) whose records section
    inflates to ``inflate`` bytes: it passes every record check, so only a bound on inflating
    stops it. A few KB on the wire."""
    value = inflate - 16
    body = b"\0" + _varint(0) + _varint(0) + _varint(-1) + _varint(value)
    c = cramjam.zstd.Compressor()
    c.compress(_varint(len(body) + value + 1) + body)
    chunk = b"\0" * (1 << 20)
    left = value
    while left:
        c.compress(chunk[:min(left, len(chunk))])
        left -= min(left, len(chunk))
    c.compress(_varint(0))
    out = bytearray(build_batch([(None, b"x")], Compression.ZSTD)[:RECORDS_OFFSET]) + bytes(c.finish())
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">I", out, 17, compute_crc(memoryview(out)))
    return bytes(out)


def _status_kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field}")


def _part(resp: dict) -> dict:
    return resp["responses"][0]["partition_responses"][0]


def _high_watermark(c: Conn, topic: str) -> int:
    r = c.call(ApiKey.FETCH, 11, fetch(topic, 0, 0))
    return r["responses"][0]["partitions"][0]["high_watermark"]


def _broker(tmp_path, *overrides: str) -> BrokerProcess:
    return BrokerProcess(str(tmp_path / "data"), list(overrides)).start()


def test_produce_v3_and_above_with_two_batches_for_a_partition_is_invalid_record(tmp_path) -> None:
    """Kafka's rule (ProduceRequest.validateRecords): from v3 a partition's records are exactly
    one batch. Two (even two fine ones) are INVALID_RECORD for that partition, nothing written;
    the other partition of the request is written. v2 may still carry several."""
    b = _broker(tmp_path)
    try:
        with Conn(b.port) as c:
            assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("two", 2))["topics"][0]["error_code"] == 0
            for version in (3, 7, 9):
                req = produce("two", 0, batch(2) + batch(3))
                req["topic_data"][0]["partition_data"].append({"index": 1, "records": batch(1)})
                parts = c.call(P, version, req)["responses"][0]["partition_responses"]
                assert parts[0]["error_code"] == ErrorCode.INVALID_RECORD, (version, parts)
                assert parts[1]["error_code"] == 0, (version, parts)
                if version >= 8:
                    assert "exactly one record batch per partition" in parts[0]["error_message"]
            assert _high_watermark(c, "two") == 0
            old = _part(c.call(P, 2, produce("two", 0, batch(2) + batch(3))))
            assert old["error_code"] == 0 and old["base_offset"] == 0
            assert _high_watermark(c, "two") == 5
    finally:
        assert b.stop() == 0, b.log_text()


def test_raised_max_message_bytes_does_not_raise_the_broker_cap(tmp_path) -> None:
    """A topic whose max.message.bytes a client set to 2^31 - 1 (its own bound: 128 GiB
    inflated): a 33 KB zstd batch inflating to 1 GiB is refused at the broker's
    message.max.decompressed.bytes (64 MiB) with MESSAGE_TOO_LARGE, nothing written, and the
    broker's peak memory grows by far less than the gigabyte (before: VmHWM +2 GB, 7 s)."""
    b = _broker(tmp_path)
    try:
        with Conn(b.port, timeout=60) as c:
            r = c.call(ApiKey.CREATE_TOPICS, 3, create_topic("raised", 1, {"max.message.bytes": "2147483647"}))
            assert r["topics"][0]["error_code"] == 0, r
            bomb = zstd_bomb(1 << 30)
            assert len(bomb) < 64 << 10
            hwm_before = _status_kib(b.pid, "VmHWM")
            p = _part(c.call(P, 9, produce("raised", 0, bomb)))
            assert p["error_code"] == ErrorCode.MESSAGE_TOO_LARGE, p
            assert "message.max.decompressed.bytes" in p["error_message"], p
            assert _status_kib(b.pid, "VmHWM") - hwm_before < 300 << 10  # KiB: < 300 MiB more at peak
            assert _high_watermark(c, "raised") == 0
            ok = _part(c.call(P, 9, produce("raised", 0, bytes(build_batch([(None, b"fine")], Compression.ZSTD)))))
            assert ok["error_code"] == 0 and ok["base_offset"] == 0
    finally:
        assert b.stop() == 0, b.log_text()


def test_a_request_s_batches_share_request_max_decompressed_bytes(tmp_path) -> None:
    """Produce v2 (several batches per partition allowed) of three batches inflating to 8 MiB
    each, with request.max.decompressed.bytes at 20 MiB: MESSAGE_TOO_LARGE naming the request's
    bound, nothing written; the same batches one request each are written."""
    b = _broker(tmp_path, "request.max.decompressed.bytes=20971520")
    try:
        with Conn(b.port, timeout=60) as c:
            assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("shared", 1))["topics"][0]["error_code"] == 0
            one = zstd_bomb(8 << 20)
            p = _part(c.call(P, 2, produce("shared", 0, one * 3)))
            assert p["error_code"] == ErrorCode.MESSAGE_TOO_LARGE, p
            assert _high_watermark(c, "shared") == 0
            for i in range(3):
                p = _part(c.call(P, 9, produce("shared", 0, one)))
                assert p["error_code"] == 0 and p["base_offset"] == i, p
    finally:
        assert b.stop() == 0, b.log_text()


def test_broker_max_decompressed_bytes_bounds_a_batch_too(tmp_path) -> None:
    """With broker.max.decompressed.bytes at 4 MiB, no batch may inflate past it (it could
    never get its buffer): a batch inflating to 8 MiB is MESSAGE_TOO_LARGE naming it, one
    inflating to 2 MiB is written."""
    b = _broker(tmp_path, "broker.max.decompressed.bytes=4194304")
    try:
        with Conn(b.port, timeout=60) as c:
            assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("pool", 1))["topics"][0]["error_code"] == 0
            p = _part(c.call(P, 9, produce("pool", 0, zstd_bomb(8 << 20))))
            assert p["error_code"] == ErrorCode.MESSAGE_TOO_LARGE, p
            assert "broker.max.decompressed.bytes" in p["error_message"], p
            p = _part(c.call(P, 9, produce("pool", 0, zstd_bomb(2 << 20))))
            assert p["error_code"] == 0 and p["base_offset"] == 0, p
    finally:
        assert b.stop() == 0, b.log_text()


def test_inflating_bombs_does_not_stall_other_clients(tmp_path) -> None:
    """One client sends a Produce request of 20 partitions, each a batch of valid records
    inflating to 60 MiB (2 MB on the wire); another client's ApiVersions are each answered
    within a second meanwhile (before: the loop inflated all 20, ~3 s). The first two are
    written; the rest are past request.max.decompressed.bytes (128 MiB): MESSAGE_TOO_LARGE."""
    b = _broker(tmp_path)
    try:
        with Conn(b.port, timeout=120) as c:
            assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("bombs", 20))["topics"][0]["error_code"] == 0
            bomb = zstd_bomb(60 << 20)
            req = produce("bombs", 0, bomb)
            req["topic_data"][0]["partition_data"] = [{"index": i, "records": bomb} for i in range(20)]
            latencies: list[float] = []
            done = threading.Event()

            def probe() -> None:
                with Conn(b.port, timeout=60) as other:
                    body = {"client_software_name": "probe", "client_software_version": "1"}
                    while not done.is_set():
                        t = time.perf_counter()
                        other.call(ApiKey.API_VERSIONS, 3, body)
                        latencies.append(time.perf_counter() - t)
                        time.sleep(0.01)

            prober = threading.Thread(target=probe)
            prober.start()
            try:
                time.sleep(0.2)
                parts = c.call(P, 9, req)["responses"][0]["partition_responses"]
                time.sleep(0.2)
            finally:
                done.set()
                prober.join()
            assert len(latencies) > 5
            assert max(latencies) < 1.0, max(latencies)
            assert [p["error_code"] for p in parts] == [0, 0] + [ErrorCode.MESSAGE_TOO_LARGE] * 18, parts
            assert "request.max.decompressed.bytes" in parts[2]["error_message"]
    finally:
        assert b.stop() == 0, b.log_text()


def test_appends_to_a_log_keep_their_order_when_inflated_off_the_loop(tmp_path) -> None:
    """Pipelined requests to one partition, compressed and not, alternating: each is written in
    the order it arrived (offsets increase with the correlation id), acks=0 ones included."""
    b = _broker(tmp_path)
    try:
        with Conn(b.port, timeout=60) as c:
            assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("order", 1))["topics"][0]["error_code"] == 0
            big = bytes(build_batch([(None, os.urandom(100) * 1000)], Compression.GZIP))
            small = batch(1)
            cids = [c.send(P, 9, produce("order", 0, big if i % 2 == 0 else small)) for i in range(20)]
            c.send(P, 9, produce("order", 0, big, acks=0))
            last = c.send(P, 9, produce("order", 0, small))
            offsets = []
            for cid in cids + [last]:
                got, resp = c.recv(P, 9)
                assert got == cid
                p = _part(resp)
                assert p["error_code"] == 0, p
                offsets.append(p["base_offset"])
            assert offsets == list(range(20)) + [21], offsets
    finally:
        assert b.stop() == 0, b.log_text()


def test_records_refused_one_by_one_are_answered_in_record_errors(broker: BrokerProcess) -> None:
    """KIP-467, as Kafka answers it: a batch with keyless records on a compacted topic is
    INVALID_RECORD with each keyless record's index and Kafka's message in ``record_errors``
    (v8+; v7 has no such field) and Kafka's summary in ``error_message``; a batch with
    timestamps out of bounds INVALID_TIMESTAMP, listing those records. Nothing of a refused
    batch is written; the request's other partition is."""
    tp = "compacted-0"
    want = f"Compacted topic cannot accept message without key in topic partition {tp}"
    with Conn(broker.port) as c:
        r = c.call(ApiKey.CREATE_TOPICS, 3, create_topic("compacted", 2, {"cleanup.policy": "compact"}))
        assert r["topics"][0]["error_code"] == 0, r
        keyless = bytes(build_batch([(b"a", b"0"), (None, b"1"), (b"b", b"2"), (None, b"3")], Compression.LZ4))
        for version in (8, 9, 11):
            req = produce("compacted", 0, keyless)
            req["topic_data"][0]["partition_data"].append({"index": 1, "records": batch(2)})
            parts = c.call(P, version, req)["responses"][0]["partition_responses"]
            assert parts[0]["error_code"] == ErrorCode.INVALID_RECORD, parts
            assert parts[0]["record_errors"] == [{"batch_index": 1, "batch_index_error_message": want},
                                                 {"batch_index": 3, "batch_index_error_message": want}]
            assert parts[0]["error_message"] == (
                "One or more records have been rejected due to 2 record errors in total, and only showing the first"
                f" three errors at most: [RecordError(batchIndex=1, message='{want}'),"
                f" RecordError(batchIndex=3, message='{want}')]")
            assert parts[0]["base_offset"] == -1
            assert parts[1]["error_code"] == 0 and parts[1]["record_errors"] == []
        old = _part(c.call(P, 7, produce("compacted", 0, keyless)))
        assert old["error_code"] == ErrorCode.INVALID_RECORD and old["record_errors"] == []  # not on the wire
        assert _high_watermark(c, "compacted") == 0

        r = c.call(ApiKey.CREATE_TOPICS, 3, create_topic("bounded", 1, {"message.timestamp.after.max.ms": "60000"}))
        assert r["topics"][0]["error_code"] == 0, r
        now = int(time.time() * 1000)
        b = RecordBatchBuilder()
        for i, ts in enumerate((now, now + 3_600_000, now, now + 7_200_000)):
            b.append(b"%d" % i, key=b"k", timestamp=ts)
        p = _part(c.call(P, 9, produce("bounded", 0, bytes(b.build()))))
        assert p["error_code"] == ErrorCode.INVALID_TIMESTAMP, p
        assert p["error_message"] == "One or more records have been rejected due to invalid timestamp"
        assert [e["batch_index"] for e in p["record_errors"]] == [1, 3]
        assert p["record_errors"][0]["batch_index_error_message"].startswith(
            f"Timestamp {now + 3_600_000} of message with offset 1 is out of range. The timestamp should be within [")
        assert _high_watermark(c, "bounded") == 0
