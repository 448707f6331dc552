"""``SyntheticKafkaSource`` (format ``minibroker_synthetic``): Spark's own cost for a Python
data source of the Kafka schema, the ceiling a reader of real topics can approach.

It plans the same input partitions as a read of ``partitions`` topic-partitions holding ``rows``
records in all (``client.spark.ranges.split_ranges`` with ``minPartitions``), and its ``read``
yields Arrow batches of ``client.spark.reader.ARROW_BATCH_ROWS`` rows with the source's seven
columns, built the cheapest way: the values are slices of one ``pyarrow`` array of random bytes
made once per worker, keys are null, offsets are the real ones, the other columns are repeated
scalars. No broker, no network, no record decoding: what is left is Spark's (the batches'
trip from the Python worker to the JVM, and the query). ``scripts/spark_loadtest.py``
reports the ``minibroker`` reader's rows/s as a fraction of this source's on the same query.

Options: ``rows`` (required), ``recordSize`` (bytes per value, default 100), ``partitions``
(default 1), ``minPartitions``, ``topic`` (default ``synthetic``).
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

_values: dict[int, Any] = {}  # record size -> a BinaryArray of ARROW_BATCH_ROWS random values (per worker)


def _value_array(size: int) -> Any:
    import pyarrow as pa

    got = _values.get(size)
    if got is None:
        data = os.urandom(size * ARROW_BATCH_ROWS)
        offsets = pa.array(range(0, size * ARROW_BATCH_ROWS + 1, size), pa.int32()).buffers()[1]
        got = _values[size] = pa.Array.from_buffers(pa.binary(), ARROW_BATCH_ROWS, [None, offsets, pa.py_buffer(data)])
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
        values = _value_array(self.size)
        ts = pa.scalar(1_700_000_000_000_000, sch.field("timestamp").type)
        for lo in range(partition.start, partition.end, ARROW_BATCH_ROWS):
            n = min(ARROW_BATCH_ROWS, partition.end - lo)
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
