"""client/producer.py against real broker processes: what is sent is what is stored (every
codec, headers, null keys and values, explicit timestamps, read back by aiokafka and from the
broker's own files), batching, futures, back-pressure, and failure behaviour (broker restart,
unknown topic, too large records, unreachable broker, delivery timeout)."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
import uuid
from typing import Any

import pytest

from client import Admin, KafkaConnectionError, KafkaTimeoutError, Producer, RecordMetadata
from client.errors import MessageTooLargeError, UnknownTopicOrPartitionError  # type: ignore[attr-defined]
from client.producer import RecordFuture
from client.producer_batch import WaitGroup
from tests.broker_process import BrokerProcess
from tests.compat._clients import CODECS, Rec, aio_consume_async, stored_batches, stored_records


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _create(bootstrap: str, topic: str, partitions: int = 1, **configs: str) -> None:
    async with Admin(bootstrap) as admin:
        await admin.create_topic(topic, partitions, configs=configs or None)


# ---------------------------------------------------------------- round trips

MESSAGES = [
    # (key, value, headers, timestamp)
    (b"k1", b"plain", None, None),
    (None, b"null key", None, None),
    (b"tombstone", None, None, None),
    (None, None, None, None),
    (b"", b"", None, None),
    (b"h", b"with headers", [("a", b"1"), ("empty", b""), ("null", None), ("ünï", b"\xff\x00")], None),
    (b"ts", b"explicit timestamp", None, 1_600_000_000_123),
    (b"old", b"older than the batch's first record", None, 1_500_000_000_000),
    (b"big", bytes(range(256)) * 300, [("x", b"y")], 1_600_000_000_999),
]


@pytest.mark.parametrize("codec", CODECS)
async def test_round_trip_every_codec(module_broker, codec: str) -> None:
    topic = _topic(f"rt-{codec}")
    before = int(time.time() * 1000)
    async with Producer(module_broker.bootstrap, compression_type=codec, linger_ms=50) as p:
        futs = [p.send_nowait(topic, v, key=k, headers=h, timestamp_ms=ts) for k, v, h, ts in MESSAGES]
        mds = list(await asyncio.gather(*futs))
    after = int(time.time() * 1000)
    assert [m.offset for m in mds] == list(range(len(MESSAGES)))
    assert {(m.topic, m.partition) for m in mds} == {(topic, 0)}
    for m, (_, _, _, ts) in zip(mds, MESSAGES):
        assert m.timestamp == ts if ts is not None else before <= m.timestamp <= after

    want = [Rec(m.offset, m.timestamp, k, v, tuple(h or ())) for m, (k, v, h, _) in zip(mds, MESSAGES)]
    # the broker's files: two batches of this codec (linger 50 ms; the 77 KB record does not fit
    # in the 16 KiB batch and gets one of its own), CRC-checked decode
    batches = stored_batches(module_broker.data_dir, topic, 0)
    assert [(b[0], b[1]) for b in batches] == [(0, CODECS.index(codec)), (len(MESSAGES) - 1, CODECS.index(codec))]
    assert stored_records(module_broker.data_dir, topic, 0) == want
    # and a real client reading it over the wire
    got = await aio_consume_async(module_broker.bootstrap, {(topic, 0): (0, len(want))}, timeout=10)
    assert got[(topic, 0)] == want


async def test_send_returns_metadata_and_futures_work_with_asyncio(module_broker) -> None:
    topic = _topic("futs")
    async with Producer(module_broker.bootstrap) as p:
        md = await p.send(topic, b"first")
        assert md == RecordMetadata(topic, 0, 0, md.timestamp)
        futs = [p.send_nowait(topic, b"%d" % i) for i in range(100)]
        assert all(isinstance(f, RecordFuture) for f in futs)
        assert asyncio.isfuture(futs[0]) and not futs[0].done()
        # gather/wait treat them as futures (no task per record)
        mds = await asyncio.gather(*futs)
        assert [m.offset for m in mds] == list(range(1, 101))
        done, pending = await asyncio.wait(futs[:3])
        assert len(done) == 3 and not pending
        seen = []
        futs[5].add_done_callback(seen.append)
        await asyncio.sleep(0)
        assert seen == [futs[5]] and futs[5].result().offset == 6 and futs[5].exception() is None
        assert futs[0].cancel() is False
        # explicit partition, and a partition that does not exist
        assert (await p.send(topic, b"p0", partition=0)).partition == 0
        with pytest.raises(ValueError, match="partition 3"):
            p.send_nowait(topic, b"x", partition=3)


async def test_produce_v13_names_topics_by_id_and_follows_a_recreated_topic(module_broker, monkeypatch) -> None:
    """Against a broker serving Produce 13 the producer sends it, naming the topic by the id
    Metadata gave; a topic deleted and made again under the same name gets a new id: the old
    one answers UNKNOWN_TOPIC_ID, the producer refreshes its metadata and the retry lands in
    the new topic."""
    from client.sender import Sender
    sent: list[tuple[int, list[Any]]] = []
    real = Sender._produce_request

    def spy(self: Sender, conn: Any, batches: Any) -> Any:
        version, body, names = real(self, conn, batches)
        sent.append((version, [t.get("topic_id", t.get("name")) for t in body["topic_data"]]))
        return version, body, names

    monkeypatch.setattr(Sender, "_produce_request", spy)
    topic = _topic("by-id")
    await _create(module_broker.bootstrap, topic)
    async with Producer(module_broker.bootstrap, retry_backoff_ms=20) as p:
        assert (await p.send(topic, b"one")).offset == 0
        old = p._cluster.topics[topic].topic_id
        assert old is not None and sent == [(13, [old])]
        async with Admin(module_broker.bootstrap) as admin:
            await admin.delete_topic(topic)
            await admin.create_topic(topic, 1)
        md = await p.send(topic, b"again")
        new = p._cluster.topics[topic].topic_id
        assert (md.offset, md.partition) == (0, 0) and new not in (None, old)
        assert sent[1:] == [(13, [old]), (13, [new])]
    got = await aio_consume_async(module_broker.bootstrap, {(topic, 0): (0, 1)}, timeout=10)
    assert [r.value for r in got[(topic, 0)]] == [b"again"]
    # a transactional producer stays at v11, by name: v12+ belong to transactions V2 (KIP-890)
    sent.clear()
    async with Producer(module_broker.bootstrap, transactional_id=_topic("tx")) as p:
        await p.init_transactions()
        p.begin_transaction()
        await p.send(topic, b"in a transaction")
        await p.commit_transaction()
    assert sent == [(11, [topic])]


async def test_a_retriable_error_on_every_partition_of_a_v13_request_retries_them_all(tmp_path) -> None:
    """One Produce v13 request for three partitions of a topic, each answered
    NOT_LEADER_OR_FOLLOWER once (fault injection): each of the three batches is matched back
    by topic id and partition and retried, none is left "without an answer"."""
    b = BrokerProcess(str(tmp_path / "data"), faults=True).start()
    try:
        topic = _topic("every-partition")
        await _create(b.bootstrap, topic, 3)
        b.faults.fail("PRODUCE", "NOT_LEADER_OR_FOLLOWER", count=1, topic=topic)
        async with Producer(b.bootstrap, retry_backoff_ms=20, linger_ms=20) as p:
            mds = await asyncio.gather(*[p.send_nowait(topic, b"%d" % i, partition=i % 3) for i in range(30)])
        assert sorted((m.partition, m.offset) for m in mds) == sorted((i, o) for i in range(3) for o in range(10))
        assert b.faults.rules() == []
    finally:
        assert b.stop() == 0


async def test_serializers_and_type_errors(module_broker) -> None:
    topic = _topic("ser")
    async with Producer(module_broker.bootstrap, key_serializer=str.encode,
                        value_serializer=lambda v: repr(v).encode()) as p:
        await p.send(topic, {"a": 1}, key="k")
    assert [(r.key, r.value) for r in stored_records(module_broker.data_dir, topic, 0)] == [(b"k", b"{'a': 1}")]
    async with Producer(module_broker.bootstrap, linger_ms=20) as p:
        # other bytes-like keys and values (the first record opens a batch, the next ones take
        # send_nowait's inlined fast path)
        futs = [p.send_nowait(topic, bytearray(b"ba%d" % i), key=memoryview(b"mv%d" % i)) for i in range(3)]
        await asyncio.gather(*futs)
    assert [(r.key, r.value) for r in stored_records(module_broker.data_dir, topic, 0)[1:]] == \
        [(b"mv%d" % i, b"ba%d" % i) for i in range(3)]
    async with Producer(module_broker.bootstrap) as p:
        await p.send(topic, b"make metadata known")
        with pytest.raises(TypeError, match="bytes-like"):
            p.send_nowait(topic, b"ok", key="a str key")
        assert p.buffered_bytes == 0  # nothing reserved for refused records
        f = p.send_nowait(topic, b"another, so that a batch is open")
        with pytest.raises(TypeError, match="key_serializer"):
            p.send_nowait(topic, "a str")
        await f
        with pytest.raises(TypeError, match="bytes-like"):
            p.send_nowait(topic, "a str")
        with pytest.raises(TypeError, match="bytes-like"):
            p.send_nowait(_topic("unknown-yet"), "a str")


async def test_records_are_batched_per_partition(module_broker) -> None:
    topic = _topic("batch")
    await _create(module_broker.bootstrap, topic, 2)
    async with Producer(module_broker.bootstrap, batch_size=16384, linger_ms=100) as p:
        futs = [p.send_nowait(topic, b"v" * 100, partition=i % 2) for i in range(1000)]
        await p.flush()
        assert all(f.done() for f in futs)
    for part in (0, 1):
        batches = stored_batches(module_broker.data_dir, topic, part)
        # 500 records of ~110 bytes in 16 KiB batches: 4 batches, not 500
        assert 3 <= len(batches) <= 5
        assert [r.offset for r in stored_records(module_broker.data_dir, topic, part)] == list(range(500))


@pytest.mark.parametrize("acks", [0, "all"])
async def test_acks_0_and_all(module_broker, acks) -> None:
    topic = _topic("acks")
    async with Producer(module_broker.bootstrap, acks=acks) as p:
        await p.send(topic, b"metadata")
        mds = await asyncio.gather(*(p.send_nowait(topic, b"%d" % i) for i in range(50)))
    if acks == 0:
        assert {m.offset for m in mds} == {-1}  # no answer, no offsets
        for _ in range(100):  # the broker writes them all the same
            if len(stored_records(module_broker.data_dir, topic, 0)) == 51:
                break
            await asyncio.sleep(0.05)
    else:
        assert [m.offset for m in mds] == list(range(1, 51))
    assert [r.value for r in stored_records(module_broker.data_dir, topic, 0)][1:] == [b"%d" % i for i in range(50)]


async def test_log_append_time_topic_reports_the_brokers_time(module_broker) -> None:
    topic = _topic("lat")
    await _create(module_broker.bootstrap, topic, 1, **{"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    async with Producer(module_broker.bootstrap) as p:
        mds = await asyncio.gather(*(p.send_nowait(topic, b"x", timestamp_ms=1000) for _ in range(3)))
    assert all(before - 1000 <= m.timestamp <= int(time.time() * 1000) + 1000 for m in mds), mds
    assert [r.timestamp for r in stored_records(module_broker.data_dir, topic, 0)] == [m.timestamp for m in mds]


# ---------------------------------------------------------------- memory, flush, close


async def test_buffer_memory_is_a_bound_records_beyond_it_wait(module_broker) -> None:
    topic = _topic("mem")
    limit = 64 * 1024
    async with Producer(module_broker.bootstrap, batch_size=16384, buffer_memory=limit, linger_ms=0) as p:
        await p.send(topic, b"metadata")
        futs = []
        for i in range(5000):  # ~550 KB of records, no await: most of them must wait
            futs.append(p.send_nowait(topic, b"%05d" % i + b"x" * 95))
            assert p.buffered_bytes <= limit
        waiting = [f for f in futs if isinstance(f._batch, WaitGroup)]
        assert len(waiting) > 4000  # ~590 records fit in 4 batches of 16 KiB
        assert not any(f.done() for f in waiting)
        await p.drain()  # back-pressure: returns once nothing waits for memory
        assert p.buffered_bytes <= limit
        mds = await asyncio.gather(*futs)
    # everything arrived, in send order (one partition, one request in flight at a time here
    # is not required: no failures, so no reordering)
    assert [m.offset for m in mds] == list(range(1, 5001))
    assert [r.value[:5] for r in stored_records(module_broker.data_dir, topic, 0)[1:]] == [b"%05d" % i for i in range(5000)]


async def test_flush_and_close_deliver_everything(module_broker) -> None:
    topic = _topic("flush")
    async with Producer(module_broker.bootstrap, linger_ms=60_000) as p:
        f0 = p.send_nowait(topic, b"0")  # (awaiting one send would wait the whole linger)
        await p.flush()
        assert f0.done()
        f1 = p.send_nowait(topic, b"1")
        await asyncio.sleep(0.1)
        assert not f1.done()  # lingering
        t0 = time.monotonic()
        await p.flush()
        assert f1.done() and time.monotonic() - t0 < 5
        futs = [p.send_nowait(topic, b"%d" % i) for i in range(2, 500)]
    # close() flushed the lingering batch
    assert all(f.done() and f.exception() is None for f in futs)
    assert len(stored_records(module_broker.data_dir, topic, 0)) == 500
    with pytest.raises(Exception, match="closed"):
        p.send_nowait(topic, b"after close")


# ---------------------------------------------------------------- failures


async def test_broker_restart_mid_stream_is_retried(tmp_path, caplog) -> None:
    """Stop the broker (SIGTERM) while records stream, start it again on the same port and
    data dir: the producer retries and every acknowledged record is stored exactly once.

    Duplicates are possible in general: without idempotence, a batch the broker wrote whose
    answer was lost with the connection is retried and written again (after a SIGKILL, say).
    A SIGTERM stop answers the requests in flight before closing, so here there must be none;
    requests sent after the broker stopped reading are failed and retried, not written twice.
    """
    caplog.set_level(logging.DEBUG, logger="client.producer")
    port = _free_port()
    b = BrokerProcess(str(tmp_path / "data"), port=port, log_level="WARNING").start()
    topic = _topic("restart")
    try:
        async with Producer(b.bootstrap, linger_ms=2, batch_size=2048, retry_backoff_ms=50,
                            request_timeout_ms=5000, connect_timeout_ms=2000, delivery_timeout_ms=30000) as p:
            await p.send(topic, b"start")
            futs = []
            for i in range(3000):
                futs.append(p.send_nowait(topic, b"%06d" % i))
                if i % 50 == 0:
                    await asyncio.sleep(0.002)
                if i == 1000:
                    assert await asyncio.get_running_loop().run_in_executor(None, b.stop) == 0
                    await asyncio.sleep(0.3)  # records keep coming while it is down
                if i == 1500:
                    await asyncio.get_running_loop().run_in_executor(None, b.start)
                    assert b.port == port
            await p.flush()
            mds = await asyncio.gather(*futs)
        stored = stored_records(b.data_dir, topic, 0)
    finally:
        assert b.stop() == 0
    assert any(r.message.startswith("retrying") for r in caplog.records)  # the restart was noticed
    values = [r.value for r in stored[1:]]
    assert sorted(values) == [b"%06d" % i for i in range(3000)]  # all there, none twice
    by_offset = {r.offset: r.value for r in stored}
    for i, md in enumerate(mds):  # and each at the offset it was acknowledged with
        assert by_offset[md.offset] == b"%06d" % i


async def test_unknown_topic_with_auto_create_off(tmp_path) -> None:
    with BrokerProcess(str(tmp_path / "data"), overrides=["auto.create.topics.enable=false"],
                       log_level="WARNING") as b:
        async with Producer(b.bootstrap, max_block_ms=800) as p:
            t0 = time.monotonic()
            with pytest.raises(UnknownTopicOrPartitionError, match="not present in metadata after 800 ms"):
                await p.send("does-not-exist", b"x")
            assert 0.7 < time.monotonic() - t0 < 5
            fut = p.send_nowait("does-not-exist-either", b"x")
            await asyncio.wait([fut])
            assert isinstance(fut.exception(), UnknownTopicOrPartitionError)
        assert not (tmp_path / "data" / "does-not-exist-0").exists()


async def test_record_larger_than_max_message_bytes(module_broker) -> None:
    topic = _topic("large")
    await _create(module_broker.bootstrap, topic, 1, **{"max.message.bytes": "2000"})
    async with Producer(module_broker.bootstrap) as p:
        with pytest.raises(MessageTooLargeError, match="MESSAGE_TOO_LARGE"):
            await p.send(topic, b"x" * 5000)
        # a batch of small records that is too large as a whole is split and retried
        futs = [p.send_nowait(topic, b"%03d" % i + b"y" * 97) for i in range(100)]
        f_big = p.send_nowait(topic, b"z" * 3000)
        mds = await asyncio.gather(*futs)
        with pytest.raises(MessageTooLargeError):
            await f_big
        # larger than max_request_size: refused before anything is sent
        with pytest.raises(MessageTooLargeError, match="max_request_size"):
            p.send_nowait(topic, b"x" * 2_000_000)
    assert [m.offset for m in mds] == list(range(100))
    stored = stored_records(module_broker.data_dir, topic, 0)
    assert [r.value[:3] for r in stored] == [b"%03d" % i for i in range(100)]
    assert len(stored_batches(module_broker.data_dir, topic, 0)) > 5  # 10 KB went in <2 KB batches


async def test_broker_unreachable_at_start() -> None:
    port = _free_port()  # nothing listens there
    p = Producer(f"127.0.0.1:{port}", connect_timeout_ms=500, retry_backoff_ms=50)
    t0 = time.monotonic()
    with pytest.raises(KafkaConnectionError, match=rf"no broker reachable within 500 ms; tried 127.0.0.1:{port}"):
        await p.start()
    assert 0.25 < time.monotonic() - t0 < 5  # gives up when the next backoff would overshoot
    await p.close()
    with pytest.raises(Exception, match="not started"):
        p.send_nowait("t", b"x")


async def test_broker_gone_records_expire_after_delivery_timeout(tmp_path) -> None:
    b = BrokerProcess(str(tmp_path / "data"), log_level="WARNING").start()
    try:
        async with Producer(b.bootstrap, delivery_timeout_ms=1500, retry_backoff_ms=50, request_timeout_ms=500,
                            connect_timeout_ms=200, buffer_memory=32768, batch_size=16384, max_block_ms=1000) as p:
            topic = _topic("gone")
            await p.send(topic, b"ok")
            b.kill()
            t0 = time.monotonic()
            futs = [p.send_nowait(topic, b"x" * 100) for _ in range(1000)]  # beyond buffer_memory too
            results = await asyncio.gather(*futs, return_exceptions=True)
            elapsed = time.monotonic() - t0
        assert all(isinstance(r, KafkaTimeoutError) for r in results), {type(r) for r in results}
        assert 0.9 < elapsed < 10
    finally:
        b.kill()


# ---------------------------------------------------------------- send / send_and_wait


async def test_send_and_wait_is_send_and_does_not_linger_when_idle(module_broker) -> None:
    """``send`` (= aiokafka's ``send_and_wait``) waits for the acknowledgement; with the sender
    idle it seals the record's batch at once instead of lingering (an hour here)."""
    topic = _topic("awaited")
    async with Producer(module_broker.bootstrap, linger_ms=3_600_000) as p:
        assert Producer.send_and_wait is Producer.send
        mds = [await asyncio.wait_for(p.send_and_wait(topic, b"%d" % i), 30) for i in range(20)]
        assert [m.offset for m in mds] == list(range(20))
        md = await asyncio.wait_for(p.send(topic, b"last", headers=[("h", b"v")]), 30)
        assert md.offset == 20
        # send_nowait still lingers: its batch is not sent until flushed
        fut = p.send_nowait(topic, b"lingers")
        await asyncio.sleep(0.2)
        assert not fut.done()
        await p.flush()
        assert (await fut).offset == 21


async def test_cancelling_a_task_awaiting_a_record_leaves_its_batch_alone(module_broker) -> None:
    topic = _topic("cancel")
    async with Producer(module_broker.bootstrap, linger_ms=200) as p:
        await p.partitions_for(topic)
        futs = [p.send_nowait(topic, b"%d" % i) for i in range(10)]
        async def wait_for_one() -> None:
            await futs[3]

        task = asyncio.ensure_future(wait_for_one())
        await asyncio.sleep(0.01)
        task.cancel()  # cancels what the task awaits: not the batch's future
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not futs[3].cancelled()
        mds = await asyncio.gather(*futs)
    assert [m.offset for m in mds] == list(range(10))


async def test_drain_after_every_record(module_broker) -> None:
    topic = _topic("drain")
    async with Producer(module_broker.bootstrap, buffer_memory=64 * 1024) as p:
        futs = []
        for i in range(5000):
            futs.append(p.send_nowait(topic, b"%05d" % i + b"y" * 95))
            await p.drain()
            assert p.buffered_bytes <= 64 * 1024
        await p.flush()
        assert [f.result().offset for f in futs] == list(range(5000))
    assert [r.value[:5] for r in stored_records(module_broker.data_dir, topic, 0)] == [b"%05d" % i for i in range(5000)]


async def test_record_future_callbacks_fan_out_from_one_batch_callback(module_broker) -> None:
    """Callbacks on pending record futures run in order once the batch is answered; one that
    raises goes to the loop's exception handler and the rest still run; removed ones do not;
    asyncio.wait(FIRST_COMPLETED) and gather work over pending futures."""
    topic = _topic("fanout")
    loop = asyncio.get_running_loop()
    errors: list[BaseException] = []
    loop.set_exception_handler(lambda _loop, ctx: errors.append(ctx["exception"]))
    try:
        async with Producer(module_broker.bootstrap, linger_ms=100) as p:
            await p.partitions_for(topic)
            futs = [p.send_nowait(topic, b"%d" % i) for i in range(300)]
            order: list[int] = []

            def boom(_f: object) -> None:
                raise RuntimeError("callback failure")

            for i, f in enumerate(futs):
                f.add_done_callback(lambda f, i=i: order.append(i))
            futs[10].add_done_callback(boom)
            removed = lambda _f: order.append(-1)
            futs[20].add_done_callback(removed)
            assert futs[20].remove_done_callback(removed) == 1
            assert futs[20].remove_done_callback(removed) == 0
            done, pending = await asyncio.wait(futs, return_when=asyncio.FIRST_COMPLETED)
            assert done and all(f.done() for f in done)
            mds = await asyncio.gather(*futs)
            await asyncio.sleep(0)
        assert [m.offset for m in mds] == list(range(300))
        assert order == list(range(300))
        assert len(errors) == 1 and str(errors[0]) == "callback failure"
    finally:
        loop.set_exception_handler(None)
