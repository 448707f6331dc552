"""Clients that pin a Kafka version instead of negotiating, and a client that negotiates the
newest versions: kafka-python with ``api_version`` 2.1 / 2.8 / 3.9 produces, consumes and joins
a group (each sends exactly what that Kafka release accepted: Metadata v7 / Fetch v10 for 2.1,
up to Metadata v12 / Fetch v17 by topic id for 3.9); kafka-python pinned to 0.9 / 0.10 sends
Produce v1 / v2 with magic 0 / 1 message sets, stored as RecordBatch v2; librdkafka (defaults)
picks the new maxima, as its debug log shows.

aiokafka is not here: since 0.13 its ``api_version`` is a documented no-op (it always
negotiates), and its negotiated versions are covered by test_aiokafka.py and test_groups.py."""

from __future__ import annotations

import io
import logging
import re
import time
from typing import Any

import pytest

from ._clients import Msg, assert_codec, ck_consume, kp_consume, kp_produce, stored_batches, stored_records

PINNED = [(2, 1), (2, 8), (3, 9)]
MSGS = [Msg(b"k%d" % i, b"value %d " % i * 40) for i in range(40)]


def _topic(name: str, av: tuple[int, ...]) -> str:
    return f"{name}-{'.'.join(map(str, av))}"


@pytest.mark.parametrize("av", PINNED, ids=lambda av: ".".join(map(str, av)))
def test_kafka_python_pinned_produces_and_consumes(module_broker: Any, av: tuple[int, int]) -> None:
    topic = _topic("pinned", av)
    offsets = kp_produce(module_broker.bootstrap, topic, 0, MSGS, "gzip", api_version=av)
    assert offsets == list(range(len(MSGS)))
    got = kp_consume(module_broker.bootstrap, {(topic, 0): (0, len(MSGS))}, api_version=av)[(topic, 0)]
    assert [(r.offset, r.key, r.value) for r in got] == [(i, m.key, m.value) for i, m in enumerate(MSGS)]
    assert [(r.key, r.value) for r in stored_records(module_broker.data_dir, topic, 0)] == [
        (m.key, m.value) for m in MSGS]
    assert_codec(stored_batches(module_broker.data_dir, topic, 0), "gzip")


@pytest.mark.slow
@pytest.mark.parametrize("av", PINNED, ids=lambda av: ".".join(map(str, av)))
def test_kafka_python_pinned_joins_a_group_and_commits(module_broker: Any, av: tuple[int, int]) -> None:
    from kafka import KafkaConsumer, TopicPartition

    topic, group = _topic("pinned-group", av), _topic("g", av)
    kp_produce(module_broker.bootstrap, topic, 0, MSGS[:10], api_version=av)
    c = KafkaConsumer(topic, bootstrap_servers=module_broker.bootstrap, group_id=group, api_version=av,
                      auto_offset_reset="earliest", enable_auto_commit=False, request_timeout_ms=20000,
                      fetch_max_wait_ms=100)
    try:
        seen: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(seen) < 10 and time.monotonic() < deadline:
            # A poll that outlasts an fsync'd SyncGroup: kafka-python 3.0 drops a leader's SyncGroup
            # answer that comes after its poll returned (docs/pages/consumer-groups.md).
            for msgs in c.poll(timeout_ms=1000).values():
                seen += [m.value for m in msgs]
        assert seen == [m.value for m in MSGS[:10]]
        assert c.assignment() == {TopicPartition(topic, 0)}
        c.commit()
        assert c.committed(TopicPartition(topic, 0)) == 10
    finally:
        c.close(autocommit=False)


@pytest.mark.parametrize("av,codec", [((0, 9), "none"), ((0, 9), "gzip"), ((0, 9), "snappy"),
                                      ((0, 10, 1), "none"), ((0, 10, 1), "gzip"), ((0, 10, 1), "snappy"),
                                      ((0, 10, 1), "lz4")])
def test_magic_0_and_1_message_sets_are_stored_as_record_batch_v2(module_broker: Any, av: tuple[int, ...],
                                                                   codec: str) -> None:
    """kafka-python pinned to 0.9 sends Produce v1 with magic 0 messages, pinned to 0.10 Produce
    v2 with magic 1: converted on the way in, then read by librdkafka like any record."""
    topic = _topic(f"legacy-{codec}", av)
    before = int(time.time() * 1000)
    assert kp_produce(module_broker.bootstrap, topic, 0, MSGS, codec, api_version=av) == list(range(len(MSGS)))
    batches = stored_batches(module_broker.data_dir, topic, 0)
    assert all(b[3][16] == 2 for b in batches)  # magic 2 on disk
    assert_codec(batches, codec)  # the producer's codec, re-applied
    stored = stored_records(module_broker.data_dir, topic, 0)
    assert [(r.offset, r.key, r.value) for r in stored] == [(i, m.key, m.value) for i, m in enumerate(MSGS)]
    if av == (0, 9):
        assert {r.timestamp for r in stored} == {-1}  # magic 0 has no timestamps
    else:
        assert all(before <= r.timestamp <= int(time.time() * 1000) for r in stored)
    got = ck_consume(module_broker.bootstrap, {(topic, 0): (0, len(MSGS))})[(topic, 0)]
    assert [(r.key, r.value) for r in got] == [(m.key, m.value) for m in MSGS]


def test_librdkafka_negotiates_the_new_maxima(module_broker: Any) -> None:
    """confluent-kafka with api.version.request=true (the default); its debug log names every
    request version it sent."""
    from confluent_kafka import Consumer, Producer

    buf = io.StringIO()
    log = logging.getLogger("test_pinned_versions.librdkafka")
    log.setLevel(logging.DEBUG)
    log.propagate = False
    log.addHandler(logging.StreamHandler(buf))
    topic = "negotiated"
    p = Producer({"bootstrap.servers": module_broker.bootstrap, "debug": "protocol", "logger": log,
                  "compression.type": "lz4"})
    for m in MSGS:
        p.produce(topic, m.value, key=m.key, partition=0)
    assert p.flush(15) == 0
    c = Consumer({"bootstrap.servers": module_broker.bootstrap, "group.id": "negotiated", "debug": "protocol",
                  "logger": log, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.subscribe([topic])
        seen = []
        deadline = time.monotonic() + 30
        while len(seen) < len(MSGS) and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                seen.append(m.value())
        assert seen == [m.value for m in MSGS]
        c.commit(asynchronous=False)
    finally:
        c.close()
    sent: dict[str, int] = {}
    for api, version in re.findall(r"Sent (\w+)Request \(v(\d+)", buf.getvalue()):
        sent[api] = max(sent.get(api, 0), int(version))
    print("librdkafka sent:", sorted(sent.items()))  # shown with -s: the versions it picked
    assert sent["Metadata"] >= 12 and sent["Produce"] >= 10 and sent["Fetch"] >= 13  # Fetch by topic id
    assert sent["ListOffsets"] >= 7 and sent["OffsetCommit"] >= 8 and sent["OffsetFetch"] >= 8
    # lz4 still used: librdkafka's codec gates (Produce v0, FindCoordinator v0 in range) hold
    assert_codec(stored_batches(module_broker.data_dir, topic, 0), "lz4")
