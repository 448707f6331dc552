"""Serializers and deserializers of Confluent-framed values (wire.py) for AVRO (fastavro),
JSON (JSON text, validated with jsonschema) and PROTOBUF (message classes), over a
``RegistryClient``; bytes they write are read by confluent-kafka's deserializers and the other
way round.

Subjects follow Confluent's default TopicNameStrategy: ``<topic>-value`` or ``<topic>-key``.
Each serializer registers its schema on first use (auto.register.schemas) and caches the id;
each deserializer fetches a writer schema by id once.
"""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import fastavro
from google.protobuf.message import DecodeError, Message
from jsonschema import Draft7Validator, validators
from jsonschema.exceptions import ValidationError

from .registry import RegistryClient
from .wire import SerdeError, decode_indexes, encode_indexes, frame, unframe

__all__ = ["AvroDeserializer", "AvroSerializer", "JsonDeserializer", "JsonSerializer",
           "ProtobufDeserializer", "ProtobufSerializer", "subject_name"]


def subject_name(topic: str, is_key: bool = False) -> str:
    return f"{topic}-{'key' if is_key else 'value'}"


class AvroSerializer:
    def __init__(self, registry: RegistryClient, schema: str) -> None:
        self.registry = registry
        self.schema = schema
        self._parsed = fastavro.parse_schema(json.loads(schema))

    async def serialize(self, value: Any, topic: str, is_key: bool = False) -> bytes:
        schema_id = await self.registry.register(subject_name(topic, is_key), self.schema, "AVRO")
        out = io.BytesIO()
        try:
            fastavro.schemaless_writer(out, self._parsed, value)
        except (ValueError, TypeError, KeyError, AttributeError) as e:
            raise SerdeError(f"the value does not fit the schema: {e}") from None
        return frame(schema_id, out.getvalue())


class AvroDeserializer:
    """``reader_schema``: resolve every writer schema to this one (None: read as written)."""

    def __init__(self, registry: RegistryClient, reader_schema: str | None = None) -> None:
        self.registry = registry
        self._reader = fastavro.parse_schema(json.loads(reader_schema)) if reader_schema else None
        self._writers: dict[int, Any] = {}

    async def deserialize(self, data: bytes) -> Any:
        schema_id, payload = unframe(data)
        writer = self._writers.get(schema_id)
        if writer is None:
            registered = await self.registry.schema(schema_id)
            if registered.schema_type != "AVRO":
                raise SerdeError(f"schema {schema_id} is {registered.schema_type}, not AVRO")
            writer = self._writers[schema_id] = fastavro.parse_schema(json.loads(registered.schema))
        return fastavro.schemaless_reader(io.BytesIO(payload), writer, self._reader)


class JsonSerializer:
    """Validates each value against the schema (as confluent-kafka's does), then writes it as
    compact JSON text."""

    def __init__(self, registry: RegistryClient, schema: str, validate: bool = True) -> None:
        self.registry = registry
        self.schema = schema
        obj = json.loads(schema)
        self._validator = validators.validator_for(obj, default=Draft7Validator)(obj) if validate else None

    async def serialize(self, value: Any, topic: str, is_key: bool = False) -> bytes:
        if self._validator is not None:
            try:
                self._validator.validate(value)
            except ValidationError as e:
                raise SerdeError(f"the value does not fit the schema: {e.message}") from None
        schema_id = await self.registry.register(subject_name(topic, is_key), self.schema, "JSON")
        return frame(schema_id, json.dumps(value, separators=(",", ":")).encode())


class JsonDeserializer:
    def __init__(self, registry: RegistryClient) -> None:
        self.registry = registry

    async def deserialize(self, data: bytes) -> Any:
        schema_id, payload = unframe(data)
        registered = await self.registry.schema(schema_id)  # the id must name a JSON schema
        if registered.schema_type != "JSON":
            raise SerdeError(f"schema {schema_id} is {registered.schema_type}, not JSON")
        return json.loads(bytes(payload))


def _index_path(desc: Any) -> list[int]:  # a Descriptor (Python's or upb's)
    """Where a message is in its file: the top-level index, then the nested ones."""
    path: list[int] = []
    while desc.containing_type is not None:
        parent = desc.containing_type
        path.append(list(parent.nested_types).index(desc))
        desc = parent
    path.append(list(desc.file.message_types_by_name.values()).index(desc))
    return path[::-1]


def _is_well_known(name: str) -> bool:
    return name.startswith(("google/protobuf/", "google/type/"))


class ProtobufSerializer:
    """Serializes instances of ``message_class``; its file is registered as a base64
    descriptor, each imported file that is not a well-known type first, under a subject named
    after the file (Confluent's default reference subject strategy)."""

    def __init__(self, registry: RegistryClient, message_class: type[Message]) -> None:
        self.registry = registry
        self.message_class = message_class
        self._indexes = encode_indexes(_index_path(message_class.DESCRIPTOR))

    async def _register_file(self, subject: str, file: Any) -> int:  # a FileDescriptor
        refs = []
        for dep in file.dependencies:
            if _is_well_known(dep.name):
                continue
            await self._register_file(dep.name, dep)
            version = await self.registry.latest_version(dep.name)
            refs.append({"name": dep.name, "subject": dep.name, "version": version})
        text = base64.standard_b64encode(file.serialized_pb).decode("ascii")
        return await self.registry.register(subject, text, "PROTOBUF", tuple(refs))

    async def serialize(self, message: Message, topic: str, is_key: bool = False) -> bytes:
        if not isinstance(message, self.message_class):
            raise SerdeError(f"expected a {self.message_class.__name__}, got {type(message).__name__}")
        schema_id = await self._register_file(subject_name(topic, is_key), self.message_class.DESCRIPTOR.file)
        return frame(schema_id, message.SerializeToString(), self._indexes)


class ProtobufDeserializer:
    """Parses payloads into ``message_class``, as confluent-kafka's deserializer given a
    message type does: the message indexes are read past, not matched against the class (a
    writer's file that evolved may have moved the message)."""

    def __init__(self, registry: RegistryClient, message_class: type[Message]) -> None:
        self.registry = registry
        self.message_class = message_class

    async def deserialize(self, data: bytes) -> Message:
        schema_id, rest = unframe(data)
        _, payload = decode_indexes(rest)
        registered = await self.registry.schema(schema_id)
        if registered.schema_type != "PROTOBUF":
            raise SerdeError(f"schema {schema_id} is {registered.schema_type}, not PROTOBUF")
        try:
            return self.message_class.FromString(bytes(payload))
        except DecodeError as e:
            raise SerdeError(f"not a {self.message_class.__name__}: {e}") from None
