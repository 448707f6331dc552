"""Typed columns from registered schemas, end to end: values produced with confluent-kafka's
serializers through a broker with its schema registry, read by the ``minibroker`` source with
``valueFormat`` = avro | json | protobuf into typed Spark columns (schema evolution inside one
read), bad records (FAILFAST and PERMISSIVE), and the sink encoding rows with a subject's
latest schema, read back with confluent-kafka's deserializers."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from broker.testing import BrokerProcess
from client.sync import SyncAdmin, SyncProducer

sr = pytest.importorskip("confluent_kafka.schema_registry")
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

pytestmark = pytest.mark.slow  # a local Spark session (a JVM) and a broker per module

UTC = dt.UTC
T0 = dt.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)

ORDER_V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "customer", "type": {"type": "record", "name": "Customer", "fields": [
        {"name": "name", "type": "string"},
        {"name": "email", "type": ["null", "string"], "default": None}]}},
    {"name": "items", "type": {"type": "array", "items": {"type": "record", "name": "Item", "fields": [
        {"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}]}}},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
    {"name": "attrs", "type": {"type": "map", "values": "string"}},
    {"name": "note", "type": ["null", "string"], "default": None},
]}
ORDER_V2 = {**ORDER_V1, "fields": [*ORDER_V1["fields"], {"name": "score", "type": "double", "default": 1.5}]}
ORDER_SPARK = ("struct<id:bigint,customer:struct<name:string,email:string>,items:array<struct<sku:string,qty:int>>,"
               "price:decimal(10,2),at:timestamp,status:string,attrs:map<string,string>,note:string,score:double>")

USER_JSON_V1 = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "User", "type": "object",
                "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                               "address": {"type": "object", "properties": {"city": {"type": "string"}}},
                               "tags": {"type": "array", "items": {"type": "string"}}},
                "required": ["name"], "additionalProperties": False}
USER_JSON_V2 = {**USER_JSON_V1, "properties": {**USER_JSON_V1["properties"], "score": {"type": ["number", "null"]}}}


def order(i: int) -> dict[str, Any]:
    return {"id": i, "customer": {"name": f"c{i}", "email": None if i % 2 else f"c{i}@x"},
            "items": [{"sku": f"s{j}", "qty": j} for j in range(i % 3)],
            "price": decimal.Decimal(f"{i}.{i % 100:02d}"), "at": T0 + dt.timedelta(seconds=i),
            "status": "PAID" if i % 2 else "NEW", "attrs": {"k": str(i)} if i % 2 else {},
            "note": None if i % 3 else f"n{i}"}


@pytest.fixture(scope="module")
def registry_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    b = BrokerProcess(str(tmp_path_factory.mktemp("registry") / "data"), schema_registry=True).start()
    try:
        yield b
    finally:
        assert b.stop() == 0, b.log_text()


def produce(b: BrokerProcess, topic: str, values: list[bytes], partitions: int = 1, create: bool = True) -> None:
    if create:
        with SyncAdmin(b.bootstrap) as admin:
            admin.create_topic(topic, num_partitions=partitions)
    with SyncProducer(b.bootstrap, linger_ms=5) as prod:
        futs = [prod.send_nowait(topic, v, partition=i % partitions) for i, v in enumerate(values)]
        prod.flush()
        for f in futs:
            f.result()


def read(spark: Any, b: BrokerProcess, topic: str, **options: str) -> Any:
    r = (spark.read.format("minibroker").option("kafka.bootstrap.servers", b.bootstrap).option("subscribe", topic)
         .option("schema.registry.url", b.schema_registry_url))
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def ctx(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def test_avro_typed_columns_with_evolution(spark: Any, registry_broker: BrokerProcess) -> None:
    b = registry_broker
    topic = f"orders-{uuid.uuid4().hex[:6]}"
    client = sr.SchemaRegistryClient({"url": b.schema_registry_url})
    v1 = AvroSerializer(client, json.dumps(ORDER_V1))
    v2 = AvroSerializer(client, json.dumps(ORDER_V2))
    values = [v1(order(i), ctx(topic)) for i in range(30)] + [v2({**order(i), "score": i / 4}, ctx(topic))
                                                             for i in range(30, 60)]
    produce(b, topic, values, partitions=2)
    assert client.get_latest_version(f"{topic}-value").version == 2
    df = read(spark, b, topic, valueFormat="avro")
    assert df.schema["value"].dataType.simpleString() == ORDER_SPARK
    assert df.schema["key"].dataType.simpleString() == "binary"
    got = {r.id: r for r in df.select("value.*").collect()}
    assert sorted(got) == list(range(60))
    for i, r in got.items():
        want = {**order(i), "score": 1.5 if i < 30 else i / 4}  # v1 records take v2's default
        row = r.asDict(recursive=True)
        row["at"] = row["at"].astimezone(UTC)
        row["items"] = [dict(x) for x in row["items"]]
        assert row == want, i


def test_json_typed_columns_with_evolution(spark: Any, registry_broker: BrokerProcess) -> None:
    b = registry_broker
    topic = f"users-json-{uuid.uuid4().hex[:6]}"
    client = sr.SchemaRegistryClient({"url": b.schema_registry_url})
    v1 = JSONSerializer(json.dumps(USER_JSON_V1), client)
    v2 = JSONSerializer(json.dumps(USER_JSON_V2), client)
    users = [{"name": f"u{i}", "age": i, "tags": ["t"] * (i % 3), **({"address": {"city": "Lyon"}} if i % 2 else {})}
             for i in range(10)]
    values = [v1(u, ctx(topic)) for u in users] + [v2({"name": "late", "score": 2.5}, ctx(topic))]
    produce(b, topic, values)
    df = read(spark, b, topic, valueFormat="json")
    assert df.schema["value"].dataType.simpleString() == (
        "struct<name:string,age:bigint,address:struct<city:string>,tags:array<string>,score:double>")
    got = [r.asDict(recursive=True) for r in df.orderBy("offset").select("value.*").collect()]
    assert got[:10] == [{"name": u["name"], "age": u["age"], "tags": u["tags"], "score": None,
                         "address": u.get("address")} for u in users]
    assert got[10] == {"name": "late", "age": None, "address": None, "tags": None, "score": 2.5}


def _proto_classes() -> tuple[Any, Any]:
    """example.Order v1 and v2 (v2 adds ``note`` and a repeated field), made by hand."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    out = []
    for version in (1, 2):
        file = descriptor_pb2.FileDescriptorProto(name=f"order_v{version}.proto", package="example",
                                                  syntax="proto3", dependency=["google/protobuf/timestamp.proto"])
        F = descriptor_pb2.FieldDescriptorProto
        msg = file.message_type.add(name="Order")
        msg.field.add(name="id", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
        msg.field.add(name="name", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
        line = msg.nested_type.add(name="Line")
        line.field.add(name="sku", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
        line.field.add(name="qty", number=2, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
        msg.field.add(name="lines", number=3, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                      type_name=".example.Order.Line")
        kind = msg.enum_type.add(name="Kind")
        kind.value.add(name="RETAIL", number=0)
        kind.value.add(name="WHOLESALE", number=1)
        msg.field.add(name="kind", number=4, type=F.TYPE_ENUM, label=F.LABEL_OPTIONAL,
                      type_name=".example.Order.Kind")
        msg.field.add(name="at", number=5, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                      type_name=".google.protobuf.Timestamp")
        if version == 2:
            msg.field.add(name="note", number=6, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
            msg.field.add(name="codes", number=7, type=F.TYPE_INT32, label=F.LABEL_REPEATED)
        pool = descriptor_pool.DescriptorPool()
        from google.protobuf import timestamp_pb2

        wk = descriptor_pb2.FileDescriptorProto()
        timestamp_pb2.DESCRIPTOR.CopyToProto(wk)
        pool.Add(wk)
        pool.Add(file)
        out.append(message_factory.GetMessageClass(pool.FindMessageTypeByName("example.Order")))
    return out[0], out[1]


def test_protobuf_typed_columns_with_evolution(spark: Any, registry_broker: BrokerProcess) -> None:
    b = registry_broker
    topic = f"orders-pb-{uuid.uuid4().hex[:6]}"
    client = sr.SchemaRegistryClient({"url": b.schema_registry_url})
    V1, V2 = _proto_classes()
    conf = {"use.deprecated.format": False}
    s1, s2 = ProtobufSerializer(V1, client, conf), ProtobufSerializer(V2, client, conf)
    values = []
    for i in range(6):
        m = V1(id=i, name=f"o{i}", kind=i % 2)
        m.lines.add(sku=f"s{i}", qty=i)
        m.at.FromDatetime(T0 + dt.timedelta(seconds=i))
        values.append(s1(m, ctx(topic)))
    m2 = V2(id=99, name="new", note="hello", codes=[1, 2])
    values.append(s2(m2, ctx(topic)))
    produce(b, topic, values)
    df = read(spark, b, topic, valueFormat="protobuf")
    assert df.schema["value"].dataType.simpleString() == (
        "struct<id:bigint,name:string,lines:array<struct<sku:string,qty:int>>,kind:string,at:timestamp,"
        "note:string,codes:array<int>>")
    got = [r.asDict(recursive=True) for r in df.orderBy("offset").select("value.*").collect()]
    for i in range(6):
        row = got[i]
        assert row["at"].astimezone(UTC) == T0 + dt.timedelta(seconds=i)
        assert {**row, "at": None} == {"id": i, "name": f"o{i}", "lines": [{"sku": f"s{i}", "qty": i}],
                                       "kind": "WHOLESALE" if i % 2 else "RETAIL", "at": None,
                                       "note": "", "codes": []}  # v1 records: v2's fields take their defaults
    assert got[6] == {"id": 99, "name": "new", "lines": [], "kind": "RETAIL", "at": None, "note": "hello",
                      "codes": [1, 2]}


def test_bad_records_failfast_and_permissive(spark: Any, registry_broker: BrokerProcess) -> None:
    b = registry_broker
    topic = f"mixed-{uuid.uuid4().hex[:6]}"
    client = sr.SchemaRegistryClient({"url": b.schema_registry_url})
    ser = AvroSerializer(client, json.dumps(ORDER_V1))
    good = ser(order(1), ctx(topic))
    produce(b, topic, [good, b'{"not": "framed"}', b"\x00\x00\x00\x7f\xff" + good[5:], good])
    with pytest.raises(Exception, match=rf"cannot decode the value of {topic}-0 at offset 1: not Confluent-framed"
                                        r" \(magic byte 0x7b"):
        read(spark, b, topic, valueFormat="avro").collect()
    df = read(spark, b, topic, valueFormat="avro", mode="PERMISSIVE")
    assert df.schema.fieldNames()[-1] == "_corrupt_record"
    rows = df.orderBy("offset").select("offset", "value.id", "_corrupt_record").collect()
    assert [(r.offset, r.id) for r in rows] == [(0, 1), (1, None), (2, None), (3, 1)]
    assert rows[0]._corrupt_record is None and rows[3]._corrupt_record is None
    assert "magic byte 0x7b" in rows[1]._corrupt_record
    assert f"schema id {0x7fff} is not in the registry" in rows[2]._corrupt_record


@pytest.mark.parametrize("fmt", ["avro", "json", "protobuf"])
def test_sink_encodes_with_the_latest_schema(spark: Any, registry_broker: BrokerProcess, fmt: str) -> None:
    b = registry_broker
    source, target = f"sink-src-{fmt}-{uuid.uuid4().hex[:6]}", f"sink-dst-{fmt}-{uuid.uuid4().hex[:6]}"
    client = sr.SchemaRegistryClient({"url": b.schema_registry_url})
    if fmt == "avro":
        ser: Any = AvroSerializer(client, json.dumps(ORDER_V2))
        client.register_schema(f"{target}-value", sr.Schema(json.dumps(ORDER_V2), "AVRO"))
        originals: list[Any] = [{**order(i), "score": float(i)} for i in range(20)]
        des: Any = AvroDeserializer(client)
    elif fmt == "json":
        ser = JSONSerializer(json.dumps(USER_JSON_V2), client)
        client.register_schema(f"{target}-value", sr.Schema(json.dumps(USER_JSON_V2), "JSON"))
        originals = [{"name": f"u{i}", "age": i, "tags": ["a"], "address": {"city": "Nice"}, "score": i / 2}
                     for i in range(20)]
        des = JSONDeserializer(json.dumps(USER_JSON_V2))
    else:
        _, V2 = _proto_classes()
        conf = {"use.deprecated.format": False}
        ser = ProtobufSerializer(V2, client, conf)
        ProtobufSerializer(V2, client, conf)(V2(), ctx(target))  # registers the target's subject
        originals = []
        for i in range(20):
            m = V2(id=i, name=f"o{i}", note="n", codes=[i], kind=i % 2)
            m.lines.add(sku="s", qty=i)
            m.at.FromDatetime(T0)
            originals.append(m)
        des = ProtobufDeserializer(V2, conf)
    produce(b, source, [ser(o, ctx(source)) for o in originals])
    df = read(spark, b, source, valueFormat=fmt).select("value")
    (df.write.format("minibroker").mode("append").option("kafka.bootstrap.servers", b.bootstrap)
     .option("topic", target).option("valueFormat", fmt).option("schema.registry.url", b.schema_registry_url)
     .save())
    raw = read(spark, b, target).orderBy("offset").select("value").collect()
    latest = client.get_latest_version(f"{target}-value").schema_id
    assert len(raw) == 20 and all(bytes(r.value)[1:5] == latest.to_bytes(4, "big") for r in raw)
    got = sorted((des(bytes(r.value), ctx(target)) for r in raw),
                 key=lambda v: v["id"] if fmt == "avro" else v["age"] if fmt == "json" else v.id)
    assert got == originals


KEY_AVRO = {"type": "record", "name": "OrderKey", "namespace": "shop", "fields": [
    {"name": "region", "type": "string"}, {"name": "id", "type": "long"}]}
KEY_JSON = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "UserKey", "type": "object",
            "properties": {"tenant": {"type": "string"}, "n": {"type": "integer"}}, "required": ["tenant", "n"],
            "additionalProperties": False}


def confluent_produce(b: BrokerProcess, topic: str, records: list[tuple[bytes | None, bytes | None]],
                      partitions: int = 1) -> None:
    """``records`` (key, value) produced by confluent-kafka's Producer, in order, to partition 0."""
    from confluent_kafka import Producer

    with SyncAdmin(b.bootstrap) as admin:
        admin.create_topic(topic, num_partitions=partitions)
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5})
    errors: list[Any] = []
    for k, v in records:
        p.produce(topic, value=v, key=k, partition=0, on_delivery=lambda err, _m: errors.append(err) if err else None)
    assert p.flush(30) == 0 and errors == []


def confluent_consume(b: BrokerProcess, topic: str, n: int) -> list[Any]:
    """The first ``n`` records of ``topic`` (confluent-kafka's Consumer)."""
    import time

    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.subscribe([topic])
        out: list[Any] = []
        deadline = time.monotonic() + 60
        while len(out) < n and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is not None:
                assert m.error() is None, m.error()
                out.append(m)
        assert len(out) == n
        return out
    finally:
        c.close()


def kctx(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.KEY)


@pytest.mark.parametrize("fmt", ["avro", "json"])
def test_key_format_reads_confluent_keys(spark: Any, registry_broker: BrokerProcess, fmt: str) -> None:
    """Keys serialized by confluent-kafka (subject ``<topic>-key``) read into a typed ``key``
    column, alongside a typed value; a null key stays null."""
    b = registry_broker
    topic = f"keys-{fmt}-{uuid.uuid4().hex[:6]}"
    client = sr.SchemaRegistryClient({"url": b.schema_registry_url})
    vser = AvroSerializer(client, json.dumps(ORDER_V1))
    if fmt == "avro":
        kser: Any = AvroSerializer(client, json.dumps(KEY_AVRO))
        keys: list[Any] = [{"region": f"r{i % 3}", "id": i} for i in range(8)]
        key_type = "struct<region:string,id:bigint>"
    else:
        kser = JSONSerializer(json.dumps(KEY_JSON), client)
        keys = [{"tenant": f"t{i % 2}", "n": i * 10} for i in range(8)]
        key_type = "struct<tenant:string,n:bigint>"
    records = [(kser(k, kctx(topic)), vser(order(i), ctx(topic))) for i, k in enumerate(keys)]
    records.append((None, vser(order(8), ctx(topic))))
    confluent_produce(b, topic, records)
    assert client.get_latest_version(f"{topic}-key").schema.schema_type == fmt.upper()
    df = read(spark, b, topic, keyFormat=fmt, valueFormat="avro")
    assert df.schema["key"].dataType.simpleString() == key_type
    got = [(r.key.asDict() if r.key else None, r.id) for r in df.orderBy("offset").select("key", "value.id").collect()]
    assert got == [*((k, i) for i, k in enumerate(keys)), (None, 8)]
    # the key alone (the value left binary)
    df = read(spark, b, topic, keyFormat=fmt)
    assert df.schema["value"].dataType.simpleString() == "binary"
    assert [r.key.asDict() if r.key else None for r in df.orderBy("offset").select("key").collect()] == [*keys, None]


@pytest.mark.parametrize("fmt", ["avro", "json"])
def test_sink_key_format_read_by_confluent(spark: Any, registry_broker: BrokerProcess, fmt: str) -> None:
    """The sink encodes a struct ``key`` with ``<topic>-key``'s latest schema (and the value with
    ``<topic>-value``'s): confluent-kafka's deserializers read both back exactly."""
    b = registry_broker
    topic = f"sink-keys-{fmt}-{uuid.uuid4().hex[:6]}"
    with SyncAdmin(b.bootstrap) as admin:
        admin.create_topic(topic, num_partitions=2)
    client = sr.SchemaRegistryClient({"url": b.schema_registry_url})
    schema_type = fmt.upper()
    key_schema = KEY_AVRO if fmt == "avro" else KEY_JSON
    key_id = client.register_schema(f"{topic}-key", sr.Schema(json.dumps(key_schema), schema_type))
    client.register_schema(f"{topic}-value", sr.Schema(json.dumps(USER_JSON_V2), "JSON"))
    if fmt == "avro":
        keys: list[Any] = [{"region": f"r{i % 3}", "id": i} for i in range(12)]
        kdes: Any = AvroDeserializer(client)
    else:
        keys = [{"tenant": f"t{i % 2}", "n": i} for i in range(12)]
        kdes = JSONDeserializer(json.dumps(KEY_JSON))
    values = [{"name": f"u{i}", "age": i, "tags": ["a", "b"], "address": {"city": "Nice"}, "score": i / 4}
              for i in range(12)]
    df = spark.createDataFrame(list(zip(keys, values, strict=True)),
                               f"key struct<{','.join(f'{n} {t}' for n, t in _key_ddl(fmt))}>,"
                               " value struct<name:string,age:bigint,address:struct<city:string>,"
                               "tags:array<string>,score:double>")
    (df.write.format("minibroker").mode("append").option("kafka.bootstrap.servers", b.bootstrap)
     .option("topic", topic).option("keyFormat", fmt).option("valueFormat", "json")
     .option("schema.registry.url", b.schema_registry_url).save())
    vdes = JSONDeserializer(json.dumps(USER_JSON_V2))
    msgs = confluent_consume(b, topic, 12)
    assert all(m.key()[:5] == b"\x00" + key_id.to_bytes(4, "big") for m in msgs)
    got = sorted(((kdes(m.key(), kctx(topic)), vdes(m.value(), ctx(topic))) for m in msgs),
                 key=lambda kv: kv[1]["age"])
    assert got == list(zip(keys, values, strict=True))
    # Kafka's default partitioner hashed the encoded key: the same key always lands in the same partition
    by_key: dict[bytes, set[int]] = {}
    for m in msgs:
        by_key.setdefault(m.key(), set()).add(m.partition())
    assert all(len(p) == 1 for p in by_key.values())


def _key_ddl(fmt: str) -> list[tuple[str, str]]:
    return [("region", "string"), ("id", "bigint")] if fmt == "avro" else [("tenant", "string"), ("n", "bigint")]


@pytest.mark.parametrize(("fmt", "schema", "keys", "spark_type"), [
    ("avro", "string", ["a", "bb", ""], "string"),
    ("avro", "long", [7, -1, 2**40], "bigint"),
    ("json", {"type": "string"}, ["a", "bb", ""], "string"),
    ("json", {"type": "integer"}, [7, -1, 2**40], "bigint"),
])
def test_primitive_keys_both_ways(spark: Any, registry_broker: BrokerProcess, fmt: str, schema: Any,
                                  keys: list[Any], spark_type: str) -> None:
    """Primitive key schemas (confluent-kafka's common ``"string"``/``"long"`` keys): read into a
    plain column, and written back by the sink as confluent-kafka's deserializers expect."""
    b = registry_broker
    topic = f"prim-keys-{fmt}-{uuid.uuid4().hex[:6]}"
    client = sr.SchemaRegistryClient({"url": b.schema_registry_url})
    kser: Any = AvroSerializer(client, json.dumps(schema)) if fmt == "avro" else JSONSerializer(json.dumps(schema),
                                                                                                   client)
    confluent_produce(b, topic, [(kser(k, kctx(topic)), f"v{i}".encode()) for i, k in enumerate(keys)])
    df = read(spark, b, topic, keyFormat=fmt)
    assert df.schema["key"].dataType.simpleString() == spark_type
    assert [r.key for r in df.orderBy("offset").select("key").collect()] == keys

    target = f"{topic}-out"
    with SyncAdmin(b.bootstrap) as admin:
        admin.create_topic(target, num_partitions=1)
    client.register_schema(f"{target}-key", sr.Schema(json.dumps(schema), fmt.upper()))
    (df.orderBy("offset").select("key", "value").coalesce(1).write.format("minibroker").mode("append")
     .option("kafka.bootstrap.servers", b.bootstrap).option("topic", target).option("keyFormat", fmt)
     .option("schema.registry.url", b.schema_registry_url).save())
    kdes: Any = AvroDeserializer(client) if fmt == "avro" else JSONDeserializer(json.dumps(schema))
    msgs = confluent_consume(b, target, len(keys))
    assert [(kdes(m.key(), kctx(target)), m.value()) for m in msgs] == [(k, f"v{i}".encode())
                                                                        for i, k in enumerate(keys)]


def test_avro_schema_references_both_ways(spark: Any, registry_broker: BrokerProcess) -> None:
    """An Avro schema using a named type of another subject (Confluent's schema references):
    the source types and decodes it, the sink encodes with it, confluent-kafka reads it back."""
    b = registry_broker
    topic = f"refs-{uuid.uuid4().hex[:6]}"
    client = sr.SchemaRegistryClient({"url": b.schema_registry_url})
    customer = {"type": "record", "name": "Customer", "namespace": "shop", "fields": [
        {"name": "name", "type": "string"}, {"name": "tier", "type": {"type": "enum", "name": "Tier",
                                                                     "symbols": ["GOLD", "BASIC"]}}]}
    client.register_schema(f"shop.Customer-{topic}", sr.Schema(json.dumps(customer), "AVRO"))
    ref = sr.SchemaReference("shop.Customer", f"shop.Customer-{topic}", 1)
    sale = {"type": "record", "name": "Sale", "namespace": "shop", "fields": [
        {"name": "id", "type": "long"}, {"name": "buyer", "type": "shop.Customer"},
        {"name": "seller", "type": ["null", "Customer"], "default": None}]}
    schema = sr.Schema(json.dumps(sale), "AVRO", [ref])
    for t in (topic, f"{topic}-out"):
        client.register_schema(f"{t}-value", schema)
    ser = AvroSerializer(client, schema, conf={"auto.register.schemas": False, "use.latest.version": True})
    sales = [{"id": i, "buyer": {"name": f"b{i}", "tier": "GOLD" if i % 2 else "BASIC"},
              "seller": {"name": f"s{i}", "tier": "BASIC"} if i % 3 else None} for i in range(6)]
    produce(b, topic, [ser(s, ctx(topic)) for s in sales])
    df = read(spark, b, topic, valueFormat="avro")
    assert df.schema["value"].dataType.simpleString() == (
        "struct<id:bigint,buyer:struct<name:string,tier:string>,seller:struct<name:string,tier:string>>")
    assert [r.value.asDict(recursive=True) for r in df.orderBy("offset").select("value").collect()] == sales

    target = f"{topic}-out"
    produce(b, target, [])
    (df.orderBy("offset").select("value").coalesce(1).write.format("minibroker").mode("append")
     .option("kafka.bootstrap.servers", b.bootstrap).option("topic", target).option("valueFormat", "avro")
     .option("schema.registry.url", b.schema_registry_url).save())
    des = AvroDeserializer(client)
    assert [des(m.value(), ctx(target)) for m in confluent_consume(b, target, 6)] == sales
