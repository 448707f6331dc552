"""The ``minibroker`` sink end to end: DataFrames written with a local Spark to a real broker,
read back with the data source (and with our consumer); every schema error; a broker error
failing the job; a streaming read -> transform -> write pipeline between topics restarted from
its checkpoint."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest

from client.sync import SyncAdmin, SyncProducer

pytestmark = pytest.mark.slow  # a local Spark session (a JVM) per module

UTC = dt.UTC
BASE = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
SCHEMA = ("key binary, value binary, topic string, partition int, headers array<struct<key:string,value:binary>>,"
          " timestamp timestamp")


@pytest.fixture(scope="module")
def servers(module_broker: Any) -> Iterator[str]:
    with SyncAdmin(module_broker.bootstrap) as admin:
        for name, parts in (("w-a", 3), ("w-b", 2), ("w-str", 1), ("w-opt", 2), ("w-col", 1), ("w-in", 2),
                            ("w-out", 2)):
            admin.create_topic(name, num_partitions=parts)
        admin.create_topic("w-small", num_partitions=1, configs={"max.message.bytes": "1000"})
    yield module_broker.bootstrap


def read(spark: Any, servers: str, topic: str) -> list[Any]:
    return (spark.read.format("minibroker").option("kafka.bootstrap.servers", servers).option("subscribe", topic)
            .option("includeHeaders", "true").load().collect())


def write(df: Any, servers: str, **options: str) -> None:
    w = df.write.format("minibroker").mode("append").option("kafka.bootstrap.servers", servers)
    for k, v in options.items():
        w = w.option(k.replace("_", "."), v)
    w.save()


def test_batch_write_reads_back_exactly(spark: Any, servers: str) -> None:
    rows = []
    for i in range(600):
        topic = "w-a" if i % 2 == 0 else "w-b"
        rows.append((None if i % 7 == 0 else f"k{i}".encode(), None if i == 5 else f"value-{i}".encode() * (i % 4),
                     topic, i % (3 if topic == "w-a" else 2),
                     [{"key": "h", "value": str(i).encode()}, {"key": "n", "value": None}] if i % 3 == 0 else None,
                     BASE + dt.timedelta(seconds=i)))
    df = spark.createDataFrame(rows, SCHEMA).repartition(4)
    write(df, servers, kafka_linger_ms="20", kafka_compression_type="lz4")
    got = read(spark, servers, "w-a") + read(spark, servers, "w-b")
    assert len(got) == len(rows)
    seen = {(bytes(r.key) if r.key is not None else None, bytes(r.value) if r.value is not None else None, r.topic,
             r.partition, tuple((h.key, None if h.value is None else bytes(h.value)) for h in r.headers or ()),
             r.timestamp.astimezone(UTC)) for r in got}
    want = {(k, v, t, p, tuple((h["key"], h["value"]) for h in hs or ()), ts) for k, v, t, p, hs, ts in rows}
    assert seen == want
    # Records of one Spark task and partition keep their order: the offsets are dense from 0.
    for topic, parts in (("w-a", 3), ("w-b", 2)):
        for p in range(parts):
            offs = sorted(r.offset for r in got if r.topic == topic and r.partition == p)
            assert offs == list(range(len(offs)))


def test_string_columns_and_the_topic_option_wins(spark: Any, servers: str) -> None:
    df = spark.createDataFrame([(f"k{i}", f"v{i}", "w-col") for i in range(50)], "key string, value string, topic string")
    write(df, servers, topic="w-str")
    got = read(spark, servers, "w-str")
    assert sorted((bytes(r.key), bytes(r.value)) for r in got) == sorted((f"k{i}".encode(), f"v{i}".encode())
                                                                        for i in range(50))
    assert read(spark, servers, "w-col") == []  # the column was overridden by the option


def test_keys_are_partitioned_as_kafka_does(spark: Any, servers: str) -> None:
    # No partition column: Kafka's default partitioner (murmur2 of the key), as the Java producer.
    from client.partitioner import partition_for_key

    df = spark.createDataFrame([(f"key-{i}".encode(), b"x") for i in range(40)], "key binary, value binary")
    write(df, servers, topic="w-opt", kafka_acks="all", kafka_enable_idempotence="true", kafka_batch_size="1024")
    got = read(spark, servers, "w-opt")
    assert len(got) == 40
    for r in got:
        assert r.partition == partition_for_key(bytes(r.key), 2)


@pytest.mark.parametrize("ddl,options,message", [
    ("key binary", {"topic": "w-a"}, "Required attribute 'value' not found"),
    ("value int", {"topic": "w-a"}, "value attribute unsupported type int. value must be a(n) string or binary"),
    ("value binary", {}, "topic option required when no 'topic' attribute is present. Use the topic option"),
    ("value binary, topic int", {}, "topic attribute unsupported type int. topic must be a(n) string"),
    ("value binary, key array<int>", {"topic": "w-a"}, "key attribute unsupported type array<int>. key must be a(n)"
                                                       " string or binary"),
    ("value binary, partition string", {"topic": "w-a"}, "partition attribute unsupported type string. partition"
                                                         " must be a(n) int"),
    ("value binary, headers map<string,binary>", {"topic": "w-a"}, "headers attribute unsupported type"
                                                                   " map<string,binary>. headers must be a(n)"
                                                                   " array<struct<key:string,value:binary>>"),
    ("value binary", {"topic": "w-a", "kafka.key.serializer": "x"}, "Kafka option 'key.serializer' is not supported"),
    ("value binary", {"topic": "w-a", "kafka.acks": "2"}, "Invalid value 2 for configuration acks"),
])
def test_schema_and_option_errors(spark: Any, servers: str, ddl: str, options: dict[str, str], message: str) -> None:
    df = spark.createDataFrame([], ddl)
    w = df.write.format("minibroker").mode("append").option("kafka.bootstrap.servers", servers)
    for k, v in options.items():
        w = w.option(k, v)
    with pytest.raises(Exception) as e:
        w.save()
    assert message in str(e.value)


def test_missing_bootstrap_servers(spark: Any) -> None:
    df = spark.createDataFrame([(b"v",)], "value binary")
    with pytest.raises(Exception) as e:
        df.write.format("minibroker").mode("append").option("topic", "w-a").save()
    assert "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka producer" in str(e.value)


def test_a_broker_error_fails_the_job(spark: Any, servers: str) -> None:
    # w-small takes batches up to 1000 bytes: the broker answers MESSAGE_TOO_LARGE.
    df = spark.createDataFrame([(b"x" * 5000,)], "value binary")
    with pytest.raises(Exception) as e:
        write(df, servers, topic="w-small", kafka_enable_idempotence="false")
    assert "MESSAGE_TOO_LARGE" in str(e.value) or "MessageTooLarge" in str(e.value), str(e.value)[-2000:]


def test_a_null_topic_fails_the_job(spark: Any, servers: str) -> None:
    df = spark.createDataFrame([(b"v", None)], "value binary, topic string")
    with pytest.raises(Exception) as e:
        write(df, servers)
    assert "null topic present in the data. Use the topic option for setting a topic." in str(e.value)


def produce(servers: str, topic: str, start: int, n: int, parts: int = 2) -> None:
    with SyncProducer(servers) as prod:
        futs = [prod.send_nowait(topic, f"v{i}".encode(), key=f"k{i}".encode(), partition=i % parts)
                for i in range(start, start + n)]
        prod.flush()
        for f in futs:
            f.result()


def run_pipeline(spark: Any, servers: str, checkpoint: str) -> list[int]:
    """read w-in -> upper-case the values -> write w-out, to the end of what is there now."""
    src = (spark.readStream.format("minibroker").option("kafka.bootstrap.servers", servers)
           .option("subscribe", "w-in").option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "150")
           .load())
    out = src.selectExpr("key", "upper(cast(value as string)) as value", "partition")
    q = (out.writeStream.format("minibroker").option("kafka.bootstrap.servers", servers).option("topic", "w-out")
         .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    try:
        q.awaitTermination(120)
        assert q.exception() is None, q.exception()
        return [p.numInputRows for p in q.recentProgress if p.numInputRows]
    finally:
        q.stop()


def test_streaming_pipeline_resumes_from_its_checkpoint(spark: Any, servers: str, tmp_path: Any) -> None:
    produce(servers, "w-in", 0, 300)
    assert run_pipeline(spark, servers, str(tmp_path / "ckpt")) == [150, 150]
    produce(servers, "w-in", 300, 100)
    assert run_pipeline(spark, servers, str(tmp_path / "ckpt")) == [100]
    got = read(spark, servers, "w-out")
    assert sorted((bytes(r.key), bytes(r.value), r.partition) for r in got) == sorted(
        (f"k{i}".encode(), f"V{i}".encode(), i % 2) for i in range(400))
