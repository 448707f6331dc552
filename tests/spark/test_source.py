"""The ``minibroker`` data source end to end: a real broker, records produced with our
Producer, read back with Spark (one session for the run; see conftest)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from client.sync import SyncAdmin, SyncProducer

pytestmark = pytest.mark.slow  # a local Spark session (a JVM) per module

TOPIC = "events"
PARTS = 3
N = 100                      # records per partition
BASE_TS = 1_700_000_000_000  # ms; record i has BASE_TS + i * 1000


def key(p: int, i: int) -> bytes | None:
    return None if i % 10 == 0 else f"k{p}-{i}".encode()


def value(p: int, i: int) -> bytes:
    return f"v{p}-{i}".encode() * (1 + i % 3)


def headers(i: int) -> list[tuple[str, bytes | None]] | None:
    return [("h", str(i).encode()), ("n", None)] if i % 2 == 0 else None


@pytest.fixture(scope="module")
def servers(module_broker: Any) -> Iterator[str]:
    bs = module_broker.bootstrap
    with SyncAdmin(bs) as admin:
        admin.create_topic(TOPIC, num_partitions=PARTS)
        admin.create_topic("other", num_partitions=1)
        admin.create_topic("empty", num_partitions=2)
    with SyncProducer(bs, linger_ms=5) as prod:
        futs = [prod.send_nowait(TOPIC, value(p, i), key(p, i), headers(i), partition=p, timestamp_ms=BASE_TS + i * 1000)
                for p in range(PARTS) for i in range(N)]
        futs += [prod.send_nowait("other", b"o", partition=0) for _ in range(7)]
        prod.flush()
        for f in futs:
            f.result()
    yield bs


def read(spark: Any, servers: str, **options: str) -> Any:
    r = spark.read.format("minibroker").option("kafka.bootstrap.servers", servers)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def rows(df: Any) -> set[tuple]:
    got = df.selectExpr("topic", "partition", "offset", "key", "value", "unix_millis(timestamp)",
                        "timestampType").collect()
    return {(r[0], r[1], r[2], None if r[3] is None else bytes(r[3]), bytes(r[4]), r[5], r[6]) for r in got}


def expected(parts: range = range(PARTS), lo: int = 0, hi: int = N) -> set[tuple]:
    return {(TOPIC, p, i, key(p, i), value(p, i), BASE_TS + i * 1000, 0) for p in parts for i in range(lo, hi)}


def test_schema_is_kafkas(spark: Any, servers: str) -> None:
    df = read(spark, servers, subscribe=TOPIC)
    assert df.schema.simpleString() == ("struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
                                        "timestamp:timestamp,timestampType:int>")
    df = read(spark, servers, subscribe=TOPIC, includeHeaders="true")
    assert df.schema.fields[-1].simpleString() == "headers:array<struct<key:string,value:binary>>"


def test_everything_read_once(spark: Any, servers: str) -> None:
    df = read(spark, servers, subscribe=TOPIC)
    assert df.count() == PARTS * N
    assert rows(df) == expected()
    assert df.rdd.getNumPartitions() == PARTS


def test_subscribe_several_and_pattern(spark: Any, servers: str) -> None:
    assert read(spark, servers, subscribe=f"{TOPIC},other,missing").count() == PARTS * N + 7
    assert read(spark, servers, subscribePattern="oth.*").count() == 7
    assert read(spark, servers, subscribePattern="ev").count() == 0  # must match the whole name
    assert read(spark, servers, subscribe="empty").count() == 0
    assert read(spark, servers, subscribe="missing").count() == 0


def test_offsets_json(spark: Any, servers: str) -> None:
    df = read(spark, servers, subscribe=TOPIC, startingOffsets='{"events":{"0":10,"1":-2,"2":95}}',
              endingOffsets='{"events":{"0":20,"1":-1,"2":-1}}')
    assert rows(df) == expected(range(0, 1), 10, 20) | expected(range(1, 2)) | expected(range(2, 3), 95)


def test_assign_earliest_latest(spark: Any, servers: str) -> None:
    df = read(spark, servers, assign='{"events":[2,0]}', startingOffsets="earliest", endingOffsets="latest")
    assert rows(df) == expected(range(0, 1)) | expected(range(2, 3))


def test_offsets_json_must_name_every_partition(spark: Any, servers: str) -> None:
    with pytest.raises(Exception, match="you must specify all TopicPartitions"):
        read(spark, servers, subscribe=TOPIC, startingOffsets='{"events":{"0":10}}').collect()


def test_ending_before_starting(spark: Any, servers: str) -> None:
    with pytest.raises(Exception, match="Beginning offset 50 is after the ending offset 40 for topic events partition 0"):
        read(spark, servers, assign='{"events":[0]}', startingOffsets='{"events":{"0":50}}',
             endingOffsets='{"events":{"0":40}}').collect()


def test_starting_timestamp(spark: Any, servers: str) -> None:
    df = read(spark, servers, subscribe=TOPIC, startingTimestamp=str(BASE_TS + 60_500))
    assert rows(df) == expected(lo=61)
    df = read(spark, servers, subscribe=TOPIC, startingOffsetsByTimestamp=(
        f'{{"events":{{"0":{BASE_TS},"1":{BASE_TS + 90_000},"2":{BASE_TS + 10**9}}}}}'),
        startingOffsetsByTimestampStrategy="latest")
    assert rows(df) == expected(range(0, 1)) | expected(range(1, 2), 90)
    df = read(spark, servers, subscribe=TOPIC, endingTimestamp=str(BASE_TS + 95_000))
    assert rows(df) == expected(hi=95)
    with pytest.raises(Exception, match="No offset matched from request of topic-partition events-"):
        read(spark, servers, subscribe=TOPIC, startingTimestamp=str(BASE_TS + 10**9)).collect()


def test_include_headers(spark: Any, servers: str) -> None:
    got = read(spark, servers, assign='{"events":[1]}', includeHeaders="true").select("offset", "headers").collect()
    assert len(got) == N
    for r in got:
        if r.offset % 2:
            assert r.headers is None
        else:
            assert [(h.key, None if h.value is None else bytes(h.value)) for h in r.headers] == [
                ("h", str(r.offset).encode()), ("n", None)]


@pytest.mark.parametrize("options,tasks", [
    ({"minPartitions": "6"}, 6),
    ({"minPartitions": "2"}, 3),
    ({"maxRecordsPerPartition": "30"}, 12),
    ({"minPartitions": "6", "maxRecordsPerPartition": "30"}, 12),
])
def test_splitting(spark: Any, servers: str, options: dict[str, str], tasks: int) -> None:
    df = read(spark, servers, subscribe=TOPIC, **options)
    assert df.rdd.getNumPartitions() == tasks
    assert rows(df) == expected()


@pytest.mark.parametrize("options,message", [
    ({"subscribe": TOPIC, "assign": '{"events":[0]}'}, "Only one of the following options can be specified"),
    ({}, "One of the following options must be specified for Kafka source"),
    ({"subscribe": TOPIC, "startingOffsets": "latest"}, "starting offset can't be latest for batch queries"),
    ({"subscribe": TOPIC, "endingOffsets": "earliest"}, "ending offset can't be earliest for batch queries"),
    ({"subscribe": TOPIC, "minPartitions": "-1"}, "Invalid value '-1' for option 'minPartitions'"),
])
def test_invalid_options(spark: Any, servers: str, options: dict[str, str], message: str) -> None:
    with pytest.raises(Exception, match=message):
        read(spark, servers, **options).collect()


def test_bootstrap_servers_required(spark: Any) -> None:
    with pytest.raises(Exception, match="Option 'kafka.bootstrap.servers' must be specified"):
        spark.read.format("minibroker").option("subscribe", TOPIC).load().collect()


def test_kafka_options_are_used(spark: Any, servers: str) -> None:
    # tiny fetches (a consumer of its own in each worker) read the same rows
    df = read(spark, servers, subscribe=TOPIC, **{"kafka.max.partition.fetch.bytes": "256",
                                                  "kafka.client.id": "spark-small-fetches"})
    assert rows(df) == expected()
    with pytest.raises(Exception, match="Invalid value x for configuration fetch.min.bytes"):
        read(spark, servers, subscribe=TOPIC, **{"kafka.fetch.min.bytes": "x"}).count()
