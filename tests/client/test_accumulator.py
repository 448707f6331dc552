"""client/accumulator.py against a real broker: records that wait — sent before their topic's
metadata arrived, or beyond ``buffer_memory`` — are delivered exactly once and in send order
per partition, and their futures (``WaitGroup`` until placed) resolve with the offsets the
broker gave them, whether gathered, awaited or watched through callbacks added while waiting."""

from __future__ import annotations

import asyncio
import uuid
from collections import defaultdict

import pytest

from client import Admin, KafkaError, Producer
from client.errors import UnknownTopicOrPartitionError  # type: ignore[attr-defined]
from client.producer_batch import WaitGroup
from client.record_future import RecordFuture
from tests.broker_process import BrokerProcess
from tests.compat._clients import stored_records


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def _create(bootstrap: str, topic: str, partitions: int) -> None:
    async with Admin(bootstrap) as admin:
        await admin.create_topic(topic, partitions)


def _record(i: int) -> tuple[bytes | None, bytes, list[tuple[str, bytes | None]] | None, int | None]:
    """(key, value, headers, explicit partition) of record i: a mix of the fast path (no
    headers), headers, keys, null keys and explicit partitions."""
    key = None if i % 3 == 0 else b"key-%d" % (i % 17)
    headers = [("i", b"%d" % i)] if i % 11 == 0 else None
    partition = 2 if i % 13 == 0 else None
    return key, b"%07d" % i + b"x" * 90, headers, partition


@pytest.mark.parametrize("idempotent", [True, False])
async def test_burst_before_metadata_and_beyond_memory(module_broker, idempotent: bool) -> None:
    """The aiokafka idiom: start, send at once (no metadata yet), flush, gather. A small
    buffer_memory makes most records wait for memory as well once the metadata is in."""
    topic = _topic("burst")
    await _create(module_broker.bootstrap, topic, 3)
    n = 20_000
    async with Producer(module_broker.bootstrap, batch_size=16384, buffer_memory=128 * 1024,
                        enable_idempotence=idempotent) as p:
        futs = [p.send_nowait(topic, v, key=k, headers=h, partition=part)
                for k, v, h, part in map(_record, range(n))]
        assert all(isinstance(f, RecordFuture) and isinstance(f._batch, WaitGroup) for f in futs)
        assert not any(f.done() for f in futs)
        early = futs[5]
        seen: list[int] = []
        early.add_done_callback(lambda f: seen.append(f.result().offset))  # added while it waits
        await p.flush()
        assert all(f.done() for f in futs)  # flush waited for the records that waited
        mds = await asyncio.gather(*futs)
    await asyncio.sleep(0)
    assert seen == [mds[5].offset]
    # Per partition: offsets 0..k-1 in send order, each record stored once, in that order.
    sent: dict[int, list[int]] = defaultdict(list)
    for i, md in enumerate(mds):
        assert md.topic == topic
        key, _, _, part = _record(i)
        if part is not None:
            assert md.partition == part
        sent[md.partition].append(i)
    assert sum(map(len, sent.values())) == n and len(sent) == 3
    for partition, indexes in sent.items():
        assert [mds[i].offset for i in indexes] == list(range(len(indexes)))
        stored = stored_records(module_broker.data_dir, topic, partition)
        assert [r.value[:7] for r in stored] == [b"%07d" % i for i in indexes]
        for r in stored:
            i = int(r.value[:7])
            key, _, headers, _ = _record(i)
            assert r.key == key and list(r.headers) == (headers or [])
    # keyed records stay on their key's partition
    by_key: dict[bytes, set[int]] = defaultdict(set)
    for i, md in enumerate(mds):
        key, _, _, part = _record(i)
        if key is not None and part is None:
            by_key[key].add(md.partition)
    assert all(len(parts) == 1 for parts in by_key.values())


async def test_waiting_futures_can_be_awaited_and_watched(module_broker) -> None:
    topic = _topic("await")
    async with Producer(module_broker.bootstrap, linger_ms=0) as p:
        futs = [p.send_nowait(topic, b"%d" % i) for i in range(3000)]  # topic auto-created
        first, last = futs[0], futs[-1]
        assert repr(first).endswith("pending>")
        called: list[RecordFuture] = []
        last.add_done_callback(called.append)
        assert (await first).offset == 0  # awaiting a waiting record: placed, then answered
        md = await last
        assert md.offset == 2999
        await asyncio.sleep(0.01)
        assert called == [last] and last.done() and last.exception() is None
        # a second burst while the first one's group may still be open reuses nothing wrongly
        more = [p.send_nowait(topic, b"more") for _ in range(10)]
        assert [m.offset for m in await asyncio.gather(*more)] == list(range(3000, 3010))
    assert len(stored_records(module_broker.data_dir, topic, 0)) == 3010


async def test_waiting_records_fail_together_when_the_topic_never_comes(tmp_path) -> None:
    with BrokerProcess(str(tmp_path / "data"), overrides=["auto.create.topics.enable=false"],
                       log_level="WARNING") as b:
        async with Producer(b.bootstrap, max_block_ms=500) as p:
            futs = [p.send_nowait("missing", b"x") for _ in range(2500)]
            results = await asyncio.gather(*futs, return_exceptions=True)
            assert all(isinstance(r, UnknownTopicOrPartitionError) for r in results)
            assert all(f.done() and isinstance(f.exception(), UnknownTopicOrPartitionError) for f in futs)
            with pytest.raises(UnknownTopicOrPartitionError):
                await futs[0]


async def test_close_fails_records_still_waiting(tmp_path) -> None:
    with BrokerProcess(str(tmp_path / "data"), overrides=["auto.create.topics.enable=false"],
                       log_level="WARNING") as b:
        p = Producer(b.bootstrap, max_block_ms=60_000)
        await p.start()
        futs = [p.send_nowait("never", b"x") for _ in range(10)]
        await p.close(timeout=0.2)
        for f in futs:
            assert f.done() and isinstance(f.exception(), KafkaError)


async def test_records_that_can_never_fit_raise_at_once_before_metadata(module_broker) -> None:
    from client.errors import MessageTooLargeError  # type: ignore[attr-defined]

    topic = _topic("large")
    async with Producer(module_broker.bootstrap, max_request_size=10_000) as p:
        for value, key, headers in ((b"x" * (10_000 - 97 + 1), None, None), (b"x" * 9_000, b"k" * 1_000, None),
                                    (b"x", None, [("h", b"x" * 10_000)])):
            with pytest.raises(MessageTooLargeError):
                p.send_nowait(topic, value, key=key, headers=headers)
        with pytest.raises(TypeError):
            p.send_nowait(topic, "text")  # type: ignore[arg-type]
        ok = p.send_nowait(topic, b"x" * (10_000 - 97))  # exactly the bound: accepted
        assert (await ok).offset == 0


def _run_record(i: int) -> tuple[str, bytes | bytearray, int | None, int | None]:
    """(topic suffix, value, explicit partition, explicit timestamp) of record i: long runs of
    plain records (what ``place_run`` appends in bulk) broken by records it must leave to the
    Python path — another topic, an explicit partition, a timestamp older than the batch's
    first, a bytearray value."""
    block, j = divmod(i, 1000)
    value: bytes | bytearray = b"%07d" % i + b"r" * 60
    if block % 4 == 1:
        return "a", value, 1, None  # a run for an explicit partition
    if j % 97 == 0:
        return "b", value, None, None  # the other topic
    if j % 89 == 0:
        return "a", value, None, 1_500_000_000_000 + i  # older than the batch's first record
    if j % 83 == 0:
        return "a", bytearray(value), None, None
    return "a", value, None, None


async def test_runs_of_plain_records_are_placed_in_bulk_in_order(module_broker) -> None:
    """A burst before metadata of mostly plain records, into two topics, with a small batch
    size so that runs end at full batches too: every record stored once, in send order per
    partition, with its timestamp, and every future answers its own offset."""
    base = _topic("runs")
    topics = {"a": base + "-a", "b": base + "-b"}
    await _create(module_broker.bootstrap, topics["a"], 2)
    await _create(module_broker.bootstrap, topics["b"], 1)
    n = 12_000
    recs = [_run_record(i) for i in range(n)]
    async with Producer(module_broker.bootstrap, batch_size=4096, linger_ms=20) as p:
        futs = [p.send_nowait(topics[t], v, partition=part, timestamp_ms=ts) for t, v, part, ts in recs]
        assert all(isinstance(f._batch, WaitGroup) for f in futs)
        mds = await asyncio.gather(*futs)
    sent: dict[tuple[str, int], list[int]] = defaultdict(list)
    for i, md in enumerate(mds):
        t, _, part, ts = recs[i]
        assert md.topic == topics[t] and (part is None or md.partition == part)
        if ts is not None:
            assert md.timestamp == ts
        sent[(md.topic, md.partition)].append(i)
    assert sum(map(len, sent.values())) == n
    for (topic, partition), indexes in sent.items():
        assert [mds[i].offset for i in indexes] == list(range(len(indexes)))
        stored = stored_records(module_broker.data_dir, topic, partition)
        assert [r.value[:7] for r in stored] == [b"%07d" % i for i in indexes]
        assert [r.timestamp for r in stored] == [mds[i].timestamp for i in indexes]


async def test_append_is_the_one_append_path() -> None:
    """``RecordAccumulator.append`` (no broker: batches are only opened and sealed): the record
    goes last into its partition's open batch (index ``b.count - 1``), a full batch is sealed
    and the next opened, the sticky partition takes key-less records and the partitioner keyed
    ones, bad input raises with nothing appended, short memory answers None."""
    from client.accumulator import RecordAccumulator
    from client.records.compression import Compression
    from client.records.record import iter_records

    acc = RecordAccumulator(batch_size=300, buffer_memory=1200, compression=Compression.NONE, linger=1.0,
                            delivery_timeout=10.0, max_block=1.0, max_request_size=10_000, partitioner=None)
    sealed: list = []
    acc.sealed = sealed.append
    acc.start(asyncio.get_running_loop())
    acc.add_topic("t", 3)
    ts = acc.topics["t"]
    ts.sticky = 1
    b = acc.append(ts, b"a" * 50, None, None, None, 1000)
    assert b is not None and (b.partition, b.count) == (1, 1)
    assert acc.append(ts, b"b" * 50, None, [("h", b"1")], None, 1001) is b and b.count == 2  # try_append
    keyed = acc.append(ts, b"c", b"some-key", None, None, 1002)
    assert keyed is not None and keyed.partition == acc.partition_for(ts, b"some-key")
    assert acc.append(ts, b"d", None, None, 2, 1003) is ts.open[2]
    with pytest.raises(ValueError):
        acc.append(ts, b"e", None, None, 3, 1004)
    with pytest.raises(TypeError, match="bytes-like"):
        acc.append(ts, "not bytes", None, None, 1, 1005)
    assert b.count == 2 and not sealed
    while (nb := acc.append(ts, b"f" * 100, None, None, 1, 1006)) is b:
        pass
    assert sealed == [b] and nb is not None and nb.partition == 1 and nb.count == 1  # b full: sealed, next opened
    assert [r.value for r in iter_records(b.seal())][:2] == [b"a" * 50, b"b" * 50]
    acc.used = acc.buffer_memory  # no memory left: a record that needs a new batch is refused
    assert acc.append(ts, b"h" * 250, None, None, 1, 1007) is None
    assert sealed == [b, nb] and nb.count == 1  # nb was full for it: sealed, nothing appended
