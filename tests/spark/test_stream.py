"""The streaming reader: micro-batches, Kafka-style JSON offsets, restart from a checkpoint,
``maxOffsetsPerTrigger`` and data-loss reports. Spark queries use ``Trigger.AvailableNow`` so
they end by themselves; the reader's driver-side methods are also called directly (no Spark)
for the cases that need a broker in a particular state."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from client.spark.options import parse_options
from client.sync import SyncAdmin, SyncProducer

pytest.importorskip("pyspark.sql.streaming.datasource", reason="streaming needs pyspark >= 4.2")
from client.spark.reader import DataLossError
from client.spark.stream import MinibrokerStreamReader

pytestmark = pytest.mark.slow  # a local Spark session (a JVM) per module

TOPIC = "stream"
PARTS = 2


@pytest.fixture(scope="module")
def servers(module_broker: Any) -> Iterator[str]:
    with SyncAdmin(module_broker.bootstrap) as admin:
        admin.create_topic(TOPIC, num_partitions=PARTS)
    yield module_broker.bootstrap


def produce(servers: str, topic: str, per_partition: int, start: int, parts: int = PARTS) -> None:
    """``per_partition`` records into each partition, values ``p:i`` for i from ``start``."""
    with SyncProducer(servers, linger_ms=5) as prod:
        futs = [prod.send_nowait(topic, f"{p}:{i}".encode(), partition=p)
                for p in range(parts) for i in range(start, start + per_partition)]
        prod.flush()
        for f in futs:
            f.result()


def stream(spark: Any, servers: str, **options: str) -> Any:
    r = spark.readStream.format("minibroker").option("kafka.bootstrap.servers", servers)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def run_available_now(spark: Any, servers: str, out: str, checkpoint: str, **options: str) -> list[int]:
    """Run the query to the end of what is there now; return each micro-batch's row count."""
    df = stream(spark, servers, **options).selectExpr("partition", "offset", "value")
    q = (df.writeStream.format("parquet").option("path", out).option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start())
    try:
        q.awaitTermination(120)
        assert q.exception() is None, q.exception()
        return [p.numInputRows for p in q.recentProgress if p.numInputRows]
    finally:
        q.stop()


def reader(servers: str, **options: str) -> MinibrokerStreamReader:
    from pyspark.sql.types import StructType

    opts = {"kafka.bootstrap.servers": servers, **options}
    return MinibrokerStreamReader(StructType(), parse_options(opts, streaming=True))


def test_restart_from_checkpoint_no_loss_no_duplicates(spark: Any, servers: str, tmp_path: Any) -> None:
    out, chk = str(tmp_path / "out"), str(tmp_path / "chk")
    produce(servers, TOPIC, 150, 0)
    batches = run_available_now(spark, servers, out, chk, subscribe=TOPIC, startingOffsets="earliest",
                                maxOffsetsPerTrigger="100")
    assert batches == [100, 100, 100]  # 300 records in micro-batches of maxOffsetsPerTrigger
    produce(servers, TOPIC, 60, 150)
    # restarted from the checkpoint: only the new records; startingOffsets no longer applies
    batches = run_available_now(spark, servers, out, chk, subscribe=TOPIC, startingOffsets="earliest",
                                maxOffsetsPerTrigger="100")
    assert batches == [100, 20]
    got = [(r.partition, r.offset, bytes(r.value)) for r in spark.read.parquet(out).collect()]
    assert len(got) == len(set(got)) == 2 * 210
    assert set(got) == {(p, i, f"{p}:{i}".encode()) for p in range(PARTS) for i in range(210)}


def test_options_refused_in_streaming(spark: Any, servers: str) -> None:
    q = stream(spark, servers, subscribe=TOPIC, endingOffsets="latest").writeStream.format("noop").start()
    try:
        with pytest.raises(Exception, match="ending offset not valid in streaming queries"):
            q.awaitTermination(60)
    finally:
        q.stop()
    with pytest.raises(ValueError, match=r"minOffsetPerTrigger\(10\) is higher than the maxOffsetsPerTrigger\(5\)"):
        parse_options({"kafka.bootstrap.servers": servers, "subscribe": TOPIC, "minOffsetsPerTrigger": "10",
                       "maxOffsetsPerTrigger": "5"}, streaming=True)


def test_offsets_json_and_starting_positions(servers: str) -> None:
    with SyncAdmin(servers) as admin:
        admin.create_topic("stream-pos", num_partitions=2)
    produce(servers, "stream-pos", 5, 0)
    r = reader(servers, subscribe="stream-pos")  # default: latest
    try:
        assert r.initialOffset() == {"stream-pos": {"0": 5, "1": 5}}
        assert reader(servers, assign='{"stream-pos":[1,0]}', startingOffsets="earliest").initialOffset() == {
            "stream-pos": {"0": 0, "1": 0}}
        assert reader(servers, subscribe="stream-pos",
                      startingOffsets='{"stream-pos":{"0":3,"1":-2}}').initialOffset() == {
            "stream-pos": {"0": 3, "1": 0}}
        from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

        start = {"stream-pos": {"0": 0, "1": 4}}
        assert r.latestOffset(start, ReadAllAvailable()) == {"stream-pos": {"0": 5, "1": 5}}
        # 6 rows shared by lag 5:1 -> floor(5) and ceil(0.83)
        assert r.latestOffset(start, ReadMaxRows(5)) == {"stream-pos": {"0": 4, "1": 5}}
        r.prepareForTriggerAvailableNow()
        produce(servers, "stream-pos", 5, 5)
        assert r.latestOffset(start, ReadAllAvailable()) == {"stream-pos": {"0": 5, "1": 5}}  # the target
        parts = r.partitions({"stream-pos": {"0": 2}}, {"stream-pos": {"0": 5, "1": 5}})
        assert [(p.partition, p.start, p.end) for p in parts] == [(0, 2, 5), (1, 0, 5)]  # new partition: earliest
    finally:
        r.stop()


def test_data_loss_reports(servers: str) -> None:
    with SyncAdmin(servers) as admin:
        admin.create_topic("stream-loss", num_partitions=1)
    produce(servers, "stream-loss", 3, 0, parts=1)
    strict = reader(servers, subscribe="stream-loss")
    lenient = reader(servers, subscribe="stream-loss", failOnDataLoss="false")
    try:
        backwards = ({"stream-loss": {"0": 9}}, {"stream-loss": {"0": 3}})
        with pytest.raises(DataLossError, match="offset was changed from 9 to 3"):
            strict.partitions(*backwards)
        assert lenient.partitions(*backwards) == []
        gone = ({"stream-loss": {"0": 0, "7": 0}}, {"stream-loss": {"0": 3, "7": 5}})
        with pytest.raises(DataLossError, match=r"Set\(stream-loss-7\) are gone"):
            strict.partitions(*gone)
        assert [(p.partition, p.start, p.end) for p in lenient.partitions(*gone)] == [(0, 0, 3)]
    finally:
        strict.stop()
        lenient.stop()


def test_min_offsets_per_trigger_waits(servers: str) -> None:
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    with SyncAdmin(servers) as admin:
        admin.create_topic("stream-min", num_partitions=1)
    produce(servers, "stream-min", 4, 0, parts=1)
    start = {"stream-min": {"0": 0}}
    r = reader(servers, subscribe="stream-min", minOffsetsPerTrigger="10", maxTriggerDelay="1h")
    try:
        assert r.latestOffset(start, ReadAllAvailable()) == start  # 4 < 10 and the delay has not passed
        produce(servers, "stream-min", 6, 4, parts=1)
        assert r.latestOffset(start, ReadAllAvailable()) == {"stream-min": {"0": 10}}
    finally:
        r.stop()
