"""Read and write minibroker (or any Kafka) topics from PySpark >= 4.0 with a Python Data Source.

``MinibrokerDataSource`` (format ``minibroker``) has the schema and the options of Spark's
built-in Kafka source, for batch and streaming reads, and of its sink for writes;
``register(spark)`` registers it. Needs the ``spark`` extra (``pip install minibroker[spark]``:
pyspark, pyarrow) and Java 17+.

- ``options``: the Kafka source's options, parsed and checked with Spark's messages;
- ``ranges``: offset ranges -> input partitions (``minPartitions``, ``maxRecordsPerPartition``);
- ``reader``: planning on the driver (ListOffsets) and bulk Arrow reads on the workers;
- ``stream``: the streaming reader (micro-batches, Kafka-style JSON offsets; pyspark >= 4.2);
- ``sink_options``: the Kafka sink's options and input columns, checked with Spark's messages;
- ``writer``: the sink (batch and streaming), one producer per Spark task;
- ``source``: the DataSource and its schema.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MinibrokerDataSource", "register"]


def __getattr__(name: str) -> Any:
    # Lazy, so that the pure modules (options, ranges) import without pyspark installed.
    if name == "MinibrokerDataSource":
        from client.spark.source import MinibrokerDataSource

        return MinibrokerDataSource
    raise AttributeError(name)


def register(spark: Any) -> None:
    """Register the ``minibroker`` format with a SparkSession."""
    from client.spark.source import MinibrokerDataSource

    spark.dataSource.register(MinibrokerDataSource)
