"""``SyntheticKafkaSource`` (format ``minibroker_synthetic``): Spark's own cost for a Python
data source of the Kafka schema, the ceiling a reader of real topics can approach.

It plans the same input partitions as a read of ``partitions`` topic-partitions holding ``rows``
records in all (``client.spark.ranges.split_ranges`` with ``minPartitions``), and its ``read``
yields Arrow batches of ``batchRows`` rows (default ``client.spark.reader.ARROW_BATCH_ROWS``,
10,000; the ``minibroker`` reader yields a run of plain producer batches whole, ~70,000 rows of
100 bytes per 8 MiB Fetch, and joins smaller ones to at least 10,000) with the source's seven
columns, built the cheapest way: the values are slices of one ``pyarrow`` array of random bytes
made once per worker, keys are null, offsets are the real ones, the other columns are repeated
scalars. No broker, no network, no record decoding: what is left is Spark's (the batches'
trip from the Python worker to the JVM, and the query). ``scripts/spark_loadtest.py``
reports the ``minibroker`` reader's rows/s as a fraction of this source's on the same query.

Options: ``rows`` (required), ``recordSize`` (bytes per value, default 100), ``partitions``
(default 1), ``minPartitions``, ``topic`` (default ``synthetic``), ``batchRows`` (default
10,000).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from client.spark.ranges import OffsetRange, split_ranges
from client.spark.reader import ARROW_BATCH_ROWS, RangePartition
from client.spark.source import KAFKA_SCHEMA

__all__ = ["SyntheticKafkaSource"]

_values: dict[tuple[int, int], Any] = {}  # (record size, rows) -> a BinaryArray of random values (per worker)


def _value_array(size: int, rows: int) -> Any:
    import pyarrow as pa

    got = _values.get((size, rows))
    if got is None:
        data = os.urandom(size * rows)
        offsets = pa.array(range(0, size * rows + 1, size), pa.int32()).buffers()[1]
        got = _values[size, rows] = pa.Array.from_buffers(pa.binary(), rows, [None, offsets, pa.py_buffer(data)])
    return got


class SyntheticReader(DataSourceReader):
    def __init__(self, schema: StructType, options: dict[str, str]) -> None:
        opts = {k.lower(): v for k, v in options.items()}
        self.schema = schema
        self.rows = int(opts["rows"])
        self.size = int(opts.get("recordsize", "100"))
        self.parts = int(opts.get("partitions", "1"))
        self.min_partitions = int(opts["minpartitions"]) if "minpartitions" in opts else None
        self.topic = opts.get("topic", "synthetic")
        self.batch_rows = int(opts.get("batchrows", str(ARROW_BATCH_ROWS)))
        if self.batch_rows <= 0:
            raise ValueError(f"batchRows must be positive, not {self.batch_rows}")

    def partitions(self) -> list[InputPartition]:
        per, extra = divmod(self.rows, self.parts)
        ranges = [OffsetRange(self.topic, p, 0, per + (1 if p < extra else 0)) for p in range(self.parts)]
        return [RangePartition(r.topic, r.partition, r.start, r.end)
                for r in split_ranges(ranges, self.min_partitions, None)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, RangePartition):
            return
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        sch = to_arrow_schema(self.schema, timezone="UTC")
        step = self.batch_rows
        values = _value_array(self.size, step)
        ts = pa.scalar(1_700_000_000_000_000, sch.field("timestamp").type)
        for lo in range(partition.start, partition.end, step):
            n = min(step, partition.end - lo)
            yield pa.RecordBatch.from_arrays([
                pa.nulls(n, pa.binary()),
                values.slice(0, n),
                pa.repeat(pa.scalar(partition.topic, pa.string()), n),
                pa.repeat(pa.scalar(partition.partition, pa.int32()), n),
                pa.array(range(lo, lo + n), pa.int64()),
                pa.repeat(ts, n),
                pa.repeat(pa.scalar(0, pa.int32()), n),
            ], schema=sch)


class SyntheticKafkaSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "minibroker_synthetic"

    def schema(self) -> str:
        return KAFKA_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return SyntheticReader(schema, dict(self.options))
