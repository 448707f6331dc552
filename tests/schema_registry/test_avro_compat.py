"""The Avro resolution rules (broker/schema_registry/avro_compat.py) and the levels
(compatibility.py), as tables: (old, new, level, compatible?, the Avro error type expected)."""

from __future__ import annotations

import json

import pytest

from broker.schema_registry.avro import AvroSchema, InvalidSchema
from broker.schema_registry.avro_compat import check_avro
from broker.schema_registry.compatibility import check


def rec(*fields: dict, name: str = "R", **extra: object) -> str:
    return json.dumps({"type": "record", "name": name, "fields": list(fields), **extra})


def f(name: str, type_: object, **extra: object) -> dict:
    return {"name": name, "type": type_, **extra}


A = rec(f("a", "int"))
ENUM_AB = json.dumps({"type": "enum", "name": "E", "symbols": ["A", "B"]})
ENUM_ABC = json.dumps({"type": "enum", "name": "E", "symbols": ["A", "B", "C"]})
ENUM_AB_DEFAULT = json.dumps({"type": "enum", "name": "E", "symbols": ["A", "B"], "default": "A"})

#: (case, old schema, new schema, level, compatible, Avro error type expected when not)
CASES = [
    ("add field with default", A, rec(f("a", "int"), f("b", "string", default="")), "BACKWARD", True, None),
    ("add field without default", A, rec(f("a", "int"), f("b", "string")), "BACKWARD", False,
     "READER_FIELD_MISSING_DEFAULT_VALUE"),
    ("add field without default, forward", A, rec(f("a", "int"), f("b", "string")), "FORWARD", True, None),
    ("remove field", rec(f("a", "int"), f("b", "string")), A, "BACKWARD", True, None),
    ("remove field without default, forward", rec(f("a", "int"), f("b", "string")), A, "FORWARD", False,
     "READER_FIELD_MISSING_DEFAULT_VALUE"),
    ("remove field with default, full", rec(f("a", "int"), f("b", "string", default="x")), A, "FULL", True, None),
    ("add field without default, full", A, rec(f("a", "int"), f("b", "string")), "FULL", False,
     "READER_FIELD_MISSING_DEFAULT_VALUE"),
    ("int to long", A, rec(f("a", "long")), "BACKWARD", True, None),
    ("int to double", A, rec(f("a", "double")), "BACKWARD", True, None),
    ("long to int", rec(f("a", "long")), A, "BACKWARD", False, "TYPE_MISMATCH"),
    ("int to long, forward", A, rec(f("a", "long")), "FORWARD", False, "TYPE_MISMATCH"),
    ("float to double", rec(f("a", "float")), rec(f("a", "double")), "BACKWARD", True, None),
    ("double to float", rec(f("a", "double")), rec(f("a", "float")), "BACKWARD", False, "TYPE_MISMATCH"),
    ("string to bytes", rec(f("a", "string")), rec(f("a", "bytes")), "FULL", True, None),
    ("int to string", A, rec(f("a", "string")), "BACKWARD", False, "TYPE_MISMATCH"),
    ("enum symbol added", ENUM_AB, ENUM_ABC, "BACKWARD", True, None),
    ("enum symbol removed", ENUM_ABC, ENUM_AB, "BACKWARD", False, "MISSING_ENUM_SYMBOLS"),
    ("enum symbol removed, reader default", ENUM_ABC, ENUM_AB_DEFAULT, "BACKWARD", True, None),
    ("enum symbol added, forward", ENUM_AB, ENUM_ABC, "FORWARD", False, "MISSING_ENUM_SYMBOLS"),
    ("record renamed", A, rec(f("a", "int"), name="S"), "BACKWARD", False, "NAME_MISMATCH"),
    ("record renamed with alias", A, rec(f("a", "int"), name="S", aliases=["R"]), "BACKWARD", True, None),
    ("record namespace changed", A, rec(f("a", "int"), namespace="x.y"), "BACKWARD", True, None),
    ("field renamed with alias", A, rec(f("z", "int", aliases=["a"])), "BACKWARD", True, None),
    ("fixed size changed", json.dumps({"type": "fixed", "name": "F", "size": 4}),
     json.dumps({"type": "fixed", "name": "F", "size": 8}), "BACKWARD", False, "FIXED_SIZE_MISMATCH"),
    ("type to union with it", A, rec(f("a", ["null", "int"], default=None)), "BACKWARD", True, None),
    ("type to union with it, forward", A, rec(f("a", ["null", "int"], default=None)), "FORWARD", False,
     "TYPE_MISMATCH"),
    ("union to its member", rec(f("a", ["null", "int"], default=None)), A, "BACKWARD", False,
     "TYPE_MISMATCH"),
    ("union branch removed", rec(f("a", ["null", "int", "string"])), rec(f("a", ["null", "int"])), "BACKWARD",
     False, "MISSING_UNION_BRANCH"),
    ("union branch added", rec(f("a", ["null", "int"])), rec(f("a", ["null", "int", "string"])), "BACKWARD",
     True, None),
    ("union branch promoted", rec(f("a", ["null", "int"])), rec(f("a", ["null", "long"])), "BACKWARD", True, None),
    ("array items promoted", rec(f("a", {"type": "array", "items": "int"})),
     rec(f("a", {"type": "array", "items": "long"})), "BACKWARD", True, None),
    ("array items narrowed", rec(f("a", {"type": "array", "items": "long"})),
     rec(f("a", {"type": "array", "items": "int"})), "BACKWARD", False, "TYPE_MISMATCH"),
    ("map values changed", rec(f("a", {"type": "map", "values": "string"})),
     rec(f("a", {"type": "map", "values": "int"})), "BACKWARD", False, "TYPE_MISMATCH"),
    ("array to map", rec(f("a", {"type": "array", "items": "int"})),
     rec(f("a", {"type": "map", "values": "int"})), "BACKWARD", False, "TYPE_MISMATCH"),
    ("nested record field added without default",
     rec(f("n", json.loads(rec(f("x", "int"), name="N")))),
     rec(f("n", json.loads(rec(f("x", "int"), f("y", "int"), name="N")))),
     "BACKWARD", False, "READER_FIELD_MISSING_DEFAULT_VALUE"),
    ("recursive record unchanged", rec(f("next", ["null", "R"], default=None)),
     rec(f("next", ["null", "R"], default=None)), "FULL", True, None),
    ("anything, NONE", A, rec(f("a", "string")), "NONE", True, None),
    ("logical type added", rec(f("a", "long")), rec(f("a", {"type": "long", "logicalType": "timestamp-millis"})),
     "FULL", True, None),
]


@pytest.mark.parametrize(("case", "old", "new", "level", "ok", "error"), CASES, ids=[c[0] for c in CASES])
def test_compatibility_table(case: str, old: str, new: str, level: str, ok: bool, error: str | None) -> None:
    messages = check(level, AvroSchema.parse(new), [(1, AvroSchema.parse(old))])
    assert (not messages) == ok, messages
    if error is not None:
        assert f"errorType:'{error}'" in messages[0]
        assert "{oldSchemaVersion: 1}" in messages and f"{{compatibility: '{level}'}}" in messages


def test_transitive_levels_check_every_version() -> None:
    v1 = AvroSchema.parse(rec(f("a", "int")))
    v2 = AvroSchema.parse(rec(f("a", "int"), f("b", "int", default=0)))
    v3 = AvroSchema.parse(rec(f("b", "int", default=0)))  # drops a: v1 data lacks b -> default; fine
    v4 = AvroSchema.parse(rec(f("b", "int")))  # b without default: v1 cannot be read, v2 can
    assert check("BACKWARD", v3, [(1, v1), (2, v2)]) == []
    assert check("BACKWARD", v4, [(1, v1), (2, v2)]) == []
    transitive = check("BACKWARD_TRANSITIVE", v4, [(1, v1), (2, v2)])
    assert "{oldSchemaVersion: 1}" in transitive and "{oldSchemaVersion: 2}" not in transitive
    # FORWARD_TRANSITIVE: every old schema reads the new data
    assert check("FORWARD_TRANSITIVE", v2, [(1, v1)]) == []
    assert check("FULL_TRANSITIVE", v4, [(1, v1), (2, v2)]) != []


def test_reader_and_writer_are_not_symmetric() -> None:
    writer, reader = AvroSchema.parse(rec(f("a", "int"))), AvroSchema.parse(rec(f("a", "long")))
    assert check_avro(reader, writer) == []
    [err] = check_avro(writer, reader)
    assert err.error_type == "TYPE_MISMATCH" and err.path == "/fields/0/type"


@pytest.mark.parametrize("text", [
    "not json", '{"type": "nope"}', '{"type": "record", "name": "R"}', '["int", "int"]',
    '{"type": "enum", "name": "E", "symbols": ["A", "A"]}', rec(f("a", "int", default="x")),
    rec(f("a", "Missing")), '{"type": "fixed", "name": "F"}',
])
def test_invalid_schemas(text: str) -> None:
    with pytest.raises(InvalidSchema):
        AvroSchema.parse(text)


def test_stored_and_normalized_forms() -> None:
    spaced = '{ "type" : "record", "name": "R", "namespace": "n", "fields": [ {"name": "a", "type": {"type": "int"}} ] }'
    assert AvroSchema.parse(spaced).stored == '{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":"int"}]}'
    reordered = '{"fields": [{"type": "int", "name": "a"}], "name": "n.R", "type": "record"}'
    assert AvroSchema.parse(spaced, normalize=True).stored == AvroSchema.parse(reordered, normalize=True).stored
    assert AvroSchema.parse('{"type": "string"}').stored == '"string"'
