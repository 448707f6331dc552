"""kafka-python 3.x against a real broker process.

Its producer is idempotent with acks=all by default once it infers a >= 0.11 broker from
ApiVersions (we infer as 2.3), so ``KafkaProducer()`` needs InitProducerId; consumers here use
``assign`` + ``seek`` with ``group_id=None`` (the broker has no group coordination yet).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
from kafka.errors import InvalidTopicError, TopicAlreadyExistsError, UnknownTopicOrPartitionError

from ._clients import (
    CODECS,
    KP_TIMEOUTS,
    Msg,
    Rec,
    assert_codec,
    kp_consume,
    kp_produce,
    stored_batches,
    stored_records,
)


@pytest.fixture(scope="module")
def admin(module_broker: Any) -> Any:
    a = KafkaAdminClient(bootstrap_servers=module_broker.bootstrap, **KP_TIMEOUTS)
    yield a
    a.close()


def _consumer(bootstrap: str, **config: Any) -> KafkaConsumer:
    cfg: dict[str, Any] = dict(KP_TIMEOUTS, enable_auto_commit=False, fetch_max_wait_ms=100)
    cfg.update(config)
    return KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, **cfg)


def _take(c: KafkaConsumer, n: int, timeout: float = 10.0) -> list[Any]:
    """The next ``n`` records (fewer only if ``timeout`` passes first)."""
    out: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        for msgs in c.poll(timeout_ms=200, max_records=n - len(out)).values():
            out.extend(msgs)
    return out


def test_producer_defaults_are_idempotent_acks_all(module_broker: Any, topic: str) -> None:
    p = KafkaProducer(bootstrap_servers=module_broker.bootstrap, **KP_TIMEOUTS)
    try:
        assert p.config["enable_idempotence"] and p.config["acks"] == -1
        md = [p.send(topic, key=b"k%d" % i, value=b"v%d" % i) for i in range(5)]
        p.flush(10)
        assert [f.get(10).offset for f in md] == list(range(5))
    finally:
        p.close(5)
    batches = stored_batches(module_broker.data_dir, topic, 0)
    # the batch carries the producer id the broker handed out with InitProducerId
    assert batches and all(pid >= 0 for _, _, pid, _ in batches)
    assert [(r.key, r.value) for r in stored_records(module_broker.data_dir, topic, 0)] == [
        (b"k%d" % i, b"v%d" % i) for i in range(5)]


@pytest.mark.parametrize("codec", CODECS)
def test_codec_round_trip(module_broker: Any, topic: str, codec: str) -> None:
    msgs = [Msg(b"key-%d" % i, (b"value %d " % i) * 40, (("h", b"%d" % i),), 1_700_000_000_000 + i) for i in range(100)]
    offsets = kp_produce(module_broker.bootstrap, topic, None, msgs, codec)
    assert offsets == list(range(100))
    assert_codec(stored_batches(module_broker.data_dir, topic, 0), codec)
    got = kp_consume(module_broker.bootstrap, {(topic, 0): (0, 100)})[(topic, 0)]
    assert got == [Rec(i, m.timestamp, m.key, m.value, m.headers) for i, m in enumerate(msgs)]


@pytest.mark.parametrize("acks", [0, 1])
def test_acks_without_idempotence(module_broker: Any, topic: str, acks: int) -> None:
    """acks 0 and 1 need enable_idempotence=False; with acks=0 the broker sends no response
    (a stray one would break kafka-python's correlation-id matching on the next request)."""
    msgs = [Msg(b"k", b"v%d" % i) for i in range(20)]
    offsets = kp_produce(module_broker.bootstrap, topic, 0, msgs, "gzip", acks=acks, enable_idempotence=False)
    if acks == 1:
        assert offsets == list(range(20))  # (with acks=0 there is no offset to report)
    got = kp_consume(module_broker.bootstrap, {(topic, 0): (0, 20)})[(topic, 0)]
    assert [(r.offset, r.value) for r in got] == [(i, b"v%d" % i) for i in range(20)]


def test_assign_and_seek(module_broker: Any, topic: str) -> None:
    b = module_broker.bootstrap
    kp_produce(b, topic, None, [Msg(None, b"m%d" % i) for i in range(10)])
    tp = TopicPartition(topic, 0)
    c = _consumer(b)
    try:
        c.assign([tp])
        c.seek(tp, 6)
        assert [m.offset for m in _take(c, 4)] == [6, 7, 8, 9]
        c.seek_to_beginning(tp)
        assert c.position(tp) == 0
        assert [m.value for m in _take(c, 10)] == [b"m%d" % i for i in range(10)]
        c.seek_to_end(tp)
        assert c.position(tp) == 10
        assert c.beginning_offsets([tp]) == {tp: 0}
        assert c.end_offsets([tp]) == {tp: 10}
    finally:
        c.close(autocommit=False)


def test_list_offsets_v0_for_clients_pinned_before_0_10_1(module_broker: Any, topic: str) -> None:
    """kafka-python pinned to 0.10.0 asks for offsets with ListOffsets v0 (the old-style list),
    as Burrow and old Sarama do: it used to time out on a closed connection."""
    b = module_broker.bootstrap
    kp_produce(b, topic, None, [Msg(None, b"m%d" % i) for i in range(7)])
    tp = TopicPartition(topic, 0)
    c = KafkaConsumer(bootstrap_servers=b, api_version=(0, 10, 0), request_timeout_ms=10000)
    try:
        assert c.end_offsets([tp]) == {tp: 7}
        assert c.beginning_offsets([tp]) == {tp: 0}
    finally:
        c.close(autocommit=False)


def test_offsets_for_times(module_broker: Any, topic: str) -> None:
    b = module_broker.bootstrap
    base = 1_650_000_000_000
    kp_produce(b, topic, 0, [Msg(b"k", b"v%d" % i, (), base + 10 * i) for i in range(10)])
    tp = TopicPartition(topic, 0)
    c = _consumer(b)
    try:
        found = c.offsets_for_times({tp: base + 35})[tp]
        assert (found.offset, found.timestamp) == (4, base + 40)
        assert c.offsets_for_times({tp: base})[tp].offset == 0
        assert c.offsets_for_times({tp: base + 10_000})[tp] is None  # after every record
        c.assign([tp])
        c.seek(tp, found.offset)
        assert [(m.offset, m.timestamp) for m in _take(c, 6)] == [(i, base + 10 * i) for i in range(4, 10)]
    finally:
        c.close(autocommit=False)


def test_long_poll_returns_when_data_arrives(module_broker: Any, topic: str) -> None:
    """With fetch_max_wait_ms=10 s the broker holds the fetch; a record produced meanwhile is
    delivered at once, not when the wait expires."""
    b = module_broker.bootstrap
    kp_produce(b, topic, 0, [Msg(None, b"first")])
    tp = TopicPartition(topic, 0)
    c = _consumer(b, fetch_max_wait_ms=10_000, request_timeout_ms=30_000)
    try:
        c.assign([tp])
        c.seek(tp, 1)
        assert c.poll(timeout_ms=500) == {}  # the fetch at the end is now parked on the broker
        def produce() -> None:
            kp_produce(b, topic, 0, [Msg(None, b"late")], acks=1, enable_idempotence=False)

        started = time.monotonic()  # includes the producer's own start-up (~0.1 s)
        producer = threading.Thread(target=produce)
        producer.start()
        got = []
        deadline = time.monotonic() + 8
        while not got and time.monotonic() < deadline:
            got = c.poll(timeout_ms=200).get(tp, [])
        arrived = time.monotonic()
        assert [m.value for m in got] == [b"late"]
        producer.join(10)
        assert arrived - started < 3.0  # far below the 10 s max wait
    finally:
        c.close(autocommit=False)


def test_small_fetch_sizes_and_oversized_batch(module_broker: Any, topic: str) -> None:
    """max_partition_fetch_bytes far below the batch sizes: replies end mid-batch, and a batch
    larger than the limit still comes whole (KIP-74), so the consumer makes progress."""
    b = module_broker.bootstrap
    msgs = [Msg(b"k%d" % i, bytes([97 + i % 26]) * (40_000 if i % 25 == 3 else 500)) for i in range(100)]
    kp_produce(b, topic, 0, msgs, "none", batch_size=2048)
    assert len(stored_batches(module_broker.data_dir, topic, 0)) > 20
    got = kp_consume(b, {(topic, 0): (0, 100)}, max_partition_fetch_bytes=1024, fetch_max_bytes=3000)[(topic, 0)]
    assert [(r.offset, r.key, r.value) for r in got] == [(i, m.key, m.value) for i, m in enumerate(msgs)]


# ---------------------------------------------------------------- admin


def test_admin_create_describe_list_delete(module_broker: Any, admin: Any, topic: str) -> None:
    res = admin.create_topics([NewTopic(topic, 3, 1, topic_configs={"retention.ms": "3600000",
                                                                    "cleanup.policy": "delete"})])
    (created,) = res["topics"]
    assert (created["name"], created["error_code"], created["error_message"]) == (topic, 0, None)
    # CreateTopics v5+ (kafka-python 3 sends v7): the topic as created, and its id
    assert (created["num_partitions"], created["replication_factor"]) == (3, 1)
    assert created["configs"]["retention.ms"] == {"value": "3600000", "read_only": False,
                                                  "config_source": "DYNAMIC_TOPIC_CONFIG", "is_sensitive": False}
    described_id = admin.describe_topics([topic])[0]["topic_id"]
    assert created["topic_id"] == described_id and str(described_id) != "00000000-0000-0000-0000-000000000000"
    assert topic in admin.list_topics()
    described = admin.describe_topics([topic])
    assert [p["partition_index"] for p in described[0]["partitions"]] == [0, 1, 2]
    cfg = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    entries = cfg["topic"][topic]
    assert entries["retention.ms"]["value"] == "3600000"  # the default filter: overrides only
    assert entries["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    everything = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
    assert everything["topic"][topic]["segment.bytes"]["value"] == "1073741824"
    # the partitions really exist: produce to the last one
    assert kp_produce(module_broker.bootstrap, topic, 2, [Msg(None, b"x")]) == [0]
    res = admin.delete_topics([topic])
    assert [(t["name"], t["error_code"]) for t in res["topics"]] == [(topic, 0)]
    assert topic not in admin.list_topics()


def test_admin_create_existing_topic(admin: Any, topic: str) -> None:
    admin.create_topics([NewTopic(topic, 1, 1)])
    with pytest.raises(TopicAlreadyExistsError):
        admin.create_topics([NewTopic(topic, 1, 1)])


@pytest.mark.parametrize("name", ["bad name", "x" * 250, "..", "slash/topic"])
def test_admin_create_invalid_name(admin: Any, name: str) -> None:
    with pytest.raises(InvalidTopicError):
        admin.create_topics([NewTopic(name, 1, 1)])


def test_admin_delete_unknown_topic(admin: Any, topic: str) -> None:
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.delete_topics([topic])
