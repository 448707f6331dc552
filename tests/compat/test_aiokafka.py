"""aiokafka 0.14 against a real broker process.

aiokafka sends ApiVersions **v0** only, Metadata v4 with ``topics=[]`` at bootstrap, and relies
on auto-creation when producing; its producer is not idempotent by default (InitProducerId v0
when enabled). Consumers use ``assign`` + ``seek`` with ``group_id=None``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import InvalidTopicError, TopicAlreadyExistsError

from ._clients import (
    CODECS,
    Msg,
    Rec,
    aio_consume_async,
    aio_produce_async,
    assert_codec,
    stored_batches,
    stored_records,
)


def _consumer(bootstrap: str, **config: Any) -> AIOKafkaConsumer:
    cfg: dict[str, Any] = dict(request_timeout_ms=5000, enable_auto_commit=False, fetch_max_wait_ms=100)
    cfg.update(config)
    return AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, **cfg)


@pytest.mark.parametrize("acks", [0, 1, "all"])
@pytest.mark.parametrize("codec", CODECS)
async def test_produce_codec_and_acks(module_broker: Any, topic: str, codec: str, acks: Any) -> None:
    msgs = [Msg(b"key-%d" % i, (b"value %d " % i) * 30, (("h", b"%d" % i), ("n", None)), 1_700_000_000_000 + i)
            for i in range(50)]
    offsets = await aio_produce_async(module_broker.bootstrap, topic, 0, msgs, codec, acks=acks)
    if acks != 0:
        assert offsets == list(range(50))
    # read first: with acks=0 the producer is done before the broker has appended
    got = (await aio_consume_async(module_broker.bootstrap, {(topic, 0): (0, 50)}))[(topic, 0)]
    assert got == [Rec(i, m.timestamp, m.key, m.value, m.headers) for i, m in enumerate(msgs)]
    assert_codec(stored_batches(module_broker.data_dir, topic, 0), codec)


async def test_acks0_keeps_the_connection_in_step(module_broker: Any, topic: str) -> None:
    """acks=0 produce gets no response; the next requests on the same connection (a metadata
    refresh, then an acks=1 produce on another producer's connection) still match up."""
    b = module_broker.bootstrap
    p = AIOKafkaProducer(bootstrap_servers=b, acks=0, request_timeout_ms=5000)
    await p.start()
    try:
        for i in range(5):
            assert await p.send_and_wait(topic, b"v%d" % i, partition=0) is None
        await p.client.force_metadata_update()
        assert await p.partitions_for(topic) == {0}
        for i in range(5, 10):
            await p.send_and_wait(topic, b"v%d" % i, partition=0)
    finally:
        await p.stop()
    got = (await aio_consume_async(b, {(topic, 0): (0, 10)}))[(topic, 0)]
    assert [r.value for r in got] == [b"v%d" % i for i in range(10)]


async def test_idempotent_producer(module_broker: Any, topic: str) -> None:
    offsets = await aio_produce_async(module_broker.bootstrap, topic, 0, [Msg(None, b"x%d" % i) for i in range(10)],
                                      "lz4", enable_idempotence=True)
    assert offsets == list(range(10))
    batches = stored_batches(module_broker.data_dir, topic, 0)
    assert batches and all(pid >= 0 for _, _, pid, _ in batches)


async def test_auto_create_on_produce(module_broker: Any, topic: str) -> None:
    """No partition given: aiokafka's first Metadata for the topic auto-creates it."""
    md_offsets = await aio_produce_async(module_broker.bootstrap, topic, None, [Msg(b"k", b"v")])
    assert md_offsets == [0]
    assert stored_records(module_broker.data_dir, topic, 0)[0].value == b"v"


async def test_assign_and_seek(module_broker: Any, topic: str) -> None:
    b = module_broker.bootstrap
    await aio_produce_async(b, topic, 0, [Msg(None, b"m%d" % i, (), 1_000_000 + i * 100) for i in range(10)])
    tp = TopicPartition(topic, 0)
    c = _consumer(b)
    await c.start()
    try:
        c.assign([tp])
        c.seek(tp, 7)
        assert [(await c.getone()).offset for _ in range(3)] == [7, 8, 9]
        await c.seek_to_beginning(tp)
        assert (await c.getone()).value == b"m0"
        await c.seek_to_end(tp)
        assert await c.position(tp) == 10
        assert await c.beginning_offsets([tp]) == {tp: 0}
        assert await c.end_offsets([tp]) == {tp: 10}
        found = (await c.offsets_for_times({tp: 1_000_450}))[tp]
        assert (found.offset, found.timestamp) == (5, 1_000_500)
        assert (await c.offsets_for_times({tp: 2_000_000}))[tp] is None
    finally:
        await c.stop()


async def test_long_poll_returns_when_data_arrives(module_broker: Any, topic: str) -> None:
    b = module_broker.bootstrap
    await aio_produce_async(b, topic, 0, [Msg(None, b"first")])
    tp = TopicPartition(topic, 0)
    c = _consumer(b, fetch_max_wait_ms=10_000, request_timeout_ms=30_000)
    await c.start()
    try:
        c.assign([tp])
        c.seek(tp, 1)
        assert await c.getmany(tp, timeout_ms=500) == {}  # a fetch at the end is parked on the broker
        getter = asyncio.ensure_future(c.getone())
        await aio_produce_async(b, topic, 0, [Msg(None, b"late")], acks=1)
        produced = time.monotonic()
        msg = await asyncio.wait_for(getter, 8)
        assert msg.value == b"late"
        assert time.monotonic() - produced < 3.0  # far below the 10 s max wait
    finally:
        await c.stop()


async def test_small_fetch_sizes_and_oversized_batch(module_broker: Any, topic: str) -> None:
    b = module_broker.bootstrap
    msgs = [Msg(b"k%d" % i, bytes([97 + i % 26]) * (30_000 if i % 20 == 5 else 400)) for i in range(80)]
    await aio_produce_async(b, topic, 0, msgs, "none", max_batch_size=2048)
    assert len(stored_batches(module_broker.data_dir, topic, 0)) > 15
    got = (await aio_consume_async(b, {(topic, 0): (0, 80)}, max_partition_fetch_bytes=1024,
                                   fetch_max_bytes=3000))[(topic, 0)]
    assert [(r.offset, r.key, r.value) for r in got] == [(i, m.key, m.value) for i, m in enumerate(msgs)]


async def test_admin_create_and_delete(module_broker: Any, topic: str) -> None:
    a = AIOKafkaAdminClient(bootstrap_servers=module_broker.bootstrap, request_timeout_ms=5000)
    await a.start()
    try:
        resp = await a.create_topics([NewTopic(topic, 2, 1, topic_configs={"retention.ms": "60000"})])
        assert [(t[0], t[1]) for t in resp.topic_errors] == [(topic, 0)]
        assert topic in await a.list_topics()
        with pytest.raises(TopicAlreadyExistsError):
            resp = await a.create_topics([NewTopic(topic, 2, 1)])
            _raise_first(resp.topic_errors)
        with pytest.raises(InvalidTopicError):
            resp = await a.create_topics([NewTopic("no spaces allowed", 1, 1)])
            _raise_first(resp.topic_errors)
        await aio_produce_async(module_broker.bootstrap, topic, 1, [Msg(None, b"p1")])
        resp = await a.delete_topics([topic])
        assert [(t[0], t[1]) for t in resp.topic_error_codes] == [(topic, 0)]
        assert topic not in await a.list_topics()
    finally:
        await a.close()


def _raise_first(errors: Any) -> None:
    """aiokafka's admin returns per-topic error codes; turn the first into its exception."""
    from aiokafka.errors import for_code

    code = errors[0][1]
    if code:
        raise for_code(code)()
