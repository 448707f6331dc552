"""confluent-kafka (librdkafka 2.16, bundled in the wheel) against a real broker process.

Its producer is not idempotent by default (with ``enable.idempotence`` it sends InitProducerId
v1 first and fails fatally without it). The consumer needs a ``group.id`` but only ``assign``
is used, with explicit offsets and no commits (no group coordination in the broker). The
AdminClient sends CreateTopics/DeleteTopics/DescribeConfigs to the controller, which must be
this broker's node id.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from ._clients import (
    CODECS,
    RDK_TIMEOUTS,
    Msg,
    Rec,
    assert_codec,
    ck_consume,
    ck_produce,
    stored_batches,
    stored_records,
)


@pytest.fixture(scope="module")
def admin(module_broker: Any) -> AdminClient:
    return AdminClient({"bootstrap.servers": module_broker.bootstrap, "socket.timeout.ms": 5000})


def _consumer(bootstrap: str, **config: Any) -> Consumer:
    cfg = {"bootstrap.servers": bootstrap, "group.id": "compat-confluent", "enable.auto.commit": False,
           "fetch.wait.max.ms": 100, "socket.timeout.ms": 5000}
    cfg.update(config)
    return Consumer(cfg)


def _take(c: Consumer, n: int, timeout: float = 10.0) -> list[Any]:
    out: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        for m in c.consume(num_messages=n - len(out), timeout=0.2):
            if m.error():
                raise KafkaException(m.error())
            out.append(m)
    return out


@pytest.mark.parametrize("idempotence", [False, True])
@pytest.mark.parametrize("codec", CODECS)
def test_produce_codec(module_broker: Any, topic: str, codec: str, idempotence: bool) -> None:
    msgs = [Msg(b"key-%d" % i, (b"value %d " % i) * 30, (("h", b"%d" % i), ("n", None)), 1_700_000_000_000 + i)
            for i in range(50)]
    offsets = ck_produce(module_broker.bootstrap, topic, 0, msgs, codec,
                         **{"enable.idempotence": idempotence})
    assert offsets == list(range(50))
    batches = stored_batches(module_broker.data_dir, topic, 0)
    assert_codec(batches, codec)
    # idempotent: the producer id from InitProducerId is in every batch; otherwise -1
    assert all((pid >= 0) == idempotence for _, _, pid, _ in batches)
    got = ck_consume(module_broker.bootstrap, {(topic, 0): (0, 50)})[(topic, 0)]
    assert got == [Rec(i, m.timestamp, m.key, m.value, m.headers) for i, m in enumerate(msgs)]


@pytest.mark.parametrize("acks", [0, 1])
def test_acks(module_broker: Any, topic: str, acks: int) -> None:
    msgs = [Msg(b"k", b"v%d" % i) for i in range(20)]
    offsets = ck_produce(module_broker.bootstrap, topic, 0, msgs, "zstd", acks=acks)
    if acks == 1:
        assert offsets == list(range(20))  # (acks=0: librdkafka reports no offsets)
    got = ck_consume(module_broker.bootstrap, {(topic, 0): (0, 20)})[(topic, 0)]
    assert [(r.offset, r.value) for r in got] == [(i, b"v%d" % i) for i in range(20)]


def test_assign_explicit_offsets(module_broker: Any, topic: str, admin: AdminClient) -> None:
    b = module_broker.bootstrap
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(10)
    for p in (0, 1):
        ck_produce(b, topic, p, [Msg(None, b"p%d-%d" % (p, i), (), 1_000_000 + i * 10) for i in range(10)])
    c = _consumer(b)
    try:
        c.assign([TopicPartition(topic, 0, 7), TopicPartition(topic, 1, 3)])
        got = sorted((m.partition(), m.offset()) for m in _take(c, 10))
        assert got == [(0, 7), (0, 8), (0, 9)] + [(1, i) for i in range(3, 10)]
        c.assign([TopicPartition(topic, 1, OFFSET_BEGINNING)])
        assert [m.value() for m in _take(c, 10)] == [b"p1-%d" % i for i in range(10)]
        c.assign([TopicPartition(topic, 0, OFFSET_END)])
        assert c.consume(num_messages=1, timeout=0.5) == []
        assert c.get_watermark_offsets(TopicPartition(topic, 0), timeout=5) == (0, 10)
        found = c.offsets_for_times([TopicPartition(topic, 1, 1_000_045), TopicPartition(topic, 0, 5_000_000)], timeout=5)
        assert [(tp.partition, tp.offset) for tp in found] == [(1, 5), (0, -1)]
    finally:
        c.close()


def test_long_poll_returns_when_data_arrives(module_broker: Any, topic: str) -> None:
    b = module_broker.bootstrap
    ck_produce(b, topic, 0, [Msg(None, b"first")])
    c = _consumer(b, **{"fetch.wait.max.ms": 10_000, "socket.timeout.ms": 30_000})
    try:
        c.assign([TopicPartition(topic, 0, 1)])
        assert c.consume(num_messages=1, timeout=0.5) == []  # a fetch at the end is parked on the broker
        def produce() -> None:
            ck_produce(b, topic, 0, [Msg(None, b"late")])

        started = time.monotonic()  # includes the producer's own start-up (~0.1 s)
        producer = threading.Thread(target=produce)
        producer.start()
        got = _take(c, 1, 8.0)
        arrived = time.monotonic()
        assert [m.value() for m in got] == [b"late"]
        producer.join(10)
        assert arrived - started < 3.0  # far below the 10 s max wait
    finally:
        c.close()


def test_small_fetch_sizes_and_oversized_batch(module_broker: Any, topic: str) -> None:
    b = module_broker.bootstrap
    msgs = [Msg(b"k%d" % i, bytes([97 + i % 26]) * (30_000 if i % 20 == 5 else 400)) for i in range(80)]
    ck_produce(b, topic, 0, msgs, "none", **{"batch.num.messages": 4, "linger.ms": 20})
    assert len(stored_batches(module_broker.data_dir, topic, 0)) > 15
    got = ck_consume(b, {(topic, 0): (0, 80)}, **{"max.partition.fetch.bytes": 1024, "fetch.max.bytes": 3000,
                                                   "message.max.bytes": 1000})[(topic, 0)]
    assert [(r.offset, r.key, r.value) for r in got] == [(i, m.key, m.value) for i, m in enumerate(msgs)]


# ---------------------------------------------------------------- admin


def test_admin_create_describe_list_delete(module_broker: Any, admin: AdminClient, topic: str) -> None:
    futs = admin.create_topics([NewTopic(topic, 3, 1, config={"retention.ms": "7200000", "segment.bytes": "1048576"})],
                               request_timeout=10)
    assert futs[topic].result(10) is None
    md = admin.list_topics(timeout=5)
    assert md.controller_id == 0 and list(md.brokers) == [0]
    assert sorted(md.topics[topic].partitions) == [0, 1, 2]
    res = admin.describe_configs([ConfigResource("TOPIC", topic)], request_timeout=10)
    entries = next(iter(res.values())).result(10)
    assert entries["retention.ms"].value == "7200000"
    assert entries["retention.ms"].source == 1  # DYNAMIC_TOPIC_CONFIG (a topic override)
    assert entries["segment.bytes"].value == "1048576"
    assert entries["cleanup.policy"].value == "delete" and entries["cleanup.policy"].is_default
    # the partitions exist: produce to the last one
    assert ck_produce(module_broker.bootstrap, topic, 2, [Msg(None, b"x")]) == [0]
    assert stored_records(module_broker.data_dir, topic, 2)[0].value == b"x"
    assert admin.delete_topics([topic], request_timeout=10)[topic].result(10) is None
    assert topic not in admin.list_topics(timeout=5).topics


def _error_of(fut: Any) -> int:
    with pytest.raises(KafkaException) as e:
        fut.result(10)
    return e.value.args[0].code()


def test_admin_errors(admin: AdminClient, topic: str) -> None:
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    assert _error_of(admin.create_topics([NewTopic(topic, 1, 1)])[topic]) == KafkaError.TOPIC_ALREADY_EXISTS
    assert _error_of(admin.create_topics([NewTopic("bad/name", 1, 1)])["bad/name"]) == KafkaError.TOPIC_EXCEPTION
    other = topic + "-rf3"
    assert _error_of(admin.create_topics([NewTopic(other, 1, 3)])[other]) == KafkaError.INVALID_REPLICATION_FACTOR
    other = topic + "-cfg"
    assert _error_of(admin.create_topics([NewTopic(other, 1, 1, config={"no.such": "1"})])[other]) == KafkaError.INVALID_CONFIG
    other = topic + "-missing"
    assert _error_of(admin.delete_topics([other])[other]) == KafkaError.UNKNOWN_TOPIC_OR_PART
    res = admin.describe_configs([ConfigResource("TOPIC", other)])
    assert _error_of(next(iter(res.values()))) == KafkaError.UNKNOWN_TOPIC_OR_PART
    # validate_only creates nothing
    other = topic + "-dry"
    assert admin.create_topics([NewTopic(other, 1, 1)], validate_only=True)[other].result(10) is None
    assert other not in admin.list_topics(timeout=5).topics


def test_idempotent_producer_needs_init_producer_id(module_broker: Any, topic: str) -> None:
    """Sanity of the handshake itself: a fatal error would surface as a delivery error."""
    p = Producer(dict(RDK_TIMEOUTS, **{"bootstrap.servers": module_broker.bootstrap, "enable.idempotence": True}))
    errors: list[Any] = []
    for i in range(3):
        p.produce(topic, value=b"%d" % i, partition=0, on_delivery=lambda err, m: err and errors.append(err))
    assert p.flush(10) == 0 and errors == []


@pytest.mark.parametrize("one_batch", [True, False], ids=["one-batch", "batch-per-message"])
def test_keyless_records_on_a_compacted_topic_fail_one_by_one(module_broker: Any, admin: AdminClient, topic: str,
                                                              one_batch: bool) -> None:
    """librdkafka's test 0011 (record_fail): messages 0 and 5 of 10 have no key. In one batch
    the broker answers INVALID_RECORD with both in ``record_errors`` (KIP-467): librdkafka
    fails those two with INVALID_RECORD and the eight others with _INVALID_DIFFERENT_RECORD,
    and nothing is written. With a batch per message (batch.size=1) only the two fail and
    the eight are written."""
    admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})])[topic].result(10)
    config: dict[str, Any] = {"bootstrap.servers": module_broker.bootstrap, "linger.ms": 200, "retries": 0}
    if not one_batch:
        config["batch.size"] = 1
    p = Producer(dict(RDK_TIMEOUTS, **config))
    reports: dict[int, Any] = {}
    for i in range(10):
        p.produce(topic, value=b"%d" % i, key=None if i % 5 == 0 else b"k%d" % i, partition=0,
                  on_delivery=lambda err, m, i=i: reports.__setitem__(i, err and err.code()))
    assert p.flush(15) == 0
    others = KafkaError._INVALID_DIFFERENT_RECORD if one_batch else None
    assert reports == {i: KafkaError.INVALID_RECORD if i % 5 == 0 else others for i in range(10)}
    c = _consumer(module_broker.bootstrap)
    try:
        assert c.get_watermark_offsets(TopicPartition(topic, 0), timeout=5) == (0, 0 if one_batch else 8)
    finally:
        c.close()


def test_commit_of_an_unknown_topic(module_broker: Any, admin: AdminClient, topic: str) -> None:
    """librdkafka's test 0030 (nonexist commit): committing offsets of a topic the broker does not
    have fails with UNKNOWN_TOPIC_OR_PART, from a consumer outside any group (a simple commit,
    generation -1) and from a member of a classic group; the real partition committed next to
    it is stored, the unknown ones are not."""
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    missing = topic + "-missing"
    simple = _consumer(module_broker.bootstrap, **{"group.id": topic + "-simple"})
    try:
        with pytest.raises(KafkaException) as e:
            simple.commit(offsets=[TopicPartition(missing, 0, 123), TopicPartition(missing, 1, 456)],
                          asynchronous=False)
        assert e.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    finally:
        simple.close()
    member = _consumer(module_broker.bootstrap, **{"group.id": topic + "-classic", "session.timeout.ms": 6000})
    try:
        member.subscribe([topic])
        deadline = time.monotonic() + 15
        while not member.assignment() and time.monotonic() < deadline:
            member.poll(0.2)
        assert member.assignment()
        with pytest.raises(KafkaException) as e:
            member.commit(offsets=[TopicPartition(topic, 0, 7), TopicPartition(missing, 0, 123)], asynchronous=False)
        assert e.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
        got = member.committed([TopicPartition(topic, 0), TopicPartition(missing, 0)], timeout=5)
        assert [(tp.topic, tp.offset) for tp in got] == [(topic, 7), (missing, OFFSET_INVALID)]
    finally:
        member.close()


def test_topic_names_differing_only_by_dot_and_underscore_collide(module_broker: Any, admin: AdminClient,
                                                                 topic: str) -> None:
    """Kafka's rule: with ``<topic>.x`` in place, creating ``<topic>_x`` fails with
    TOPIC_EXCEPTION (INVALID_TOPIC_EXCEPTION, 17) and Kafka's message, validate_only too; a
    producer to it (auto-creation) finds it unknown until its records fail, and it is never
    created."""
    dotted, underscored = topic + ".x", topic + "_x"
    admin.create_topics([NewTopic(dotted, 1, 1)])[dotted].result(10)
    for validate_only in (False, True):
        with pytest.raises(KafkaException) as e:
            admin.create_topics([NewTopic(underscored, 1, 1)], validate_only=validate_only)[underscored].result(10)
        err = e.value.args[0]
        assert (err.code(), err.str()) == (KafkaError.TOPIC_EXCEPTION,
                                           f"Topic '{underscored}' collides with existing topic: {dotted}")
    p = Producer(dict(RDK_TIMEOUTS, **{"bootstrap.servers": module_broker.bootstrap, "message.timeout.ms": 3000,
                                       "topic.metadata.propagation.max.ms": 1000}))
    reports: list[Any] = []
    p.produce(underscored, b"x", on_delivery=lambda err, m: reports.append(err and err.code()))
    assert p.flush(10) == 0
    assert reports == [KafkaError.UNKNOWN_TOPIC_OR_PART]
    assert underscored not in admin.list_topics(timeout=5).topics


def test_a_re_created_topic_starts_from_auto_offset_reset(module_broker: Any, admin: AdminClient, topic: str) -> None:
    """A group commits offset 2 of a topic; the topic is deleted and re-created with 10 new
    records: the group's consumer starts from ``auto.offset.reset`` (earliest: all 10), not
    from the old topic's offset 2 (which the new topic has, so nothing else would notice)."""
    group = topic + "-group"
    old = [Msg(b"k", b"old-%d" % i) for i in range(10)]
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    assert ck_produce(module_broker.bootstrap, topic, 0, old) == list(range(10))
    c = _consumer(module_broker.bootstrap, **{"group.id": group})
    try:
        c.commit(offsets=[TopicPartition(topic, 0, 2)], asynchronous=False)
    finally:
        c.close()
    admin.delete_topics([topic])[topic].result(10)
    deadline = time.monotonic() + 10
    while True:  # the same name again, once the deletion is visible
        try:
            admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
            break
        except KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS or time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    new = [Msg(b"k", b"new-%d" % i) for i in range(10)]
    assert ck_produce(module_broker.bootstrap, topic, 0, new) == list(range(10))
    c = _consumer(module_broker.bootstrap, **{"group.id": group, "auto.offset.reset": "earliest"})
    try:
        assert c.committed([TopicPartition(topic, 0)], timeout=5)[0].offset == OFFSET_INVALID
        c.subscribe([topic])
        got = _take(c, 10)
        assert [(m.offset(), m.value()) for m in got] == [(i, b"new-%d" % i) for i in range(10)]
    finally:
        c.close()
