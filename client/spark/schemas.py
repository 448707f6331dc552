"""Registered schemas (AVRO, JSON, PROTOBUF) as Arrow types, for the data source's typed
columns (``valueFormat``/``keyFormat``); the Spark type is pyspark's conversion of the Arrow
one (``from_arrow_type``), so the two never disagree.

AVRO (the Avro specification's types, as Spark's ``from_avro`` maps them):

==========================================  ================================================
Avro                                        Arrow (Spark)
==========================================  ================================================
record                                      struct (its fields, in order)
``["null", T]`` (either order)              T, nullable
enum / string / ``uuid``                    string
bytes / fixed                               binary
``decimal`` (bytes or fixed)                decimal128(precision, scale)
int / long / float / double / boolean       int32 / int64 / float32 / float64 / bool
``date``                                    date32 (date)
``timestamp-millis``/``-micros`` (+local)   timestamp(us, UTC) (timestamp)
``time-millis`` / ``time-micros``           int32 ms / int64 µs (Spark has no time type)
array / map                                 list / map<string, T>
==========================================  ================================================

Other unions (two or more non-null branches) and recursive records are refused with a
``SchemaConversionError``: Spark's ``member0..n`` struct needs the branch of each value, which
fastavro does not report.

JSON Schema: ``type: object`` with ``properties`` -> struct (properties in the schema's order),
``string`` -> string, ``integer`` -> int64, ``number`` -> float64, ``boolean`` -> bool,
``array`` with ``items`` -> list, an object with only ``additionalProperties: {schema}`` -> map;
``["T", "null"]``, ``oneOf``/``anyOf`` of one schema and ``null``, and local ``$ref``s
(``#/definitions/X``, ``#/$defs/X``) are followed. Anything else (no ``type``, several types,
``oneOf`` of several schemas) becomes a string holding the value's JSON text (``JSON_TEXT``).

PROTOBUF: a message -> struct (fields in declaration order), int32/sint32/sfixed32 -> int32,
int64/sint64/sfixed64/uint32/fixed32 -> int64, uint64/fixed64 -> int64 (as Spark's
``from_protobuf``; a value >= 2**63 fails the read), float/double/bool/string/bytes as their
names, enum -> string (the value's name), repeated -> list, ``map<K, V>`` -> map,
``google.protobuf.Timestamp`` -> timestamp. Recursive messages are refused.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

__all__ = ["repeated", "SchemaConversionError", "avro_type", "json_type", "protobuf_type", "JSON_TEXT", "TIMESTAMP"]

TIMESTAMP = pa.timestamp("us", tz="UTC")
#: a JSON Schema node with no single type: a string, the value's JSON text (a string value as itself)
JSON_TEXT = pa.string()


class SchemaConversionError(ValueError):
    """A registered schema with no Spark type (the message says which part)."""


# ---------------------------------------------------------------------------- AVRO

_AVRO_PRIMITIVES = {"null": pa.null(), "boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(),
                    "float": pa.float32(), "double": pa.float64(), "bytes": pa.binary(), "string": pa.string()}
_AVRO_LOGICAL = {"date": pa.date32(), "timestamp-millis": TIMESTAMP, "timestamp-micros": TIMESTAMP,
                 "local-timestamp-millis": TIMESTAMP, "local-timestamp-micros": TIMESTAMP,
                 "time-millis": pa.int32(), "time-micros": pa.int64(), "uuid": pa.string()}


def avro_type(schema: Any, refs: Any = ()) -> pa.DataType:
    """The Arrow type of a parsed (JSON) Avro schema; named types resolve within it or in
    ``refs`` (the parsed schemas it references, dependencies first)."""
    named: dict[str, Any] = {}
    for ref in refs:
        _avro(ref, named, ())
    return _avro(schema, named, ())


def _avro(s: Any, named: dict[str, Any], stack: tuple[str, ...]) -> pa.DataType:
    if isinstance(s, str):
        if s in _AVRO_PRIMITIVES:
            return _AVRO_PRIMITIVES[s]
        if s in stack or s.rpartition(".")[2] in {n.rpartition(".")[2] for n in stack}:
            raise SchemaConversionError(f"recursive Avro type {s} has no Spark type")
        found = named.get(s)
        if found is None:  # a short name inside the same namespace
            found = next((v for k, v in named.items() if k.rpartition(".")[2] == s), None)
        if found is None:
            raise SchemaConversionError(f"unknown Avro type {s!r}")
        return found
    if isinstance(s, list):
        branches = [b for b in s if b != "null"]
        if len(branches) != 1:
            raise SchemaConversionError(f"Avro union {json.dumps(s)} has no Spark type (only [\"null\", T] unions"
                                        " are supported)")
        return _avro(branches[0], named, stack)
    if not isinstance(s, dict):
        raise SchemaConversionError(f"not an Avro schema: {s!r}")
    t = s.get("type")
    logical = s.get("logicalType")
    if logical == "decimal":
        return pa.decimal128(int(s["precision"]), int(s.get("scale", 0)))
    if logical in _AVRO_LOGICAL and t in ("int", "long", "string"):
        return _AVRO_LOGICAL[logical]
    if t == "record" or t == "error":
        name = _full_name(s)
        fields = []
        for f in s["fields"]:
            fields.append(pa.field(f["name"], _avro(f["type"], named, (*stack, name))))
        out = pa.struct(fields)
        named[name] = out
        return out
    if t == "enum":
        named[_full_name(s)] = pa.string()
        return pa.string()
    if t == "fixed":
        named[_full_name(s)] = pa.binary()
        return pa.binary()
    if t == "array":
        return pa.list_(_avro(s["items"], named, stack))
    if t == "map":
        return pa.map_(pa.string(), _avro(s["values"], named, stack))
    return _avro(t, named, stack)


def _full_name(s: dict[str, Any]) -> str:
    name = str(s["name"])
    ns = s.get("namespace")
    return f"{ns}.{name}" if ns and "." not in name else name


# ---------------------------------------------------------------------------- JSON Schema

_JSON_SCALARS = {"string": pa.string(), "integer": pa.int64(), "number": pa.float64(), "boolean": pa.bool_()}


def json_type(schema: Any) -> pa.DataType:
    """The Arrow type of a JSON Schema (a parsed document)."""
    return _json(schema, schema, ())


def _json_ref(root: Any, ref: str) -> Any:
    if not ref.startswith("#/"):
        raise SchemaConversionError(f"$ref {ref!r}: only local references (#/...) have a Spark type")
    node = root
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def _json(s: Any, root: Any, refs: tuple[str, ...]) -> pa.DataType:
    if not isinstance(s, dict):
        return JSON_TEXT  # true / false schemas
    if "$ref" in s:
        ref = s["$ref"]
        if ref in refs:
            raise SchemaConversionError(f"recursive JSON Schema ($ref {ref}) has no Spark type")
        return _json(_json_ref(root, ref), root, (*refs, ref))
    for key in ("oneOf", "anyOf"):
        if key in s:
            branches = [b for b in s[key] if not (isinstance(b, dict) and b.get("type") == "null")]
            return _json(branches[0], root, refs) if len(branches) == 1 else JSON_TEXT
    t = s.get("type")
    if isinstance(t, list):
        kinds = [k for k in t if k != "null"]
        t = kinds[0] if len(kinds) == 1 else None
    if t in _JSON_SCALARS:
        return _JSON_SCALARS[t]
    if t == "array" and isinstance(s.get("items"), dict):
        return pa.list_(_json(s["items"], root, refs))
    if t == "object" or (t is None and "properties" in s):
        props = s.get("properties")
        if props:
            return pa.struct([pa.field(k, _json(v, root, refs)) for k, v in props.items()])
        extra = s.get("additionalProperties")
        if isinstance(extra, dict):
            return pa.map_(pa.string(), _json(extra, root, refs))
    return JSON_TEXT


# ---------------------------------------------------------------------------- PROTOBUF

def protobuf_type(desc: Any, stack: tuple[str, ...] = ()) -> pa.DataType:
    """The Arrow type of a message ``Descriptor``."""
    from google.protobuf.descriptor import FieldDescriptor as F

    if desc.full_name == "google.protobuf.Timestamp":
        return TIMESTAMP
    if desc.full_name in stack:
        raise SchemaConversionError(f"recursive Protobuf message {desc.full_name} has no Spark type")
    scalars = {F.TYPE_INT32: pa.int32(), F.TYPE_SINT32: pa.int32(), F.TYPE_SFIXED32: pa.int32(),
               F.TYPE_INT64: pa.int64(), F.TYPE_SINT64: pa.int64(), F.TYPE_SFIXED64: pa.int64(),
               F.TYPE_UINT32: pa.int64(), F.TYPE_FIXED32: pa.int64(), F.TYPE_UINT64: pa.int64(),
               F.TYPE_FIXED64: pa.int64(), F.TYPE_FLOAT: pa.float32(), F.TYPE_DOUBLE: pa.float64(),
               F.TYPE_BOOL: pa.bool_(), F.TYPE_STRING: pa.string(), F.TYPE_BYTES: pa.binary(),
               F.TYPE_ENUM: pa.string()}
    fields = []
    for f in desc.fields:
        if f.type == F.TYPE_MESSAGE:
            m = f.message_type
            if m.GetOptions().map_entry:
                k, v = m.fields_by_name["key"], m.fields_by_name["value"]
                kt = scalars[k.type]
                vt = protobuf_type(v.message_type, (*stack, desc.full_name)) if v.type == F.TYPE_MESSAGE \
                    else scalars[v.type]
                fields.append(pa.field(f.name, pa.map_(kt, vt)))
                continue
            t = protobuf_type(m, (*stack, desc.full_name))
        elif f.type == F.TYPE_GROUP:
            raise SchemaConversionError(f"group field {f.full_name} has no Spark type")
        else:
            t = scalars[f.type]
        fields.append(pa.field(f.name, pa.list_(t) if repeated(f) else t))
    return pa.struct(fields)


def repeated(f: Any) -> bool:
    """protobuf >= 6 has ``is_repeated`` (and no ``label`` on upb's descriptors)."""
    got = getattr(f, "is_repeated", None)
    if got is not None:
        return bool(got)
    from google.protobuf.descriptor import FieldDescriptor as F

    return bool(f.label == F.LABEL_REPEATED)
