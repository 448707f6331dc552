"""PROTOBUF in the registry: the .proto parser and printer (broker/schema_registry/protobuf.py)
and the compatibility rules (protobuf_compat.py) as a table of (old, new, level, compatible?,
Confluent's difference name expected when not). Each case says why in a comment."""

from __future__ import annotations

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from broker.schema_registry.avro import InvalidSchema
from broker.schema_registry.compatibility import check
from broker.schema_registry.protobuf import ProtobufSchema
from broker.schema_registry.records import Reference, SchemaValue


def proto(body: str, package: str = "acme", syntax: str = "proto3") -> str:
    return f'syntax = "{syntax}";\npackage {package};\n{body}\n'


BASE = proto("message User { string name = 1; int32 age = 2; }")
P2 = 'syntax = "proto2";\npackage acme;\n'

#: (case, old schema, new schema, level, compatible, difference expected when not)
CASES = [
    # a reader skips the unknown field 2
    ("field removed", BASE, proto("message User { string name = 1; }"), "FULL", True, None),
    # a reader takes the default for a field the writer never wrote
    ("field added", BASE, proto("message User { string name = 1; int32 age = 2; string email = 3; }"), "FULL",
     True, None),
    # names are not on the wire
    ("field renamed", BASE, proto("message User { string full_name = 1; int32 age = 2; }"), "FULL", True, None),
    # int32 and int64 are both varints: the value reads (truncated if it overflows, as protobuf says)
    ("int32 to int64", BASE, proto("message User { string name = 1; int64 age = 2; }"), "FULL", True, None),
    # zigzag and plain varints decode differently
    ("int32 to sint32", BASE, proto("message User { string name = 1; sint32 age = 2; }"), "BACKWARD", False,
     "FIELD_SCALAR_KIND_CHANGED"),
    ("int32 to string", BASE, proto("message User { string name = 1; string age = 2; }"), "BACKWARD", False,
     "FIELD_SCALAR_KIND_CHANGED"),
    # string and bytes share the length-delimited encoding
    ("string to bytes", BASE, proto("message User { bytes name = 1; int32 age = 2; }"), "FULL", True, None),
    ("fixed32 to sfixed32", proto("message M { fixed32 a = 1; }"), proto("message M { sfixed32 a = 1; }"), "FULL",
     True, None),
    ("float to double", proto("message M { float a = 1; }"), proto("message M { double a = 1; }"), "BACKWARD",
     False, "FIELD_SCALAR_KIND_CHANGED"),
    # a scalar became a message
    ("scalar to message", BASE, proto("message User { string name = 1; Age age = 2; } message Age { int32 v = 1; }"),
     "BACKWARD", False, "FIELD_KIND_CHANGED"),
    # an enum is a varint on the wire
    ("int32 to enum", BASE, proto("message User { string name = 1; Age age = 2; } enum Age { A0 = 0; }"),
     "FULL", True, None),
    ("message type changed", proto("message M { A x = 1; } message A { int32 v = 1; } message B { int32 v = 1; }"),
     proto("message M { B x = 1; } message A { int32 v = 1; } message B { int32 v = 1; }"), "BACKWARD", False,
     "FIELD_NAMED_TYPE_CHANGED"),
    # every full name moves with the package
    ("package changed", BASE, proto("message User { string name = 1; int32 age = 2; }", package="other"),
     "BACKWARD", False, "PACKAGE_CHANGED"),
    # the writer may send a Group (message index 1): the reader has no such message
    ("message removed", proto("message User { string name = 1; } message Group { string id = 1; }"),
     proto("message User { string name = 1; }"), "BACKWARD", False, "MESSAGE_REMOVED"),
    ("message added", proto("message User { string name = 1; }"),
     proto("message User { string name = 1; } message Group { string id = 1; }"), "BACKWARD", True, None),
    # Confluent: adding a message type is not forward compatible
    ("message added, forward", proto("message User { string name = 1; }"),
     proto("message User { string name = 1; } message Group { string id = 1; }"), "FORWARD", False,
     "MESSAGE_REMOVED"),
    ("message renamed", proto("message User { string name = 1; }"), proto("message Person { string name = 1; }"),
     "BACKWARD", False, "MESSAGE_REMOVED"),
    # a proto2 required field the old writer never set fails parsing
    ("required field added", P2 + "message M { optional int32 a = 1; }",
     P2 + "message M { optional int32 a = 1; required int32 b = 2; }", "BACKWARD", False, "REQUIRED_FIELD_ADDED"),
    # ... and removing it breaks old readers (FORWARD)
    ("required field removed, forward", P2 + "message M { optional int32 a = 1; required int32 b = 2; }",
     P2 + "message M { optional int32 a = 1; }", "FORWARD", False, "REQUIRED_FIELD_ADDED"),
    ("optional field added, proto2", P2 + "message M { optional int32 a = 1; }",
     P2 + "message M { optional int32 a = 1; optional int32 b = 2; }", "FULL", True, None),
    # repeated numbers are packed: a singular reader does not parse them
    ("numeric label changed", proto("message M { int32 a = 1; }"), proto("message M { repeated int32 a = 1; }"),
     "BACKWARD", False, "FIELD_NUMERIC_LABEL_CHANGED"),
    # a singular string reader takes the last of the repeated values
    ("string label changed", proto("message M { string a = 1; }"), proto("message M { repeated string a = 1; }"),
     "FULL", True, None),
    # one field into a new oneof: the reader sees the same single value
    ("field moved to a new oneof", proto("message M { string a = 1; int32 b = 2; }"),
     proto("message M { oneof x { string a = 1; } int32 b = 2; }"), "FULL", True, None),
    # two fields the writer could both set: the reader keeps one
    ("fields moved to a new oneof", proto("message M { string a = 1; int32 b = 2; }"),
     proto("message M { oneof x { string a = 1; int32 b = 2; } }"), "BACKWARD", False,
     "MULTIPLE_FIELDS_MOVED_TO_ONEOF"),
    ("field moved to an existing oneof", proto("message M { oneof x { string a = 1; } int32 b = 2; }"),
     proto("message M { oneof x { string a = 1; int32 b = 2; } }"), "BACKWARD", False,
     "FIELD_MOVED_TO_EXISTING_ONEOF"),
    ("oneof field removed", proto("message M { oneof x { string a = 1; int32 b = 2; } }"),
     proto("message M { oneof x { string a = 1; } }"), "BACKWARD", False, "ONEOF_FIELD_REMOVED"),
    ("oneof field added", proto("message M { oneof x { string a = 1; } }"),
     proto("message M { oneof x { string a = 1; int32 b = 2; } }"), "BACKWARD", True, None),
    # proto3 enums are open: an unknown number is kept
    ("enum value removed, proto3", proto("enum E { E0 = 0; E1 = 1; } message M { E e = 1; }"),
     proto("enum E { E0 = 0; } message M { E e = 1; }"), "BACKWARD", True, None),
    # proto2 enums are closed: an unknown number is dropped from the field
    ("enum value removed, proto2", P2 + "enum E { E0 = 0; E1 = 1; } message M { optional E e = 1; }",
     P2 + "enum E { E0 = 0; } message M { optional E e = 1; }", "BACKWARD", False, "ENUM_CONST_REMOVED"),
    ("enum value renamed", proto("enum E { E0 = 0; E1 = 1; }"), proto("enum E { E0 = 0; ONE = 1; }"), "FULL", True,
     None),
    # the removed field's number is reserved: nothing changes on the wire
    ("field removed and reserved", BASE, proto("message User { string name = 1; reserved 2; reserved \"age\"; }"),
     "FULL", True, None),
    # a map's value type changing is its entry's field 2 changing
    ("map value changed", proto("message M { map<string, int32> m = 1; }"),
     proto("message M { map<string, string> m = 1; }"), "BACKWARD", False, "FIELD_SCALAR_KIND_CHANGED"),
    ("nested message field changed", proto("message M { message N { int32 v = 1; } N n = 1; }"),
     proto("message M { message N { string v = 1; } N n = 1; }"), "BACKWARD", False, "FIELD_SCALAR_KIND_CHANGED"),
    ("anything, NONE", BASE, proto("message User { bytes age = 2; }", package="x"), "NONE", True, None),
]


@pytest.mark.parametrize(("case", "old", "new", "level", "ok", "error"), CASES, ids=[c[0] for c in CASES])
def test_compatibility_table(case: str, old: str, new: str, level: str, ok: bool, error: str | None) -> None:
    messages = check(level, ProtobufSchema.parse(new), [(1, ProtobufSchema.parse(old))])
    assert (not messages) == ok, messages
    if error is not None:
        assert any(f"errorType:'{error}'" in m for m in messages), messages
        assert "{oldSchemaVersion: 1}" in messages and f"{{compatibility: '{level}'}}" in messages


def test_transitive_levels_check_every_version() -> None:
    v1 = ProtobufSchema.parse(proto("message M { int32 a = 1; }"))
    v2 = ProtobufSchema.parse(proto("message M { }"))
    v3 = ProtobufSchema.parse(proto("message M { string a = 1; }"))  # number 1 reused with another type
    assert check("BACKWARD", v3, [(1, v1), (2, v2)]) == []
    messages = check("BACKWARD_TRANSITIVE", v3, [(1, v1), (2, v2)])
    assert "{oldSchemaVersion: 1}" in messages and "{oldSchemaVersion: 2}" not in messages


FULL_FILE = """
syntax = "proto3";
package acme.v1;
import "google/protobuf/timestamp.proto";
option java_package = "com.acme";
/* a block comment */
message User {
  string name = 1;                        // a line comment
  optional int32 age = 2 [deprecated = true];
  map<string, Address> addresses = 3;
  oneof contact { string email = 4; string phone = 5; }
  google.protobuf.Timestamp created = 6;
  repeated Kind kinds = 7 [packed = false];
  reserved 10, 12 to 15, 100 to max;
  reserved "old";
  message Address { string street = 1; }
  enum Kind { option allow_alias = true; KIND_UNKNOWN = 0; KIND_A = 1; KIND_ALIAS = 1; }
}
service Users { rpc Get(User) returns (stream User); }
"""


def test_parse_print_round_trip_and_descriptor() -> None:
    s = ProtobufSchema.parse(FULL_FILE)
    assert ProtobufSchema.parse(s.stored).stored == s.stored  # the printed form is a fixed point
    assert ProtobufSchema.parse(s.serialized()).stored == s.stored  # so is the serialized descriptor
    assert "map<string, .acme.v1.User.Address> addresses = 3;" in s.stored
    # the descriptor is what protoc makes: build it and use a message class from it
    pool = descriptor_pool.DescriptorPool()
    for dep in s.dependencies.values():
        pool.Add(dep)
    pool.Add(s.file)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("acme.v1.User"))
    msg = cls(name="a", age=3, email="x@y")
    msg.addresses["home"].street = "Main"
    msg.created.seconds = 10
    msg.kinds.extend([1, 0])
    again = cls.FromString(msg.SerializeToString())
    assert again == msg and again.HasField("age") and again.WhichOneof("contact") == "email"
    user = s.file.message_type[0]
    assert [o.name for o in user.oneof_decl] == ["contact", "_age"]  # synthetic oneofs last, as protoc
    entry = user.nested_type[0]
    assert entry.name == "AddressesEntry" and entry.options.map_entry


def test_base64_descriptor_from_a_generated_class() -> None:
    from google.protobuf import timestamp_pb2
    file = descriptor_pb2.FileDescriptorProto()
    timestamp_pb2.DESCRIPTOR.CopyToProto(file)
    import base64
    s = ProtobufSchema.parse(base64.standard_b64encode(file.SerializeToString()).decode())
    assert "message Timestamp {" in s.stored and "package google.protobuf;" in s.stored


def test_proto2_defaults_and_labels() -> None:
    s = ProtobufSchema.parse(P2 + 'message M { optional string a = 1 [default = "x\\"y"]; required int32 b = 2 '
                             '[default = -3]; repeated bytes c = 3; }')
    assert 'optional string a = 1 [default = "x\\"y"];' in s.stored
    assert "required int32 b = 2 [default = -3];" in s.stored
    assert ProtobufSchema.parse(s.stored).file == s.file


@pytest.mark.parametrize("text", [
    "message {", proto("message M { int32 a = 1; int32 b = 1; }"), proto("message M { Missing a = 1; }"),
    proto("message M { required int32 a = 1; }"), P2 + "message M { int32 a = 1; }",
    proto("message M { int32 a = 1; reserved 1; }"), proto("enum E { E1 = 1; }"),
    'edition = "2023";', proto("message M { int32 a = 0; }"), proto('import "nowhere.proto";'),
    proto("message M { map<float, int32> m = 1; }"), proto("message M { option nope = 1; }"),
    proto("extend M { int32 x = 5; }"), 'syntax = "proto4";',
])
def test_invalid_schemas(text: str) -> None:
    with pytest.raises(InvalidSchema):
        ProtobufSchema.parse(text)


def test_references_are_imports() -> None:
    common = SchemaValue("common", 1, 5, "PROTOBUF", (), proto("message Money { int64 cents = 1; }", "shared"), False)
    ref = Reference("shared/money.proto", "common", 1)
    text = proto('import "shared/money.proto";\nmessage Order { shared.Money total = 1; }')
    s = ProtobufSchema.parse(text, (ref,), lambda r: common if r == ref else None)
    assert s.file.message_type[0].field[0].type_name == ".shared.Money"
    assert "shared/money.proto" in s.dependencies
    with pytest.raises(InvalidSchema):
        ProtobufSchema.parse(text, (), None)
