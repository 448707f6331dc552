"""Fetch v0-3 over a real socket: the v2 batches on disk leave as magic 0 (v0-1) or magic 1
(v2-3) message sets, read back by kafka-python's legacy reader (CRCs checked); Kafka 3.9's
rules for these versions: read_uncommitted with control batches skipped, the first batch from
the fetch offset, v0-2's hard size limit and v3's KIP-74, ``message.downconversion.enable``
(topic config and broker synonym), zstd, and the long poll. The conversion itself:
tests/records/test_downconvert.py."""

from __future__ import annotations

import struct
import threading
import time
from typing import Any

import pytest

from client.protocol.api import ApiKey, ErrorCode
from client.records import Compression
from client.records.record import RecordBatchBuilder
from tests.broker_process import BrokerProcess

from .wire import Conn, create_topic, fetch, partition_response, produce

memory_records = pytest.importorskip("kafka.record.memory_records")

TS = 1_700_000_000_000
F = ApiKey.FETCH


def value(i: int, tag: bytes = b"v", size: int = 10) -> bytes:
    return tag + b"%03d" % i * size


def v2(n: int, codec: int = 0, tag: bytes = b"v", size: int = 10) -> bytes:
    b = RecordBatchBuilder(codec)
    for i in range(n):
        b.append(value(i, tag, size), b"k%d" % i, (("h", b"x"),), TS + i)
    return bytes(b.build())


def read(records: bytes) -> list[tuple[int, bytes | None, bytes | None, int | None]]:
    mr = memory_records.MemoryRecords(records)
    out = []
    while mr.has_next():
        batch = mr.next_batch()
        assert batch.validate_crc()
        out += [(r.offset, r.key, r.value, r.timestamp) for r in batch]
    return out


def magics(records: bytes) -> set[int]:
    out, pos = set(), 0
    while pos + 17 <= len(records):
        out.add(records[pos + 16])
        pos += 12 + struct.unpack_from(">i", records, pos + 8)[0]
    return out


def new_topic(c: Conn, name: str, partitions: int = 1, **configs: str) -> None:
    cfg = {k.replace("_", "."): v for k, v in configs.items()}
    assert c.call(ApiKey.CREATE_TOPICS, 4, create_topic(name, partitions, cfg))["topics"][0]["error_code"] == 0


def put(c: Conn, topic: str, records: bytes, partition: int = 0) -> int:
    p = partition_response(c.call(ApiKey.PRODUCE, 7, produce(topic, partition, records)))
    assert p["error_code"] == 0, p
    return p["base_offset"]  # type: ignore[no-any-return]


def old_fetch(c: Conn, version: int, topic: str, offset: int, **kw: Any) -> dict[str, Any]:
    return partition_response(c.call(F, version, fetch(topic, 0, offset, **kw)), "partitions")


def consume(c: Conn, version: int, topic: str, offset: int = 0) -> list[tuple[int, Any, Any, Any]]:
    """Fetch as an old client does until the high watermark: from the offset after the last
    message received, skipping any below the fetch offset (a compressed wrapper's)."""
    out: list[tuple[int, Any, Any, Any]] = []
    while True:
        p = old_fetch(c, version, topic, offset)
        assert p["error_code"] == 0 and magics(p["records"]) <= {0 if version <= 1 else 1}
        got = [r for r in read(p["records"]) if r[0] >= offset]
        if not got:
            assert offset == p["high_watermark"]
            return out
        out += got
        offset = got[-1][0] + 1


@pytest.fixture(scope="module")
def conn(module_broker: Any) -> Any:
    with Conn(module_broker.port) as c:
        yield c


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_every_version_and_codec_reads_back(conn: Conn, codec: str) -> None:
    topic = f"dc-{codec}"
    new_topic(conn, topic)
    put(conn, topic, v2(5, Compression.from_name(codec)))
    put(conn, topic, v2(3, Compression.from_name(codec), b"w"))
    want = [(i, b"k%d" % i, value(i), TS + i) for i in range(5)] + [
        (5 + i, b"k%d" % i, value(i, b"w"), TS + i) for i in range(3)]
    for version in range(4):
        p = old_fetch(conn, version, topic, 0)
        assert (p["error_code"], p["high_watermark"]) == (0, 8)
        assert magics(p["records"]) == {0 if version <= 1 else 1}
        # magic 0/1 messages are larger than v2 records: a fetch returns at most as many bytes
        # as it read (its first batch aside), and the client fetches again for the rest
        assert consume(conn, version, topic) == [(o, k, v, ts if version >= 2 else None) for o, k, v, ts in want]
    # v4+ untouched: the batches as stored
    assert magics(old_fetch(conn, 4, topic, 0)["records"]) == {2}


def test_fetch_offset_inside_a_batch(conn: Conn) -> None:
    new_topic(conn, "dc-mid")
    put(conn, "dc-mid", v2(10))
    put(conn, "dc-mid", v2(10, Compression.GZIP))
    # uncompressed: the messages start at the fetch offset
    assert [r[0] for r in read(old_fetch(conn, 2, "dc-mid", 6)["records"])][:5] == [6, 7, 8, 9, 10]
    # compressed: the whole wrapper; an old client skips the offsets below its fetch offset
    assert [r[0] for r in read(old_fetch(conn, 0, "dc-mid", 15)["records"])] == list(range(10, 20))


def test_transactions_are_read_uncommitted_without_markers(module_broker: Any, conn: Conn) -> None:
    from client.sync import SyncProducer

    new_topic(conn, "dc-txn")
    with SyncProducer(module_broker.bootstrap, transactional_id="dc-txn") as p:
        p.init_transactions()
        p.begin_transaction()
        for i in range(3):
            p.send("dc-txn", b"aborted-%d" % i, partition=0)
        p.abort_transaction()
        p.begin_transaction()
        p.send("dc-txn", b"committed", partition=0)
        p.commit_transaction()
    p4 = old_fetch(conn, 4, "dc-txn", 0)
    assert p4["high_watermark"] == 6  # 3 records, ABORT, 1 record, COMMIT
    # Fetch v0-3 have no isolation level: aborted records are read, markers never
    assert [(o, v) for o, _, v, _ in read(old_fetch(conn, 3, "dc-txn", 0)["records"])] == [
        (0, b"aborted-0"), (1, b"aborted-1"), (2, b"aborted-2"), (4, b"committed")]
    # a fetch at a marker gets the next batch's messages
    assert [o for o, *_ in read(old_fetch(conn, 1, "dc-txn", 3)["records"])] == [4]
    assert old_fetch(conn, 1, "dc-txn", 5)["records"] == b""


def test_v0_to_v2_have_a_hard_limit_v3_has_kip74(conn: Conn) -> None:
    new_topic(conn, "dc-size")
    put(conn, "dc-size", v2(20, size=50))  # one batch of ~1.1 KB
    put(conn, "dc-size", v2(20, size=50, tag=b"w"))
    for version in (0, 1, 2):  # the batch does not fit partition_max_bytes: no message
        p = old_fetch(conn, version, "dc-size", 0, partition_max_bytes=500)
        assert (p["error_code"], p["high_watermark"], p["records"]) == (0, 40, b"")
    # v3: the first batch whole (KIP-74), converted whole although larger than what was read
    p = old_fetch(conn, 3, "dc-size", 0, partition_max_bytes=500)
    assert [r[0] for r in read(p["records"])] == list(range(20))
    p = old_fetch(conn, 3, "dc-size", 0, partition_max_bytes=500, max_bytes=10)
    assert [r[0] for r in read(p["records"])] == list(range(20))
    # room for both batches as stored; converted (larger) they end at a whole message
    size = len(conn.call(F, 4, fetch("dc-size", 0, 0))["responses"][0]["partitions"][0]["records"])
    p = old_fetch(conn, 2, "dc-size", 0, partition_max_bytes=size)
    got = [r[0] for r in read(p["records"])]
    assert len(p["records"]) <= size and got == list(range(len(got))) and 20 < len(got) < 40


def test_v3_max_bytes_and_the_second_partition(conn: Conn) -> None:
    """v3: the first non-empty partition's first batch whole, then what is left of max_bytes;
    a later partition whose first batch does not fit gets nothing (Kafka's
    checkFetchDataInfo replaces an incomplete batch with an empty one)."""
    new_topic(conn, "dc-two", 2)
    for part in (0, 1):
        put(conn, "dc-two", v2(20, size=50), part)
    body = fetch("dc-two", 0, 0, max_bytes=600, partition_max_bytes=100_000)
    body["topics"][0]["partitions"].append({**body["topics"][0]["partitions"][0], "partition": 1})
    first, second = conn.call(F, 3, body)["responses"][0]["partitions"]
    assert [r[0] for r in read(first["records"])] == list(range(20))
    assert (second["error_code"], second["high_watermark"], second["records"]) == (0, 20, b"")


def test_down_conversion_disabled_answers_unsupported_version(conn: Conn) -> None:
    new_topic(conn, "dc-off", message_downconversion_enable="false")
    put(conn, "dc-off", v2(3))
    for version in range(4):
        p = old_fetch(conn, version, "dc-off", 0)
        assert (p["error_code"], p["high_watermark"], p["records"]) == (ErrorCode.UNSUPPORTED_VERSION, -1, b"")
    assert old_fetch(conn, 4, "dc-off", 0)["error_code"] == 0  # no conversion needed


def test_zstd_topic_and_zstd_batches(conn: Conn) -> None:
    new_topic(conn, "dc-zstd-topic", compression_type="zstd")
    put(conn, "dc-zstd-topic", v2(3))
    p = old_fetch(conn, 2, "dc-zstd-topic", 0)
    assert (p["error_code"], p["high_watermark"], p["records"]) == (ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, -1, b"")
    # a producer's zstd batch on a compression.type=producer topic: what comes before it is
    # read; a fetch from it gets the error
    new_topic(conn, "dc-zstd")
    put(conn, "dc-zstd", v2(3))
    put(conn, "dc-zstd", v2(3, Compression.ZSTD))
    assert [r[0] for r in read(old_fetch(conn, 1, "dc-zstd", 0)["records"])] == [0, 1, 2]
    p = old_fetch(conn, 1, "dc-zstd", 3)
    assert (p["error_code"], p["high_watermark"], p["records"]) == (ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, -1, b"")


def test_long_poll_answers_when_an_append_arrives(module_broker: Any, conn: Conn) -> None:
    new_topic(conn, "dc-poll")
    got: list[dict[str, Any]] = []
    with Conn(module_broker.port) as waiter:
        t = threading.Thread(target=lambda: got.append(old_fetch(waiter, 2, "dc-poll", 0, max_wait_ms=10_000,
                                                                  min_bytes=1)))
        started = time.monotonic()
        t.start()
        time.sleep(0.3)
        put(conn, "dc-poll", v2(2, Compression.LZ4))
        t.join(10)
    assert time.monotonic() - started < 5
    assert [r[0] for r in read(got[0]["records"])] == [0, 1]


def test_broker_synonym_disables_down_conversion(tmp_path: Any) -> None:
    b = BrokerProcess(str(tmp_path / "data"), overrides=["log.message.downconversion.enable=false"]).start()
    try:
        with Conn(b.port) as c:
            new_topic(c, "off")
            new_topic(c, "on", message_downconversion_enable="true")  # the topic's own config wins
            put(c, "off", v2(2))
            put(c, "on", v2(2))
            assert old_fetch(c, 0, "off", 0)["error_code"] == ErrorCode.UNSUPPORTED_VERSION
            assert [r[0] for r in read(old_fetch(c, 0, "on", 0)["records"])] == [0, 1]
    finally:
        assert b.stop() == 0
