"""The sink: ``df.write.format("minibroker")`` and ``writeStream.format("minibroker")``.

Spark's Kafka sink as a Python Data Source writer (columns and options:
``client.spark.sink_options``). At-least-once, as Spark's: a task that fails after some of its
records were acknowledged is retried (or the micro-batch replayed after a restart) and writes
them again.

**Where the code runs.** ``MinibrokerDataSource.writer()`` / ``streamWriter()`` run in a planner
process on the driver, which checks the options and the columns there, so a mistake fails the
query before any task starts. ``write()`` runs once per Spark task in the executors' Python
workers and gets the task's rows as ``pyarrow.RecordBatch``es (the Arrow writer variants:
no ``Row`` object per record on the way in). ``commit()`` / ``abort()`` run on the driver with
every task's ``SinkCommitMessage``.

**A task** (``write_task``) makes its own ``client.Producer`` (``kafka.*`` settings), on an
event loop in a daemon thread kept by the worker process (``client.sync.LoopThread``; workers
are reused, so the thread is too, but never a producer: a producer's failure stays with its
task). For each Arrow batch it turns the columns into Python lists (strings are cast to binary
without a copy), calls ``send_nowait`` per row, and lets the producer drain every
``DRAIN_EVERY`` rows (back-pressure: at most ``buffer.memory`` bytes are buffered). Records
already acknowledged are checked after each Arrow batch, so a failing topic fails the task
early; at the end the task flushes, checks every record, and only then returns its commit
message. The first failed record's ``KafkaError`` (the broker's error code and message) fails
the task, and so the job. A null ``topic`` with no ``topic`` option fails the task with Spark's
message.

**Typed keys and values** (``valueFormat``...): each Arrow batch's ``value`` (``key``) column
is encoded first (``registry_codec.Encoder``, with the writer schema resolved on the driver).

**The commit message** counts what the task wrote: rows, key + value bytes, rows per topic, and
in streaming the micro-batch id (the ``streaming.sql.batchId`` local property Spark sets on
every task of a micro-batch). The driver's ``commit`` logs the totals at INFO.

**Exactly-once option** (``kafka.transactional.id=<prefix>``). Each task writes its rows in one
Kafka transaction of its own, transactional id ``<prefix>-<partition id>`` (the Spark partition
the task writes), so a ``read_committed`` reader sees a task's rows all at once or not at all:

1. ``init_transactions`` fences any older attempt of the same task still running (a zombie:
   its commit then fails) and aborts what it left open.
2. Streaming: the task reads the group ``<prefix>``'s committed offset for partition
   ``<partition id>`` of the topic ``BATCH_MARKER_TOPIC``: the next micro-batch this task
   partition has to write. The topic holds no records; it exists because Kafka (and this
   broker) accept commits only for partitions that exist, so a task makes sure it has a
   partition ``<partition id>`` (creating the topic, or adding partitions) before its first
   commit; one such topic serves every query, as the offsets are per group.
   If it is past this batch id, this batch's rows for this partition are already committed —
   a replay after a failure — and the task writes nothing.
3. Otherwise it begins a transaction, writes its rows, sends ``batch id + 1`` as that offset
   (``send_offsets_to_transaction``), and commits: rows and marker become visible together.

Guarantee: with a streaming query whose replays write each micro-batch with the same
partitioning (Spark replays a micro-batch from the same source offsets; keep the plan and
``spark.sql.shuffle.partitions`` unchanged across restarts), a ``read_committed`` consumer sees
every row of every micro-batch exactly once, whatever tasks, executors or the driver fail and
are retried. Two queries must not share a prefix. ``read_uncommitted`` readers also see the
rows of aborted attempts. A batch write (``df.write``) with the option gets per-task atomicity
(a failed task leaves nothing visible) but no replay detection: a task retried after its
commit succeeded writes its rows again.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

from client.producer import Producer
from client.spark.sink_options import SinkOptions
from client.structs import OffsetAndMetadata, TopicPartition
from client.sync import LoopThread

__all__ = ["MinibrokerWriter", "MinibrokerStreamWriter", "SinkCommitMessage", "write_task", "NULL_TOPIC",
           "BATCH_MARKER_TOPIC"]

logger = logging.getLogger(__name__)

DRAIN_EVERY = 512  # rows between two Producer.drain() calls (back-pressure, and lets answers in)
NULL_TOPIC = "null topic present in the data. Use the topic option for setting a topic."  # Spark's message
#: the pseudo-topic under which the exactly-once option records each task partition's next micro-batch
BATCH_MARKER_TOPIC = "minibroker-spark-sink-batches"


@dataclass
class SinkCommitMessage(WriterCommitMessage):
    """What one task wrote, every record acknowledged."""

    rows: int = 0
    bytes: int = 0                                       # keys + values
    topics: dict[str, int] = field(default_factory=dict)  # rows per topic
    batch_id: int | None = None                          # the micro-batch (streaming only)
    replayed: bool = False                               # exactly-once: already committed, not written again


def _summary(messages: Sequence[Any]) -> SinkCommitMessage:
    total = SinkCommitMessage()
    per_topic: Counter[str] = Counter()
    for m in messages:
        if isinstance(m, SinkCommitMessage):
            total.rows += m.rows
            total.bytes += m.bytes
            per_topic.update(m.topics)
            total.replayed = total.replayed or m.replayed
    total.topics = dict(per_topic)
    return total


_loop_lock = threading.Lock()
_loop: LoopThread | None = None


def _loop_thread() -> LoopThread:
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = LoopThread("minibroker-spark-sink")
        return _loop


def _column(rb: Any, name: str, as_bytes: bool = True) -> list[Any] | None:
    """Column ``name`` of ``rb`` as a Python list (strings as bytes if ``as_bytes``; timestamps
    as ms since the epoch), or None if absent."""
    import pyarrow as pa

    i = rb.schema.get_field_index(name)
    if i < 0:
        return None
    arr = rb.column(i)
    if pa.types.is_string(arr.type) and as_bytes:
        arr = arr.cast(pa.binary())
    elif pa.types.is_large_string(arr.type) and as_bytes:
        arr = arr.cast(pa.large_binary())
    elif pa.types.is_timestamp(arr.type):  # -> ms since the epoch
        arr = arr.cast(pa.timestamp("ms", tz=arr.type.tz)).cast(pa.int64())
    result: list[Any] = arr.to_pylist()
    return result


class _Task:
    """One task's producer and the futures of its records not checked yet."""

    def __init__(self, producer: Producer, o: SinkOptions, columns: frozenset[str]) -> None:
        self.producer = producer
        self.topic = o.topic
        self.columns = columns
        self.pending: list[Any] = []
        self.rows = 0
        self.bytes = 0
        self.topics: Counter[str] = Counter()

    def check_done(self, everything: bool = False) -> None:
        """Raise the first failed record's error among the answered ones (all if ``everything``)."""
        pending = self.pending
        i = 0
        for i, f in enumerate(pending):  # noqa: B007 - i is used after the loop
            if not f.done():
                if everything:
                    raise RuntimeError("a record is unanswered after flush")  # flush waits for all: a bug
                break
            exc = f.exception()
            if exc is not None:
                raise exc
        else:
            i = len(pending)
        del pending[:i]

    async def send(self, rb: Any) -> None:
        n = rb.num_rows
        if n == 0:
            return
        values = _column(rb, "value")
        assert values is not None  # check_schema made sure
        keys = _column(rb, "key") if "key" in self.columns else None
        topics = None if self.topic is not None else _column(rb, "topic", as_bytes=False)
        partitions = _column(rb, "partition") if "partition" in self.columns else None
        headers = _column(rb, "headers") if "headers" in self.columns else None
        stamps = _column(rb, "timestamp") if "timestamp" in self.columns else None
        if keys is None:
            keys = [None] * n
        self.bytes += sum(len(v) for v in values if v is not None) + sum(len(k) for k in keys if k is not None)
        send = self.producer.send_nowait
        append = self.pending.append
        drain = self.producer.drain
        if topics is None and partitions is None and headers is None and stamps is None:
            topic = self.topic
            assert topic is not None
            for i in range(0, n, DRAIN_EVERY):
                for k, v in zip(keys[i:i + DRAIN_EVERY], values[i:i + DRAIN_EVERY], strict=True):
                    append(send(topic, v, k))
                await drain()
            self.topics[topic] += n
        else:
            if topics is not None:
                if None in topics:
                    raise ValueError(NULL_TOPIC)
                self.topics.update(topics)
            else:
                assert self.topic is not None
                self.topics[self.topic] += n
                topics = [self.topic] * n
            for i in range(n):
                h = headers[i] if headers is not None else None
                append(send(topics[i], values[i], keys[i],
                            [(x["key"], x["value"]) for x in h] if h else None,
                            partitions[i] if partitions is not None else None,
                            stamps[i] if stamps is not None else None))
                if i % DRAIN_EVERY == DRAIN_EVERY - 1:
                    await drain()
            await drain()
        self.rows += n
        self.check_done()


def write_task(batches: Iterator[Any], o: SinkOptions, columns: frozenset[str],
               batch_id: int | None = None, partition_id: int = 0) -> SinkCommitMessage:
    """Write one task's rows (Arrow batches with the input's columns) with a producer of its own;
    return the counts once every record is acknowledged (with the exactly-once option: once its
    transaction committed), or raise the first record's error."""
    lt = _loop_thread()
    prefix = o.transactional_id_prefix

    async def start() -> _Task | None:
        config = {"client_id": "minibroker-spark-sink", **dict(o.producer_config), **o.security_options()}
        if prefix is not None:
            config["transactional_id"] = f"{prefix}-{partition_id}"
        p = Producer(o.bootstrap_servers, **config)
        await p.start()
        if prefix is None:
            return _Task(p, o, columns)
        try:
            await p.init_transactions()
            if batch_id is not None and await _committed_batch(o, prefix, partition_id) > batch_id:
                logger.info("micro-batch %d, partition %d: committed by an earlier attempt; not written again",
                            batch_id, partition_id)
                await p.close()
                return None
            p.begin_transaction()
        except BaseException:
            await p.close(timeout=0)
            raise
        return _Task(p, o, columns)

    if o.resolved:
        batches = _encoded(batches, o)
    task = lt.run(start())
    if task is None:
        return SinkCommitMessage(batch_id=batch_id, replayed=True)
    ok = False
    try:
        for rb in batches:
            lt.run(task.send(rb))
        lt.run(task.producer.flush())
        task.check_done(everything=True)
        if prefix is not None:
            lt.run(_commit(task.producer, o, prefix, partition_id, batch_id))
        ok = True
    finally:
        if ok:
            lt.run(task.producer.close())
        else:  # stop at once (records still buffered fail; the task is retried whole), keep the first error
            try:  # with a transaction open, close() aborts it
                lt.run(task.producer.close(timeout=0), timeout=30)
            except Exception:  # the error being raised is the one to report
                logger.debug("closing the failed task's producer", exc_info=True)
    return SinkCommitMessage(rows=task.rows, bytes=task.bytes, topics=dict(task.topics), batch_id=batch_id)


def _encoded(batches: Iterator[Any], o: SinkOptions) -> Iterator[Any]:
    """``batches`` with the typed key and value columns encoded (Confluent-framed binary)."""
    from client.spark.registry_codec import Encoder

    encoders = [(which, Encoder(r)) for which, r in o.resolved]
    for rb in batches:
        for which, enc in encoders:
            i = rb.schema.get_field_index(which)
            if i >= 0:
                rb = rb.set_column(i, which, enc.encode(rb.column(i)))
        yield rb


async def _committed_batch(o: SinkOptions, prefix: str, partition_id: int) -> int:
    """The next micro-batch the task partition has to write (0 if it never committed one)."""
    from client.admin import Admin

    async with Admin(o.bootstrap_servers, client_id="minibroker-spark-sink", **o.security_options()) as admin:
        tp = TopicPartition(BATCH_MARKER_TOPIC, partition_id)
        got = await admin.fetch_group_offsets(prefix, [tp], require_stable=True)
    om = got.get(tp)
    return om.offset if om is not None else 0


async def _ensure_marker_partition(o: SinkOptions, partition_id: int) -> None:
    """Make ``BATCH_MARKER_TOPIC`` have a partition ``partition_id``. Tasks race here: a
    topic or partitions another task created first are fine."""
    from client.admin import Admin
    from client.errors import InvalidPartitionsError, TopicAlreadyExistsError, UnknownTopicOrPartitionError

    async with Admin(o.bootstrap_servers, client_id="minibroker-spark-sink", **o.security_options()) as admin:
        for _ in range(5):
            try:
                have = len((await admin.describe_topics([BATCH_MARKER_TOPIC], include_configs=False))
                           [BATCH_MARKER_TOPIC].partitions)
            except UnknownTopicOrPartitionError:
                try:
                    await admin.create_topic(BATCH_MARKER_TOPIC, partition_id + 1)
                    return
                except TopicAlreadyExistsError:
                    continue
            if have > partition_id:
                return
            try:
                await admin.create_partitions({BATCH_MARKER_TOPIC: partition_id + 1})
                return
            except InvalidPartitionsError:
                continue  # grown meanwhile by another task: look again


async def _commit(p: Producer, o: SinkOptions, prefix: str, partition_id: int, batch_id: int | None) -> None:
    if batch_id is not None:
        await _ensure_marker_partition(o, partition_id)
        await p.send_offsets_to_transaction(
            {(BATCH_MARKER_TOPIC, partition_id): OffsetAndMetadata(batch_id + 1, f"micro-batch {batch_id}")}, prefix)
    await p.commit_transaction()


def _partition_id() -> int:
    from pyspark import TaskContext

    tc = TaskContext.get()
    return tc.partitionId() if tc is not None else 0


def _batch_id() -> int | None:
    from pyspark import TaskContext

    tc = TaskContext.get()
    got = tc.getLocalProperty("streaming.sql.batchId") if tc is not None else None
    return int(got) if got is not None else None


class MinibrokerWriter(DataSourceArrowWriter):
    """``df.write.format("minibroker")``: append the rows to Kafka (``overwrite`` is the same)."""

    def __init__(self, options: SinkOptions, columns: frozenset[str]) -> None:
        self.options = options
        self.columns = columns

    def write(self, iterator: Iterator[Any]) -> SinkCommitMessage:
        return write_task(iterator, self.options, self.columns, partition_id=_partition_id())

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        s = _summary(messages)
        logger.info("minibroker sink: wrote %d rows (%d bytes) in %d tasks: %s", s.rows, s.bytes, len(messages),
                    s.topics)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        s = _summary(messages)
        logger.warning("minibroker sink: write failed; %d rows were written by the tasks that succeeded (they stay)",
                       s.rows)


class MinibrokerStreamWriter(DataSourceStreamArrowWriter):
    """``writeStream.format("minibroker")``: each micro-batch's rows, tagged with its batch id."""

    def __init__(self, options: SinkOptions, columns: frozenset[str]) -> None:
        self.options = options
        self.columns = columns

    def write(self, iterator: Iterator[Any]) -> SinkCommitMessage:
        return write_task(iterator, self.options, self.columns, _batch_id(), _partition_id())

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        # Every task of the micro-batch saw its id (tasks of a replayed batch see the same id).
        wrong = {m.batch_id for m in messages if isinstance(m, SinkCommitMessage)} - {batchId}
        if wrong:
            raise RuntimeError(f"micro-batch {batchId}: tasks reported batch ids {sorted(wrong, key=str)}")
        s = _summary(messages)
        logger.info("minibroker sink: micro-batch %d wrote %d rows (%d bytes): %s", batchId, s.rows, s.bytes,
                    s.topics)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        s = _summary(messages)
        if self.options.transactional_id_prefix is not None:
            logger.warning("minibroker sink: micro-batch %d failed; %d rows were committed by the tasks that"
                           " succeeded (a replay recognises them and does not write them again)", batchId, s.rows)
        else:
            logger.warning("minibroker sink: micro-batch %d failed; %d rows were written by the tasks that"
                           " succeeded (a replay writes them again: at-least-once)", batchId, s.rows)
