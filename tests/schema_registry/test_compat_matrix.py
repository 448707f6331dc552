"""The compatibility matrix over HTTP: for each schema type and each of Confluent's seven levels,
evolutions registered through the REST API — history registered under NONE, then ``PUT
/config/{subject}`` to the level, ``POST /compatibility/subjects/{subject}/versions`` (every
version the level names), then ``POST /subjects/{subject}/versions`` — accepted (200, the next
version) or refused with Confluent's codes (409 incompatible, 422/42201 invalid schema).

Each evolution row gives its expectation at every level as seven letters in ``LEVELS`` order
(Y accepted, N refused with 409, I invalid: 42201 whatever the level), justified in its comment
by the direction each level checks: BACKWARD, the new schema reads data written with the latest
(TRANSITIVE: every) earlier version; FORWARD, the earlier versions read data written with the new
one; FULL, both; NONE, nothing. The rules per type are the unit tables' (test_avro_compat.py:
the Avro specification's schema resolution; test_json_compat.py and test_protobuf_compat.py:
the differences Confluent documents); the ones here are those Confluent's compatibility page
uses as examples (add/delete a field, with or without a default; type promotions; transitive
histories)."""

from __future__ import annotations

import json
import uuid

import pytest

from .conftest import Registry

pytestmark = pytest.mark.slow

LEVELS = ("BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE", "NONE")


def rec(*fields: dict) -> str:
    return json.dumps({"type": "record", "name": "R", "namespace": "m", "fields": list(fields)})


A_INT = {"name": "a", "type": "int"}
A_INT_DEFAULT = {"name": "a", "type": "int", "default": 0}
B_STR = {"name": "b", "type": "string"}
B_STR_DEFAULT = {"name": "b", "type": "string", "default": ""}

#: (name, history, new schema, expectations in LEVELS order)
AVRO = [
    # the new reader fills b with its default from old data; an old reader ignores b
    ("field added with default", [rec(A_INT)], rec(A_INT, B_STR_DEFAULT), "YYYYYYY"),
    # the new reader has no value for b in old data; an old reader ignores it
    ("field added without default", [rec(A_INT)], rec(A_INT, B_STR), "NNYYNNY"),
    # the new reader skips the old data's b; an old reader needs b and has no default
    ("field deleted without default", [rec(A_INT, B_STR)], rec(A_INT), "YYNNNNY"),
    # an old reader takes its default for the deleted b
    ("field deleted with default", [rec(A_INT, B_STR_DEFAULT)], rec(A_INT), "YYYYYYY"),
    # int is promotable to long (new reads old); long is not to int (old reads new)
    ("int to long", [rec(A_INT)], rec({"name": "a", "type": "long"}), "YYNNNNY"),
    # string and bytes are promotable to each other (Avro specification)
    ("string to bytes", [rec(B_STR)], rec({"name": "b", "type": "bytes"}), "YYYYYYY"),
    # neither reads the other
    ("string to int", [rec(B_STR)], rec({"name": "b", "type": "int"}), "NNNNNNY"),
    # a union holding int reads int data; an int reader cannot read the null branch
    ("int to nullable int", [rec(A_INT)], rec({"name": "a", "type": ["null", "int"], "default": None}), "YYNNNNY"),
    # the new enum holds every old symbol; an old reader has no C and no enum default
    ("enum symbol added", [json.dumps({"type": "enum", "name": "E", "symbols": ["A", "B"]})],
     json.dumps({"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}), "YYNNNNY"),
    # the record's full name must match (no alias)
    ("record renamed", [rec(A_INT)], json.dumps({"type": "record", "name": "S", "namespace": "m",
                                                 "fields": [A_INT]}), "NNNNNNY"),
    # v1 {a:int}, v2 {}: the new {a:string default} reads v2 data (default) and v2's reader
    # ignores a, but v1's int a does not promote to string nor back
    ("transitive: a comes back as string", [rec(A_INT), rec()],
     rec({"name": "a", "type": "string", "default": "x"}), "YNYNYNY"),
    # v1 {a:int}, v2 {a:int default 0}: the new {} is read by v2's reader (default) but not by
    # v1's (no default); the new reader ignores a in any old data
    ("transitive: a deleted after gaining a default", [rec(A_INT), rec(A_INT_DEFAULT)], rec(), "YYYNYNY"),
    # not a schema at all, at any level
    ("invalid: unknown type", [rec(A_INT)], json.dumps({"type": "nope"}), "IIIIIII"),
    ("invalid: record without fields", [rec(A_INT)], json.dumps({"type": "record", "name": "R"}), "IIIIIII"),
]


def obj(props: dict, required: tuple[str, ...] = (), additional: object = None) -> str:
    s: dict = {"type": "object", "properties": props}
    if required:
        s["required"] = list(required)
    if additional is not None:
        s["additionalProperties"] = additional
    return json.dumps(s)


STR, INT, NUM = {"type": "string"}, {"type": "integer"}, {"type": "number"}

JSON = [
    # old documents (open model) may hold any "b": a string "b" can refuse them
    # (PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL); the old open reader accepts any new "b"
    ("property added to open model", [obj({"a": STR})], obj({"a": STR, "b": STR}), "NNYYNNY"),
    # a property whose schema is {} accepts anything: both directions hold
    ("empty-schema property added", [obj({"a": STR})], obj({"a": STR, "b": {}}), "YYYYYYY"),
    # old closed documents have no "b"; the old closed reader refuses new documents with "b"
    ("optional property added to closed model", [obj({"a": STR}, additional=False)],
     obj({"a": STR, "b": STR}, additional=False), "YYNNNNY"),
    # old documents may lack the now required "b"; the old reader requires nothing
    ("required added", [obj({"a": STR, "b": STR})], obj({"a": STR, "b": STR}, ("b",)), "NNYYNNY"),
    # every integer is a number; an old integer reader refuses 1.5
    ("integer to number", [obj({"a": INT})], obj({"a": NUM}), "YYNNNNY"),
    ("string to integer", [obj({"a": STR})], obj({"a": INT}), "NNNNNNY"),
    # more enum values accept every old one; an old reader refuses "c"
    ("enum extended", [json.dumps({"enum": ["a", "b"]})], json.dumps({"enum": ["a", "b", "c"]}), "YYNNNNY"),
    # closing the model refuses old documents with other properties; the old open reader takes all
    ("content model closed", [obj({"a": STR})], obj({"a": STR}, additional=False), "NNYYNNY"),
    # a oneOf branch added accepts more (SUM_TYPE_EXTENDED) and old readers refuse booleans
    ("oneOf branch added", [json.dumps({"oneOf": [STR, INT]})], json.dumps({"oneOf": [STR, INT, {"type": "boolean"}]}),
     "YYNNNNY"),
    # v1 string, v2 integer (registered under NONE): number reads v2's integers, not v1's
    # strings; v2's integer reader refuses new 1.5
    ("transitive: string, integer, number", [obj({"a": STR}), obj({"a": INT})], obj({"a": NUM}), "YNNNNNY"),
    # maxLength 5, then 20, then 10: v2's reader (20) takes new strings, v1's (5) not; the new
    # reader (10) refuses v2's 20-character strings
    ("transitive: maxLength 5, 20, 10", [json.dumps({"type": "string", "maxLength": 5}),
                                         json.dumps({"type": "string", "maxLength": 20})],
     json.dumps({"type": "string", "maxLength": 10}), "NNYNNNY"),
    # dropping "b" from a closed model refuses old documents holding it
    # (PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL); the old closed reader takes documents without it.
    # (Not as a history v1 {a}, v2 {a, b}, new {a}: a schema equal to an earlier version of the
    # subject is answered with that version's id, no check, as Confluent does.)
    ("closed: property removed", [obj({"a": STR, "b": STR}, additional=False)], obj({"a": STR}, additional=False),
     "NNYYNNY"),
    ("invalid: unknown type", [obj({"a": STR})], json.dumps({"type": "nope"}), "IIIIIII"),
    ("invalid: not JSON", [obj({"a": STR})], '{"type": ', "IIIIIII"),
]


def proto(body: str, syntax: str = "proto3", package: str = "acme") -> str:
    return f'syntax = "{syntax}";\npackage {package};\n{body}\n'


USER = proto("message User { string name = 1; int32 age = 2; }")

PROTOBUF = [
    # a reader takes the default for a field the writer never wrote, and skips an unknown one
    ("field added", [USER], proto("message User { string name = 1; int32 age = 2; string email = 3; }"), "YYYYYYY"),
    ("field removed", [USER], proto("message User { string name = 1; }"), "YYYYYYY"),
    # zigzag and plain varints decode differently, either way
    ("int32 to sint32", [USER], proto("message User { string name = 1; sint32 age = 2; }"), "NNNNNNY"),
    # string and bytes share the length-delimited encoding
    ("string to bytes", [USER], proto("message User { bytes name = 1; int32 age = 2; }"), "YYYYYYY"),
    # the new schema's reader knows every old message; Confluent counts a message added as
    # MESSAGE_REMOVED for the old reader (FORWARD)
    ("message added", [USER], proto("message User { string name = 1; int32 age = 2; } message G { string id = 1; }"),
     "YYNNNNY"),
    # the full name changes, so the message is removed from either side's view
    ("message renamed", [USER], proto("message Person { string name = 1; int32 age = 2; }"), "NNNNNNY"),
    ("package changed", [USER], proto("message User { string name = 1; int32 age = 2; }", package="other"), "NNNNNNY"),
    # proto2: old data lacks the new required b; an old reader ignores b
    ("required field added", [proto("message M { optional int32 a = 1; }", "proto2")],
     proto("message M { optional int32 a = 1; required int32 b = 2; }", "proto2"), "NNYYNNY"),
    # proto2 enums are closed: the new reader drops the old E1; an old reader knows every new value
    ("enum value removed, proto2", [proto("enum E { E0 = 0; E1 = 1; } message M { optional E e = 1; }", "proto2")],
     proto("enum E { E0 = 0; } message M { optional E e = 1; }", "proto2"), "NNYYNNY"),
    # two fields the writer could both set: the new oneof reader keeps one; the old reader reads both
    ("fields moved to a new oneof", [proto("message M { string a = 1; int32 b = 2; }")],
     proto("message M { oneof x { string a = 1; int32 b = 2; } }"), "NNYYNNY"),
    # v1 {string a = 1}, v2 {int32 b = 2} (a removed): the new {int32 a = 1; int32 b = 2} is a
    # field added for v2 either way, but field 1 is string in v1: kinds differ both ways
    ("transitive: field 1 reused with another type", [proto("message M { string a = 1; }"),
                                                      proto("message M { int32 b = 2; }")],
     proto("message M { int32 a = 1; int32 b = 2; }"), "YNYNYNY"),
    ("invalid: syntax error", [USER], proto("message User { string name = ; }"), "IIIIIII"),
    ("invalid: unknown field type", [USER], proto("message User { Nope name = 1; }"), "IIIIIII"),
]

CASES = [pytest.param(schema_type, level, history, new, expectations[i], id=f"{schema_type}-{name}-{level}")
         for schema_type, rows in (("AVRO", AVRO), ("JSON", JSON), ("PROTOBUF", PROTOBUF))
         for name, history, new, expectations in rows
         for i, level in enumerate(LEVELS)]


def test_every_type_has_at_least_20_cases() -> None:
    for schema_type in ("AVRO", "JSON", "PROTOBUF"):
        assert sum(p.values[0] == schema_type for p in CASES) >= 20


@pytest.mark.parametrize(("schema_type", "level", "history", "new", "expect"), CASES)
def test_matrix(registry: Registry, schema_type: str, level: str, history: list[str], new: str, expect: str) -> None:
    subject = f"matrix-{uuid.uuid4().hex[:10]}"
    typed = {} if schema_type == "AVRO" else {"schemaType": schema_type}
    assert registry.put(f"/config/{subject}", {"compatibility": "NONE"}) == (200, {"compatibility": "NONE"})
    for text in history:
        registry.register(subject, text, **typed)
    assert registry.put(f"/config/{subject}", {"compatibility": level}) == (200, {"compatibility": level})
    body = {"schema": new, **typed}

    status, answer = registry.post(f"/compatibility/subjects/{subject}/versions?verbose=true", body)
    if expect == "I":
        assert (status, answer["error_code"]) == (422, 42201), answer
    else:
        assert status == 200, answer
        assert answer["is_compatible"] is (expect == "Y"), answer
        assert bool(answer.get("messages")) is (expect == "N"), answer  # verbose: why, when refused

    status, answer = registry.post(f"/subjects/{subject}/versions", body)
    if expect == "Y":
        assert status == 200 and answer["id"] > 0, answer
        versions = registry.get(f"/subjects/{subject}/versions")[1]
        assert versions == list(range(1, len(history) + 2))
    elif expect == "N":
        assert (status, answer["error_code"]) == (409, 409), answer
        assert registry.get(f"/subjects/{subject}/versions")[1] == list(range(1, len(history) + 1))
    else:
        assert (status, answer["error_code"]) == (422, 42201), answer
