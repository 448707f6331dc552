"""Run by the quixstreams virtualenv's Python (test_quixstreams.py): quixstreams' Avro, JSON and
Protobuf serializers with ``SchemaRegistryClientConfig`` produce through minibroker and its
registry with quixstreams' own producer, its consumer reads them back, its deserializers decode.
Prints one JSON line: {format: [decoded values]}. Arguments: bootstrap, registry url, topic prefix."""

from __future__ import annotations

import json
import sys

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from quixstreams import Application
from quixstreams.models import SerializationContext
from quixstreams.models.serializers.avro import AvroDeserializer, AvroSerializer
from quixstreams.models.serializers.json import JSONDeserializer, JSONSerializer
from quixstreams.models.serializers.protobuf import ProtobufDeserializer, ProtobufSerializer
from quixstreams.models.serializers.schema_registry import SchemaRegistryClientConfig

AVRO = {"type": "record", "name": "Reading", "namespace": "quix",
        "fields": [{"name": "sensor", "type": "string"}, {"name": "value", "type": "double"}]}
JSON_SCHEMA = {"type": "object", "properties": {"sensor": {"type": "string"}, "value": {"type": "number"}},
               "required": ["sensor", "value"]}


def reading_class() -> type:
    f = descriptor_pb2.FileDescriptorProto(name="quix_reading.proto", package="quix", syntax="proto3")
    m = f.message_type.add(name="Reading")
    m.field.add(name="sensor", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    m.field.add(name="value", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_DOUBLE,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("quix.Reading"))


def main() -> None:
    bootstrap, url, prefix = sys.argv[1:4]
    config = SchemaRegistryClientConfig(url=url)
    reading = reading_class()
    serdes = {
        "avro": (AvroSerializer(AVRO, schema_registry_client_config=config),
                 AvroDeserializer(schema_registry_client_config=config)),
        "json": (JSONSerializer(schema=JSON_SCHEMA, schema_registry_client_config=config),
                 JSONDeserializer(schema=JSON_SCHEMA, schema_registry_client_config=config)),
        "protobuf": (ProtobufSerializer(reading, schema_registry_client_config=config),
                     ProtobufDeserializer(reading, schema_registry_client_config=config)),
    }
    values = [{"sensor": f"s{i}", "value": i + 0.5} for i in range(5)]
    app = Application(broker_address=bootstrap, consumer_group=f"{prefix}-g", auto_offset_reset="earliest",
                      auto_create_topics=False)
    out: dict[str, list] = {}
    with app.get_producer() as producer:
        for fmt, (serialize, _) in serdes.items():
            topic = f"{prefix}-{fmt}"
            for v in values:
                producer.produce(topic, value=serialize(v, SerializationContext(topic, "value")), key=v["sensor"])
        producer.flush(10)
    with app.get_consumer() as consumer:
        consumer.subscribe([f"{prefix}-{fmt}" for fmt in serdes])
        got = 0
        for _ in range(200):
            msg = consumer.poll(0.5)
            if msg is None:
                if got == len(values) * len(serdes):
                    break
                continue
            assert msg.error() is None, msg.error()
            fmt = msg.topic().rsplit("-", 1)[1]
            value = msg.value()
            assert value[0] == 0  # Confluent's framing: magic byte, then the schema id
            out.setdefault(fmt, []).append(
                {"schema_id": int.from_bytes(value[1:5], "big"),
                 "value": serdes[fmt][1](value, SerializationContext(msg.topic(), "value"))})
            got += 1
    print(json.dumps(out))


if __name__ == "__main__":
    main()
