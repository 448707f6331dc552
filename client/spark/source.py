"""``MinibrokerDataSource``: Spark's Kafka source, as a PySpark (>= 4.0) Python Data Source.

::

    spark.dataSource.register(MinibrokerDataSource)
    df = (spark.read.format("minibroker")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "events")
          .load())

The schema is the built-in Kafka source's (every field nullable)::

    key binary, value binary, topic string, partition int, offset long,
    timestamp timestamp, timestampType int [, headers array<struct<key:string,value:binary>>]

``headers`` only with ``includeHeaders=true`` (null for a record without headers);
``timestampType`` is Kafka's id (0 CreateTime, 1 LogAppendTime). Options: ``client.spark.options``.
``spark.readStream.format("minibroker")`` gives the streaming reader (``client.spark.stream``,
pyspark >= 4.2).
``df.write.format("minibroker")`` and ``writeStream.format("minibroker")`` are Spark's Kafka
sink (``client.spark.writer``; columns ``value``, ``key``, ``topic``, ``partition``, ``headers``).
The name is not ``kafka``: Spark reserves it for its own source.
"""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from client.spark.options import parse_options
from client.spark.sink_options import check_schema, parse_sink_options

__all__ = ["MinibrokerDataSource", "KAFKA_SCHEMA", "HEADERS_FIELD"]

KAFKA_SCHEMA = ("key binary, value binary, topic string, partition int, offset long, timestamp timestamp,"
                " timestampType int")
HEADERS_FIELD = "headers array<struct<key:string,value:binary>>"


class MinibrokerDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "minibroker"

    def schema(self) -> str:
        headers = str(self.options.get("includeHeaders", "false")).strip().lower() == "true"
        return KAFKA_SCHEMA + (", " + HEADERS_FIELD if headers else "")

    def reader(self, schema: StructType) -> DataSourceReader:  # Spark passes schema= by keyword
        from client.spark.reader import MinibrokerBatchReader

        return MinibrokerBatchReader(schema, parse_options(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        try:
            from client.spark.stream import MinibrokerStreamReader
        except ImportError as e:  # pyspark < 4.2: no admission control for Python sources
            import pyspark

            raise RuntimeError(f"streaming reads from minibroker need pyspark >= 4.2 (found {pyspark.__version__}):"
                               f" {e}") from None
        return MinibrokerStreamReader(schema, parse_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        # Appends either way: a topic is a log (Spark's Kafka sink treats Overwrite as Append too).
        from client.spark.writer import MinibrokerWriter

        o = parse_sink_options(self.options)
        return MinibrokerWriter(o, frozenset(check_schema(schema.fields, o.topic)))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from client.spark.writer import MinibrokerStreamWriter

        o = parse_sink_options(self.options)
        return MinibrokerStreamWriter(o, frozenset(check_schema(schema.fields, o.topic)))
