"""JSON and PROTOBUF schemas through the registry of a broker process: the REST API (register,
look up, check, 409 and 42201, ``format=serialized``), and confluent-kafka's JSONSerializer /
JSONDeserializer and ProtobufSerializer / ProtobufDeserializer producing and consuming through
minibroker. The Protobuf message class is built at run time from a descriptor (no protoc)."""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from broker.testing import BrokerProcess

from .conftest import Registry

sr = pytest.importorskip("confluent_kafka.schema_registry")
json_serde = pytest.importorskip("confluent_kafka.schema_registry.json_schema")
protobuf_serde = pytest.importorskip("confluent_kafka.schema_registry.protobuf")
from confluent_kafka import Consumer, Producer
from confluent_kafka.serialization import MessageField, SerializationContext

USER_JSON = json.dumps({
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "User", "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                   "tags": {"type": "array", "items": {"type": "string"}}},
    "required": ["name"], "additionalProperties": False,
})
USER_PROTO = """
syntax = "proto3";
package example;
message User {
  string name = 1;
  int32 age = 2;
  repeated string tags = 3;
  message Address { string city = 1; }
  Address address = 4;
}
message Group { string id = 1; }
"""


def test_json_register_lookup_and_compatibility(registry: Registry) -> None:
    sid = registry.register("json-a", USER_JSON, schemaType="JSON")
    status, body = registry.get("/subjects/json-a/versions/latest")
    assert status == 200 and body["schemaType"] == "JSON" and body["id"] == sid
    assert json.loads(body["schema"]) == json.loads(USER_JSON)
    assert registry.post("/subjects/json-a", {"schema": USER_JSON, "schemaType": "JSON"})[1]["id"] == sid
    # an optional property added to the closed model: BACKWARD compatible
    v2 = json.loads(USER_JSON)
    v2["properties"]["email"] = {"type": "string"}
    status, body = registry.post("/compatibility/subjects/json-a/versions/latest?verbose=true",
                                 {"schema": json.dumps(v2), "schemaType": "JSON"})
    assert (status, body["is_compatible"]) == (200, True), body
    # age narrowed to a string: refused with 409 and the difference named
    v3 = json.loads(USER_JSON)
    v3["properties"]["age"] = {"type": "string"}
    status, body = registry.post("/subjects/json-a/versions", {"schema": json.dumps(v3), "schemaType": "JSON"})
    assert status == 409 and "TYPE_CHANGED" in body["message"], body
    status, body = registry.post("/subjects/json-a/versions", {"schema": '{"type": 5}', "schemaType": "JSON"})
    assert (status, body["error_code"]) == (422, 42201)


def test_protobuf_register_text_and_descriptor_share_an_id(registry: Registry) -> None:
    sid = registry.register("proto-a", USER_PROTO, schemaType="PROTOBUF")
    status, body = registry.get(f"/schemas/ids/{sid}")
    assert status == 200 and body["schemaType"] == "PROTOBUF" and "message User {" in body["schema"]
    status, body = registry.get(f"/schemas/ids/{sid}?format=serialized")
    file = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(body["schema"]))
    assert [m.name for m in file.message_type] == ["User", "Group"]
    # the same schema sent as confluent-kafka sends it (a base64 descriptor) is the same schema
    assert registry.register("proto-a", body["schema"], schemaType="PROTOBUF") == sid
    assert registry.get("/subjects/proto-a/versions") == (200, [1])
    # Group removed: BACKWARD refuses it (a writer may have sent a Group)
    status, body = registry.post("/subjects/proto-a/versions", {
        "schema": USER_PROTO.replace("message Group { string id = 1; }", ""), "schemaType": "PROTOBUF"})
    assert status == 409 and "MESSAGE_REMOVED" in body["message"], body
    status, body = registry.post("/subjects/proto-a/versions", {"schema": "message {", "schemaType": "PROTOBUF"})
    assert (status, body["error_code"]) == (422, 42201)


def _round_trip(broker: BrokerProcess, topic: str, values: list[bytes]) -> list[bytes]:
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for v in values:
        producer.produce(topic, value=v)
    assert producer.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-" + topic,
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        while len(got) < len(values):
            msg = consumer.poll(10)
            assert msg is not None, "no message within 10 s"
            assert msg.error() is None, msg.error()
            got.append(msg.value())
    finally:
        consumer.close()
    return got


@pytest.mark.slow
def test_confluent_json_serde_through_the_broker(registry_broker: BrokerProcess) -> None:
    client = sr.SchemaRegistryClient({"url": registry_broker.schema_registry_url})
    topic = f"json-users-{uuid.uuid4().hex[:8]}"
    serializer = json_serde.JSONSerializer(USER_JSON, client)
    deserializer = json_serde.JSONDeserializer(None, schema_registry_client=client)
    ctx = SerializationContext(topic, MessageField.VALUE)
    users: list[dict[str, Any]] = [{"name": f"u{i}", "age": i, "tags": ["a"] * i} for i in range(4)]
    got = _round_trip(registry_broker, topic, [serializer(u, ctx) for u in users])
    latest = client.get_latest_version(f"{topic}-value")
    assert latest.schema.schema_type == "JSON"
    assert all(v[0] == 0 and int.from_bytes(v[1:5], "big") == latest.schema_id for v in got)
    assert [deserializer(v, ctx) for v in got] == users
    with pytest.raises(Exception, match="not of type 'integer'"):  # the serializer validates against the schema
        serializer({"name": "x", "age": "old"}, ctx)


def user_class() -> Any:
    """The message class of USER_PROTO's User, from a descriptor built by hand."""
    file = descriptor_pb2.FileDescriptorProto(name="example/user.proto", package="example", syntax="proto3")
    F = descriptor_pb2.FieldDescriptorProto
    user = file.message_type.add(name="User")
    user.field.add(name="name", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    user.field.add(name="age", number=2, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    user.field.add(name="tags", number=3, type=F.TYPE_STRING, label=F.LABEL_REPEATED)
    address = user.nested_type.add(name="Address")
    address.field.add(name="city", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    user.field.add(name="address", number=4, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                   type_name=".example.User.Address")
    file.message_type.add(name="Group").field.add(name="id", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("example.User"))


@pytest.mark.slow
def test_confluent_protobuf_serde_through_the_broker(registry_broker: BrokerProcess) -> None:
    User = user_class()
    client = sr.SchemaRegistryClient({"url": registry_broker.schema_registry_url})
    topic = f"proto-users-{uuid.uuid4().hex[:8]}"
    serializer = protobuf_serde.ProtobufSerializer(User, client, {"use.deprecated.format": False})
    deserializer = protobuf_serde.ProtobufDeserializer(User, {"use.deprecated.format": False})
    ctx = SerializationContext(topic, MessageField.VALUE)
    users = [User(name=f"u{i}", age=i, tags=["t"] * i) for i in range(4)]
    users[1].address.city = "Lyon"
    got = _round_trip(registry_broker, topic, [serializer(u, ctx) for u in users])
    latest = client.get_latest_version(f"{topic}-value")
    assert latest.schema.schema_type == "PROTOBUF" and "message User {" in latest.schema.schema_str
    # framing: magic 0, the id, then the message indexes ([0]: the first message, written as 0)
    assert all(v[:1] == b"\0" and int.from_bytes(v[1:5], "big") == latest.schema_id and v[5] == 0 for v in got)
    assert [deserializer(v, ctx) for v in got] == users
    # a deserializer without the class decodes through the registry's serialized descriptor
    generic = protobuf_serde.ProtobufDeserializer(User, {"use.deprecated.format": False},
                                                  schema_registry_client=client)
    assert [generic(v, ctx).name for v in got] == ["u0", "u1", "u2", "u3"]
