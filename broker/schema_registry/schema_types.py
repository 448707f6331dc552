"""The schema types this registry parses and checks, and the one entry point that parses a
schema of any of them (``parse_schema``)."""

from __future__ import annotations

from .avro import AvroSchema, InvalidSchema, LookupReference
from .json_schema import JsonSchema
from .protobuf import ProtobufSchema
from .records import Reference

__all__ = ["SCHEMA_TYPES", "InvalidSchema", "ParsedSchema", "parse_schema"]

#: in the order ``/schemas/types`` lists them (Confluent's)
SCHEMA_TYPES = ("JSON", "PROTOBUF", "AVRO")
ParsedSchema = AvroSchema | JsonSchema | ProtobufSchema
_PARSERS: dict[str, type[AvroSchema] | type[JsonSchema] | type[ProtobufSchema]] = {
    "AVRO": AvroSchema, "JSON": JsonSchema, "PROTOBUF": ProtobufSchema}


def parse_schema(text: str, schema_type: str, references: tuple[Reference, ...] = (),
                 lookup: LookupReference | None = None, *, normalize: bool = False) -> ParsedSchema:
    """A schema of ``schema_type`` (one of SCHEMA_TYPES); InvalidSchema when it is not valid,
    KeyError for an unknown type."""
    return _PARSERS[schema_type].parse(text, references, lookup, normalize=normalize)
