"""Whether a reader compiled from one PROTOBUF schema parses what a writer compiled from another
wrote, by the rules Confluent's registry documents for Protobuf, which follow the protobuf
wire format's own ("Updating a message type" in the protobuf language guide), reported with
Confluent's difference names.

Messages and enums are matched by full name, fields by number (a field's name is not on the
wire: renaming one is compatible). Writer against reader:

- PACKAGE_CHANGED: every full name moves: refused.
- MESSAGE_REMOVED: a message the writer has and the reader lacks (the writer may send it: the
  message-index of Confluent's framing names it) is refused. A message the reader adds is
  fine; so under FORWARD adding a message is refused, as Confluent documents ("adding new
  message types is not forward compatible"). A renamed message is removed + added.
- FIELD_REMOVED (a writer field the reader lacks: skipped as unknown) and FIELD_ADDED (a reader
  field the writer lacks: its default) are fine, except REQUIRED_FIELD_ADDED: a proto2
  ``required`` field the writer may not have written (also a field turned ``required``).
- a field's type: FIELD_KIND_CHANGED between a scalar, a message and an enum, except an enum
  read as or written from ``int32``/``uint32``/``int64``/``uint64``/``bool`` (the same varint);
  FIELD_SCALAR_KIND_CHANGED between scalars of different wire groups: the varints
  ``int32``/``uint32``/``int64``/``uint64``/``bool`` are one group, ``sint32``/``sint64``
  another, ``fixed32``/``sfixed32``, ``fixed64``/``sfixed64``, ``string``/``bytes`` others;
  ``float`` and ``double`` stand alone. FIELD_NAMED_TYPE_CHANGED: a message or enum field
  naming another type.
- a field's label: singular <-> repeated is fine for ``string``, ``bytes`` and messages
  (FIELD_STRING_OR_BYTES_LABEL_CHANGED: a reader of one value takes the last, or merges the
  messages) and refused for numbers and enums (FIELD_NUMERIC_LABEL_CHANGED: repeated numbers
  are packed, which a singular reader does not parse).
- oneofs: one field moved into a new oneof is fine (ONEOF_ADDED); several fields the writer
  had outside any oneof moved into one reader oneof is refused (MULTIPLE_FIELDS_MOVED_TO_ONEOF:
  the reader keeps only the last of them); a field moved into a oneof the writer already had
  is refused (FIELD_MOVED_TO_EXISTING_ONEOF); a field of a writer's oneof removed while the
  reader keeps the oneof is refused (ONEOF_FIELD_REMOVED: the case set would read as "none").
  A field moved out of a oneof reads as the single value it was.
- enums: a value the writer has and the reader lacks is fine in proto3 (open enums keep the
  number) and refused in a proto2 reader (closed enums drop it into the unknown fields):
  ENUM_CONST_REMOVED. Renaming a value (ENUM_CONST_CHANGED) and adding one are fine.
- ``reserved``: a reader field on a number the writer reserved was never written (fine); a
  writer field on a number the reader reserved is skipped (fine). Using one's own reserved
  number is refused when the schema is parsed.

Map fields compare as the repeated ``...Entry`` messages protoc makes of them, so a map's
value type changing shows as that entry's field 2 changing.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2

from .avro_compat import Incompatibility
from .protobuf import ProtobufSchema
from .protobuf_parse import SCALAR_NAMES

__all__ = ["check_protobuf"]

F = descriptor_pb2.FieldDescriptorProto
_GROUPS: dict[int, str] = {}
for _group, _types in (("varint", (F.TYPE_INT32, F.TYPE_UINT32, F.TYPE_INT64, F.TYPE_UINT64, F.TYPE_BOOL)),
                       ("zigzag", (F.TYPE_SINT32, F.TYPE_SINT64)), ("fixed32", (F.TYPE_FIXED32, F.TYPE_SFIXED32)),
                       ("fixed64", (F.TYPE_FIXED64, F.TYPE_SFIXED64)), ("len", (F.TYPE_STRING, F.TYPE_BYTES)),
                       ("float", (F.TYPE_FLOAT,)), ("double", (F.TYPE_DOUBLE,))):
    for _t in _types:
        _GROUPS[_t] = _group
_LENGTH_DELIMITED = (F.TYPE_STRING, F.TYPE_BYTES, F.TYPE_MESSAGE)


def check_protobuf(reader: ProtobufSchema, writer: ProtobufSchema) -> list[Incompatibility]:
    """Why ``reader`` cannot parse what ``writer`` wrote (empty: it can)."""
    r, w = reader.file, writer.file
    if r.package != w.package:
        return [_incompat("PACKAGE_CHANGED", "#/", f"The package changed from '{w.package}' to '{r.package}'")]
    rmsgs, wmsgs = _messages(r), _messages(w)
    renums, wenums = _enums(r), _enums(w)
    proto2_reader = r.syntax != "proto3"
    out: list[Incompatibility] = []
    for name, wm in wmsgs.items():
        rm = rmsgs.get(name)
        if rm is None:
            out.append(_incompat("MESSAGE_REMOVED", f"#/{name}", f"The message {name} was removed"))
        else:
            out += _message(name, rm, wm)
    for name, we in wenums.items():
        re_ = renums.get(name)
        if re_ is None or not proto2_reader:
            continue  # an enum is not on the wire; a field using it is checked as a field
        known = {v.number for v in re_.value}
        for v in we.value:
            if v.number not in known:
                out.append(_incompat("ENUM_CONST_REMOVED", f"#/{name}/{v.name}",
                                     f"The enum value {v.name} = {v.number} of {name} was removed"))
    return out


def _incompat(kind: str, path: str, description: str) -> Incompatibility:
    return Incompatibility(kind, path, description, "")


def _messages(file: descriptor_pb2.FileDescriptorProto) -> dict[str, descriptor_pb2.DescriptorProto]:
    out: dict[str, descriptor_pb2.DescriptorProto] = {}

    def walk(prefix: str, messages: Any) -> None:
        for m in messages:
            out[f"{prefix}.{m.name}"] = m
            walk(f"{prefix}.{m.name}", m.nested_type)

    walk("." + file.package if file.package else "", file.message_type)
    return out


def _enums(file: descriptor_pb2.FileDescriptorProto) -> dict[str, descriptor_pb2.EnumDescriptorProto]:
    out: dict[str, descriptor_pb2.EnumDescriptorProto] = {}

    def walk(prefix: str, messages: Any, enums: Any) -> None:
        for e in enums:
            out[f"{prefix}.{e.name}"] = e
        for m in messages:
            walk(f"{prefix}.{m.name}", m.nested_type, m.enum_type)

    walk("." + file.package if file.package else "", file.message_type, file.enum_type)
    return out


def _oneof(m: descriptor_pb2.DescriptorProto, f: descriptor_pb2.FieldDescriptorProto) -> str | None:
    """The name of the real (not synthetic) oneof holding ``f``."""
    if f.HasField("oneof_index") and not f.proto3_optional:
        return str(m.oneof_decl[f.oneof_index].name)
    return None


def _kind(f: descriptor_pb2.FieldDescriptorProto) -> str:
    return "message" if f.type == F.TYPE_MESSAGE else "enum" if f.type == F.TYPE_ENUM else "scalar"


def _type(f: descriptor_pb2.FieldDescriptorProto) -> str:
    return f.type_name or SCALAR_NAMES.get(f.type, str(f.type))


def _message(name: str, rm: descriptor_pb2.DescriptorProto, wm: descriptor_pb2.DescriptorProto) -> list[Incompatibility]:
    out: list[Incompatibility] = []
    rfields = {f.number: f for f in rm.field}
    wfields = {f.number: f for f in wm.field}
    for number, rf in rfields.items():
        path = f"#/{name}/{number}"
        wf = wfields.get(number)
        if wf is None:
            if rf.label == F.LABEL_REQUIRED:
                out.append(_incompat("REQUIRED_FIELD_ADDED", path, f"The required field {rf.name} = {number} was added"))
            continue
        if rf.label == F.LABEL_REQUIRED and wf.label != F.LABEL_REQUIRED:
            out.append(_incompat("REQUIRED_FIELD_ADDED", path, f"The field {rf.name} = {number} became required"))
        out += _field_type(rf, wf, path)
        if (rf.label == F.LABEL_REPEATED) != (wf.label == F.LABEL_REPEATED):
            if rf.type not in _LENGTH_DELIMITED or wf.type not in _LENGTH_DELIMITED:
                out.append(_incompat("FIELD_NUMERIC_LABEL_CHANGED", path,
                                     f"The field {rf.name} = {number} changed between singular and repeated"))
    # oneofs
    for oneof, members in _group_by_oneof(rm).items():
        moved = [n for n in members if n in wfields and _oneof(wm, wfields[n]) is None]
        existed = any(n in wfields and _oneof(wm, wfields[n]) is not None for n in members)
        if moved and existed:
            out.append(_incompat("FIELD_MOVED_TO_EXISTING_ONEOF", f"#/{name}/{oneof}",
                                 f"The fields {moved} were moved into the existing oneof {oneof}"))
        elif len(moved) > 1:
            out.append(_incompat("MULTIPLE_FIELDS_MOVED_TO_ONEOF", f"#/{name}/{oneof}",
                                 f"The fields {moved} were moved into the new oneof {oneof}"))
    reader_oneofs = {d.name for d in rm.oneof_decl}
    for oneof, members in _group_by_oneof(wm).items():
        if oneof not in reader_oneofs:
            continue  # the whole oneof removed (or its fields moved out): each field read on its own
        for n in members:
            if n not in rfields:
                out.append(_incompat("ONEOF_FIELD_REMOVED", f"#/{name}/{oneof}/{n}",
                                     f"The field {n} was removed from the oneof {oneof}"))
    return out


def _group_by_oneof(m: descriptor_pb2.DescriptorProto) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for f in m.field:
        oneof = _oneof(m, f)
        if oneof is not None:
            out.setdefault(oneof, []).append(f.number)
    return out


def _field_type(rf: descriptor_pb2.FieldDescriptorProto, wf: descriptor_pb2.FieldDescriptorProto,
                path: str) -> list[Incompatibility]:
    rk, wk = _kind(rf), _kind(wf)
    what = f"The type of field {rf.name} = {rf.number} changed from {_type(wf)} to {_type(rf)}"
    if rk != wk:
        scalar = rf if rk == "scalar" else wf if wk == "scalar" else None
        if "message" not in (rk, wk) and scalar is not None and _GROUPS.get(scalar.type) == "varint":
            return []  # an enum is a varint on the wire
        return [_incompat("FIELD_KIND_CHANGED", path, what)]
    if rk == "scalar":
        if _GROUPS.get(rf.type) != _GROUPS.get(wf.type):
            return [_incompat("FIELD_SCALAR_KIND_CHANGED", path, what)]
        return []
    if rf.type_name != wf.type_name:
        return [_incompat("FIELD_NAMED_TYPE_CHANGED", path, what)]
    return []
