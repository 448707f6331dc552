"""The ``client-idioms`` section of ``scripts/bench.py``: our client in the idioms users write,
each side by side with aiokafka and confluent-kafka on the benchmark's broker, in one run.

Every client runs with its own defaults except ``acks=1`` (confluent-kafka's default is
``all``) — the point is what a user gets without tuning: ours ``linger_ms=5``, 16 KiB
batches; aiokafka ``linger_ms=0``, 16 KiB batches; librdkafka ``linger.ms=5``, 1 MB batches.
Records are 100-byte values without keys into a fresh 1-partition topic per run (created
beforehand, so "start" includes connecting and fetching the topic's metadata, not creating it).

Idioms (records/s; wall time from the first call to the last acknowledgement or record):

- ``burst``: start a producer and at once call ``send`` N times without awaiting anything
  (ours ``send_nowait``, aiokafka ``await send()`` which returns a future, confluent
  ``produce()`` with ``poll`` on BufferError), then ``flush()`` and ``gather`` every future
  (confluent: delivery callbacks). Start-up is inside the clock: the records sent before the
  metadata arrives are part of the idiom.
- ``awaited``: one record at a time, waiting for each acknowledgement (ours ``await
  send_and_wait()``, aiokafka ``await send_and_wait()``, confluent ``produce()`` + ``flush()``);
  latency-bound, ``--idiom-awaited`` records.
- ``drain``: ``send`` then back-pressure every record, StreamWriter style (ours ``send_nowait``
  + ``await drain()``; aiokafka ``await send()``, which blocks only when its buffer is full, then
  ``gather``; confluent ``produce()`` + ``poll(0)``), then ``flush``.
- ``async for`` / ``getmany``: N records read from offset 0 one at a time (``async for``;
  confluent ``poll()``) and ``getmany`` with each client's default record limit (aiokafka: no
  limit; confluent ``consume(500)``).
- ``sync``: our ``SyncProducer`` (``send_nowait`` loop + ``flush``; ``send`` one at a time,
  ``--idiom-awaited`` records) and ``SyncConsumer`` iteration; aiokafka has no blocking API, so
  its figure is the same idiom written with asyncio (above), and confluent's is its native API.

Targets: every idiom of ours >= 3x aiokafka, and burst >= 500,000 records/s.

For scale, the round-trip floors of the two one-at-a-time idioms (``awaited`` and sync ``send``),
no client library: one single-record Produce (acks=1, the same 100-byte record, encoded once)
at a time, ``--idiom-awaited`` times, (1) ``raw socket``: ``sendall`` and a blocking ``recv`` of the
reply in this thread; (2) ``asyncio protocol``: on the idioms' event loop (uvloop), an
``asyncio.Protocol`` whose ``data_received`` resolves a future per request, awaited before the
next ``transport.write`` — what any asyncio client's awaited send costs before its own code. The
rows print what 3x aiokafka's awaited send would need beside them.

And one more row, with no client and no broker: ``asyncio.gather`` over N asyncio
futures that are already done (``loop.create_future()`` + ``set_result``), the floor of any
burst idiom that ends in ``gather`` with futures of asyncio's own kind. With N = 1,000,000
most of it is the garbage collector's full passes over the million futures and results the
idiom keeps alive.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

from _bench_clients import _run_async, create_topic, end_offset
from _bench_requests import connect, encode, produce_body, read_frame

from client.protocol import ApiKey

VALUE_SIZE = 100

IDIOM_TARGETS: dict[str, tuple[str, float]] = {
    "idiom_burst_rps": (">=", 500_000),
    "idiom_ratio": (">=", 3.0),
}

Run = Callable[[str, str, int], float]  # (bootstrap, topic, n) -> seconds


# ---------------------------------------------------------------- ours


async def _ours_burst(bootstrap: str, topic: str, n: int) -> float:
    from client import Producer

    value = b"v" * VALUE_SIZE
    t0 = time.perf_counter()
    async with Producer(bootstrap, acks=1) as p:
        send = p.send_nowait
        futs = [send(topic, value) for _ in range(n)]
        await p.flush()
        mds = await asyncio.gather(*futs)
    dt = time.perf_counter() - t0
    _check_offsets([m.offset for m in mds])
    return dt


async def _ours_awaited(bootstrap: str, topic: str, n: int) -> float:
    from client import Producer

    value = b"v" * VALUE_SIZE
    async with Producer(bootstrap, acks=1) as p:
        await p.partitions_for(topic)
        send = p.send_and_wait if hasattr(p, "send_and_wait") else p.send
        t0 = time.perf_counter()
        for _ in range(n):
            await send(topic, value)
        return time.perf_counter() - t0


async def _ours_drain(bootstrap: str, topic: str, n: int) -> float:
    from client import Producer

    value = b"v" * VALUE_SIZE
    async with Producer(bootstrap, acks=1) as p:
        await p.partitions_for(topic)
        send, drain = p.send_nowait, p.drain
        t0 = time.perf_counter()
        for _ in range(n):
            send(topic, value)
            await drain()
        await p.flush()
        return time.perf_counter() - t0


async def _ours_async_for(bootstrap: str, topic: str, n: int) -> float:
    from client import Consumer

    async with Consumer(bootstrap) as c:
        c.assign([(topic, 0)])
        c.seek((topic, 0), 0)
        got = 0
        t0 = time.perf_counter()
        async for _r in c:
            got += 1
            if got == n:
                break
        return time.perf_counter() - t0


async def _ours_getmany(bootstrap: str, topic: str, n: int) -> float:
    from client import Consumer

    async with Consumer(bootstrap) as c:
        c.assign([(topic, 0)])
        c.seek((topic, 0), 0)
        got = 0
        t0 = time.perf_counter()
        while got < n:
            for rows in (await c.getmany(timeout_ms=1000)).values():
                got += len(rows)
        return time.perf_counter() - t0


def _ours_sync_burst(bootstrap: str, topic: str, n: int) -> float:
    from client.sync import SyncProducer

    value = b"v" * VALUE_SIZE
    t0 = time.perf_counter()
    with SyncProducer(bootstrap, acks=1) as p:
        send = p.send_nowait
        futs = [send(topic, value) for _ in range(n)]
        p.flush()
        last = futs[-1].result()
    dt = time.perf_counter() - t0
    if last.offset != n - 1:
        raise RuntimeError(f"sync burst: last offset {last.offset}, expected {n - 1}")
    return dt


def _ours_sync_awaited(bootstrap: str, topic: str, n: int) -> float:
    from client.sync import SyncProducer

    value = b"v" * VALUE_SIZE
    with SyncProducer(bootstrap, acks=1) as p:
        p.partitions_for(topic)
        send = p.send
        t0 = time.perf_counter()
        for _ in range(n):
            send(topic, value)
        return time.perf_counter() - t0


def _ours_sync_iter(bootstrap: str, topic: str, n: int) -> float:
    from client.sync import SyncConsumer

    with SyncConsumer(bootstrap) as c:
        c.assign([(topic, 0)])
        c.seek((topic, 0), 0)
        got = 0
        t0 = time.perf_counter()
        for _r in c:
            got += 1
            if got == n:
                break
        return time.perf_counter() - t0


# ---------------------------------------------------------------- aiokafka


async def _aio_burst(bootstrap: str, topic: str, n: int) -> float:
    from aiokafka import AIOKafkaProducer

    value = b"v" * VALUE_SIZE
    t0 = time.perf_counter()
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=1)
    await p.start()
    try:
        send = p.send
        futs = [await send(topic, value) for _ in range(n)]
        await p.flush()
        mds = await asyncio.gather(*futs)
    finally:
        await p.stop()
    dt = time.perf_counter() - t0
    _check_offsets([m.offset for m in mds])
    return dt


async def _aio_awaited(bootstrap: str, topic: str, n: int) -> float:
    from aiokafka import AIOKafkaProducer

    value = b"v" * VALUE_SIZE
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=1)
    await p.start()
    try:
        await p.partitions_for(topic)
        send = p.send_and_wait
        t0 = time.perf_counter()
        for _ in range(n):
            await send(topic, value)
        return time.perf_counter() - t0
    finally:
        await p.stop()


async def _aio_drain(bootstrap: str, topic: str, n: int) -> float:
    from aiokafka import AIOKafkaProducer

    value = b"v" * VALUE_SIZE
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=1)
    await p.start()
    try:
        await p.partitions_for(topic)
        send = p.send
        t0 = time.perf_counter()
        futs = [await send(topic, value) for _ in range(n)]
        await p.flush()
        await asyncio.gather(*futs)
        return time.perf_counter() - t0
    finally:
        await p.stop()


def _aio_consumer(bootstrap: str) -> Any:
    from aiokafka import AIOKafkaConsumer

    return AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)


async def _aio_async_for(bootstrap: str, topic: str, n: int) -> float:
    from aiokafka import TopicPartition

    c = _aio_consumer(bootstrap)
    await c.start()
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek(tp, 0)
        got = 0
        t0 = time.perf_counter()
        async for _r in c:
            got += 1
            if got == n:
                break
        return time.perf_counter() - t0
    finally:
        await c.stop()


async def _aio_getmany(bootstrap: str, topic: str, n: int) -> float:
    from aiokafka import TopicPartition

    c = _aio_consumer(bootstrap)
    await c.start()
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek(tp, 0)
        got = 0
        t0 = time.perf_counter()
        while got < n:
            for rows in (await c.getmany(timeout_ms=1000)).values():
                got += len(rows)
        return time.perf_counter() - t0
    finally:
        await c.stop()


# ---------------------------------------------------------------- confluent-kafka


def _confluent_producer(bootstrap: str) -> Any:
    from confluent_kafka import Producer

    return Producer({"bootstrap.servers": bootstrap, "acks": "1", "log_level": 3})


def _confluent_burst(bootstrap: str, topic: str, n: int) -> float:
    value = b"v" * VALUE_SIZE
    failed: list[Any] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            failed.append(err)

    t0 = time.perf_counter()
    p = _confluent_producer(bootstrap)
    produce = p.produce
    for _ in range(n):
        while True:
            try:
                produce(topic, value, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.01)
    p.flush()
    dt = time.perf_counter() - t0
    if failed:
        raise RuntimeError(f"confluent delivery failed: {failed[0]}")
    return dt


def _confluent_awaited(bootstrap: str, topic: str, n: int) -> float:
    value = b"v" * VALUE_SIZE
    p = _confluent_producer(bootstrap)
    p.list_topics(topic, timeout=10)
    produce, flush = p.produce, p.flush
    t0 = time.perf_counter()
    for _ in range(n):
        produce(topic, value)
        flush()
    return time.perf_counter() - t0


def _confluent_drain(bootstrap: str, topic: str, n: int) -> float:
    value = b"v" * VALUE_SIZE
    p = _confluent_producer(bootstrap)
    p.list_topics(topic, timeout=10)
    produce, poll = p.produce, p.poll
    t0 = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                produce(topic, value)
                break
            except BufferError:
                poll(0.01)
        poll(0)
    p.flush()
    return time.perf_counter() - t0


def _confluent_consumer(bootstrap: str, topic: str) -> Any:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-idioms", "enable.auto.commit": False,
                  "log_level": 3})
    c.assign([TopicPartition(topic, 0, 0)])
    return c


def _confluent_poll(bootstrap: str, topic: str, n: int) -> float:
    c = _confluent_consumer(bootstrap, topic)
    try:
        got = 0
        poll = c.poll
        t0 = time.perf_counter()
        while got < n:
            m = poll(1.0)
            if m is not None and m.error() is None:
                got += 1
        return time.perf_counter() - t0
    finally:
        c.close()


def _confluent_consume(bootstrap: str, topic: str, n: int) -> float:
    c = _confluent_consumer(bootstrap, topic)
    try:
        got = 0
        t0 = time.perf_counter()
        while got < n:
            got += sum(1 for m in c.consume(500, 1.0) if m.error() is None)
        return time.perf_counter() - t0
    finally:
        c.close()


def _check_offsets(offsets: list[int]) -> None:
    if offsets != list(range(len(offsets))):
        raise RuntimeError("futures did not resolve to offsets 0..N-1 in order")


def _a(fn: Callable[[str, str, int], Any]) -> Run:
    return lambda b, t, n: _run_async(fn(b, t, n))


#: (idiom, produce?, uses the awaited count?, {client: run}); ours first, aiokafka second.
IDIOMS: list[tuple[str, bool, bool, dict[str, Run]]] = [
    ("burst: start + send_nowait x N + flush + gather", True, False,
     {"ours": _a(_ours_burst), "aiokafka": _a(_aio_burst), "confluent": _confluent_burst}),
    ("awaited send, one at a time", True, True,
     {"ours": _a(_ours_awaited), "aiokafka": _a(_aio_awaited), "confluent": _confluent_awaited}),
    ("send + drain() every record", True, False,
     {"ours": _a(_ours_drain), "aiokafka": _a(_aio_drain), "confluent": _confluent_drain}),
    ("async for, one record at a time", False, False,
     {"ours": _a(_ours_async_for), "aiokafka": _a(_aio_async_for), "confluent": _confluent_poll}),
    ("getmany (default max_records)", False, False,
     {"ours": _a(_ours_getmany), "aiokafka": _a(_aio_getmany), "confluent": _confluent_consume}),
    ("sync: SyncProducer send_nowait x N + flush", True, False,
     {"ours": _ours_sync_burst, "aiokafka": _a(_aio_burst), "confluent": _confluent_burst}),
    ("sync: SyncProducer.send, one at a time", True, True,
     {"ours": _ours_sync_awaited, "aiokafka": _a(_aio_awaited), "confluent": _confluent_awaited}),
    ("sync: SyncConsumer iteration", False, False,
     {"ours": _ours_sync_iter, "aiokafka": _a(_aio_async_for), "confluent": _confluent_poll}),
]


def section_client_idioms(ctx: Any, meter: Callable[[], Any]) -> dict[str, Any]:
    args = ctx.args
    n, n_awaited, bootstrap = args.client_records, args.idiom_awaited, ctx.broker.bootstrap
    only = [s for s in (args.idioms or "").split(",") if s]
    print(f"== client idioms: {n:,} x {VALUE_SIZE}-byte records ({n_awaited:,} for awaited sends), 1 partition,"
          f" acks=1, each client's defaults otherwise; median of {args.repeats}")
    # The consume idioms read a topic written once (untimed) by our producer.
    data_topic = "client-idioms-data"
    create_topic(bootstrap, data_topic)
    _run_async(_ours_produce_untimed(bootstrap, data_topic, n))
    out: dict[str, Any] = {}
    gc.collect()
    floor = n / _run_async(_gather_floor(n))
    print(f"  asyncio.gather over {n:,} done asyncio futures (no client): {floor:,.0f} futures/s")
    ctx.table.add("client idioms", "floor: asyncio.gather of N done asyncio futures", floor, "fut/s")
    out["gather_floor_per_s"] = floor
    serial = 0
    for idx, (idiom, produce, awaited, runs_by_client) in enumerate(IDIOMS):
        if only and str(idx) not in only:
            continue
        count = n_awaited if awaited else n
        medians: dict[str, float] = {}
        for client, fn in runs_by_client.items():
            runs = []
            for r in range(args.repeats):
                topic = data_topic
                if produce:
                    serial += 1
                    topic = f"client-idioms-{serial}"
                    create_topic(bootstrap, topic)
                gc.collect()
                with meter() as m:
                    dt = fn(bootstrap, topic, count)
                if produce and (got := end_offset(bootstrap, topic)) != count:
                    raise RuntimeError(f"{idiom} / {client}: end offset {got}, expected {count}")
                runs.append(count / dt)
                print(f"  {idiom[:44]:<44} {client:<10} run {r + 1}: {count / dt:>12,.0f} records/s  ({m.describe()})")
            medians[client] = statistics.median(runs)
            target = "idiom_burst_rps" if client == "ours" and idx == 0 else None
            ctx.table.add("client idioms", f"{idiom} — {client}", medians[client], "rec/s", target, runs)
        ratio = medians["ours"] / medians["aiokafka"]
        ctx.table.add("client idioms", f"{idiom} — ours / aiokafka", ratio, "x", "idiom_ratio", fmt="{:,.2f}")
        ctx.table.add("client idioms", f"{idiom} — ours / confluent", medians["ours"] / medians["confluent"], "x",
                      fmt="{:,.2f}")
        out[idiom] = {"records": count, "median_records_per_s": medians, "ratio_ours_aiokafka": ratio}
        if idx == 1:
            out["round_trip_floors_per_s"] = _raw_floor(ctx, n_awaited, serial, medians["aiokafka"])
    return out


def _raw_floor(ctx: Any, n: int, serial: int, aiokafka_awaited: float) -> dict[str, float]:
    """The two round-trip floor rows (median records/s of each)."""
    out = {}
    for name, run in (("raw socket", _raw_awaited), ("asyncio protocol", _protocol_awaited)):
        runs = []
        for r in range(ctx.args.repeats):
            topic = f"client-idioms-floor-{serial}-{len(out)}-{r}"
            create_topic(ctx.broker.bootstrap, topic)
            dt = run(ctx.broker.port, topic, n)
            if (got := end_offset(ctx.broker.bootstrap, topic)) != n:
                raise RuntimeError(f"{name}: end offset {got}, expected {n}")
            runs.append(n / dt)
            print(f"  {'floor: ' + name + ', one Produce at a time':<55} run {r + 1}: {n / dt:>12,.0f} records/s")
        out[name] = floor = statistics.median(runs)
        print(f"  3x aiokafka's awaited send ({3 * aiokafka_awaited:,.0f} records/s) is "
              f"{3 * aiokafka_awaited / floor:.2f}x the {name} floor")
        ctx.table.add("client idioms", f"floor: {name}, one single-record Produce at a time", floor, "rec/s", None,
                      runs)
    return out


class _OneAtATime(asyncio.Protocol):
    def __init__(self) -> None:
        self.buf = bytearray()
        self.waiter: asyncio.Future[None] | None = None

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if len(self.buf) >= 4 and len(self.buf) >= 4 + int.from_bytes(self.buf[:4], "big"):
            del self.buf[:]
            if self.waiter is not None:
                self.waiter.set_result(None)


def _protocol_awaited(port: int, topic: str, n: int) -> float:
    req = encode(ApiKey.PRODUCE, produce_body(topic, 1))

    async def go() -> float:
        loop = asyncio.get_running_loop()
        transport, proto = await loop.create_connection(_OneAtATime, "127.0.0.1", port)
        try:
            t0 = time.perf_counter()
            for _ in range(n):
                proto.waiter = loop.create_future()
                transport.write(req)
                await proto.waiter
            return time.perf_counter() - t0
        finally:
            transport.close()

    result: float = _run_async(go())
    return result


def _raw_awaited(port: int, topic: str, n: int) -> float:
    req = encode(ApiKey.PRODUCE, produce_body(topic, 1))
    sock = connect(port)
    try:
        t0 = time.perf_counter()
        for _ in range(n):
            sock.sendall(req)
            read_frame(sock)
        return time.perf_counter() - t0
    finally:
        sock.close()


async def _ours_produce_untimed(bootstrap: str, topic: str, n: int) -> None:
    from client import Producer

    async with Producer(bootstrap, batch_size=65536, acks=1) as p:
        await p.partitions_for(topic)
        value = b"v" * VALUE_SIZE
        for i in range(n):
            p.send_nowait(topic, value, partition=0)
            if not i % 10_000:
                await p.drain()
        await p.flush()


async def _gather_floor(n: int) -> float:
    loop = asyncio.get_running_loop()
    futs = []
    for i in range(n):
        f = loop.create_future()
        f.set_result(i)
        futs.append(f)
    t0 = time.perf_counter()
    await asyncio.gather(*futs)
    return time.perf_counter() - t0
