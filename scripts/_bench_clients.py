"""The client sections of ``scripts/bench.py``: our asyncio ``client`` against aiokafka and
kafka-python, side by side on the benchmark's broker (not a benchmark on its own; bench.py
registers ``client-produce`` and ``client-consume``, its docstring describes them).

Kept out of bench.py, which is already past the size one reads in a sitting.

Each run uses a fresh single-partition topic (produce) or reads the whole partition from
offset 0 (consume), with the same settings across libraries where they have them:
``linger_ms=5``, a 64 KiB batch size, acks=1, fetches of ``--consumer-fetch-bytes``.
Records/s = N / (time from the first send to the last acknowledgement, or from the first
fetch call to the N-th record); client start-up and metadata are outside the clock.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

VALUE_SIZE = 100
CHUNK = 10_000  # records between drains / gathers (produce)
#: Records per getmany/poll when consuming: Kafka's max.poll.records default, for every client.
#: Larger polls make each client build (and the garbage collector scan) tens of thousands of
#: record objects at once, which measures the allocator more than the client.
POLL_RECORDS = 500

# Targets of the client issue: (comparison, value); merged into bench.TARGETS.
CLIENT_TARGETS: dict[str, tuple[str, float]] = {
    "client_produce_rps": (">=", 500_000),
    "client_produce_ratio": (">=", 3.0),
    "client_consume_rps": (">=", 1_000_000),
    "client_consume_ratio": (">=", 3.0),
    "client_bulk_rps": (">=", 3_000_000),
}


def _run_async(coro: Awaitable[Any]) -> Any:
    """Run on uvloop (as our sync facade does; aiokafka gets the same loop)."""
    import uvloop

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coro)  # type: ignore[arg-type]


# ---------------------------------------------------------------- produce


async def _ours_produce(bootstrap: str, topic: str, n: int) -> float:
    from client import Producer

    async with Producer(bootstrap, batch_size=65536, linger_ms=5, acks=1) as p:
        await p.partitions_for(topic)
        value = b"v" * VALUE_SIZE
        send, drain = p.send_nowait, p.drain
        t0 = time.perf_counter()
        for i in range(n):
            send(topic, value, partition=0)
            if not i % CHUNK:
                await drain()
        await p.flush()
        return time.perf_counter() - t0


async def _aiokafka_produce(bootstrap: str, topic: str, n: int) -> float:
    from aiokafka import AIOKafkaProducer

    p = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, max_batch_size=65536, acks=1)
    await p.start()
    try:
        await p.partitions_for(topic)
        value = b"v" * VALUE_SIZE
        send = p.send
        t0 = time.perf_counter()
        futs = []
        for _i in range(n):
            futs.append(await send(topic, value, partition=0))  # buffered; the ack is the future
            if len(futs) == CHUNK:
                await asyncio.gather(*futs)
                futs = []
        await asyncio.gather(*futs)
        return time.perf_counter() - t0
    finally:
        await p.stop()


def _kafka_python_produce(bootstrap: str, topic: str, n: int) -> float:
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, batch_size=65536, acks=1)
    try:
        p.partitions_for(topic)
        value = b"v" * VALUE_SIZE
        send = p.send
        errors: list[BaseException] = []
        t0 = time.perf_counter()
        last = None
        for _ in range(n):
            last = send(topic, value, partition=0)
        p.flush()
        dt = time.perf_counter() - t0
        if last is not None and last.failed():
            errors.append(last.exception)
        if errors:
            raise RuntimeError(f"kafka-python delivery failed: {errors[0]}")
        return dt
    finally:
        p.close()


async def _admin(bootstrap: str, fn: Callable[[Any], Awaitable[Any]]) -> Any:
    from client import Admin

    async with Admin(bootstrap) as a:
        return await fn(a)


def create_topic(bootstrap: str, name: str) -> None:
    _run_async(_admin(bootstrap, lambda a: a.create_topic(name, 1)))


def end_offset(bootstrap: str, topic: str) -> int:
    return _run_async(_admin(bootstrap, lambda a: a.topic_offsets(topic)))[0]


PRODUCERS: list[tuple[str, Callable[[str, str, int], float]]] = [
    ("ours", lambda b, t, n: _run_async(_ours_produce(b, t, n))),
    ("aiokafka", lambda b, t, n: _run_async(_aiokafka_produce(b, t, n))),
    ("kafka-python", _kafka_python_produce),
]


def section_client_produce(ctx: Any, meter: Callable[[], Any]) -> dict[str, Any]:
    n, bootstrap = ctx.args.client_records, ctx.broker.bootstrap
    print(f"== client produce: {n:,} x {VALUE_SIZE}-byte records, 1 partition, acks=1, linger_ms=5, batch size"
          f" 64 KiB; ours send_nowait + drain() every {CHUNK:,}, aiokafka send() + gather every {CHUNK:,},"
          f" kafka-python send() + flush(); median of {ctx.args.repeats}")
    out: dict[str, Any] = {}
    for kind, fn in PRODUCERS:
        runs = []
        for r in range(ctx.args.repeats):
            topic = f"client-produce-{kind}-{r}"
            create_topic(bootstrap, topic)
            gc.collect()
            with meter() as m:
                dt = fn(bootstrap, topic, n)
            got = end_offset(bootstrap, topic)
            if got != n:
                raise RuntimeError(f"{topic}: end offset {got}, expected {n}")
            runs.append({"records_per_s": n / dt, "seconds": dt, **m.as_dict()})
            print(f"  {kind:<13} run {r + 1}: {n / dt:>12,.0f} records/s  ({m.describe()})")
            if kind == "ours":
                ctx.client_topic = topic
        med = statistics.median(x["records_per_s"] for x in runs)
        out[kind] = {"runs": runs, "median_records_per_s": med}
        ctx.table.add("client produce", f"{kind} records/s", med, "rec/s",
                      "client_produce_rps" if kind == "ours" else None, [x["records_per_s"] for x in runs])
    ratio = out["ours"]["median_records_per_s"] / out["aiokafka"]["median_records_per_s"]
    out["ratio_ours_aiokafka"] = ratio
    ctx.table.add("client produce", "ours / aiokafka", ratio, "x", "client_produce_ratio", fmt="{:,.2f}")
    ctx.table.add("client produce", "ours / kafka-python",
                  out["ours"]["median_records_per_s"] / out["kafka-python"]["median_records_per_s"], "x",
                  fmt="{:,.2f}")
    return out


# ---------------------------------------------------------------- consume


async def _ours_getmany(bootstrap: str, topic: str, n: int, fetch_bytes: int) -> float:
    from client import Consumer

    async with Consumer(bootstrap, fetch_max_bytes=fetch_bytes, max_partition_fetch_bytes=fetch_bytes) as c:
        c.assign([(topic, 0)])
        c.seek((topic, 0), 0)
        got = 0
        t0 = time.perf_counter()
        while got < n:
            for rows in (await c.getmany(timeout_ms=1000, max_records=POLL_RECORDS)).values():
                got += len(rows)
        return time.perf_counter() - t0


async def _ours_getbatches(bootstrap: str, topic: str, n: int, fetch_bytes: int) -> float:
    from client import Consumer

    async with Consumer(bootstrap, fetch_max_bytes=fetch_bytes, max_partition_fetch_bytes=fetch_bytes) as c:
        c.assign([(topic, 0)])
        c.seek((topic, 0), 0)
        got = 0
        t0 = time.perf_counter()
        while got < n:
            for cb in await c.getbatches(timeout_ms=1000):
                got += len(cb)  # rows counted from the offsets column; no record objects
        return time.perf_counter() - t0


async def _aiokafka_getmany(bootstrap: str, topic: str, n: int, fetch_bytes: int) -> float:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                         auto_offset_reset="earliest", fetch_max_bytes=fetch_bytes,
                         max_partition_fetch_bytes=fetch_bytes)
    await c.start()
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek(tp, 0)
        got = 0
        t0 = time.perf_counter()
        while got < n:
            for rows in (await c.getmany(timeout_ms=1000, max_records=POLL_RECORDS)).values():
                got += len(rows)
        return time.perf_counter() - t0
    finally:
        await c.stop()


def _kafka_python_poll(bootstrap: str, topic: str, n: int, fetch_bytes: int) -> float:
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                      auto_offset_reset="earliest", fetch_max_bytes=fetch_bytes,
                      max_partition_fetch_bytes=fetch_bytes, max_poll_records=POLL_RECORDS)
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek(tp, 0)
        got = 0
        t0 = time.perf_counter()
        while got < n:
            for rows in c.poll(timeout_ms=1000).values():
                got += len(rows)
        return time.perf_counter() - t0
    finally:
        c.close()


CONSUMERS: list[tuple[str, str, Callable[[str, str, int, int], float]]] = [
    # (name, target key, run)
    ("ours getmany", "client_consume_rps", lambda *a: _run_async(_ours_getmany(*a))),
    ("ours getbatches (bulk)", "client_bulk_rps", lambda *a: _run_async(_ours_getbatches(*a))),
    ("aiokafka getmany", "", lambda *a: _run_async(_aiokafka_getmany(*a))),
    ("kafka-python poll", "", _kafka_python_poll),
]


def section_client_consume(ctx: Any, meter: Callable[[], Any]) -> dict[str, Any]:
    bootstrap = ctx.broker.bootstrap
    topic = getattr(ctx, "client_topic", None)
    if topic is None:
        topic = "client-consume-data"
        create_topic(bootstrap, topic)
        print(f"  (no client-produce in this run: producing {ctx.args.client_records:,} records into {topic}"
              " first, untimed)")
        _run_async(_ours_produce(bootstrap, topic, ctx.args.client_records))
        ctx.client_topic = topic
    n = end_offset(bootstrap, topic)
    fb = ctx.args.consumer_fetch_bytes
    print(f"== client consume: {n:,} records of {topic} from offset 0, fetch_max_bytes = max_partition_fetch_bytes"
          f" = {fb >> 20} MiB, {POLL_RECORDS:,} records per getmany/poll; median of {ctx.args.repeats}")
    out: dict[str, Any] = {}
    for kind, target, fn in CONSUMERS:
        runs = []
        for r in range(ctx.args.repeats):
            gc.collect()
            with meter() as m:
                dt = fn(bootstrap, topic, n, fb)
            runs.append({"records_per_s": n / dt, "seconds": dt, **m.as_dict()})
            print(f"  {kind:<22} run {r + 1}: {n / dt:>12,.0f} records/s  ({m.describe()})")
        med = statistics.median(x["records_per_s"] for x in runs)
        out[kind] = {"runs": runs, "median_records_per_s": med}
        ctx.table.add("client consume", f"{kind} records/s", med, "rec/s", target or None,
                      [x["records_per_s"] for x in runs])
    aio = out["aiokafka getmany"]["median_records_per_s"]
    for kind, target in (("ours getmany", "client_consume_ratio"), ("ours getbatches (bulk)", None)):
        ratio = out[kind]["median_records_per_s"] / aio
        out[f"ratio {kind} / aiokafka"] = ratio
        ctx.table.add("client consume", f"{kind} / aiokafka getmany", ratio, "x", target, fmt="{:,.2f}")
    ctx.table.add("client consume", "ours getmany / kafka-python poll",
                  out["ours getmany"]["median_records_per_s"] / out["kafka-python poll"]["median_records_per_s"],
                  "x", fmt="{:,.2f}")
    return out
