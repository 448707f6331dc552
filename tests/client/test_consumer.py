"""Tests for ``client/consumer.py`` (and ``client/consumer_records.py``) against a real broker process.

Records are written with raw Produce requests of batches built here (``RecordBatchBuilder``),
so each test controls batch boundaries, codecs, headers and timestamps exactly; the
cross-client tests at the end read what kafka-python and confluent-kafka produced.
"""

from __future__ import annotations

import asyncio
import glob
import os
import random
import re
import time

import pytest

from client.conn import BrokerConnection
from client.consumer import (
    ColumnBatch,
    Consumer,
    ConsumerRecord,
    IllegalStateError,
    NoOffsetForPartitionError,
)
from client.errors import ERRORS, KafkaError
from client.protocol.api import ApiKey, ErrorCode
from client.records.record import RecordBatchBuilder
from client.structs import TopicPartition

CorruptMessageError = ERRORS[ErrorCode.CORRUPT_MESSAGE]
OffsetOutOfRangeError = ERRORS[ErrorCode.OFFSET_OUT_OF_RANGE]
UnknownTopicOrPartitionError = ERRORS[ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
TS0 = 1_700_000_000_000
FAST = {"fetch_max_wait_ms": 100, "request_timeout_ms": 5000, "connect_timeout_ms": 5000}


@pytest.fixture
def topic(request: pytest.FixtureRequest) -> str:
    return re.sub(r"[^a-zA-Z0-9._-]+", "-", request.node.name).strip("-")[:200]


async def _conn(bootstrap: str) -> BrokerConnection:
    host, port = bootstrap.rsplit(":", 1)
    return await BrokerConnection.connect(host, int(port))


async def create_topic(bootstrap: str, name: str, partitions: int = 1) -> None:
    conn = await _conn(bootstrap)
    try:
        resp = await conn.request(ApiKey.CREATE_TOPICS, conn.pick_version(ApiKey.CREATE_TOPICS), {
            "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
                        "configs": []}], "timeout_ms": 5000})
        assert resp["topics"][0]["error_code"] in (0, ErrorCode.TOPIC_ALREADY_EXISTS), resp
    finally:
        await conn.close()


def batch(values, *, keys=None, headers=None, ts=None, codec="none", log_append_time=False) -> bytes:
    """One RecordBatch of ``values`` (keys/headers/timestamps per record when given)."""
    b = RecordBatchBuilder(codec, log_append_time=log_append_time)
    for i, v in enumerate(values):
        b.append(v, None if keys is None else keys[i], () if headers is None else headers[i],
                 TS0 + i if ts is None else ts[i])
    return bytes(b.build())


async def produce(bootstrap: str, topic: str, batches, partition: int = 0) -> list[int]:
    """Write each batch with its own Produce request; returns their base offsets."""
    conn = await _conn(bootstrap)
    out = []
    try:
        version = min(conn.pick_version(ApiKey.PRODUCE), 12)  # v13 names topics by id: this names them
        for b in batches:
            resp = await conn.request(ApiKey.PRODUCE, version, {
                "transactional_id": None, "acks": 1, "timeout_ms": 5000,
                "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": b}]}]})
            pr = resp["responses"][0]["partition_responses"][0]
            assert pr["error_code"] == 0, pr
            out.append(pr["base_offset"])
    finally:
        await conn.close()
    return out


async def setup(bootstrap: str, topic: str, batches, partitions: int = 1, partition: int = 0) -> list[int]:
    await create_topic(bootstrap, topic, partitions)
    return await produce(bootstrap, topic, batches, partition)


async def drain(c: Consumer, n: int, timeout: float = 10.0, **kw) -> list[ConsumerRecord]:
    """getmany until ``n`` records arrived."""
    out: list[ConsumerRecord] = []
    deadline = time.monotonic() + timeout
    while len(out) < n:
        assert time.monotonic() < deadline, f"only {len(out)} of {n} records arrived"
        for recs in (await c.getmany(timeout_ms=200, **kw)).values():
            out.extend(recs)
    return out


def values(n: int, size: int = 20, tag: str = "v") -> list[bytes]:
    return [(f"{tag}{i}-".encode() * size)[:size] for i in range(n)]


# ---------------------------------------------------------------- positions and seeks


async def test_assign_seek_getmany_position(module_broker, topic):
    bs = module_broker.bootstrap
    await setup(bs, topic, [batch(values(10, tag=f"b{j}")) for j in range(3)])
    async with Consumer(bs, **FAST) as c:
        c.assign([(topic, 0)])
        assert c.assignment() == {TopicPartition(topic, 0)}
        c.seek((topic, 0), 5)
        got = await drain(c, 25)
        assert [r.offset for r in got] == list(range(5, 30))
        assert got[0].value == values(10, tag="b0")[5]
        assert got[-1] == ConsumerRecord(topic, 0, 29, TS0 + 9, 0, None, values(10, tag="b2")[9], ())
        assert await c.position((topic, 0)) == 30
        assert c.highwater((topic, 0)) == 30
        assert await c.getmany() == {}  # nothing buffered: timeout 0 returns at once
        assert await c.beginning_offsets([(topic, 0)]) == {(topic, 0): 0}
        assert await c.end_offsets([(topic, 0)]) == {(topic, 0): 30}


async def test_seek_to_beginning_end_and_timestamp(module_broker, topic):
    bs = module_broker.bootstrap
    ts = [TS0 + 10 * i for i in range(20)]
    await setup(bs, topic, [batch(values(10), ts=ts[:10]), batch(values(10), ts=ts[10:])])
    async with Consumer(bs, **FAST) as c:
        c.assign([(topic, 0)])
        await c.seek_to_timestamp(TS0 + 55)  # first record with ts >= 55 is offset 6
        assert await c.position((topic, 0)) == 6
        got = await drain(c, 14)
        assert [r.timestamp for r in got] == ts[6:]
        await c.seek_to_timestamp(TS0 + 1_000_000)  # later than every record: the log end
        assert await c.position((topic, 0)) == 20
        await c.seek_to_beginning()
        assert await c.position((topic, 0)) == 0
        assert (await drain(c, 20))[0].offset == 0
        await c.seek_to_end((topic, 0))
        assert await c.position((topic, 0)) == 20
        found = await c.offsets_for_times({(topic, 0): TS0 + 100})
        assert found[(topic, 0)].offset == 10 and found[(topic, 0)].timestamp == TS0 + 100
        assert (await c.offsets_for_times({(topic, 0): TS0 + 10**9}))[(topic, 0)] is None


async def test_async_for_position_is_exact(module_broker, topic):
    bs = module_broker.bootstrap
    await setup(bs, topic, [batch(values(50)), batch(values(50, tag="w"))])
    async with Consumer(bs, auto_offset_reset="earliest", **FAST) as c:
        c.assign([(topic, 0)])
        seen = []
        async for r in c:
            seen.append(r)
            if len(seen) == 37:
                break
        assert [r.offset for r in seen] == list(range(37))
        assert await c.position((topic, 0)) == 37  # mid-batch: exactly after the last one handed out
        rest = await drain(c, 63)  # getmany continues from there: nothing lost, nothing twice
        assert [r.offset for r in rest] == list(range(37, 100))
        c.seek((topic, 0), 98)
        assert (await c.getone()).offset == 98
        assert await c.position((topic, 0)) == 99


async def test_getmany_max_records_and_partitions(module_broker, topic):
    bs = module_broker.bootstrap
    await create_topic(bs, topic, 3)
    for p in range(3):
        await produce(bs, topic, [batch(values(30, tag=f"p{p}"))] * 2, partition=p)
    async with Consumer(bs, auto_offset_reset="earliest", **FAST) as c:
        c.assign([(topic, p) for p in range(3)])
        per: dict[int, list[int]] = {0: [], 1: [], 2: []}
        deadline = time.monotonic() + 10
        while sum(map(len, per.values())) < 180:
            assert time.monotonic() < deadline
            got = await c.getmany(timeout_ms=200, max_records=7)
            assert sum(map(len, got.values())) <= 7
            for tp, recs in got.items():
                per[tp.partition].extend(r.offset for r in recs)
        assert per == {p: list(range(60)) for p in range(3)}
        c.seek((topic, 1), 10)
        got = await c.getmany((topic, 1), timeout_ms=2000, max_records=5)
        assert list(got) == [(topic, 1)] and [r.offset for r in got[(topic, 1)]] == list(range(10, 15))


async def test_next_fetch_is_in_flight_while_the_application_works(module_broker, topic):
    bs = module_broker.bootstrap
    await setup(bs, topic, [batch(values(20, size=100)) for _ in range(10)])
    # Each fetch brings ~2 batches (partition_max_bytes), so there are several ranges to fetch.
    async with Consumer(bs, auto_offset_reset="earliest", max_partition_fetch_bytes=5000, **FAST) as c:
        c.assign([(topic, 0)])
        part = c._parts[TopicPartition(topic, 0)]
        total = 0
        checks = 0
        while total < 200:
            got = await c.getmany(timeout_ms=2000, max_records=20)
            total += sum(map(len, got.values()))
            if total < 180:
                # Handed a range: the next one is requested already (or already here).
                assert part.in_flight or part.chunks, "no fetch in flight while the application works"
                checks += 1
        assert checks >= 5


async def test_bounded_read_stops_fetching_at_until(module_broker, topic):
    bs = module_broker.bootstrap
    await setup(bs, topic, [batch(values(5, tag=f"b{j}")) for j in range(6)])  # batches [0,5) ... [25,30)
    async with Consumer(bs, fetch_max_wait_ms=5000, max_partition_fetch_bytes=200, request_timeout_ms=10000) as c:
        c.assign([(topic, 0)])
        c.seek((topic, 0), 3, until=12)
        got = await drain(c, 12)  # whole batches: [3, 15), none past the one holding offset 11
        assert [r.offset for r in got] == list(range(3, 15))
        part = c._parts[TopicPartition(topic, 0)]
        await asyncio.sleep(0.3)
        assert not part.in_flight and not part.chunks  # no long poll left waiting past the range
        assert await c.getmany(timeout_ms=200) == {}
        # another partition's request on the same connection is answered at once
        t0 = time.monotonic()
        c.seek((topic, 0), 25)
        assert [r.offset for r in await drain(c, 5)] == list(range(25, 30))
        assert time.monotonic() - t0 < 2.5


async def test_long_poll_returns_when_records_arrive(module_broker, topic):
    bs = module_broker.bootstrap
    await setup(bs, topic, [batch([b"first"])])
    async with Consumer(bs, fetch_max_wait_ms=5000, request_timeout_ms=10000) as c:
        c.assign([(topic, 0)])
        await c.seek_to_end()
        waiter = asyncio.ensure_future(c.getmany(timeout_ms=8000))
        await asyncio.sleep(0.5)
        assert not waiter.done()
        t0 = time.monotonic()
        await produce(bs, topic, [batch([b"second"])])
        got = await asyncio.wait_for(waiter, 5)
        assert time.monotonic() - t0 < 2.5  # the broker answered the long poll on the append
        assert [r.value for r in got[(topic, 0)]] == [b"second"]


async def test_fetch_min_bytes_waits_for_enough_data(module_broker, topic):
    bs = module_broker.bootstrap
    await setup(bs, topic, [batch([b"x" * 10])])
    async with Consumer(bs, auto_offset_reset="earliest", fetch_min_bytes=100_000, fetch_max_wait_ms=600) as c:
        c.assign([(topic, 0)])
        t0 = time.monotonic()
        got = await c.getmany(timeout_ms=5000)
        assert [r.value for r in got[(topic, 0)]] == [b"x" * 10]
        assert time.monotonic() - t0 >= 0.5  # min_bytes not reached: answered at max_wait


# ---------------------------------------------------------------- record contents


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
async def test_codecs(module_broker, topic, codec):
    bs = module_broker.bootstrap
    rnd = random.Random(codec)
    vals = [bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(0, 300))) for _ in range(300)]
    keys = [None if i % 5 == 0 else b"key-%d" % i for i in range(300)]
    await setup(bs, topic, [batch(vals[:150], keys=keys[:150], codec=codec),
                            batch(vals[150:], keys=keys[150:], codec=codec)])
    async with Consumer(bs, auto_offset_reset="earliest", **FAST) as c:
        c.assign([(topic, 0)])
        got = await drain(c, 300)
        assert [r.value for r in got] == vals and [r.key for r in got] == keys
        await c.seek_to_beginning()
        cbs: list[ColumnBatch] = []
        while sum(map(len, cbs)) < 300:
            cbs += await c.getbatches(timeout_ms=2000)
        assert [r for cb in cbs for r in cb.to_records()] == got


async def test_headers_nulls_and_log_append_time(module_broker, topic):
    bs = module_broker.bootstrap
    hdrs = [(), (("a", b"1"),), (("émoji-ключ", None), ("b", b"")), (("dup", b"x"), ("dup", b"y"))]
    await setup(bs, topic, [batch([b"v", None, b"", b"x" * 70000], keys=[None, b"", b"k", None], headers=hdrs),
                            batch([b"lat"], log_append_time=True)])
    async with Consumer(bs, auto_offset_reset="earliest", **FAST) as c:
        c.assign([(topic, 0)])
        got = await drain(c, 5)
        assert [r.headers for r in got[:4]] == hdrs
        assert [r.value for r in got[:4]] == [b"v", None, b"", b"x" * 70000]
        assert [r.key for r in got[:4]] == [None, b"", b"k", None]
        assert [r.timestamp_type for r in got] == [0, 0, 0, 0, 1]


async def test_partial_trailing_batches_are_ignored(module_broker, topic):
    bs = module_broker.bootstrap
    batches = [batch(values(7, size=90, tag=f"b{j}-")) for j in range(12)]
    size = len(batches[0])
    await setup(bs, topic, batches)
    # Fetches of 2.5 batches: every answer ends with a partial batch, which must be dropped and
    # fetched again (whole) next time.
    async with Consumer(bs, auto_offset_reset="earliest", max_partition_fetch_bytes=int(size * 2.5), **FAST) as c:
        c.assign([(topic, 0)])
        got = await drain(c, 84)
        assert [r.offset for r in got] == list(range(84))
        assert [r.value for r in got] == [v for j in range(12) for v in values(7, size=90, tag=f"b{j}-")]


async def test_a_batch_larger_than_the_partition_limit_is_not_starved(module_broker, topic):
    bs = module_broker.bootstrap
    await create_topic(bs, topic, 2)
    await produce(bs, topic, [batch(values(5, size=100))] * 20, partition=0)
    await produce(bs, topic, [batch(values(50, size=200))], partition=1)  # ~10 KB in one batch
    async with Consumer(bs, auto_offset_reset="earliest", max_partition_fetch_bytes=3000, **FAST) as c:
        c.assign([(topic, 0), (topic, 1)])
        seen = {0: 0, 1: 0}
        deadline = time.monotonic() + 10
        while seen[0] < 100 or seen[1] < 50:
            assert time.monotonic() < deadline, seen
            for tp, recs in (await c.getmany(timeout_ms=200)).items():
                seen[tp.partition] += len(recs)
        assert seen == {0: 100, 1: 50}


def _corrupt_value_on_disk(data_dir: str, topic: str, needle: bytes) -> None:
    [path] = glob.glob(os.path.join(data_dir, f"{topic}-0", "*.log"))
    with open(path, "r+b") as f:
        buf = f.read()
        i = buf.index(needle)
        f.seek(i)
        f.write(b"X")


async def test_crc_corruption_is_detected(module_broker, topic):
    bs = module_broker.bootstrap
    await setup(bs, topic, [batch([b"good-%d" % i for i in range(5)]), batch([b"bad-0", b"bad-1"]),
                            batch([b"after"])])
    _corrupt_value_on_disk(module_broker.data_dir, topic, b"bad-1")
    async with Consumer(bs, auto_offset_reset="earliest", **FAST) as c:
        c.assign([(topic, 0)])
        got = await drain(c, 5)  # the records before the bad batch come first
        assert [r.value for r in got] == [b"good-%d" % i for i in range(5)]
        with pytest.raises(CorruptMessageError, match="CRC"):
            await c.getmany(timeout_ms=3000)
        assert await c.position((topic, 0)) == 5
        with pytest.raises(CorruptMessageError):  # again: no silent skipping past bad data
            await c.getmany(timeout_ms=3000)
        c.seek((topic, 0), 7)  # the application decides to skip it
        assert [r.value for r in await drain(c, 1)] == [b"after"]
        c.seek((topic, 0), 5)
        with pytest.raises(KafkaError):
            async for _ in c:
                pass
        c.seek((topic, 0), 5)
        with pytest.raises(CorruptMessageError):
            await c.getbatches(timeout_ms=3000)
    async with Consumer(bs, auto_offset_reset="earliest", check_crcs=False, **FAST) as c:
        c.assign([(topic, 0)])
        got = await drain(c, 8)
        assert [r.value for r in got[5:7]] == [b"bad-0", b"Xad-1"]


# ---------------------------------------------------------------- auto_offset_reset


async def test_auto_offset_reset(module_broker, topic):
    bs = module_broker.bootstrap
    await setup(bs, topic, [batch([b"a", b"b", b"c"])])
    async with Consumer(bs, auto_offset_reset="earliest", **FAST) as c:
        c.assign([(topic, 0)])
        assert await c.position((topic, 0)) == 0
        assert [r.value for r in await drain(c, 3)] == [b"a", b"b", b"c"]
        c.seek((topic, 0), 1000)  # out of range: reset to earliest
        assert [r.offset for r in await drain(c, 3)] == [0, 1, 2]
    async with Consumer(bs, auto_offset_reset="latest", **FAST) as c:
        c.assign([(topic, 0)])
        assert await c.getmany(timeout_ms=500) == {}
        assert await c.position((topic, 0)) == 3
        await produce(bs, topic, [batch([b"d"])])
        assert [r.value for r in await drain(c, 1)] == [b"d"]
        c.seek((topic, 0), 1000)
        await asyncio.sleep(0.3)
        await produce(bs, topic, [batch([b"e"])])
        assert [r.value for r in await drain(c, 1)] == [b"e"]
    async with Consumer(bs, auto_offset_reset="none", **FAST) as c:
        c.assign([(topic, 0)])
        with pytest.raises(NoOffsetForPartitionError):
            await c.getmany(timeout_ms=2000)
        with pytest.raises(NoOffsetForPartitionError):
            await c.position((topic, 0))
        c.seek((topic, 0), 1000)
        with pytest.raises(OffsetOutOfRangeError, match="out of range"):
            await c.getmany(timeout_ms=2000)
        c.seek((topic, 0), 4)
        assert [r.value for r in await drain(c, 1)] == [b"e"]


# ---------------------------------------------------------------- bulk mode


async def test_bulk_columns_equal_per_record_decode(module_broker, topic):
    bs = module_broker.bootstrap
    rnd = random.Random(7)
    batches, n = [], 0
    for j in range(8):
        k = rnd.randrange(1, 200)
        vals = [None if rnd.random() < 0.1 else rnd.randbytes(rnd.randrange(0, 120)) for _ in range(k)]
        keys = [None if rnd.random() < 0.5 else rnd.randbytes(rnd.randrange(0, 10)) for _ in range(k)]
        hdrs = [(("h", rnd.randbytes(3)),) if rnd.random() < 0.2 else () for _ in range(k)]
        batches.append(batch(vals, keys=keys, headers=hdrs, codec=["none", "zstd"][j % 2]))
        n += k
    await setup(bs, topic, batches)
    async with Consumer(bs, auto_offset_reset="earliest", **FAST) as c:
        c.assign([(topic, 0)])
        rows = await drain(c, n)
        c.seek((topic, 0), 3)  # mid-batch: the first ColumnBatch starts at offset 3
        cbs: list[ColumnBatch] = []
        while sum(map(len, cbs)) < n - 3:
            got = await c.getbatches(timeout_ms=2000, max_records=150)
            assert sum(map(len, got)) <= 150
            cbs += got
        assert cbs[0].offsets[0] == 3
        assert [r for cb in cbs for r in cb.to_records()] == rows[3:]
        for cb in cbs:
            assert len(cb.values.offsets) == len(cb) + 1
            assert cb.values.data == b"".join(v for v in cb.values.to_pylist() if v is not None)
            assert cb.topic == topic and cb.partition == 0 and cb.timestamp_type == 0
        assert await c.position((topic, 0)) == n
        # Switching modes mid-batch loses nothing.
        c.seek((topic, 0), 0)
        first = await c.getmany(timeout_ms=2000, max_records=5)
        more = await c.getbatches(timeout_ms=2000, max_records=10)
        again = await c.getmany(timeout_ms=2000, max_records=5)
        offs = [r.offset for r in first[(topic, 0)]] + [o for cb in more for o in cb.offsets] \
            + [r.offset for r in again[(topic, 0)]]
        assert offs == list(range(20))


async def test_batches_iterator(module_broker, topic):
    bs = module_broker.bootstrap
    await setup(bs, topic, [batch(values(10)) for _ in range(3)])
    async with Consumer(bs, auto_offset_reset="earliest", **FAST) as c:
        c.assign([(topic, 0)])
        seen = []
        async for cb in c.batches():
            seen.append(cb)
            assert await c.position((topic, 0)) == cb.next_offset
            if sum(map(len, seen)) == 30:
                break
        assert [list(cb.offsets) for cb in seen] == [list(range(0, 10)), list(range(10, 20)), list(range(20, 30))]


# ---------------------------------------------------------------- misuse and errors


async def test_misuse_errors(module_broker, topic):
    bs = module_broker.bootstrap
    await create_topic(bs, topic, 1)
    c = Consumer(bs, **FAST)
    c.assign([(topic, 0)])
    with pytest.raises(IllegalStateError, match="not started"):
        await c.getmany(timeout_ms=10)
    async with c:
        with pytest.raises(IllegalStateError, match="not assigned"):
            c.seek((topic, 5), 0)
        with pytest.raises(ValueError):
            c.seek((topic, 0), -1)
        with pytest.raises(UnknownTopicOrPartitionError):
            await c.partitions_for_topic("no-such-topic-" + topic)
        assert await c.partitions_for_topic(topic) == {0}
    with pytest.raises(ValueError, match="auto_offset_reset"):
        Consumer(bs, auto_offset_reset="smallest")


async def test_unreachable_broker():
    from client.errors import KafkaConnectionError

    with pytest.raises(KafkaConnectionError, match="127.0.0.1:1"):
        async with Consumer("127.0.0.1:1", connect_timeout_ms=300):
            pass


# ---------------------------------------------------------------- other clients' records


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # kafka-python's schema loading
@pytest.mark.parametrize("client", ["kafka-python", "confluent"])
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_records_of_other_clients_are_read_byte_exact(module_broker, topic, client, codec):
    from tests.compat._clients import PRODUCERS, Msg, stored_records

    bs = module_broker.bootstrap
    asyncio.run(create_topic(bs, topic, 1))
    rnd = random.Random(f"{client}-{codec}")
    msgs = [Msg(None if i % 4 == 0 else b"key-%d" % i,
                None if i == 7 else rnd.randbytes(rnd.randrange(0, 400)),
                (("trace", b"t-%d" % i), ("empty", b"" if client == "kafka-python" else None)) if i % 3 == 0 else (),
                TS0 + i if i % 2 else None) for i in range(200)]
    offsets = PRODUCERS[client](bs, topic, 0, msgs, codec)
    assert offsets == list(range(200))

    async def read() -> list[ConsumerRecord]:
        async with Consumer(bs, auto_offset_reset="earliest", **FAST) as c:
            c.assign([(topic, 0)])
            return await drain(c, 200)

    got = asyncio.run(read())
    stored = stored_records(module_broker.data_dir, topic, 0)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in got] == [tuple(s) for s in stored]
    assert [(r.key, r.value, r.headers) for r in got] == [(m.key, m.value, m.headers) for m in msgs]
    assert all(r.timestamp == m.timestamp for r, m in zip(got, msgs) if m.timestamp is not None)


async def test_a_decompression_bomb_on_disk_is_refused_at_the_bound(tmp_path):
    """A zstd batch inflating to 512 MiB already in the log (the broker refuses such a batch
    from a producer, so it is written below the broker): the consumer refuses to inflate it
    past max(64 MiB, fetch_max_bytes) and reports CORRUPT_MESSAGE naming the limit; its memory
    stays far below the inflated size."""
    import resource

    from broker.storage.config import LogConfig
    from broker.storage.log_manager import LogManager
    from client.records import Compression, build_batch, set_base_offset
    from tests.broker_process import BrokerProcess
    from tests.records.test_compression import zeros_compressed
    from tests.records.test_record import set_records_section

    data = str(tmp_path / "data")
    m = LogManager(data, LogConfig())
    m.startup()
    m.create_topic("bombed", 1)
    log = m.logs[("bombed", 0)]
    log.append(build_batch([(None, b"before")]))
    bomb = set_records_section(bytearray(build_batch([(None, b"x")], Compression.ZSTD)),
                               zeros_compressed(Compression.ZSTD, 512 << 20))
    set_base_offset(bomb, 1)
    log.append(bomb, assign_offsets=False)  # already-offset batches: records not walked
    m.shutdown()
    with BrokerProcess(data) as b:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        async with Consumer(b.bootstrap, auto_offset_reset="earliest", **FAST) as c:
            c.assign([("bombed", 0)])
            assert [r.value for r in await drain(c, 1)] == [b"before"]
            with pytest.raises(CorruptMessageError, match="above the limit of 67108864 bytes"):
                await c.getmany(timeout_ms=3000)
        assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KB
