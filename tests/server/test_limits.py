"""One client must not stall the others, and connections are bounded: work per read, idle and
dripping connections (``connections.max.idle.ms``), ``max.connections.per.ip``, and the memory
of idle connections — against a real broker process."""

from __future__ import annotations

import os
import statistics
import struct
import threading
import time

import pytest

from client.protocol.api import ApiKey, ErrorCode
from client.records import Compression, build_batch
from tests.broker_process import BrokerProcess

from .wire import Conn, create_topic, metadata, produce, request_bytes

AV = ApiKey.API_VERSIONS


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_client_pipelining_cheap_requests_while_reading_does_not_stall_others(tmp_path) -> None:
    """A client pipelines 40,000 ApiVersions requests in one go and reads the replies as they
    come, so its queue never fills and reading is never paused for it: only the time slice of
    the reader (``_SLICE``) lets the other connections in. Another client's round trips keep
    being answered within milliseconds meanwhile (one read of 256 KiB holds ~6,000 of these
    requests, tens of ms of work when handled in one go)."""
    b = BrokerProcess(str(tmp_path / "data")).start()
    try:
        body = {"client_software_name": "flood", "client_software_version": "1"}
        n = 40_000
        flood = b"".join(request_bytes(AV, 3, i, body) for i in range(n))
        abuser = Conn(b.port, timeout=60)
        abuser.send(AV, 3, body, cid=0)
        first = abuser.recv_frame()
        assert isinstance(first, bytes)
        reply_size = 4 + len(first)  # every reply has the same size (same body, 4-byte cid)
        received = [0]

        def read_all() -> None:
            buf = bytearray(1 << 20)
            while received[0] < n * reply_size:
                k = abuser.sock.recv_into(buf)
                if not k:
                    return
                received[0] += k

        reader = threading.Thread(target=read_all, daemon=True)
        sender = threading.Thread(target=abuser.sock.sendall, args=(flood,), daemon=True)
        reader.start()
        sender.start()
        latencies = []
        with Conn(b.port) as probe:
            while reader.is_alive():
                t0 = time.monotonic()
                probe.call(AV, 3, {"client_software_name": "probe", "client_software_version": "1"})
                latencies.append(time.monotonic() - t0)
        reader.join(60)
        sender.join(60)
        abuser.close()
        assert received[0] == n * reply_size  # every request answered
        print(f"probe round trips during the flood: {len(latencies)},"
              f" median {statistics.median(latencies) * 1000:.1f} ms, max {max(latencies) * 1000:.1f} ms")
        assert len(latencies) >= 10
        assert statistics.median(latencies) < 0.02, sorted(latencies)[-10:]
    finally:
        assert b.stop() == 0, b.log_text()


@pytest.fixture
def limited(tmp_path):
    b = BrokerProcess(str(tmp_path / "data"), overrides=[
        "connections.max.idle.ms=1500", "max.connections.per.ip=40"]).start()
    try:
        yield b
    finally:
        assert b.stop() == 0, b.log_text()


@pytest.mark.slow
def test_pipelined_metadata_flood_does_not_stall_other_clients(tmp_path) -> None:
    """A client pipelines 3,000 Metadata requests for a 1,000-partition topic (~60 KB sent, each
    answer ~30 KB and ~1 ms of broker CPU) and reads nothing for a while. Another client's
    ApiVersions round trips keep being answered quickly, and the broker's memory stays bounded
    by queued.max.requests replies."""
    b = BrokerProcess(str(tmp_path / "data")).start()
    try:
        with Conn(b.port, timeout=60) as c:
            r = c.call(ApiKey.CREATE_TOPICS, 3, create_topic("wide", 1000))
            assert r["topics"][0]["error_code"] == 0
        rss_before = _rss_kb(b.proc.pid)  # type: ignore[union-attr]
        abuser = Conn(b.port, timeout=60)
        flood = b"".join(request_bytes(ApiKey.METADATA, 4, i, metadata(["wide"])) for i in range(3000))
        sender = threading.Thread(target=abuser.sock.sendall, args=(flood,), daemon=True)
        sender.start()
        latencies = []
        with Conn(b.port) as probe:
            t_end = time.monotonic() + 3
            while time.monotonic() < t_end:
                t0 = time.monotonic()
                probe.call(AV, 3, {"client_software_name": "probe", "client_software_version": "1"})
                latencies.append(time.monotonic() - t0)
        rss_peak = _rss_kb(b.proc.pid)  # type: ignore[union-attr]
        # now read everything: every request is answered, in order
        for i in range(3000):
            frame = abuser.recv_frame()
            assert isinstance(frame, bytes) and int.from_bytes(frame[:4], "big") == i
        abuser.close()
        latencies.sort()
        p99 = latencies[int(len(latencies) * 0.99) - 1]
        print(f"probe round trips: {len(latencies)}, median {statistics.median(latencies) * 1000:.1f} ms,"
              f" p99 {p99 * 1000:.1f} ms, max {latencies[-1] * 1000:.1f} ms; RSS {rss_before} -> {rss_peak} KB")
        assert len(latencies) > 50
        assert p99 < 0.5, latencies[-10:]
        assert rss_peak - rss_before < 200_000  # 500 queued replies of ~30 KB, not 3,000
    finally:
        assert b.stop() == 0, b.log_text()


def test_idle_and_dripping_connections_are_closed(limited: BrokerProcess) -> None:
    """connections.max.idle.ms=1500: a silent connection and one that sends a request a byte
    at a time (never completing it in time) are both closed; an active one stays."""
    idle = Conn(limited.port)
    drip = Conn(limited.port)
    active = Conn(limited.port)
    request = request_bytes(AV, 3, 1, {"client_software_name": "drip", "client_software_version": "1"})
    t_end = time.monotonic() + 4
    i = 0
    while time.monotonic() < t_end:
        if i < len(request) - 1:
            try:
                drip.sock.send(request[i:i + 1])
            except OSError:
                pass
            i += 1
        active.call(AV, 3, {"client_software_name": "active", "client_software_version": "1"})
        time.sleep(0.2)
    assert idle.is_closed_by_peer(timeout=2)
    assert drip.is_closed_by_peer(timeout=2)
    active.call(AV, 3, {"client_software_name": "active", "client_software_version": "1"})  # still open
    for c in (idle, drip, active):
        c.close()
    assert "idle for more than connections.max.idle.ms" in limited.log_text()


def test_max_connections_per_ip(limited: BrokerProcess) -> None:
    conns = [Conn(limited.port) for _ in range(40)]
    extra = Conn(limited.port)
    assert extra.is_closed_by_peer(timeout=5)
    assert "max.connections.per.ip 40" in limited.log_text()
    conns[0].call(AV, 3, {"client_software_name": "t", "client_software_version": "1"})
    for c in conns:
        c.close()
    extra.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # the slots come back once those connections are gone
        c = Conn(limited.port)
        try:
            c.call(AV, 3, {"client_software_name": "t", "client_software_version": "1"})
            break
        except AssertionError:
            time.sleep(0.1)
        finally:
            c.close()
    else:
        raise AssertionError("no connection accepted after the others closed")


def test_idle_connections_hold_no_read_buffer(tmp_path) -> None:
    """500 idle connections (each has sent one request) cost well under 256 KiB each: the
    receive buffer is shared, not per connection."""
    b = BrokerProcess(str(tmp_path / "data")).start()
    try:
        before = _rss_kb(b.proc.pid)  # type: ignore[union-attr]
        conns = []
        for _ in range(500):
            c = Conn(b.port)
            c.call(AV, 3, {"client_software_name": "t", "client_software_version": "1"})
            conns.append(c)
        after = _rss_kb(b.proc.pid)  # type: ignore[union-attr]
        per_conn = (after - before) / 500
        assert per_conn < 64, f"{per_conn:.0f} KB per idle connection"
        assert len(os.listdir(f"/proc/{b.proc.pid}/fd")) >= 500  # type: ignore[union-attr]
        for c in conns:
            c.close()
    finally:
        assert b.stop() == 0, b.log_text()


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_decompression_bomb_is_refused_and_costs_no_memory(tmp_path, codec: Compression) -> None:
    """A producer batch whose records inflate to 512 MiB of zeros (a few hundred KB on the
    wire; for snappy, a 115-byte block claiming 4 GiB): MESSAGE_TOO_LARGE, nothing written,
    the broker's RSS stays small and other clients are served meanwhile."""
    from tests.records.test_compression import zeros_compressed
    from tests.records.test_record import set_records_section

    b = BrokerProcess(str(tmp_path / "data")).start()
    try:
        with Conn(b.port) as c:
            r = c.call(ApiKey.CREATE_TOPICS, 3, create_topic("bomb", 1))
            assert r["topics"][0]["error_code"] == 0
            size = (4 << 30) - 1 if codec == Compression.SNAPPY else 512 << 20
            bomb = set_records_section(bytearray(build_batch([(None, b"x")], codec)), zeros_compressed(codec, size))
            rss_before = _rss_kb(b.proc.pid)  # type: ignore[union-attr]
            resp = c.call(ApiKey.PRODUCE, 7, produce("bomb", 0, bytes(bomb), 1))
            p = resp["responses"][0]["partition_responses"][0]
            assert p["error_code"] == ErrorCode.MESSAGE_TOO_LARGE, p
            assert _rss_kb(b.proc.pid) - rss_before < 150_000  # type: ignore[union-attr]  # KB
            ok = c.call(ApiKey.PRODUCE, 7, produce("bomb", 0, bytes(build_batch([(None, b"fine")], codec)), 1))
            assert ok["responses"][0]["partition_responses"][0]["base_offset"] == 0  # nothing written before
    finally:
        assert b.stop() == 0, b.log_text()


def test_offset_commit_of_40000_partitions_is_answered(tmp_path) -> None:
    """An OffsetCommit of 40,000 partitions (~1.5 MB, librdkafka's test 0030 sends such) is
    decoded and answered on a connection that stays open — requests other than Produce are
    bounded by socket.request.max.bytes, as in Kafka, not by 1 MiB (before: the connection was
    closed). Its 100 partitions of a real topic are stored (OffsetFetch returns them), the
    39,900 of topics that do not exist get UNKNOWN_TOPIC_OR_PARTITION."""
    b = BrokerProcess(str(tmp_path / "data")).start()
    try:
        with Conn(b.port, timeout=60) as c:
            assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("real", 100))["topics"][0]["error_code"] == 0
            topics = [("real", 100)] + [(f"missing-{i}", 100) for i in range(399)]
            body = {"group_id": "wide", "generation_id_or_member_epoch": -1, "member_id": "",
                    "group_instance_id": None, "topics": [
                        {"name": t, "partitions": [{"partition_index": p, "committed_offset": 1000 + p,
                                                    "committed_leader_epoch": -1, "committed_metadata": "m" * 20}
                                                   for p in range(n)]} for t, n in topics]}
            size = len(request_bytes(ApiKey.OFFSET_COMMIT, 8, 1, body))
            assert 1_400_000 < size < 1_600_000, size
            r = c.call(ApiKey.OFFSET_COMMIT, 8, body)
            codes = {(t["name"], p["partition_index"]): p["error_code"] for t in r["topics"] for p in t["partitions"]}
            assert len(codes) == 40_000
            assert {k: v for k, v in codes.items() if k[0] == "real"} == {("real", p): 0 for p in range(100)}
            assert {v for k, v in codes.items() if k[0] != "real"} == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
            fetched = c.call(ApiKey.OFFSET_FETCH, 7, {"group_id": "wide", "require_stable": True, "topics": [
                {"name": "real", "partition_indexes": list(range(100))},
                {"name": "missing-0", "partition_indexes": [0]}]})
            got = {(t["name"], p["partition_index"]): p["committed_offset"]
                   for t in fetched["topics"] for p in t["partitions"]}
            assert got == {**{("real", p): 1000 + p for p in range(100)}, ("missing-0", 0): -1}
    finally:
        assert b.stop() == 0, b.log_text()


def test_large_requests_are_bounded_by_their_decoded_elements(tmp_path) -> None:
    """A Metadata request of 100,000 topic names (~1.9 MB) is answered (each name unknown); one
    of 2,500,000 empty names (5 MB on the wire, ~500 MB once decoded) is above the decode budget
    of 200,000 array elements: that connection is closed once the budget is spent, the broker's
    memory grows by far less than the decoded size, other connections are served."""
    b = BrokerProcess(str(tmp_path / "data")).start()
    try:
        with Conn(b.port, timeout=60) as c:
            names = [f"no-such-topic-{i:06d}" for i in range(100_000)]
            body = metadata(names, auto_create=False)
            assert len(request_bytes(ApiKey.METADATA, 9, 1, body)) > 1_800_000
            r = c.call(ApiKey.METADATA, 9, body)
            assert len(r["topics"]) == 100_000
            assert {t["error_code"] for t in r["topics"]} == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        rss_before = _rss_kb(b.proc.pid)  # type: ignore[union-attr]
        with Conn(b.port, timeout=60) as abuser, Conn(b.port) as other:
            n = 2_500_000  # Metadata v4: int32 count, int16 length 0 per name, allow_auto_topic_creation
            abuser.send(ApiKey.METADATA, 4, struct.pack(">i", n) + b"\x00\x00" * n + b"\x00")
            assert abuser.is_closed_by_peer(timeout=10)
            assert other.call(AV, 3, {"client_software_name": "t", "client_software_version": "1"})["error_code"] == 0
        assert _rss_kb(b.proc.pid) - rss_before < 100_000  # type: ignore[union-attr]  # KB
    finally:
        assert b.stop() == 0, b.log_text()
