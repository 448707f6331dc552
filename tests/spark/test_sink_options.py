"""client/spark/sink_options.py: the sink's options and columns, with Spark's messages (no Spark
needed: the columns are given as pyspark StructFields, which need no JVM)."""

from __future__ import annotations

import pytest

from client.spark.sink_options import check_schema, parse_sink_options

pytest.importorskip("pyspark")
from pyspark.sql import types as T

HEADERS = T.ArrayType(T.StructType([T.StructField("key", T.StringType()), T.StructField("value", T.BinaryType())]))
TYPES = {"string": T.StringType(), "binary": T.BinaryType(), "int": T.IntegerType(), "bigint": T.LongType(),
         "double": T.DoubleType(), "timestamp": T.TimestampType(), "array<string>": T.ArrayType(T.StringType()),
         "array<struct<key:string,value:binary>>": HEADERS}


def fields(ddl: str) -> list:
    """StructFields from "name type, ..." (the types of TYPES; no JVM needed)."""
    out = []
    for part in ddl.split(", "):
        name, typ = part.split(" ", 1)
        out.append(T.StructField(name, TYPES[typ]))
    return out


def test_producer_settings_take_kafkas_names() -> None:
    o = parse_sink_options({"kafka.bootstrap.servers": "h:1", "Topic": " t ", "kafka.acks": "all",
                            "kafka.linger.ms": "20", "kafka.batch.size": "65536", "kafka.compression.type": "ZSTD",
                            "kafka.enable.idempotence": "false", "kafka.client.id": "me",
                            "kafka.max.in.flight.requests.per.connection": "1", "kafka.something.else": "x"})
    assert o.bootstrap_servers == "h:1" and o.topic == "t"
    assert dict(o.producer_config) == {"acks": -1, "linger_ms": 20, "batch_size": 65536, "compression_type": "zstd",
                                       "enable_idempotence": False, "client_id": "me",
                                       "max_in_flight_requests_per_connection": 1}


def test_transactional_id_is_the_exactly_once_prefix() -> None:
    o = parse_sink_options({"kafka.bootstrap.servers": "h:1", "topic": "t", "kafka.transactional.id": "q1",
                            "kafka.acks": "all"})
    assert o.transactional_id_prefix == "q1" and dict(o.producer_config) == {"acks": -1}
    assert parse_sink_options({"kafka.bootstrap.servers": "h:1"}).transactional_id_prefix is None


@pytest.mark.parametrize("options,message", [
    ({}, "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka producer"),
    ({"kafka.value.serializer": "x"}, "Kafka option 'value.serializer' is not supported as values are serialized"),
    ({"kafka.transactional.id": " "}, "Kafka option 'transactional.id' must not be empty"),
    ({"kafka.transactional.id": "x", "kafka.acks": "1"}, "Kafka option 'acks' must be 'all' with 'transactional.id'"),
    ({"kafka.transactional.id": "x", "kafka.enable.idempotence": "false"},
     "Kafka option 'enable.idempotence' must be true with 'transactional.id'"),
    ({"kafka.compression.type": "brotli"}, "Invalid value brotli for configuration compression.type"),
    ({"kafka.batch.size": "0"}, "Invalid value 0 for configuration batch.size: Value must be at least 1"),
    ({"kafka.linger.ms": "soon"}, "Invalid value soon for configuration linger.ms: Not a number of type INT"),
    ({"kafka.security.protocol": "TLS"}, "String must be one of: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
    ({"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "PLAIN"}, "needs sasl.jaas.config"),
])
def test_refused_options(options: dict[str, str], message: str) -> None:
    if "kafka.bootstrap.servers" not in options and options:
        options = {"kafka.bootstrap.servers": "h:1", **options}
    with pytest.raises(ValueError) as e:
        parse_sink_options(options)
    assert message in str(e.value)


def test_columns_used() -> None:
    assert check_schema(fields("value string"), "t") == {"value": "string"}
    got = check_schema(fields("topic string, key binary, value binary, partition int, offset bigint, headers"
                              " array<struct<key:string,value:binary>>, timestamp timestamp"), None)
    assert got == {"topic": "string", "key": "binary", "value": "binary", "partition": "int",
                   "headers": "array<struct<key:string,value:binary>>", "timestamp": "timestamp"}
    # The option wins: a topic column of any type is then ignored.
    assert "topic" not in check_schema(fields("topic int, value binary"), "t")


@pytest.mark.parametrize("ddl,topic,message", [
    ("key binary", "t", "Required attribute 'value' not found"),
    ("value binary", None, "topic option required when no 'topic' attribute is present. Use the topic option for"
                           " setting a topic."),
    ("value binary, topic binary", None, "topic attribute unsupported type binary. topic must be a(n) string"),
    ("value double", "t", "value attribute unsupported type double. value must be a(n) string or binary"),
    ("value binary, key int", "t", "key attribute unsupported type int. key must be a(n) string or binary"),
    ("value binary, partition bigint", "t", "partition attribute unsupported type bigint. partition must be a(n) int"),
    ("value binary, headers array<string>", "t", "headers attribute unsupported type array<string>. headers must be"
                                                 " a(n) array<struct<key:string,value:binary>>"),
    ("value binary, timestamp bigint", "t", "timestamp attribute unsupported type bigint. timestamp must be a(n)"
                                            " timestamp"),
])
def test_column_errors(ddl: str, topic: str | None, message: str) -> None:
    with pytest.raises(ValueError) as e:
        check_schema(fields(ddl), topic)
    assert str(e.value) == message or message in str(e.value)


def test_security_options() -> None:
    import pickle

    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="s3cret";'
    o = parse_sink_options({"kafka.bootstrap.servers": "h:1", "kafka.security.protocol": "SASL_PLAINTEXT",
                            "kafka.sasl.mechanism": "PLAIN", "kafka.sasl.jaas.config": jaas})
    assert pickle.loads(pickle.dumps(o)).security_options() == {
        "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "sasl_plain_username": "alice",
        "sasl_plain_password": "s3cret"}
    assert dict(o.producer_config) == {}
