"""client/partitioner.py: Kafka's murmur2 (vectors from Kafka's own UtilsTest), agreement with
kafka-python, and keyed records landing on the same partitions as with kafka-python's
KafkaProducer and confluent-kafka (``partitioner=murmur2_random``), against a real broker."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kp_murmur2

from client import Admin, Producer
from client.partitioner import StickyPartitionCache, murmur2, partition_for_key, to_positive
from tests.compat._clients import KP_TIMEOUTS, RDK_TIMEOUTS, stored_records

# apache/kafka clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java, testMurmur2
KAFKA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize("data,expected", sorted(KAFKA_VECTORS.items()))
def test_murmur2_matches_kafka_vectors(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200))
def test_murmur2_matches_kafka_python(data: bytes) -> None:
    # kafka-python returns the unsigned 32-bit value, Java (and we) the signed int
    assert murmur2(data) & 0xFFFFFFFF == kp_murmur2(data)
    assert murmur2(bytearray(data)) == murmur2(memoryview(data)) == murmur2(data)


def test_to_positive_is_not_abs() -> None:
    assert to_positive(-(2**31)) == 0  # Utils.toPositive(Integer.MIN_VALUE)
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(5) == 5


def test_partition_for_key_formula() -> None:
    for key, h in KAFKA_VECTORS.items():
        for n in (1, 2, 3, 7, 100):
            assert partition_for_key(key, n) == (h & 0x7FFFFFFF) % n


def test_sticky_cache_moves_to_another_partition() -> None:
    c = StickyPartitionCache()
    p = c.partition("t", 5)
    assert c.partition("t", 5) == p
    seen = set()
    for _ in range(200):
        q = c.next_partition("t", 5, p)
        assert q != p and 0 <= q < 5
        seen.add(q)
        p = q
    assert seen == set(range(5))
    assert c.next_partition("one", 1, 0) == 0


KEYS = [f"user-{i}".encode() for i in range(60)] + [b"", b"\x00\xff" * 7, "ключ".encode()]
PARTITIONS = 7


async def test_keyed_records_land_where_kafka_python_and_confluent_put_them(module_broker) -> None:
    from confluent_kafka import Producer as CKProducer
    from kafka import KafkaProducer

    topic = f"keys-{uuid.uuid4().hex[:8]}"
    async with Admin(module_broker.bootstrap) as admin:
        await admin.create_topic(topic, PARTITIONS)

    # ours
    async with Producer(module_broker.bootstrap) as p:
        ours = {k: (await p.send(topic, b"ours", key=k)).partition for k in KEYS}

    # kafka-python, default partitioner (murmur2 of the key bytes)
    kp = KafkaProducer(bootstrap_servers=module_broker.bootstrap, **KP_TIMEOUTS)
    try:
        futs = {k: kp.send(topic, key=k, value=b"kafka-python") for k in KEYS}
        kp.flush(15)
        kafka_python = {k: f.get(15).partition for k, f in futs.items()}
    finally:
        kp.close(5)

    # confluent-kafka (librdkafka) with Java-compatible partitioning; librdkafka sends an
    # empty key through the partitioner too, so b"" is comparable.
    confluent: dict[bytes, int] = {}
    ck = CKProducer({"bootstrap.servers": module_broker.bootstrap, "partitioner": "murmur2_random", **RDK_TIMEOUTS})
    for k in KEYS:
        ck.produce(topic, key=k, value=b"confluent",
                   on_delivery=lambda err, m, k=k: confluent.__setitem__(k, -1 if err else m.partition()))
    assert ck.flush(15) == 0

    expected = {k: partition_for_key(k, PARTITIONS) for k in KEYS}
    assert ours == expected
    assert kafka_python == expected
    assert confluent == expected
    # and what the broker stored says the same: every key's records sit in one partition
    where: dict[bytes, set[int]] = {}
    for part in range(PARTITIONS):
        for r in stored_records(module_broker.data_dir, topic, part):
            assert r.key is not None
            where.setdefault(r.key, set()).add(part)
    assert where == {k: {expected[k]} for k in KEYS}
    assert len(set(expected.values())) > 1  # the keys really are spread


async def test_unkeyed_records_stick_to_a_partition_per_batch(module_broker) -> None:
    topic = f"sticky-{uuid.uuid4().hex[:8]}"
    async with Admin(module_broker.bootstrap) as admin:
        await admin.create_topic(topic, 4)
    async with Producer(module_broker.bootstrap, batch_size=1000, linger_ms=1000) as p:
        futs = [p.send_nowait(topic, b"x" * 50) for _ in range(400)]
        await p.flush()
        mds = [await f for f in futs]
    # consecutive records share a partition until a batch fills (~16 records of 60 bytes)
    switches = sum(1 for a, b in zip(mds, mds[1:]) if a.partition != b.partition)
    assert 5 <= switches <= 400 // 10
    assert len({m.partition for m in mds}) > 1
    # each run of one partition holds consecutive offsets: one batch
    for a, b in zip(mds, mds[1:]):
        if a.partition == b.partition:
            assert b.offset == a.offset + 1


async def test_custom_partitioner_is_used(module_broker) -> None:
    topic = f"custom-{uuid.uuid4().hex[:8]}"
    async with Admin(module_broker.bootstrap) as admin:
        await admin.create_topic(topic, 3)
    calls = []

    def last_partition(topic: str, key: bytes | None, n: int) -> int:
        calls.append((topic, key, n))
        return n - 1

    async with Producer(module_broker.bootstrap, partitioner=last_partition) as p:
        md = await p.send(topic, b"v", key=b"k")
    assert md.partition == 2
    assert calls == [(topic, b"k", 3)]
