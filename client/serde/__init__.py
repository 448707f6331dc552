"""Confluent-framed values with a schema registry: serializers and deserializers for AVRO, JSON
and PROTOBUF (serializers.py), the framing (wire.py) and an asyncio registry client
(registry.py). Needs fastavro, jsonschema and protobuf (minibroker's own dependencies).

    async with RegistryClient("http://127.0.0.1:8081") as registry:
        value = await AvroSerializer(registry, schema).serialize({"name": "a"}, "users")
"""

from __future__ import annotations

from .registry import RegisteredSchema, RegistryClient, RegistryClientError
from .serializers import (
    AvroDeserializer,
    AvroSerializer,
    JsonDeserializer,
    JsonSerializer,
    ProtobufDeserializer,
    ProtobufSerializer,
    subject_name,
)
from .wire import SerdeError

__all__ = ["AvroDeserializer", "AvroSerializer", "JsonDeserializer", "JsonSerializer", "ProtobufDeserializer",
           "ProtobufSerializer", "RegisteredSchema", "RegistryClient", "RegistryClientError", "SerdeError",
           "subject_name"]
