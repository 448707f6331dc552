"""Compacted topics with real clients: confluent-kafka (librdkafka) and our consumer read a
partition from offset 0 again and again while the cleaner rewrites it under them (a producer
keeps making it dirty, ``log.cleaner.backoff.ms`` is short), kcat reads a compacted topic,
and keyless records are refused (INVALID_RECORD) to both our producer and librdkafka.

Every record a consumer gets must be valid (its value names its key and a sequence number)
and come in strictly increasing offset order; per key, sequence numbers must increase. After
the producer stops and the cleaner catches up, a full read holds exactly the last value of
every key, at the offset it was written to.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.broker_process import BrokerProcess

from ._clients import KCAT, KCAT_MISSING, create_topic, kcat

pytestmark = pytest.mark.slow

KEYS = 50
CONFIG = {"cleanup.policy": "compact", "segment.bytes": "16384", "min.cleanable.dirty.ratio": "0.05",
          "delete.retention.ms": "0"}
_VALUE = re.compile(rb"^(k\d+)=(\d+)\|x*$")


@pytest.fixture(scope="module", params=["thread", "process"])
def cbroker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker whose cleaner runs in a thread, then one whose cleaner runs in a worker process
    (``log.cleaner.mode``)."""
    b = BrokerProcess(str(tmp_path_factory.mktemp("compaction") / "data"),
                      ["log.cleaner.backoff.ms=50", "log.retention.check.interval.ms=1000",
                       f"log.cleaner.mode={request.param}"]).start()
    try:
        yield b
    finally:
        rc = b.stop()
        assert rc == 0, f"broker exited with {rc}:\n{b.log_text()}"


class Writer:
    """Our producer in a thread: key ``k<i % KEYS>``, value ``k<i>=<seq>|xxx..``, in order."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        self.seq = 0
        self.last: dict[bytes, tuple[int, bytes]] = {}  # key -> (offset, value)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    def value(self, key: bytes, seq: int) -> bytes:
        return key + b"=%d|" % seq + b"x" * (seq % 200)

    async def _run(self) -> None:
        from client import Producer
        async with Producer(self.bootstrap, linger_ms=2, compression_type="lz4", request_timeout_ms=5000) as p:
            while not self.stop.is_set():
                batch = []
                for _ in range(200):
                    key = b"k%d" % (self.seq % KEYS)
                    value = self.value(key, self.seq)
                    batch.append((key, value, p.send_nowait(self.topic, value, key=key, partition=0)))
                    self.seq += 1
                for key, value, fut in batch:
                    self.last[key] = ((await fut).offset, value)
                await asyncio.sleep(0.01)


def check_pass(records: list[tuple[int, bytes | None, bytes | None]]) -> None:
    """Valid records in strictly increasing offsets, increasing sequence numbers per key."""
    last_offset, last_seq = -1, {}
    for offset, key, value in records:
        assert offset > last_offset, f"offset {offset} after {last_offset}"
        last_offset = offset
        m = _VALUE.match(value or b"")
        assert m is not None and m.group(1) == key, (offset, key, value)
        seq = int(m.group(2))
        assert seq > last_seq.get(key, -1), (offset, key, seq, last_seq.get(key))
        last_seq[key] = seq


def confluent_read_all(bootstrap: str, topic: str) -> list[tuple[int, Any, Any]]:
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "compaction-test", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 50, "socket.timeout.ms": 5000, "fetch.max.bytes": 1048576, "message.max.bytes": 65536,
                  "max.partition.fetch.bytes": 16384})
    out: list[tuple[int, Any, Any]] = []
    try:
        _, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=5)
        c.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 30
        position = 0
        while position < high and time.monotonic() < deadline:
            for m in c.consume(num_messages=500, timeout=0.2):
                if m.error():
                    raise KafkaException(m.error())
                out.append((m.offset(), m.key(), m.value()))
                position = m.offset() + 1
            if not out and position == 0:
                continue
            got = c.position([TopicPartition(topic, 0)])[0].offset
            position = max(position, got)
        assert position >= high, (position, high)
    finally:
        c.close()
    return out


async def ours_read_all(bootstrap: str, topic: str) -> list[tuple[int, Any, Any]]:
    from client import Consumer, TopicPartition
    tp = TopicPartition(topic, 0)
    out: list[tuple[int, Any, Any]] = []
    async with Consumer(bootstrap, fetch_max_wait_ms=50, max_partition_fetch_bytes=16384,
                        request_timeout_ms=5000) as c:
        c.assign([tp])
        high = (await c.end_offsets([tp]))[tp]
        c.seek(tp, 0)
        deadline = time.monotonic() + 30
        while await c.position(tp) < high and time.monotonic() < deadline:
            for m in (await c.getmany(timeout_ms=200)).get(tp, []):
                out.append((m.offset, m.key, m.value))
        assert await c.position(tp) >= high
    return out


def test_consumers_read_valid_ordered_records_while_the_cleaner_rewrites(cbroker: BrokerProcess) -> None:
    topic = "compacted-live"
    create_topic(cbroker.bootstrap, topic, 1, CONFIG)
    writer = Writer(cbroker.bootstrap, topic)
    writer.thread.start()
    passes = {"confluent": 0, "ours": 0}
    try:
        time.sleep(1.0)
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            check_pass(confluent_read_all(cbroker.bootstrap, topic))
            passes["confluent"] += 1
            check_pass(asyncio.run(ours_read_all(cbroker.bootstrap, topic)))
            passes["ours"] += 1
    finally:
        writer.stop.set()
        writer.thread.join(15)
    cleanings = cbroker.log_text().count("cleaned log compacted-live-0")
    assert cleanings >= 3, cbroker.log_text()[-3000:]
    assert min(passes.values()) >= 2
    # the producer stopped: once the cleaner has cleaned everything but the active segment,
    # a full read is each key's last value (plus whatever the active segment still holds)
    time.sleep(1.5)
    final = asyncio.run(ours_read_all(cbroker.bootstrap, topic))
    check_pass(final)
    latest = {key: value for _, key, value in final}
    assert latest == {k: v for k, (_, v) in writer.last.items()}
    offsets = {key: offset for offset, key, _ in final}
    assert offsets == {k: o for k, (o, _) in writer.last.items()}
    assert len(final) < writer.seq / 4, (len(final), writer.seq)  # the cleaner removed most records


def cleaned_up_to(b: BrokerProcess, topic: str) -> int:
    """The highest end offset of a cleaning of ``topic``-0 in the broker's log (-1: none)."""
    ends = re.findall(rf"cleaned log {re.escape(topic)}-0 \(dirty section \[\d+, (\d+)\]\)", b.log_text())
    return max((int(e) for e in ends), default=-1)


def produce_keyed(bootstrap: str, topic: str, pairs: list[tuple[bytes, bytes | None]]) -> list[int]:
    async def run() -> list[int]:
        from client import Producer
        async with Producer(bootstrap, linger_ms=0, request_timeout_ms=5000) as p:
            return [(await p.send(topic, v, key=k, partition=0)).offset for k, v in pairs]
    return asyncio.run(run())


@pytest.mark.skipif(KCAT is None, reason=KCAT_MISSING)
def test_kcat_reads_a_compacted_topic(cbroker: BrokerProcess) -> None:
    topic = "compacted-kcat"
    create_topic(cbroker.bootstrap, topic, 1, {**CONFIG, "segment.bytes": "1024", "delete.retention.ms": "600000"})
    pairs = [(b"a", b"1"), (b"b", b"1"), (b"a", b"2"), (b"c", b"1"), (b"b", None)] * 20 + [(b"z", b"last")] * 30
    produce_keyed(cbroker.bootstrap, topic, pairs)
    deadline = time.monotonic() + 20
    while cleaned_up_to(cbroker, topic) < 100 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert cleaned_up_to(cbroker, topic) >= 100
    r = kcat("-b", cbroker.bootstrap, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-Z",
             "-f", "%o %k=%s\\n", "-X", "fetch.wait.max.ms=50")
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    lines = r.stdout.decode().splitlines()
    offsets = [int(line.split()[0]) for line in lines]
    assert offsets == sorted(set(offsets)) and offsets[-1] == len(pairs) - 1
    assert len(lines) < len(pairs)  # compacted: gaps the client skipped
    # below the cleaned point each key appears once, with its last value (b's tombstone: kcat's NULL)
    cleaned = [line for line in lines if int(line.split()[0]) < 100]
    assert sorted(line.split(" ", 1)[1] for line in cleaned) == ["a=2", "b=NULL", "c=1"]


def test_keyless_records_are_refused_on_compacted_topics(cbroker: BrokerProcess) -> None:
    topic = "compacted-keyless"
    create_topic(cbroker.bootstrap, topic, 1, CONFIG)
    from client.errors import InvalidRecordError
    with pytest.raises(InvalidRecordError):
        asyncio.run(_send_keyless(cbroker.bootstrap, topic))
    from confluent_kafka import KafkaError, Producer
    errors: list[Any] = []
    p = Producer({"bootstrap.servers": cbroker.bootstrap, "message.timeout.ms": 10000, "retries": 0})
    p.produce(topic, b"no key", partition=0, on_delivery=lambda err, msg: errors.append(err))
    p.flush(15)
    assert errors and errors[0] is not None and errors[0].code() == KafkaError.INVALID_RECORD
    assert produce_keyed(cbroker.bootstrap, topic, [(b"k", b"fine")]) == [0]


async def _send_keyless(bootstrap: str, topic: str) -> None:
    from client import Producer
    async with Producer(bootstrap, linger_ms=0, request_timeout_ms=5000, retries=0) as p:
        await p.send(topic, b"no key", partition=0)

