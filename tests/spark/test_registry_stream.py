"""Typed columns in streaming reads, end to end: ``spark.readStream.format("minibroker")`` with
``valueFormat`` / ``keyFormat`` = avro | json | protobuf over records produced with
confluent-kafka's serializers through a broker with its schema registry: the typed columns of
each micro-batch, a schema version registered while the query runs, and bad records (FAILFAST
and PERMISSIVE)."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from broker.testing import BrokerProcess

pytest.importorskip("pyspark.sql.streaming.datasource", reason="streaming needs pyspark >= 4.2")
sr = pytest.importorskip("confluent_kafka.schema_registry")
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

from tests.spark.test_registry_formats import (
    KEY_AVRO,
    ORDER_V1,
    ORDER_V2,
    USER_JSON_V1,
    USER_JSON_V2,
    _proto_classes,
    confluent_produce,
    ctx,
    kctx,
    order,
    produce,
    registry_broker,
)

pytestmark = pytest.mark.slow  # a local Spark session (a JVM) and a broker per module

__all__ = ["registry_broker"]  # the fixture, imported


def stream(spark: Any, b: BrokerProcess, topic: str, **options: str) -> Any:
    r = (spark.readStream.format("minibroker").option("kafka.bootstrap.servers", b.bootstrap)
         .option("subscribe", topic).option("schema.registry.url", b.schema_registry_url)
         .option("startingOffsets", "earliest"))
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


class Batches:
    """A foreachBatch sink keeping each micro-batch's schema and rows (ordered by offset)."""

    def __init__(self, select: list[str]) -> None:
        self.select = select
        self.got: list[tuple[int, str, list[Any]]] = []
        self.lock = threading.Lock()

    def __call__(self, df: Any, batch_id: int) -> None:
        rows = [r.asDict(recursive=True) for r in df.orderBy("offset").selectExpr(*self.select).collect()]
        with self.lock:
            self.got.append((batch_id, df.schema.simpleString(), rows))

    def rows(self) -> list[Any]:
        with self.lock:
            return [r for _, _, rows in self.got for r in rows]


def run_available_now(df: Any, sink: Batches, checkpoint: str) -> None:
    q = df.writeStream.foreachBatch(sink).option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
    try:
        assert q.awaitTermination(180), "the query did not end"
        assert q.exception() is None, q.exception()
    finally:
        q.stop()


def wait_for(cond: Callable[[], bool], q: Any, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert q.exception() is None, q.exception()
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def _local_to_utc(v: Any) -> Any:
    """Spark's collected timestamps are naive local times: as aware UTC ones, at any depth."""
    import datetime as dt

    if isinstance(v, dict):
        return {k: _local_to_utc(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_local_to_utc(x) for x in v]
    if isinstance(v, dt.datetime):
        return v.astimezone(dt.UTC)
    return v


@pytest.mark.parametrize("fmt", ["avro", "json", "protobuf"])
def test_stream_typed_columns_per_micro_batch(spark: Any, registry_broker: BrokerProcess, fmt: str,
                                              tmp_path: Any) -> None:
    """Every micro-batch has the typed columns and exact values; keys typed too (avro, json)."""
    from tests.spark.test_registry_formats import KEY_JSON, ORDER_SPARK

    b = registry_broker
    topic = f"st-{fmt}-{uuid.uuid4().hex[:6]}"
    client = sr.SchemaRegistryClient({"url": b.schema_registry_url})
    options: dict[str, str] = {"valueFormat": fmt, "maxOffsetsPerTrigger": "4"}
    keys: list[Any] = [None] * 10
    if fmt == "avro":
        ser = AvroSerializer(client, json.dumps(ORDER_V2))
        kser: Any = AvroSerializer(client, json.dumps(KEY_AVRO))
        keys = [{"region": f"r{i % 3}", "id": i} for i in range(10)]
        originals: list[Any] = [{**order(i), "score": i / 8} for i in range(10)]
        want = [_local_to_utc(o) for o in originals]
        value_type, key_type = ORDER_SPARK, "struct<region:string,id:bigint>"
    elif fmt == "json":
        ser = JSONSerializer(json.dumps(USER_JSON_V2), client)
        kser = JSONSerializer(json.dumps(KEY_JSON), client)
        keys = [{"tenant": f"t{i % 2}", "n": i} for i in range(10)]
        originals = [{"name": f"u{i}", "age": i, "tags": ["t"] * (i % 3), "score": i / 2,
                      **({"address": {"city": "Lyon"}} if i % 2 else {})} for i in range(10)]
        want = [{"address": None, **o} for o in originals]
        value_type = ("struct<name:string,age:bigint,address:struct<city:string>,tags:array<string>,"
                      "score:double>")
        key_type = "struct<tenant:string,n:bigint>"
    else:
        _, V2 = _proto_classes()
        ser = ProtobufSerializer(V2, client, {"use.deprecated.format": False})
        kser = None
        originals, want = [], []
        import datetime as dt

        from tests.spark.test_registry_formats import T0
        for i in range(10):
            m = V2(id=i, name=f"o{i}", kind=i % 2, note=f"n{i}", codes=list(range(i % 3)))
            m.lines.add(sku=f"s{i}", qty=i)
            m.at.FromDatetime(T0 + dt.timedelta(seconds=i))
            originals.append(m)
            want.append({"id": i, "name": f"o{i}", "lines": [{"sku": f"s{i}", "qty": i}],
                         "kind": "WHOLESALE" if i % 2 else "RETAIL", "at": T0 + dt.timedelta(seconds=i),
                         "note": f"n{i}", "codes": list(range(i % 3))})
        value_type = ("struct<id:bigint,name:string,lines:array<struct<sku:string,qty:int>>,kind:string,"
                      "at:timestamp,note:string,codes:array<int>>")
        key_type = "binary"
    if kser is not None:
        options["keyFormat"] = fmt
    confluent_produce(b, topic, [(kser(k, kctx(topic)) if kser else None, ser(o, ctx(topic)))
                                 for k, o in zip(keys, originals, strict=True)])
    sink = Batches(["offset", "key", "value"])
    run_available_now(stream(spark, b, topic, **options), sink, str(tmp_path / "chk"))
    assert [(bid, len(rows)) for bid, _, rows in sink.got] == [(0, 4), (1, 4), (2, 2)]
    for _, schema, _ in sink.got:
        assert schema.startswith(f"struct<key:{key_type},value:{value_type},topic:string,"), schema
    rows = sink.rows()
    assert [r["offset"] for r in rows] == list(range(10))
    assert [r["key"] for r in rows] == keys
    assert [_local_to_utc(r["value"]) for r in rows] == want


@pytest.mark.parametrize("fmt", ["avro", "json", "protobuf"])
def test_stream_schema_evolves_mid_stream(spark: Any, registry_broker: BrokerProcess, fmt: str,
                                          tmp_path: Any) -> None:
    """A version registered while the query runs: the reader schema stays the one resolved when
    the query started (v1: v2's records decode without the added field); the query restarted
    from its checkpoint reads with v2, older records taking the added field's default."""
    b = registry_broker
    topic = f"st-evolve-{fmt}-{uuid.uuid4().hex[:6]}"
    client = sr.SchemaRegistryClient({"url": b.schema_registry_url})
    if fmt == "avro":
        v1: Any = AvroSerializer(client, json.dumps(ORDER_V1))
        v2: Any = AvroSerializer(client, json.dumps(ORDER_V2))

        def rec(i: int, version: int) -> Any:
            return order(i) if version == 1 else {**order(i), "score": i / 4}

        def want(i: int, version: int, reader: int) -> Any:
            got = _local_to_utc(order(i))
            return got if reader == 1 else {**got, "score": 1.5 if version == 1 else i / 4}
    elif fmt == "json":
        v1 = JSONSerializer(json.dumps(USER_JSON_V1), client)
        v2 = JSONSerializer(json.dumps(USER_JSON_V2), client)

        def rec(i: int, version: int) -> Any:
            return {"name": f"u{i}", "age": i, **({} if version == 1 else {"score": i / 4})}

        def want(i: int, version: int, reader: int) -> Any:
            got = {"name": f"u{i}", "age": i, "address": None, "tags": None}
            return got if reader == 1 else {**got, "score": None if version == 1 else i / 4}
    else:
        V1, V2 = _proto_classes()
        conf = {"use.deprecated.format": False}
        v1, v2 = ProtobufSerializer(V1, client, conf), ProtobufSerializer(V2, client, conf)

        def rec(i: int, version: int) -> Any:
            return V1(id=i, name=f"o{i}") if version == 1 else V2(id=i, name=f"o{i}", note=f"n{i}", codes=[i])

        def want(i: int, version: int, reader: int) -> Any:  # missing fields: proto3 defaults
            got = {"id": i, "name": f"o{i}", "lines": [], "kind": "RETAIL", "at": None}
            return got if reader == 1 else {**got, "note": "" if version == 1 else f"n{i}",
                                            "codes": [] if version == 1 else [i]}

    def send(ids: range, version: int) -> None:
        ser = v1 if version == 1 else v2
        produce(b, topic, [ser(rec(i, version), ctx(topic)) for i in ids], create=ids.start == 0)

    send(range(0, 5), 1)
    chk = str(tmp_path / "chk")
    sink = Batches(["offset", "value"])
    q = (stream(spark, b, topic, valueFormat=fmt).writeStream.foreachBatch(sink).option("checkpointLocation", chk)
         .trigger(processingTime="200 milliseconds").start())
    try:
        wait_for(lambda: len(sink.rows()) >= 5, q)
        send(range(5, 10), 2)  # registers v2 while the query runs
        assert client.get_latest_version(f"{topic}-value").version == 2
        wait_for(lambda: len(sink.rows()) >= 10, q)
    finally:
        q.stop()
    added = "note:string" if fmt == "protobuf" else "score:double"
    assert all(added not in schema for _, schema, _ in sink.got)
    assert [r["offset"] for r in sink.rows()] == list(range(10))
    assert [_local_to_utc(r["value"]) for r in sink.rows()] == [want(i, 1 if i < 5 else 2, 1) for i in range(10)]

    # restarted from the checkpoint: the reader schema is now v2, for old and new writers alike
    send(range(10, 12), 1)
    send(range(12, 14), 2)
    sink = Batches(["offset", "value"])
    run_available_now(stream(spark, b, topic, valueFormat=fmt), sink, chk)
    assert all(added in schema for _, schema, _ in sink.got)
    assert [r["offset"] for r in sink.rows()] == list(range(10, 14))
    assert [_local_to_utc(r["value"]) for r in sink.rows()] == [want(i, 1 if i < 12 else 2, 2)
                                                                for i in range(10, 14)]
    # a new query from the start decodes the whole topic with v2
    sink = Batches(["offset", "value"])
    run_available_now(stream(spark, b, topic, valueFormat=fmt), sink, str(tmp_path / "chk2"))
    assert [_local_to_utc(r["value"]) for r in sink.rows()] == [want(i, 1 if i < 5 or 10 <= i < 12 else 2, 2)
                                                                for i in range(14)]


def test_stream_bad_records_failfast_and_permissive(spark: Any, registry_broker: BrokerProcess,
                                                    tmp_path: Any) -> None:
    """A frame that is not Confluent's (wrong magic byte) or names a schema id the registry
    does not know: FAILFAST fails the query naming topic, partition and offset; PERMISSIVE
    gives a null value and the reason in ``_corrupt_record``, in the micro-batch it falls in."""
    b = registry_broker
    topic = f"st-bad-{uuid.uuid4().hex[:6]}"
    client = sr.SchemaRegistryClient({"url": b.schema_registry_url})
    ser = AvroSerializer(client, json.dumps(ORDER_V1))
    good = [ser(order(i), ctx(topic)) for i in range(4)]
    produce(b, topic, [good[0], good[1], b"\x01" + good[2][1:], b"\x00\x00\x00\x7f\xff" + good[3][5:], good[3]])
    q = (stream(spark, b, topic, valueFormat="avro", maxOffsetsPerTrigger="2").writeStream.format("noop")
         .option("checkpointLocation", str(tmp_path / "chk-failfast")).trigger(availableNow=True).start())
    try:
        with pytest.raises(Exception, match=rf"cannot decode the value of {topic}-0 at offset 2: not"
                                            r" Confluent-framed \(magic byte 0x01, expected 0x00\)"):
            q.awaitTermination(180)
    finally:
        q.stop()
    assert [p.numInputRows for p in q.recentProgress] == [2]  # the first micro-batch went through

    sink = Batches(["offset", "value.id", "_corrupt_record"])
    run_available_now(stream(spark, b, topic, valueFormat="avro", maxOffsetsPerTrigger="2", mode="PERMISSIVE"),
                      sink, str(tmp_path / "chk-permissive"))
    assert sink.got[0][1].endswith(",_corrupt_record:string>")
    assert [[(r["offset"], r["id"]) for r in rows] for _, _, rows in sink.got] == [
        [(0, 0), (1, 1)], [(2, None), (3, None)], [(4, 3)]]
    assert [r["_corrupt_record"] for r in sink.rows()] == [
        None, None,
        f"value of {topic}-0 at offset 2: not Confluent-framed (magic byte 0x01, expected 0x00)",
        f"value of {topic}-0 at offset 3: schema id {0x7fff} is not in the registry {b.schema_registry_url}",
        None]


def test_stream_pipeline_typed_keys_and_values(spark: Any, registry_broker: BrokerProcess, tmp_path: Any) -> None:
    """readStream with keyFormat/valueFormat=avro into writeStream with the same formats (the
    target's subjects): confluent-kafka's AvroDeserializer reads every key and value back as it
    was produced, once."""
    from confluent_kafka.schema_registry.avro import AvroDeserializer

    from tests.spark.test_registry_formats import confluent_consume

    b = registry_broker
    source, target = f"st-pipe-src-{uuid.uuid4().hex[:6]}", f"st-pipe-dst-{uuid.uuid4().hex[:6]}"
    client = sr.SchemaRegistryClient({"url": b.schema_registry_url})
    kser, vser = AvroSerializer(client, json.dumps(KEY_AVRO)), AvroSerializer(client, json.dumps(ORDER_V2))
    keys = [{"region": f"r{i % 3}", "id": i} for i in range(10)]
    values = [{**order(i), "score": i / 8} for i in range(10)]
    confluent_produce(b, source, [(kser(k, kctx(source)), vser(v, ctx(source))) for k, v in zip(keys, values,
                                                                                                  strict=True)])
    produce(b, target, [])  # creates the target topic
    client.register_schema(f"{target}-key", sr.Schema(json.dumps(KEY_AVRO), "AVRO"))
    client.register_schema(f"{target}-value", sr.Schema(json.dumps(ORDER_V2), "AVRO"))
    df = stream(spark, b, source, keyFormat="avro", valueFormat="avro", maxOffsetsPerTrigger="4").select("key",
                                                                                                           "value")
    q = (df.writeStream.format("minibroker").option("kafka.bootstrap.servers", b.bootstrap).option("topic", target)
         .option("keyFormat", "avro").option("valueFormat", "avro").option("schema.registry.url", b.schema_registry_url)
         .option("checkpointLocation", str(tmp_path / "chk")).trigger(availableNow=True).start())
    try:
        assert q.awaitTermination(180), "the query did not end"
        assert q.exception() is None, q.exception()
    finally:
        q.stop()
    assert [p.numInputRows for p in q.recentProgress if p.numInputRows] == [4, 4, 2]
    des = AvroDeserializer(client)
    msgs = confluent_consume(b, target, 10)
    assert (spark.read.format("minibroker").option("kafka.bootstrap.servers", b.bootstrap).option("subscribe", target)
            .load().count()) == 10  # nothing written twice
    assert [(des(m.key(), kctx(target)), des(m.value(), ctx(target))) for m in msgs] == list(zip(keys, values,
                                                                                                  strict=True))
