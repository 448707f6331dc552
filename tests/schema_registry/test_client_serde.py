"""client.serde against confluent-kafka, through minibroker's registry: bytes our serializers
write are read by confluent-kafka's deserializers and the other way round, for AVRO, JSON and
PROTOBUF."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator

import pytest

from broker.testing import BrokerProcess
from client.serde import (
    AvroDeserializer,
    AvroSerializer,
    JsonDeserializer,
    JsonSerializer,
    ProtobufDeserializer,
    ProtobufSerializer,
    RegistryClient,
    SerdeError,
)

from .test_json_protobuf import USER_JSON, user_class

sr = pytest.importorskip("confluent_kafka.schema_registry")
from confluent_kafka.schema_registry.avro import AvroDeserializer as CAvroDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as CAvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer as CJsonDeserializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer as CJsonSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer as CProtobufDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as CProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

USER_AVRO = json.dumps({"type": "record", "name": "User", "namespace": "example", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "int"},
    {"name": "email", "type": ["null", "string"], "default": None}]})


@pytest.fixture
async def registry(registry_broker: BrokerProcess) -> AsyncIterator[RegistryClient]:
    async with RegistryClient(registry_broker.schema_registry_url) as client:
        yield client


def topic_ctx(prefix: str) -> tuple[str, SerializationContext]:
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    return topic, SerializationContext(topic, MessageField.VALUE)


async def test_avro_both_ways(registry: RegistryClient, registry_broker: BrokerProcess) -> None:
    confluent = sr.SchemaRegistryClient({"url": registry_broker.schema_registry_url})
    topic, ctx = topic_ctx("serde-avro")
    value = {"name": "a", "age": 3, "email": "a@x"}
    ours = await AvroSerializer(registry, USER_AVRO).serialize(value, topic)
    assert CAvroDeserializer(confluent)(ours, ctx) == value
    theirs = CAvroSerializer(confluent, USER_AVRO)({**value, "email": None}, ctx)
    assert theirs[:5] == ours[:5]  # the same schema, the same id
    assert await AvroDeserializer(registry).deserialize(theirs) == {**value, "email": None}
    with pytest.raises(SerdeError):
        await AvroSerializer(registry, USER_AVRO).serialize({"name": "a"}, topic)


async def test_json_both_ways(registry: RegistryClient, registry_broker: BrokerProcess) -> None:
    confluent = sr.SchemaRegistryClient({"url": registry_broker.schema_registry_url})
    topic, ctx = topic_ctx("serde-json")
    value = {"name": "a", "age": 3, "tags": ["x"]}
    ours = await JsonSerializer(registry, USER_JSON).serialize(value, topic)
    assert CJsonDeserializer(None, schema_registry_client=confluent)(ours, ctx) == value
    theirs = CJsonSerializer(USER_JSON, confluent)(value, ctx)
    assert await JsonDeserializer(registry).deserialize(theirs) == value
    with pytest.raises(SerdeError, match="integer"):
        await JsonSerializer(registry, USER_JSON).serialize({"name": "a", "age": "x"}, topic)


async def test_protobuf_both_ways(registry: RegistryClient, registry_broker: BrokerProcess) -> None:
    User = user_class()
    confluent = sr.SchemaRegistryClient({"url": registry_broker.schema_registry_url})
    topic, ctx = topic_ctx("serde-proto")
    value = User(name="a", age=3, tags=["x", "y"])
    value.address.city = "Oslo"
    ours = await ProtobufSerializer(registry, User).serialize(value, topic)
    conf = {"use.deprecated.format": False}
    assert CProtobufDeserializer(User, conf)(ours, ctx) == value
    assert CProtobufDeserializer(User, conf, schema_registry_client=confluent)(ours, ctx).name == "a"
    theirs = CProtobufSerializer(User, confluent, conf)(value, ctx)
    assert theirs == ours  # the same id, indexes and payload
    assert await ProtobufDeserializer(registry, User).deserialize(theirs) == value
