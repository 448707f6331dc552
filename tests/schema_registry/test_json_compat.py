"""JSON Schema in the registry: validity and forms (broker/schema_registry/json_schema.py) and
the compatibility rules (json_compat.py) as a table of (old, new, level, compatible?, the
Confluent difference name expected when not). Each case says why in a comment."""

from __future__ import annotations

import json

import pytest

from broker.schema_registry.avro import InvalidSchema
from broker.schema_registry.compatibility import check
from broker.schema_registry.json_compat import check_json
from broker.schema_registry.json_schema import JsonSchema
from broker.schema_registry.records import Reference, SchemaValue


def obj(props: dict, required: tuple[str, ...] = (), additional: object = None, **extra: object) -> str:
    s: dict = {"type": "object", "properties": props, **extra}
    if required:
        s["required"] = list(required)
    if additional is not None:
        s["additionalProperties"] = additional
    return json.dumps(s)


STR, INT, NUM = {"type": "string"}, {"type": "integer"}, {"type": "number"}
OPEN_A = obj({"a": STR})
CLOSED_A = obj({"a": STR}, additional=False)
PARTIAL_A = obj({"a": STR}, additional=STR)

#: (case, old schema, new schema, level, compatible, difference expected when not)
CASES = [
    # old documents may hold "b" with any value: the new schema's string "b" can refuse them
    ("property added to open model", OPEN_A, obj({"a": STR, "b": STR}), "BACKWARD", False,
     "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"),
    # a property whose schema is {} accepts whatever old documents held there
    ("empty-schema property added to open model", OPEN_A, obj({"a": STR, "b": {}}), "BACKWARD", True, None),
    # old documents cannot hold "b" (closed), and "b" is optional: every old document still valid
    ("optional property added to closed model", CLOSED_A, obj({"a": STR, "b": STR}, additional=False),
     "BACKWARD", True, None),
    # "b" required but absent from every old document
    ("required property added to closed model", CLOSED_A, obj({"a": STR, "b": STR}, ("b",), additional=False),
     "BACKWARD", False, "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"),
    # a default fills it: Confluent's REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED is compatible
    ("required property with default added", CLOSED_A,
     obj({"a": STR, "b": {"type": "string", "default": "x"}}, ("b",), additional=False), "BACKWARD", True, None),
    # old "b" values were strings (additionalProperties: string): a string "b" accepts them
    ("property added covered by partially open model", PARTIAL_A, obj({"a": STR, "b": STR}, additional=STR),
     "BACKWARD", True, None),
    # old "b" values were any string: an integer "b" refuses them
    ("property added not covered by partially open model", PARTIAL_A, obj({"a": STR, "b": INT}, additional=STR),
     "BACKWARD", False, "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"),
    # the new open model accepts "a" whatever it holds
    ("property removed from open model", obj({"a": STR, "b": STR}), OPEN_A, "BACKWARD", True, None),
    # old documents with "b" fail the new closed model
    ("property removed from closed model", obj({"a": STR, "b": STR}, additional=False), CLOSED_A, "BACKWARD",
     False, "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"),
    # FORWARD swaps the roles: the old (open) schema reads new documents, whose "b" may be anything
    ("property removed from closed model, forward", obj({"a": STR, "b": STR}), OPEN_A, "FORWARD", False,
     "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"),
    # a required name added: old documents may lack it
    ("required added", obj({"a": STR, "b": STR}), obj({"a": STR, "b": STR}, ("b",)), "BACKWARD", False,
     "REQUIRED_ATTRIBUTE_ADDED"),
    # dropping a requirement only accepts more
    ("required removed", obj({"a": STR}, ("a",)), OPEN_A, "BACKWARD", True, None),
    # ... which old readers refuse (FORWARD)
    ("required removed, forward", obj({"a": STR}, ("a",)), OPEN_A, "FORWARD", False, "REQUIRED_ATTRIBUTE_ADDED"),
    # every integer is a number
    ("integer to number", obj({"a": INT}), obj({"a": NUM}), "BACKWARD", True, None),
    # a number like 1.5 is not an integer
    ("number to integer", obj({"a": NUM}), obj({"a": INT}), "BACKWARD", False, "TYPE_NARROWED"),
    ("string to integer", obj({"a": STR}), obj({"a": INT}), "BACKWARD", False, "TYPE_CHANGED"),
    # a type added to the list accepts more (TYPE_EXTENDED)
    ("type extended with null", obj({"a": STR}), obj({"a": {"type": ["string", "null"]}}), "BACKWARD", True, None),
    ("type narrowed from a list", obj({"a": {"type": ["string", "null"]}}), obj({"a": STR}), "BACKWARD", False,
     "TYPE_NARROWED"),
    # enum values added accept more
    ("enum extended", json.dumps({"enum": ["a", "b"]}), json.dumps({"enum": ["a", "b", "c"]}), "BACKWARD",
     True, None),
    ("enum narrowed", json.dumps({"enum": ["a", "b", "c"]}), json.dumps({"enum": ["a", "b"]}), "BACKWARD",
     False, "ENUM_ARRAY_NARROWED"),
    ("enum narrowed, forward is fine", json.dumps({"enum": ["a", "b", "c"]}), json.dumps({"enum": ["a", "b"]}),
     "FORWARD", True, None),
    # a lower maxLength refuses old 10-character strings
    ("maxLength decreased", json.dumps({"type": "string", "maxLength": 10}),
     json.dumps({"type": "string", "maxLength": 5}), "BACKWARD", False, "MAX_LENGTH_DECREASED"),
    ("maxLength increased", json.dumps({"type": "string", "maxLength": 5}),
     json.dumps({"type": "string", "maxLength": 10}), "BACKWARD", True, None),
    ("maximum added", json.dumps(NUM), json.dumps({"type": "number", "maximum": 10}), "BACKWARD", False,
     "MAXIMUM_ADDED"),
    ("minimum removed", json.dumps({"type": "number", "minimum": 0}), json.dumps(NUM), "BACKWARD", True, None),
    ("minItems increased", json.dumps({"type": "array", "minItems": 1}), json.dumps({"type": "array", "minItems": 2}),
     "BACKWARD", False, "MIN_ITEMS_INCREASED"),
    # every multiple of 4 is a multiple of 2
    ("multipleOf expanded", json.dumps({"type": "integer", "multipleOf": 4}),
     json.dumps({"type": "integer", "multipleOf": 2}), "BACKWARD", True, None),
    ("multipleOf reduced", json.dumps({"type": "integer", "multipleOf": 2}),
     json.dumps({"type": "integer", "multipleOf": 4}), "BACKWARD", False, "MULTIPLE_OF_REDUCED"),
    ("pattern added", json.dumps(STR), json.dumps({"type": "string", "pattern": "^a"}), "BACKWARD", False,
     "PATTERN_ADDED"),
    ("items widened", json.dumps({"type": "array", "items": INT}), json.dumps({"type": "array", "items": NUM}),
     "BACKWARD", True, None),
    ("items narrowed", json.dumps({"type": "array", "items": NUM}), json.dumps({"type": "array", "items": INT}),
     "BACKWARD", False, "TYPE_NARROWED"),
    # closing an open model refuses old documents with other properties
    ("content model closed", OPEN_A, CLOSED_A, "BACKWARD", False, "ADDITIONAL_PROPERTIES_REMOVED"),
    ("content model opened", CLOSED_A, OPEN_A, "BACKWARD", True, None),
    # a oneOf branch added accepts more (SUM_TYPE_EXTENDED)
    ("oneOf branch added", json.dumps({"oneOf": [STR, INT]}), json.dumps({"oneOf": [STR, INT, {"type": "boolean"}]}),
     "BACKWARD", True, None),
    ("oneOf branch removed", json.dumps({"oneOf": [STR, INT]}), json.dumps({"oneOf": [STR]}), "BACKWARD", False,
     "SUM_TYPE_NARROWED"),
    # a plain schema becoming a oneOf that holds it (COMBINED_TYPE_EXTENDED)
    ("plain to oneOf holding it", json.dumps(STR), json.dumps({"oneOf": [STR, INT]}), "BACKWARD", True, None),
    ("plain to oneOf without it", json.dumps(STR), json.dumps({"oneOf": [INT, {"type": "boolean"}]}), "BACKWARD",
     False, "COMBINED_TYPE_CHANGED"),
    # a document valid under two anyOf branches fails oneOf
    ("anyOf to oneOf", json.dumps({"anyOf": [STR, {"maxLength": 3}]}), json.dumps({"oneOf": [STR, {"maxLength": 3}]}),
     "BACKWARD", False, "COMBINED_TYPE_CHANGED"),
    ("oneOf to anyOf", json.dumps({"oneOf": [STR, INT]}), json.dumps({"anyOf": [STR, INT]}), "BACKWARD", True, None),
    # an allOf branch added narrows (PRODUCT_TYPE_EXTENDED): here by a maxLength
    ("allOf constraint added", json.dumps({"allOf": [STR]}), json.dumps({"allOf": [STR, {"maxLength": 5}]}),
     "BACKWARD", False, "MAX_LENGTH_ADDED"),
    ("allOf constraint removed", json.dumps({"allOf": [STR, {"maxLength": 5}]}), json.dumps({"allOf": [STR]}),
     "BACKWARD", True, None),
    # FULL: both directions; an optional property added to a closed model is refused by the old reader
    ("optional property added to closed model, full", CLOSED_A, obj({"a": STR, "b": STR}, additional=False),
     "FULL", False, "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"),
    # annotations never matter
    ("title and description changed", json.dumps({"type": "string", "title": "a"}),
     json.dumps({"type": "string", "title": "b", "description": "x"}), "FULL", True, None),
    # $ref followed on both sides: the referenced definition narrowed
    ("ref target narrowed", json.dumps({"$ref": "#/definitions/x", "definitions": {"x": NUM}}),
     json.dumps({"$ref": "#/definitions/x", "definitions": {"x": INT}}), "BACKWARD", False, "TYPE_NARROWED"),
    ("anything, NONE", json.dumps(STR), json.dumps(INT), "NONE", True, None),
]


@pytest.mark.parametrize(("case", "old", "new", "level", "ok", "error"), CASES, ids=[c[0] for c in CASES])
def test_compatibility_table(case: str, old: str, new: str, level: str, ok: bool, error: str | None) -> None:
    messages = check(level, JsonSchema.parse(new), [(1, JsonSchema.parse(old))])
    assert (not messages) == ok, messages
    if error is not None:
        assert any(f"errorType:'{error}'" in m for m in messages), messages
        assert "{oldSchemaVersion: 1}" in messages and f"{{compatibility: '{level}'}}" in messages


def test_transitive_levels_check_every_version() -> None:
    v1 = JsonSchema.parse(obj({"a": INT}, additional=False))
    v2 = JsonSchema.parse(obj({"a": NUM}, additional=False))
    v3 = JsonSchema.parse(obj({"a": NUM}, additional=False, maxProperties=1))
    # FORWARD against v2 only: v2 reads v3's documents. Transitively v1 cannot (1.5 is no integer)
    assert check("FORWARD", v3, [(1, v1), (2, v2)]) == []
    messages = check("FORWARD_TRANSITIVE", v3, [(1, v1), (2, v2)])
    assert "{oldSchemaVersion: 1}" in messages and "{oldSchemaVersion: 2}" not in messages


def test_recursive_schema_terminates() -> None:
    tree = {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}}
    a = JsonSchema.parse(json.dumps(tree))
    assert check_json(a, JsonSchema.parse(json.dumps(tree))) == []


@pytest.mark.parametrize("text", [
    "not json", "[1, 2]", '{"type": "nope"}', '{"type": "object", "properties": 5}',
    '{"$ref": "#/definitions/missing"}', '{"$schema": "http://example.com/my-dialect", "type": "string"}',
    '{"minLength": -1}', '{"$ref": "other.json"}',
])
def test_invalid_schemas(text: str) -> None:
    with pytest.raises(InvalidSchema):
        JsonSchema.parse(text)


@pytest.mark.parametrize("dialect", [
    "http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-06/schema#",
    "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2019-09/schema",
    "https://json-schema.org/draft/2020-12/schema",
])
def test_each_draft_is_checked_by_its_metaschema(dialect: str) -> None:
    JsonSchema.parse(json.dumps({"$schema": dialect, "type": "object", "properties": {"a": STR}}))
    # exclusiveMaximum: a boolean in Draft 4, a number from Draft 6 on
    boolean_form = {"$schema": dialect, "type": "number", "maximum": 5, "exclusiveMaximum": True}
    if "draft-04" in dialect:
        JsonSchema.parse(json.dumps(boolean_form))
    else:
        with pytest.raises(InvalidSchema):
            JsonSchema.parse(json.dumps(boolean_form))


def test_references_resolve_by_name() -> None:
    address = SchemaValue("address", 1, 7, "JSON", (), json.dumps({"type": "object", "properties": {"city": STR}}),
                          False)
    ref = Reference("address.json", "address", 1)
    user = json.dumps({"type": "object", "properties": {"home": {"$ref": "address.json"}}})
    parsed = JsonSchema.parse(user, (ref,), lambda r: address if r == ref else None)
    narrowed = SchemaValue("address", 2, 8, "JSON", (), json.dumps(
        {"type": "object", "properties": {"city": STR}, "required": ["city"]}), False)
    ref2 = Reference("address.json", "address", 2)
    parsed2 = JsonSchema.parse(user, (ref2,), lambda r: narrowed if r == ref2 else None)
    [err] = check_json(parsed2, parsed)  # the change inside the referenced schema is seen
    assert err.error_type == "REQUIRED_ATTRIBUTE_ADDED"
    with pytest.raises(InvalidSchema):
        JsonSchema.parse(user, (ref,), lambda r: None)


def test_stored_and_normalized_forms() -> None:
    spaced = '{ "type": "object",\n "properties": {"b": {"type": "string"}, "a": {"type": "integer"}} }'
    assert JsonSchema.parse(spaced).stored == '{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"}}}'
    reordered = '{"properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "type": "object"}'
    assert JsonSchema.parse(spaced, normalize=True).stored == JsonSchema.parse(reordered, normalize=True).stored
    assert JsonSchema.parse("true").stored == "true"
