"""The batch reader: offset ranges planned on the driver, fetched in bulk on the workers.

**Planning** (``partitions()``, run by Spark in a short-lived planner process): the topic
partitions come from ``assign``, or from the broker's topic list for ``subscribe`` /
``subscribePattern`` (topics that do not exist are left out, as Spark's Kafka source does in
batch); the start and end offsets are resolved with ListOffsets (``Admin.list_offsets``: one
request per leader for all partitions); ``client.spark.ranges.split_ranges`` then turns the
ranges into input partitions. The offsets are always resolved, even without splitting: it costs
one round trip and makes each task's work fixed and its result repeatable.

**Reading** (``read()``, run in Spark's reused Python workers): each worker keeps one
``Consumer`` per bootstrap string, on an event loop in a daemon thread (``client.sync.LoopThread``)
in a module-level cache, so connections and the loop survive between tasks and queries. A task
assigns its partition, seeks to its start, and takes ``ColumnBatch``es with
``getbatches(coalesce=True)`` until its end; the consumer keeps fetching ahead in its loop
thread while Spark works on the batch just handed over. ``coalesce`` decodes each run of plain
(uncompressed) producer batches of a fetch response in one C call into one ColumnBatch: with
Kafka's 16 KiB producer batches (~150 records of 100 bytes) the per-batch Python work
otherwise cost more than the decoding, about 40% of the worker's CPU on a light query. The
columns become Arrow arrays over the same buffers (offsets, timestamps, keys, values: no Python
object per record); topic, partition and timestampType are slices of cached ``pa.repeat``-ed
scalars (``constant_column``); timestamps go from ms to Spark's µs UTC by an unchecked cast
after a range check (``ms_to_timestamp``: Arrow's checked cast cost ~6x more). Only headers
(with ``includeHeaders=true``) cost Python work per record. ColumnBatches are added to an
``ArrowBatcher`` and a RecordBatch is yielded as soon as it holds ``ARROW_BATCH_ROWS`` rows or
more: small ColumnBatches (a compressed or transactional producer batch each) are joined, since
Spark's and pyarrow's per-batch costs are higher than the concatenation's, while a long run
(an 8 MiB answer of 100-byte records: ~70,000 rows) goes to Spark as it is, without a copy.

**Data loss** (``failOnDataLoss``), as Spark's ``KafkaDataConsumer``: a start offset below the
log start offset (retention deleted it) makes the fetch answer OFFSET_OUT_OF_RANGE; records
missing between the position and the first record fetched are looked up the same way: if the
log still starts at or before the position they are invisible, not lost (compaction, transaction
markers) and skipped silently; otherwise they aged out. Lost records fail the task with Spark's
message when ``failOnDataLoss=true``; with ``false`` they are logged ("Skip missing records in
[a, b)") and the read goes on from the log start offset (or reads nothing when the whole range
is gone).

**Transactions** (``kafka.isolation.level=read_committed``, as Spark's Kafka source): planning
resolves ``latest`` to each partition's last stable offset (ListOffsets with isolation level 1:
no open transaction's records are planned), and the consumer drops aborted records and skips
the COMMIT/ABORT markers. A range may therefore end in offsets that never become rows; when
``getbatches`` answers nothing and the consumer's position has reached the range's end, the
task is done.

``kafka.*`` options reach the ``Admin`` (planning) and the ``Consumer`` (reading) as keyword
arguments (``client.spark.options.client_configs``); workers keep one consumer per distinct
bootstrap string and configuration. The reader's consumers fetch up to ``PARTITION_FETCH_BYTES``
(8 MiB) of a partition per Fetch unless ``kafka.max.partition.fetch.bytes`` says otherwise
(``consumer_kwargs``): with Kafka's 1 MiB a 100 MB partition took ~110 round trips, and the
broker's CPU per light 2M-row query (``scripts/bench_spark_ceiling.py``) was ~0.12 s instead
of ~0.07 s. The consumer buffers at most two answers per partition ahead
(``client.fetcher.PREFETCH``) plus one in flight, so a task holds up to ~24 MiB of fetched bytes.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from client.admin import Admin
from client.consumer import Consumer
from client.consumer_records import ColumnBatch
from client.errors import OffsetOutOfRangeError
from client.spark.format_options import CORRUPT_COLUMN
from client.spark.options import (
    EARLIEST,
    LATEST,
    Bound,
    Earliest,
    GlobalTimestamp,
    Latest,
    PartitionOffsets,
    PartitionTimestamps,
    SourceOptions,
)
from client.spark.ranges import OffsetRange, split_ranges
from client.structs import OffsetSpec, TopicPartition
from client.sync import LoopThread

__all__ = ["MinibrokerBatchReader", "RangePartition", "plan_ranges", "read_range", "DataLossError",
           "report_data_loss"]

logger = logging.getLogger(__name__)

ARROW_BATCH_ROWS = 10000  # Spark's spark.sql.execution.arrow.maxRecordsPerBatch default
#: the reader's default ``max.partition.fetch.bytes`` (Kafka's is 1 MiB); ``kafka.max.partition.fetch.bytes`` wins
PARTITION_FETCH_BYTES = 8 << 20


@dataclass
class RangePartition(InputPartition):
    """One Spark task: the offsets ``[start, end)`` of ``topic``-``partition``."""

    topic: str
    partition: int
    start: int
    end: int


# ---------------------------------------------------------------------------- planning (driver)

async def _topic_partitions(admin: Admin, o: SourceOptions) -> list[tuple[str, int]]:
    if o.strategy == "assign":
        return list(o.assign)
    existing = await admin.list_topics()
    if o.strategy == "subscribe":
        names = [t for t in o.topics if t in existing]
    else:
        rx = re.compile(o.pattern)
        names = [t for t in existing if rx.fullmatch(t)]
    if not names:
        return []
    desc = await admin.describe_topics(names, include_configs=False)
    return [(t, p.partition) for t in names for p in desc[t].partitions]


def _fmt(tps: Any) -> str:
    return "Set(" + ", ".join(f"{t}-{p}" for t, p in sorted(tps)) + ")"


async def _resolve(admin: Admin, tps: list[tuple[str, int]], bound: Bound, name: str,
                   strategy_latest: bool = False, isolation: str = "read_uncommitted") -> dict[tuple[str, int], int]:
    """Each partition's offset for one bound (``name`` is "startingOffsets" or "endingOffsets")."""
    timestamps: dict[tuple[str, int], int] = {}
    if isinstance(bound, (Earliest, Latest)):
        specs = {tp: EARLIEST if isinstance(bound, Earliest) else LATEST for tp in tps}
    elif isinstance(bound, GlobalTimestamp):
        specs = timestamps = {tp: bound.ts for tp in tps}
    else:
        given = bound.offsets if isinstance(bound, PartitionOffsets) else bound.timestamps
        if set(given) != set(tps):
            what = name if isinstance(bound, PartitionOffsets) else name.replace("Offsets", "OffsetsByTimestamp")
            raise ValueError(f"If {what} contains specific offsets, you must specify all TopicPartitions.\n"
                             "Use -1 for latest, -2 for earliest.\n"
                             f"Specified: {_fmt(given)} Assigned: {_fmt(tps)}")
        specs = dict(given)
        if isinstance(bound, PartitionTimestamps):
            timestamps = specs
    lookup: dict[TopicPartition | tuple[str, int], OffsetSpec | int] = {
        TopicPartition(*tp): s for tp, s in specs.items() if s < 0 or tp in timestamps}
    got = await admin.list_offsets(lookup, isolation_level=isolation) if lookup else {}
    out = {}
    missing = []
    for tp, s in specs.items():
        if tp not in timestamps and s >= 0:
            out[tp] = s
            continue
        off = got[TopicPartition(*tp)].offset
        if off < 0:  # no record with a timestamp >= the one asked for
            if name == "startingOffsets" and not strategy_latest:
                raise ValueError(f"No offset matched from request of topic-partition {tp[0]}-{tp[1]} and "
                                 f"timestamp {s}.")
            missing.append(tp)
        out[tp] = off
    if missing:
        ends = await admin.list_offsets({TopicPartition(*tp): LATEST for tp in missing}, isolation_level=isolation)
        for tp in missing:
            out[tp] = ends[TopicPartition(*tp)].offset
    return out


async def plan_ranges_async(o: SourceOptions) -> list[OffsetRange]:
    async with Admin(o.bootstrap_servers, **dict(o.admin_config), **o.security_options()) as admin:
        tps = await _topic_partitions(admin, o)
        if not tps:
            return []
        starts, ends = await asyncio.gather(
            _resolve(admin, tps, o.starting, "startingOffsets", o.timestamp_strategy_latest, o.isolation_level),
            _resolve(admin, tps, o.ending, "endingOffsets", isolation=o.isolation_level))
    ranges = []
    for tp in tps:
        s, e = starts[tp], ends[tp]
        if e < s:
            raise ValueError(f"Beginning offset {s} is after the ending offset {e} for topic {tp[0]} partition "
                             f"{tp[1]}. You either provided an invalid fromOffset, or the Kafka topic has been damaged")
        ranges.append(OffsetRange(tp[0], tp[1], s, e))
    return split_ranges(ranges, o.min_partitions, o.max_records_per_partition)


def plan_ranges(o: SourceOptions) -> list[OffsetRange]:
    """The input partitions' ranges (resolves offsets with the broker)."""
    return asyncio.run(plan_ranges_async(o))


# ---------------------------------------------------------------------------- reading (workers)

_cache_lock = threading.Lock()
CacheKey = tuple[str, tuple[tuple[str, Any], ...], tuple[tuple[str, str], ...]]
_consumers: dict[CacheKey, tuple[LoopThread, Consumer]] = {}


def _cache_key(o: SourceOptions) -> CacheKey:
    return o.bootstrap_servers, o.consumer_config, o.security


def consumer_kwargs(o: SourceOptions) -> dict[str, Any]:
    """The workers' ``Consumer`` keyword arguments: the ``kafka.*`` settings over the reader's
    defaults (client id ``minibroker-spark``, ``PARTITION_FETCH_BYTES``)."""
    return {"client_id": "minibroker-spark", "max_partition_fetch_bytes": PARTITION_FETCH_BYTES,
            **dict(o.consumer_config), **o.security_options(), "auto_offset_reset": "none",
            "max_poll_records": None}


def _cached_consumer(o: SourceOptions) -> tuple[LoopThread, Consumer]:
    """This worker's consumer for ``o``'s servers and ``kafka.*`` settings (made on first use,
    kept for later tasks)."""
    key = _cache_key(o)
    with _cache_lock:
        got = _consumers.get(key)
        if got is None:
            lt = LoopThread("minibroker-spark")

            async def make() -> Consumer:
                c = Consumer(o.bootstrap_servers, **consumer_kwargs(o))
                await c.start()
                return c

            try:
                got = _consumers[key] = (lt, lt.run(make()))
            except BaseException:
                lt.stop()
                raise
        return got


def _drop_consumer(o: SourceOptions) -> None:
    with _cache_lock:
        got = _consumers.pop(_cache_key(o), None)
    if got is not None:
        lt, c = got
        try:
            lt.run(c.close(), timeout=10)
        except Exception:  # noqa: BLE001 - already failing; the connection is gone either way
            pass
        lt.stop()


#: (value, Arrow type) -> an array of at least ``_CONSTANT_ROWS`` copies: a batch takes a
#: zero-copy slice from row 0 (pa.repeat cost about as much as the rest of ``flush``)
_constants: dict[tuple[Any, Any], Any] = {}
_CONSTANT_ROWS = 1 << 17
_CONSTANTS_KEPT = 64


def constant_column(value: Any, typ: Any, n: int) -> Any:
    """``n`` copies of ``value`` (a ``pa.repeat``), sliced from a cached longer array."""
    import pyarrow as pa

    key = (value, typ)
    got = _constants.get(key)
    if got is None or len(got) < n:
        if len(_constants) >= _CONSTANTS_KEPT:
            _constants.clear()
        got = _constants[key] = pa.repeat(pa.scalar(value, typ), max(n, _CONSTANT_ROWS))
    return got if len(got) == n else got.slice(0, n)


_MAX_MS = (1 << 63) // 1000  # |ms| above it overflows int64 in µs


def ms_to_timestamp(ms: Any, typ: Any) -> Any:
    """The int64 milliseconds ``ms`` as Arrow ``typ`` (Spark's timestamp: µs, UTC). An
    unchecked cast after a min/max check (Arrow's checked cast of int64s costs ~6x more); a
    timestamp out of µs range takes the checked cast, which raises as before."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ts = ms.view(pa.timestamp("ms", tz="UTC"))
    if len(ms):
        lo, hi = pc.min_max(ms).values()
        if lo.as_py() < -_MAX_MS or hi.as_py() > _MAX_MS:
            return ts.cast(typ)
    return ts.cast(typ, safe=False)


class ArrowBatcher:
    """Joins the ColumnBatches of one topic-partition into ``pyarrow.RecordBatch``es of schema ``sch``.

    ``add`` only keeps references (two zero-copy BinaryArrays per ColumnBatch); ``flush``
    builds one RecordBatch for everything added: keys and values by ``pa.concat_arrays``,
    offsets and timestamps as one buffer each (timestamps cast once from ms to Spark's µs UTC,
    ``ms_to_timestamp``), topic, partition and timestampType as slices of cached repeated
    scalars (``constant_column``). Headers (``includeHeaders``) are
    the one column built from Python objects.
    """

    def __init__(self, sch: Any, topic: str, partition: int, decoders: dict[str, Any] | None = None) -> None:
        self.sch = sch
        self.topic = topic
        self.partition = partition
        self.with_headers = "headers" in sch.names
        #: "key"/"value" -> a registry_codec.Decoder turning the binary column into the typed one
        self.decoders = decoders or {}
        self.with_corrupt = CORRUPT_COLUMN in sch.names
        self._clear()

    def _clear(self) -> None:
        self.rows = 0
        self._keys: list[Any] = []
        self._values: list[Any] = []
        self._offsets: list[Any] = []
        self._timestamps: list[Any] = []
        self._types: list[tuple[int, int]] = []   # (rows, timestampType) per ColumnBatch
        self._headers: list[Any] = []

    def add(self, cb: ColumnBatch) -> None:
        self._keys.append(cb.keys.to_arrow())
        self._values.append(cb.values.to_arrow())
        self._offsets.append(cb.offsets)
        self._timestamps.append(cb.timestamps)
        self._types.append((len(cb), cb.timestamp_type))
        if self.with_headers:
            self._headers.extend(cb.headers)
        self.rows += len(cb)

    def flush(self) -> Any:
        import pyarrow as pa

        n, sch = self.rows, self.sch

        def join(arrays: list[Any]) -> Any:
            return arrays[0] if len(arrays) == 1 else pa.concat_arrays(arrays)

        def int64s(parts: list[Any]) -> Any:
            return pa.py_buffer(parts[0] if len(parts) == 1 else b"".join(parts))

        if all(t == self._types[0][1] for _, t in self._types):
            types = constant_column(self._types[0][1], pa.int32(), n)
        else:
            types = pa.concat_arrays([constant_column(t, pa.int32(), k) for k, t in self._types])
        cols = [
            join(self._keys),
            join(self._values),
            constant_column(self.topic, pa.string(), n),
            constant_column(self.partition, pa.int32(), n),
            pa.Array.from_buffers(pa.int64(), n, [None, int64s(self._offsets)]),
            ms_to_timestamp(pa.Array.from_buffers(pa.int64(), n, [None, int64s(self._timestamps)]),
                            sch.field("timestamp").type),
            types,
        ]
        if self.with_headers:
            htype = sch.field("headers").type
            if any(self._headers):
                cols.append(pa.array([[{"key": k, "value": v} for k, v in h] if h else None for h in self._headers],
                                     type=htype))
            else:
                cols.append(pa.nulls(n, htype))
        if self.decoders:
            corrupt: list[str | None] | None = [None] * n if self.with_corrupt else None
            for i, which in ((0, "key"), (1, "value")):
                dec = self.decoders.get(which)
                if dec is not None:
                    cols[i] = dec.decode(cols[i], cols[4], self.topic, self.partition, corrupt)
            if corrupt is not None:
                cols.append(pa.array(corrupt, pa.string()))
        self._clear()
        return pa.RecordBatch.from_arrays(cols, schema=sch)


# Spark's KafkaSourceProvider.INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_{TRUE,FALSE}
_LOST = ("Some data may have been lost because they are not available in Kafka any more; either the data was aged "
         "out by Kafka or the topic may have been deleted before all the data in the topic was processed. ")
INSTRUCTION_FAIL_TRUE = _LOST + ("If you don't want your streaming query to fail on such cases, set the source "
                                 'option "failOnDataLoss" to "false".')
INSTRUCTION_FAIL_FALSE = _LOST + ("If you want your streaming query to fail on such cases, set the source option "
                                  '"failOnDataLoss" to "true".')


class DataLossError(RuntimeError):
    """Records the query should have read are gone (``failOnDataLoss=true``)."""


def report_data_loss(message: str, fail: bool, tp: tuple[str, int] | None = None) -> None:
    """Spark's reportDataLoss: raise ``DataLossError`` when ``fail``, else log a warning."""
    where = f" (TopicPartition: {tp[0]}-{tp[1]})." if tp else ""
    if fail:
        raise DataLossError(f"{message}{where} {INSTRUCTION_FAIL_TRUE}")
    logger.warning("%s%s %s", message, where, INSTRUCTION_FAIL_FALSE)


def _decoders(o: SourceOptions, resolved: dict[str, Any] | None) -> dict[str, Any]:
    if not resolved:
        return {}
    from client.spark.registry_codec import Decoder

    return {which: Decoder(o.formats, which, r) for which, r in resolved.items()}


def read_range(r: RangePartition, o: SourceOptions, sch: Any, resolved: dict[str, Any] | None = None) -> Iterator[Any]:
    """The records of ``r`` as pyarrow RecordBatches of schema ``sch`` (``resolved``: the
    reader schemas of typed keys and values, ``registry_codec.ResolvedSchema`` by "key"/"value")."""
    decoders = _decoders(o, resolved)
    lt, c = _cached_consumer(o)
    tp = (r.topic, r.partition)

    async def seek(offset: int) -> None:
        c.assign([tp])
        c.seek(tp, offset, until=r.end)

    def log_start() -> int:
        return lt.run(c.beginning_offsets([tp]))[TopicPartition(*tp)]

    try:
        lt.run(seek(r.start))
        pos = r.start
        out = ArrowBatcher(sch, r.topic, r.partition, decoders)
        while pos < r.end:
            try:
                cbs = lt.run(c.getbatches(tp, timeout_ms=o.poll_timeout_ms, max_records=r.end - pos,
                                          coalesce=True))
            except OffsetOutOfRangeError:
                start = log_start()
                if start <= pos:
                    raise
                lost = f"Cannot fetch offset {pos}; the earliest available offset is {start}."
                if o.fail_on_data_loss:
                    report_data_loss(lost, True, tp)
                report_data_loss(f"{lost} Skipping to {min(start, r.end)}.", False, tp)
                pos = min(start, r.end)
                lt.run(seek(pos))
                continue
            if not cbs:
                if lt.run(c.position(tp)) >= r.end:
                    break  # the range ends in transaction markers or aborted records
                raise TimeoutError(f"Cannot fetch record for offset {pos} in {o.poll_timeout_ms} milliseconds"
                                   f" (TopicPartition: {tp[0]}-{tp[1]})")
            for cb in cbs:
                if len(cb) and cb.offsets[0] > pos and log_start() > pos:  # aged out while we read
                    if o.fail_on_data_loss:
                        report_data_loss(f"Cannot fetch records in [{pos}, {cb.offsets[0]})", True, tp)
                    report_data_loss(f"Skip missing records in [{pos}, {min(cb.offsets[0], r.end)})", False, tp)
                if len(cb) and cb.offsets[-1] >= r.end:
                    cb = cb.slice(0, bisect_left(cb.offsets, r.end))
                    pos = r.end
                else:
                    pos = max(pos, cb.next_offset)
                if len(cb):
                    out.add(cb)
                    if out.rows >= ARROW_BATCH_ROWS:
                        yield out.flush()
                if pos >= r.end:
                    break
        if out.rows:
            yield out.flush()
    except (ConnectionError, OSError):
        _drop_consumer(o)  # a fresh connection for the next task
        raise


# ---------------------------------------------------------------------------- the reader

class MinibrokerBatchReader(DataSourceReader):
    def __init__(self, schema: StructType, options: SourceOptions, resolved: dict[str, Any] | None = None) -> None:
        self.schema = schema
        self.options = options
        self.resolved = resolved

    def partitions(self) -> list[InputPartition]:
        return [RangePartition(r.topic, r.partition, r.start, r.end) for r in plan_ranges(self.options)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, RangePartition):  # Spark's stand-in for an empty plan
            return iter(())
        from pyspark.sql.pandas.types import to_arrow_schema

        return read_range(partition, self.options, to_arrow_schema(self.schema, timezone="UTC"), self.resolved)
