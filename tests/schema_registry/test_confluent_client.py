"""confluent-kafka's own schema registry client and Avro serde against minibroker's built-in
registry: register, produce Confluent-framed Avro through the broker, consume and decode, and
the client's registry calls (versions, compatibility, config, deletes)."""

from __future__ import annotations

import json
import uuid

import pytest

from broker.testing import BrokerProcess

sr = pytest.importorskip("confluent_kafka.schema_registry")
avro = pytest.importorskip("confluent_kafka.schema_registry.avro")
from confluent_kafka import Consumer, Producer
from confluent_kafka.serialization import MessageField, SerializationContext

pytestmark = pytest.mark.slow

USER = json.dumps({"type": "record", "name": "User", "namespace": "example", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "int"},
    {"name": "email", "type": ["null", "string"], "default": None},
    {"name": "tags", "type": {"type": "array", "items": "string"}, "default": []},
]})
USER_V2 = json.dumps({**json.loads(USER), "fields": [*json.loads(USER)["fields"],
                                                     {"name": "score", "type": "double", "default": 0.0}]})


def test_avro_serializer_round_trip(registry_broker: BrokerProcess) -> None:
    client = sr.SchemaRegistryClient({"url": registry_broker.schema_registry_url})
    topic = f"users-{uuid.uuid4().hex[:8]}"
    serializer = avro.AvroSerializer(client, USER)
    deserializer = avro.AvroDeserializer(client)
    users = [{"name": f"u{i}", "age": 20 + i, "email": None if i % 2 else f"u{i}@x", "tags": ["a"] * i}
             for i in range(5)]
    producer = Producer({"bootstrap.servers": registry_broker.bootstrap})
    for u in users:
        producer.produce(topic, value=serializer(u, SerializationContext(topic, MessageField.VALUE)))
    assert producer.flush(10) == 0
    latest = client.get_latest_version(f"{topic}-value")
    assert latest.version == 1 and latest.schema_id > 0

    consumer = Consumer({"bootstrap.servers": registry_broker.bootstrap, "group.id": "g-" + topic,
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = []
    try:
        while len(got) < len(users):
            msg = consumer.poll(10)
            assert msg is not None, "no message within 10 s"
            assert msg.error() is None, msg.error()
            value = msg.value()
            assert value[0] == 0 and int.from_bytes(value[1:5], "big") == latest.schema_id  # Confluent's framing
            got.append(deserializer(value, SerializationContext(topic, MessageField.VALUE)))
    finally:
        consumer.close()
    assert got == users


def test_client_registry_calls(registry_broker: BrokerProcess) -> None:
    client = sr.SchemaRegistryClient({"url": registry_broker.schema_registry_url})
    subject = f"client-{uuid.uuid4().hex[:8]}"
    first = client.register_schema(subject, sr.Schema(USER, "AVRO"))
    assert client.test_compatibility(subject, sr.Schema(USER_V2, "AVRO"))
    breaking = json.dumps({**json.loads(USER), "fields": [{"name": "name", "type": "long"}]})
    assert not client.test_compatibility(subject, sr.Schema(breaking, "AVRO"))
    with pytest.raises(sr.error.SchemaRegistryError) as e:
        client.register_schema(subject, sr.Schema(breaking, "AVRO"))
    assert e.value.http_status_code == 409 and e.value.error_code == 409
    second = client.register_schema(subject, sr.Schema(USER_V2, "AVRO"))
    assert second != first
    assert client.get_versions(subject) == [1, 2]
    assert client.lookup_schema(subject, sr.Schema(USER, "AVRO")).version == 1
    assert json.loads(client.get_schema(first).schema_str) == json.loads(USER)
    assert client.set_compatibility(subject, "FULL")["compatibility"] == "FULL"
    assert client.get_compatibility(subject) == "FULL"
    assert subject in client.get_subjects()
    assert client.delete_version(subject, 2) == 2
    assert client.delete_subject(subject) == [1]
    assert client.delete_subject(subject, permanent=True) == [1, 2]
    with pytest.raises(sr.error.SchemaRegistryError) as e:
        client.get_latest_version(subject)
    assert e.value.error_code == 40401
