"""pykafka 2.8, a pure-Python client of the Kafka 0.8-0.10 era (``use_rdkafka=False``), produces
and reads back what it produced.

pykafka pins its protocol versions. With its default ``broker_version="0.9.0"`` it sends no
ApiVersions and uses its hardcoded 0.9 table: Fetch v1, magic 0 messages; with
``broker_version="0.10.0"`` it asks ApiVersions and takes the highest version it knows in our
range: Fetch v2, magic 1 (the broker's metrics record what it sent). It always produces with
Produce v0, magic 0 or 1 messages by ``broker_version``. So its
consumers read down-converted data (Fetch v0-3, broker/handlers/fetch.py), every codec it has:
gzip, snappy (xerial framing) and LZ4 (for magic 0 with the old frame checksum, which pykafka
reads with its own fix-up). The BalancedConsumer runs with ``managed=True``: Kafka's group APIs
(JoinGroup v0, SyncGroup v0, OffsetCommit v2), no ZooKeeper.

Before Fetch v0-3 were served a pykafka consumer's fetch closed its connection and pykafka
reconnected in a tight loop (~60 reconnects a second); a consumer that fails now (here: a topic
with ``message.downconversion.enable=false``, answered UNSUPPORTED_VERSION as Kafka does) does
not reconnect at all."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from client.protocol.api import ApiKey
from tests.broker_process import BrokerProcess
from tests.server.wire import Conn

from ._clients import assert_codec, create_topic, stored_batches, stored_records

pykafka = pytest.importorskip("pykafka", reason="pykafka is not installed (the test extra installs it)")
from pykafka.common import CompressionType, OffsetType

N = 30


def value(i: int) -> bytes:
    return b"pykafka value %d " % i * 8


def request_counts(broker: BrokerProcess) -> dict[tuple[str, int], int]:
    """minibroker_requests_total by (API, version)."""
    return {(api, int(v)): int(float(n)) for api, v, n in re.findall(
        r'^minibroker_requests_total\{api="(\w+)",version="(\d+)"\} (\S+)$', broker.scrape(), re.M)}


def sent_since(broker: BrokerProcess, before: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
    return {k: n - before.get(k, 0) for k, n in request_counts(broker).items() if n != before.get(k, 0)}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    b = BrokerProcess(str(tmp_path_factory.mktemp("pykafka") / "data"), metrics=True).start()
    try:
        yield b
    finally:
        assert b.stop() == 0, b.log_text()


@pytest.fixture(autouse=True)
def _fresh_version_table() -> None:
    """pykafka caches the version it picked per request class for the whole process
    (pykafka.utils.VERSIONS_CACHE): each test's broker_version picks again."""
    import pykafka.utils

    pykafka.utils.VERSIONS_CACHE.clear()


def produce(client: Any, topic: str, codec: str) -> None:
    with client.topics[topic].get_sync_producer(compression=getattr(CompressionType, codec.upper()),
                                                min_queued_messages=N, linger_ms=50) as p:
        for i in range(N):
            p.produce(value(i), partition_key=b"k%d" % i)


def take(consumer: Any, n: int) -> list[Any]:
    out = []
    for _ in range(n):
        m = consumer.consume(block=True)
        assert m is not None, f"consumer timed out after {len(out)} messages"
        out.append(m)
    return out


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
@pytest.mark.parametrize("broker_version,fetch_version", [("0.9.0", 1), ("0.10.0", 2)])
def test_simple_consumer_reads_back_what_pykafka_produced(broker: BrokerProcess, broker_version: str,
                                                          fetch_version: int, codec: str) -> None:
    topic = f"pyk-{broker_version}-{codec}"
    create_topic(broker.bootstrap, topic)
    before = request_counts(broker)
    client = pykafka.KafkaClient(hosts=broker.bootstrap, broker_version=broker_version)
    started = int(time.time() * 1000)
    produce(client, topic, codec)
    assert_codec(stored_batches(broker.data_dir, topic, 0), codec)
    stored = stored_records(broker.data_dir, topic, 0)
    assert [(r.key, r.value) for r in stored] == [(b"k%d" % i, value(i)) for i in range(N)]
    # 0.9: magic 0 messages (no timestamp, stored as -1); 0.10: magic 1, the producer's timestamps
    assert all((r.timestamp >= started) if broker_version != "0.9.0" else r.timestamp == -1 for r in stored)
    c = client.topics[topic].get_simple_consumer(auto_offset_reset=OffsetType.EARLIEST, consumer_timeout_ms=10_000,
                                                 use_rdkafka=False)
    try:
        got = take(c, N)
    finally:
        c.stop()
    assert [(m.offset, m.partition_key, m.value) for m in got] == [(i, b"k%d" % i, value(i)) for i in range(N)]
    if fetch_version >= 2:  # magic 1: the producer's timestamps came back
        assert all(started <= m.timestamp <= int(time.time() * 1000) for m in got)
    sent = sent_since(broker, before)
    assert {v for (api, v) in sent if api == "FETCH"} == {fetch_version}
    assert {v for (api, v) in sent if api == "PRODUCE"} == {0}  # pykafka sends v0, with magic 1 from 0.10
    assert (("API_VERSIONS", 0) in sent) == (broker_version != "0.9.0")  # 0.9: a pinned table


@pytest.mark.parametrize("broker_version", ["0.9.0", "0.10.0"])
def test_balanced_consumer_joins_reads_and_commits(broker: BrokerProcess, broker_version: str) -> None:
    topic, group = f"pyk-balanced-{broker_version}", f"pyk-group-{broker_version}"
    create_topic(broker.bootstrap, topic, 2)
    client = pykafka.KafkaClient(hosts=broker.bootstrap, broker_version=broker_version)
    produce(client, topic, "gzip")  # pykafka's default partitioner spreads them over both partitions
    before = request_counts(broker)
    c = client.topics[topic].get_balanced_consumer(consumer_group=group.encode(), managed=True, use_rdkafka=False,
                                                   auto_offset_reset=OffsetType.EARLIEST, auto_commit_enable=False,
                                                   consumer_timeout_ms=15_000)
    try:
        got = take(c, N)
        c.commit_offsets()
    finally:
        c.stop()
    assert sorted(m.value for m in got) == sorted(value(i) for i in range(N))
    ends: dict[int, int] = {}
    for m in got:
        assert m.offset == ends.get(m.partition_id, 0)  # each partition in order, from its start
        ends[m.partition_id] = m.offset + 1
    assert sorted(ends) == [0, 1]
    with Conn(broker.port) as conn:
        r = conn.call(ApiKey.OFFSET_FETCH, 1, {"group_id": group,
                                               "topics": [{"name": topic, "partition_indexes": [0, 1]}]})
    assert {p["partition_index"]: p["committed_offset"] for p in r["topics"][0]["partitions"]} == ends
    sent = sent_since(broker, before)
    assert {api for api, _ in sent} >= {"JOIN_GROUP", "SYNC_GROUP", "OFFSET_COMMIT", "FETCH"}
    assert {v for (api, v) in sent if api == "FETCH"} == {1 if broker_version == "0.9.0" else 2}


def test_a_failing_consumer_does_not_spin(broker: BrokerProcess) -> None:
    """Down-conversion disabled: Kafka's UNSUPPORTED_VERSION for the partition. pykafka has no
    handler for that code: its fetcher stops, without reconnecting."""
    topic = "pyk-no-downconversion"
    create_topic(broker.bootstrap, topic, config={"message.downconversion.enable": "false"})
    client = pykafka.KafkaClient(hosts=broker.bootstrap)
    produce(client, topic, "none")
    accepted = _connections_accepted(broker)
    before = request_counts(broker)
    c = client.topics[topic].get_simple_consumer(auto_offset_reset=OffsetType.EARLIEST, consumer_timeout_ms=1500,
                                                 use_rdkafka=False)
    try:
        assert c.consume(block=True) is None
        deadline = time.monotonic() + 20  # on a loaded machine its first fetch may come late
        while not _errors(broker, "FETCH", 1).get("UNSUPPORTED_VERSION") and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1)  # time to spin, if it would
    finally:
        c.stop()
    sent = sent_since(broker, before)
    assert sum(n for (api, _), n in sent.items() if api == "FETCH") <= 5, sent
    assert _connections_accepted(broker) - accepted <= 1
    assert _errors(broker, "FETCH", 1).get("UNSUPPORTED_VERSION", 0) >= 1


def _connections_accepted(broker: BrokerProcess) -> int:
    m = re.search(r"^minibroker_connections_accepted_total (\S+)$", broker.scrape(), re.M)
    assert m is not None
    return int(float(m.group(1)))


def _errors(broker: BrokerProcess, api: str, version: int) -> dict[str, int]:
    return {e: int(float(n)) for e, n in re.findall(
        rf'^minibroker_request_errors_total\{{api="{api}",error="(\w+)",version="{version}"\}} (\S+)$',
        broker.scrape(), re.M)}
