"""python-schema-registry-client (PyPI ``python-schema-registry-client``, package
``schema_registry``; httpx underneath) against the built-in registry, sync and async: register,
compatibility checks, fetch by id, versions, config, deletes; and its Avro and JSON message
serializers' Confluent framing through the broker, decoded by confluent-kafka's deserializer."""

from __future__ import annotations

import uuid

import pytest

from broker.testing import BrokerProcess

pytest.importorskip("schema_registry.client")
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from schema_registry.client import AsyncSchemaRegistryClient, SchemaRegistryClient, schema
from schema_registry.serializers import AvroMessageSerializer, JsonMessageSerializer

pytestmark = pytest.mark.slow

USER = {"type": "record", "name": "User", "namespace": "example",
        "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}]}
USER_V2 = {**USER, "fields": [*USER["fields"], {"name": "email", "type": ["null", "string"], "default": None}]}
BREAKING = {**USER, "fields": [{"name": "name", "type": "long"}]}
JSON_V1 = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_sync_client(registry_broker: BrokerProcess) -> None:
    client = SchemaRegistryClient(registry_broker.schema_registry_url)
    subject = unique("psrc")
    first = client.register(subject, schema.AvroSchema(USER))
    assert client.register(subject, schema.AvroSchema(USER)) == first  # cached, and the same id anyway
    assert client.test_compatibility(subject, schema.AvroSchema(USER_V2)) is True
    assert client.test_compatibility(subject, schema.AvroSchema(BREAKING)) is False
    verbose = client.test_compatibility(subject, schema.AvroSchema(BREAKING), verbose=True)
    assert isinstance(verbose, dict) and verbose["is_compatible"] is False and verbose["messages"]
    second = client.register(subject, schema.AvroSchema(USER_V2))
    assert second == first + 1

    fetched = SchemaRegistryClient(registry_broker.schema_registry_url).get_by_id(first)  # no cache
    assert fetched is not None and fetched.raw_schema == USER
    assert client.get_versions(subject) == [1, 2]
    latest = client.get_schema(subject)
    assert latest is not None and (latest.version, latest.schema_id) == (2, second)
    version = client.check_version(subject, schema.AvroSchema(USER))
    assert version is not None and (version.version, version.schema_id) == (1, first)
    holders = client.get_schema_subject_versions(second)
    assert holders is not None and [(h.subject, h.version) for h in holders] == [(subject, 2)]

    assert client.update_compatibility("FULL_TRANSITIVE", subject) is True
    assert client.get_compatibility(subject) == "FULL_TRANSITIVE"
    assert subject in client.get_subjects()
    assert client.delete_version(subject, 2) == 2
    assert client.delete_subject(subject) == [1]
    assert client.get_by_id(first) is not None  # a soft delete keeps the id resolvable


def test_sync_client_json_schema(registry_broker: BrokerProcess) -> None:
    client = SchemaRegistryClient(registry_broker.schema_registry_url)
    subject = unique("psrc-json")
    sid = client.register(subject, schema.JsonSchema(JSON_V1))
    widened = {**JSON_V1, "properties": {"id": {"type": "number"}}}  # integer -> number: BACKWARD ok
    narrowed = {**JSON_V1, "properties": {"id": {"type": "string"}}}
    assert client.test_compatibility(subject, schema.JsonSchema(widened)) is True
    assert client.test_compatibility(subject, schema.JsonSchema(narrowed)) is False
    fetched = client.get_by_id(sid)
    assert fetched is not None and fetched.schema_type == "JSON" and fetched.raw_schema == JSON_V1


async def test_async_client(registry_broker: BrokerProcess) -> None:
    client = AsyncSchemaRegistryClient(registry_broker.schema_registry_url)
    subject = unique("psrc-async")
    first = await client.register(subject, schema.AvroSchema(USER))
    assert await client.test_compatibility(subject, schema.AvroSchema(USER_V2)) is True
    assert await client.test_compatibility(subject, schema.AvroSchema(BREAKING)) is False
    await client.update_compatibility("NONE", subject)
    assert await client.test_compatibility(subject, schema.AvroSchema(BREAKING)) is True
    fetched = await AsyncSchemaRegistryClient(registry_broker.schema_registry_url).get_by_id(first)
    assert fetched is not None and fetched.raw_schema == USER
    assert await client.get_versions(subject) == [1]


def test_message_serializers_through_the_broker(registry_broker: BrokerProcess) -> None:
    client = SchemaRegistryClient(registry_broker.schema_registry_url)
    topic = unique("psrc-topic")
    avro_serde, json_serde = AvroMessageSerializer(client), JsonMessageSerializer(client)
    users = [{"name": f"u{i}", "age": i} for i in range(5)]
    producer = Producer({"bootstrap.servers": registry_broker.bootstrap})
    for u in users:
        producer.produce(topic, value=avro_serde.encode_record_with_schema(f"{topic}-value", schema.AvroSchema(USER), u),
                         key=json_serde.encode_record_with_schema(f"{topic}-key", schema.JsonSchema(JSON_V1),
                                                                  {"id": u["age"]}))
    assert producer.flush(10) == 0

    confluent = AvroDeserializer(ConfluentClient({"url": registry_broker.schema_registry_url}))
    consumer = Consumer({"bootstrap.servers": registry_broker.bootstrap, "group.id": "g-" + topic,
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = []
    try:
        while len(got) < len(users):
            msg = consumer.poll(10)
            assert msg is not None and msg.error() is None, "no message within 10 s"
            value = msg.value()
            assert avro_serde.decode_message(value) == confluent(value, SerializationContext(topic, MessageField.VALUE))
            got.append((json_serde.decode_message(msg.key()), avro_serde.decode_message(value)))
    finally:
        consumer.close()
    assert got == [({"id": u["age"]}, u) for u in users]
