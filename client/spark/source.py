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

Typed keys and values (``valueFormat``/``keyFormat`` = ``avro`` | ``json`` | ``protobuf`` with
``schema.registry.url``; client/spark/format_options.py): ``schema()`` resolves the reader
schemas with the registry on the driver and gives ``value`` (``key``) the Spark type of the
registered schema (a struct for a record, message or object); with ``mode=PERMISSIVE`` a last
column ``_corrupt_record string``. The resolved schemas are kept on the data source, which
Spark pickles from ``schema()`` to ``reader()``, so planning and reading agree on them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from client.spark.format_options import CORRUPT_COLUMN
from client.spark.options import SourceOptions, parse_options
from client.spark.sink_options import SinkOptions, check_schema, parse_sink_options

__all__ = ["MinibrokerDataSource", "KAFKA_SCHEMA", "HEADERS_FIELD", "typed_schema"]

KAFKA_SCHEMA = ("key binary, value binary, topic string, partition int, offset long, timestamp timestamp,"
                " timestampType int")
HEADERS_FIELD = "headers array<struct<key:string,value:binary>>"


class MinibrokerDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "minibroker"

    def schema(self) -> str | StructType:
        headers = str(self.options.get("includeHeaders", "false")).strip().lower() == "true"
        ddl = KAFKA_SCHEMA + (", " + HEADERS_FIELD if headers else "")
        o = parse_options(self.options)
        resolved = self._resolve(o)
        return ddl if resolved is None else typed_schema(ddl, resolved, o.formats.permissive)

    def _resolve(self, o: SourceOptions) -> dict[str, Any] | None:
        """The reader schemas of typed keys and values ({"key"/"value": ResolvedSchema})."""
        if not o.formats.typed:
            return None
        got: dict[str, Any] | None = getattr(self, "_resolved", None)
        if got is None:
            from client.spark.registry_codec import resolve

            got = self._resolved = {which: resolve(o.formats, which, side, o.topic_names)
                                    for which, side in o.formats.sides()}
        return got

    def reader(self, schema: StructType) -> DataSourceReader:  # Spark passes schema= by keyword
        from client.spark.reader import MinibrokerBatchReader

        o = parse_options(self.options)
        return MinibrokerBatchReader(schema, o, self._resolve(o))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        try:
            from client.spark.stream import MinibrokerStreamReader
        except ImportError as e:  # pyspark < 4.2: no admission control for Python sources
            import pyspark

            raise RuntimeError(f"streaming reads from minibroker need pyspark >= 4.2 (found {pyspark.__version__}):"
                               f" {e}") from None
        o = parse_options(self.options, streaming=True)
        return MinibrokerStreamReader(schema, o, self._resolve(o))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        # Appends either way: a topic is a log (Spark's Kafka sink treats Overwrite as Append too).
        from client.spark.writer import MinibrokerWriter

        o = _with_writer_schemas(parse_sink_options(self.options))
        return MinibrokerWriter(o, frozenset(check_schema(schema.fields, o.topic, [w for w, _ in o.resolved])))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from client.spark.writer import MinibrokerStreamWriter

        o = _with_writer_schemas(parse_sink_options(self.options))
        return MinibrokerStreamWriter(o, frozenset(check_schema(schema.fields, o.topic, [w for w, _ in o.resolved])))


def _with_writer_schemas(o: SinkOptions) -> SinkOptions:
    """``o`` with the writer schemas of its typed keys and values (the subjects' latest versions)."""
    if not o.formats.typed:
        return o
    from client.spark.registry_codec import resolve

    topics = (o.topic,) if o.topic else ()
    return replace(o, resolved=tuple((which, resolve(o.formats, which, side, topics))
                                     for which, side in o.formats.sides()))


def typed_schema(ddl: str, resolved: dict[str, Any], permissive: bool) -> StructType:
    """The Kafka schema (``ddl``: ``KAFKA_SCHEMA`` [+ ``HEADERS_FIELD``]) with ``key``/``value``
    of the resolved schemas' types. Built by hand: ``StructType.fromDDL`` needs a JVM, which the
    planner process does not have."""
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        TimestampType,
    )

    header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    fields = [StructField("key", BinaryType()), StructField("value", BinaryType()), StructField("topic", StringType()),
              StructField("partition", IntegerType()), StructField("offset", LongType()),
              StructField("timestamp", TimestampType()), StructField("timestampType", IntegerType())]
    if ddl.endswith(HEADERS_FIELD):
        fields.append(StructField("headers", ArrayType(header)))
    fields = [StructField(f.name, from_arrow_type(resolved[f.name].arrow_type()), True) if f.name in resolved
              else f for f in fields]
    if permissive:
        fields.append(StructField(CORRUPT_COLUMN, StringType(), True))
    return StructType(fields)
