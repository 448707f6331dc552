"""The typed-column options (client/spark/format_options.py) and the registered schemas' Arrow
types (client/spark/schemas.py), without Spark or a broker."""

from __future__ import annotations

import pytest

from client.spark.format_options import default_subject, parse_format_options
from client.spark.options import parse_options
from client.spark.sink_options import parse_sink_options

pa = pytest.importorskip("pyarrow")
from client.spark.schemas import SchemaConversionError, avro_type, json_type


def test_binary_is_the_default() -> None:
    o = parse_options({"kafka.bootstrap.servers": "h:1", "subscribe": "t"})
    assert not o.formats.typed


def test_a_format_needs_the_registry_url() -> None:
    with pytest.raises(ValueError, match="'schema.registry.url' must be specified with valueFormat=avro"):
        parse_options({"kafka.bootstrap.servers": "h:1", "subscribe": "t", "valueFormat": "avro"})
    with pytest.raises(ValueError, match="must be one of binary, avro, json, protobuf"):
        parse_format_options({"valueformat": "xml"})
    with pytest.raises(ValueError, match="FAILFAST or PERMISSIVE"):
        parse_format_options({"mode": "DROP"})


def test_options_parsed() -> None:
    o = parse_options({"kafka.bootstrap.servers": "h:1", "subscribe": "t", "valueFormat": "Protobuf",
                       "keyFormat": "avro", "schema.registry.url": "http://r:8081/", "valueMessage": "a.B",
                       "keySchemaId": "7", "mode": "permissive",
                       "schema.registry.basic.auth.user.info": "u:p"}).formats
    assert o.value is not None and o.value.format == "protobuf" and o.value.message == "a.B"
    assert o.key is not None and o.key.schema_id == 7
    assert o.registry_url == "http://r:8081" and o.registry_user_info == "u:p" and o.permissive
    assert default_subject(o.value, "value", ("t",)) == "t-value"
    assert default_subject(o.key, "key", ("t",)) is None
    with pytest.raises(ValueError, match="'valueSubject' \\(or 'valueSchemaId'\\) must be specified"):
        default_subject(o.value, "value", ("a", "b"))
    with pytest.raises(ValueError, match="'valueMessage' is for valueFormat=protobuf"):
        parse_format_options({"valueformat": "avro", "valuemessage": "x", "schema.registry.url": "u"})


def test_sink_options() -> None:
    o = parse_sink_options({"kafka.bootstrap.servers": "h:1", "topic": "t", "valueFormat": "json",
                            "schema.registry.url": "http://r", "valueSubject": "s"})
    assert o.formats.value is not None and o.formats.value.subject == "s"
    with pytest.raises(ValueError, match="'valueSchemaId' is for reads"):
        parse_sink_options({"kafka.bootstrap.servers": "h:1", "valueFormat": "json", "schema.registry.url": "u",
                            "valueSchemaId": "3"})


def test_avro_types() -> None:
    t = avro_type({"type": "record", "name": "R", "fields": [
        {"name": "a", "type": ["null", "int"]}, {"name": "b", "type": {"type": "fixed", "name": "F", "size": 2}},
        {"name": "c", "type": "F"}, {"name": "d", "type": {"type": "int", "logicalType": "date"}},
        {"name": "e", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "f", "type": {"type": "long", "logicalType": "timestamp-micros"}}]})
    assert str(t) == "struct<a: int32, b: binary, c: binary, d: date32[day], e: string, f: timestamp[us, tz=UTC]>"
    ref = {"type": "record", "name": "P", "namespace": "x", "fields": [{"name": "v", "type": "int"}]}
    assert str(avro_type({"type": "record", "name": "Q", "namespace": "x", "fields": [
        {"name": "p", "type": "x.P"}, {"name": "q", "type": ["null", "P"]}]}, [ref])) == (
        "struct<p: struct<v: int32>, q: struct<v: int32>>")  # P from a reference
    with pytest.raises(SchemaConversionError, match="only \\[\"null\", T\\] unions"):
        avro_type(["int", "string"])
    with pytest.raises(SchemaConversionError, match="recursive"):
        avro_type({"type": "record", "name": "N", "fields": [{"name": "next", "type": ["null", "N"]}]})


def test_json_types() -> None:
    t = json_type({"definitions": {"P": {"type": "object", "properties": {"x": {"type": "number"}}}},
                   "type": "object", "properties": {
                       "p": {"$ref": "#/definitions/P"}, "n": {"type": ["integer", "null"]},
                       "m": {"type": "object", "additionalProperties": {"type": "boolean"}},
                       "any": {}, "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}})
    assert str(t) == ("struct<p: struct<x: double>, n: int64, m: map<string, bool>, any: string, either: string>")
