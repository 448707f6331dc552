"""The streaming reader: micro-batches of offset ranges, with Kafka-style JSON offsets.

An offset (what Spark writes to the query's checkpoint, and hands back on restart) is the
next offset to read of every topic-partition, as in Spark's Kafka source::

    {"events": {"0": 1500, "1": 1498}}

topics and partitions sorted, so that equal offsets are equal JSON. A query restarted from its
checkpoint resumes from the last committed offsets: nothing lost, nothing read twice.

The driver-side methods run in one long-lived Python process per query (Spark's stream
runner), so the reader keeps one ``Admin`` connection on a ``LoopThread`` there; ``read()``
runs in the executors' Python workers and is ``client.spark.reader.read_range``, the batch
reader's bulk Arrow path.

- ``initialOffset``: ``startingOffsets`` (default ``latest``), ``startingTimestamp`` or
  ``startingOffsetsByTimestamp`` resolved with ListOffsets for the partitions of ``assign`` /
  ``subscribe`` / ``subscribePattern`` at that moment.
- ``latestOffset(start, limit)``: the partitions are looked up again on each trigger (new
  topics and partitions join, starting at their earliest offset); ``maxOffsetsPerTrigger``
  (the default ``ReadMaxRows`` limit) is shared out by lag (``client.spark.ranges.rate_limit``);
  ``minOffsetsPerTrigger`` holds a trigger back until that many records are there or
  ``maxTriggerDelay`` has passed. ``Trigger.AvailableNow`` (``SupportsTriggerAvailableNow``)
  fixes the latest offsets when the query starts and never goes past them, still in
  micro-batches of ``maxOffsetsPerTrigger``.
- ``partitions(start, end)``: one input partition per non-empty range, split by
  ``minPartitions`` / ``maxRecordsPerPartition`` like a batch read. Data loss is reported as
  Spark does (an error with ``failOnDataLoss=true``, else a warning): partitions that are
  gone, a new partition not starting at 0, an offset that went backwards.
- ``commit``: nothing to do (Spark's Kafka source does not commit to Kafka either).

Needs pyspark >= 4.2 (admission control and ``SupportsTriggerAvailableNow`` for Python sources).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from client.admin import Admin
from client.spark.options import EARLIEST, LATEST, SourceOptions
from client.spark.ranges import OffsetRange, rate_limit, split_ranges
from client.spark.reader import RangePartition, _fmt, _resolve, _topic_partitions, read_range, report_data_loss
from client.structs import TopicPartition
from client.sync import LoopThread

__all__ = ["MinibrokerStreamReader", "to_json", "from_json"]

Offsets = dict[tuple[str, int], int]


def to_json(offsets: Offsets) -> dict[str, dict[str, int]]:
    """``{(t, p): off}`` -> ``{"t": {"p": off}}``, topics and partitions in order."""
    out: dict[str, dict[str, int]] = {}
    for (t, p), off in sorted(offsets.items()):
        out.setdefault(t, {})[str(p)] = off
    return out


def from_json(obj: dict[str, dict[str, int]]) -> Offsets:
    return {(t, int(p)): int(off) for t, parts in obj.items() for p, off in parts.items()}


class MinibrokerStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, schema: StructType, options: SourceOptions, resolved: dict[str, Any] | None = None) -> None:
        self.schema = schema
        self.options = options
        self.resolved = resolved  # the reader schemas of typed keys and values (fixed for the query's life)
        self._lt: LoopThread | None = None
        self._admin: Admin | None = None
        self._target: Offsets | None = None      # Trigger.AvailableNow: never read past these
        self._latest: Offsets = {}                # the latest offsets seen, for reportLatestOffset
        self._last_trigger = time.monotonic()     # when the last non-empty micro-batch was planned

    def __getstate__(self) -> dict[str, Any]:
        # Spark pickles the reader to its executors for read(): no loop thread or connection.
        state = dict(self.__dict__)
        state["_lt"] = state["_admin"] = None
        return state

    # ------------------------------------------------------------ driver side

    def _call(self, fn: Any) -> Any:
        """Run ``fn(admin)`` on the query's Admin connection (made again after a failure)."""
        if self._lt is None:
            self._lt = LoopThread("minibroker-spark-stream")
        lt = self._lt
        if self._admin is None:
            admin = Admin(self.options.bootstrap_servers, **dict(self.options.admin_config),
                          **self.options.security_options())
            lt.run(admin.start())
            self._admin = admin
        try:
            return lt.run(fn(self._admin))
        except (ConnectionError, OSError):
            self._close_admin()
            raise

    def _close_admin(self) -> None:
        admin, self._admin = self._admin, None
        if admin is not None and self._lt is not None:
            try:
                self._lt.run(admin.close(), timeout=10)
            except Exception:  # noqa: BLE001 - closing a connection that already failed
                pass

    def _offsets(self, tps: list[tuple[str, int]], which: int) -> Offsets:
        if not tps:
            return {}

        async def go(admin: Admin) -> Any:
            return await admin.list_offsets({TopicPartition(*tp): which for tp in tps},
                                            isolation_level=self.options.isolation_level)

        got = self._call(go)
        return {tp: got[TopicPartition(*tp)].offset for tp in tps if TopicPartition(*tp) in got}

    def _latest_offsets(self) -> Offsets:
        async def go(admin: Admin) -> list[tuple[str, int]]:
            return await _topic_partitions(admin, self.options)

        return self._offsets(self._call(go), LATEST)

    def initialOffset(self) -> dict[str, Any]:
        o = self.options

        async def go(admin: Admin) -> Offsets:
            tps = await _topic_partitions(admin, o)
            if not tps:
                return {}
            return await _resolve(admin, tps, o.starting, "startingOffsets", o.timestamp_strategy_latest)

        return to_json(self._call(go))

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._latest_offsets()

    def getDefaultReadLimit(self) -> ReadLimit:
        mot = self.options.max_offsets_per_trigger
        return ReadMaxRows(mot) if mot else ReadAllAvailable()

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return to_json(self._latest) if self._latest else None

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = from_json(start)
        latest = self._latest_offsets()
        self._latest = latest
        if self._target is not None:  # AvailableNow: partitions found later wait for the next query
            latest = {tp: min(off, self._target[tp]) for tp, off in latest.items() if tp in self._target}
        new = [tp for tp in latest if tp not in begin]
        frm = {**self._offsets(new, EARLIEST), **{tp: off for tp, off in begin.items() if tp in latest}}
        frm = {tp: frm.get(tp, latest[tp]) for tp in latest}
        end = rate_limit(frm, latest, limit.max_rows) if isinstance(limit, ReadMaxRows) else latest
        available = sum(max(end[tp] - frm[tp], 0) for tp in end)
        least = self.options.min_offsets_per_trigger
        if (least and self._target is None and available < least
                and (time.monotonic() - self._last_trigger) * 1000 < self.options.max_trigger_delay_ms):
            return start  # not enough yet: no micro-batch this trigger
        if available:
            self._last_trigger = time.monotonic()
        # Partitions that are gone keep their offset here; partitions() reports them.
        return to_json({**{tp: off for tp, off in begin.items() if tp not in end}, **end})

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        o = self.options
        begin, until = from_json(start), from_json(end)
        new = [tp for tp in until if tp not in begin]
        new_from = self._offsets(new, EARLIEST)
        if set(new_from) != set(new):
            report_data_loss(f"Cannot find earliest offsets of {_fmt(set(new) - set(new_from))}. Some data may"
                             " have been missed", o.fail_on_data_loss)
        for (t, p), off in sorted(new_from.items()):
            if off != 0:
                report_data_loss(f"Added partition {t}-{p} starts from {off} instead of 0. Some data may have been"
                                 " missed", o.fail_on_data_loss)
        current = set(self._latest_offsets())
        gone = {tp for tp in set(begin) | set(until) if tp not in current}
        if gone:
            report_data_loss(f"{_fmt(gone)} are gone. Some data may have been missed.", o.fail_on_data_loss)
        ranges = []
        for tp, e in sorted(until.items()):
            if tp in gone:
                continue
            s = begin.get(tp, new_from.get(tp))
            if s is None:
                continue
            if e < s:
                report_data_loss(f"Partition {tp[0]}-{tp[1]}'s offset was changed from {s} to {e}, some data may"
                                 " have been missed", o.fail_on_data_loss)
                continue
            ranges.append(OffsetRange(tp[0], tp[1], s, e))
        return [RangePartition(r.topic, r.partition, r.start, r.end)
                for r in split_ranges(ranges, o.min_partitions, o.max_records_per_partition)]

    def commit(self, end: dict[str, Any]) -> None:
        pass

    def stop(self) -> None:
        self._close_admin()
        if self._lt is not None:
            self._lt.stop()
            self._lt = None

    # ------------------------------------------------------------ executors

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, RangePartition):
            return iter(())
        from pyspark.sql.pandas.types import to_arrow_schema

        return read_range(partition, self.options, to_arrow_schema(self.schema, timezone="UTC"), self.resolved)

