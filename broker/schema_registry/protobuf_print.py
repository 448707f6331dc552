"""The printed (stored) form of a PROTOBUF schema: a ``FileDescriptorProto`` as ``.proto``
text, described in protobuf.py."""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2
from google.protobuf.message import Message

from .protobuf_parse import MAX_FIELD, SCALAR_NAMES

__all__ = ["print_file"]

F = descriptor_pb2.FieldDescriptorProto


def print_file(file: descriptor_pb2.FileDescriptorProto) -> str:
    out: list[str] = [f'syntax = "{file.syntax or "proto2"}";']
    if file.package:
        out.append(f"package {file.package};")
    if file.dependency:
        out.append("")
        for i, d in enumerate(file.dependency):
            kind = "public " if i in file.public_dependency else "weak " if i in file.weak_dependency else ""
            out.append(f"import {kind}{_quote(d)};")
    options = _options(file.options)
    if options:
        out.append("")
        out += [f"option {o};" for o in options]
    proto3 = file.syntax == "proto3"
    for m in file.message_type:
        out.append("")
        _print_message(m, out, "", proto3)
    for e in file.enum_type:
        out.append("")
        _print_enum(e, out, "")
    for s in file.service:
        out.append("")
        out.append(f"service {s.name} {{")
        out += [f"  option {o};" for o in _options(s.options)]
        for rpc in s.method:
            head = (f"  rpc {rpc.name}({'stream ' if rpc.client_streaming else ''}{rpc.input_type}) returns "
                    f"({'stream ' if rpc.server_streaming else ''}{rpc.output_type})")
            opts = _options(rpc.options)
            out.append(head + (" {" if opts else ";"))
            if opts:
                out += [f"    option {o};" for o in opts]
                out.append("  }")
        out.append("}")
    return "\n".join(out) + "\n"


def _options(options: Message) -> list[str]:
    out = []
    for field, value in options.ListFields():
        if field.name == "map_entry" or field.message_type is not None or field.is_repeated:
            continue
        out.append(f"{field.name} = {_constant(field, value)}")
    return out


def _constant(field: Any, value: object) -> str:
    if field.enum_type is not None:
        return str(field.enum_type.values_by_number[value].name)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return _quote(value.decode("latin-1"))
    if isinstance(value, str):
        return _quote(value)
    return repr(value)


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _json_name(name: str) -> str:
    parts = name.split("_")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def _print_message(m: descriptor_pb2.DescriptorProto, out: list[str], indent: str, proto3: bool) -> None:
    out.append(f"{indent}message {m.name} {{")
    inner = indent + "  "
    out += [f"{inner}option {o};" for o in _options(m.options)]
    entries = {n.name: n for n in m.nested_type if n.options.map_entry}
    printed_oneofs: set[int] = set()
    for field in m.field:
        real_oneof = field.HasField("oneof_index") and not field.proto3_optional
        if real_oneof:
            if field.oneof_index in printed_oneofs:
                continue
            printed_oneofs.add(field.oneof_index)
            decl = m.oneof_decl[field.oneof_index]
            out.append(f"{inner}oneof {decl.name} {{")
            out += [f"{inner}  option {o};" for o in _options(decl.options)]
            for f in m.field:
                if f.HasField("oneof_index") and f.oneof_index == field.oneof_index and not f.proto3_optional:
                    out.append(f"{inner}  {_field(f, entries, proto3, in_oneof=True)}")
            out.append(f"{inner}}}")
        else:
            out.append(f"{inner}{_field(field, entries, proto3, in_oneof=False)}")
    for n in m.nested_type:
        if n.name not in entries:
            _print_message(n, out, inner, proto3)
    for e in m.enum_type:
        _print_enum(e, out, inner)
    if m.extension_range:
        out.append(f"{inner}extensions {_ranges(m.extension_range, exclusive=True)};")
    if m.reserved_range:
        out.append(f"{inner}reserved {_ranges(m.reserved_range, exclusive=True)};")
    if m.reserved_name:
        out.append(f"{inner}reserved {', '.join(_quote(n) for n in m.reserved_name)};")
    out.append(f"{indent}}}")


def _ranges(ranges: Any, exclusive: bool) -> str:
    parts = []
    for r in ranges:
        end = r.end - 1 if exclusive else r.end
        parts.append(str(r.start) if end == r.start else f"{r.start} to {'max' if end >= MAX_FIELD else end}")
    return ", ".join(parts)


def _type_name(field: descriptor_pb2.FieldDescriptorProto) -> str:
    return field.type_name if field.type_name else SCALAR_NAMES[field.type]


def _field(field: descriptor_pb2.FieldDescriptorProto, entries: dict[str, descriptor_pb2.DescriptorProto],
           proto3: bool, in_oneof: bool) -> str:
    entry = entries.get(field.type_name.rsplit(".", 1)[-1]) if field.label == F.LABEL_REPEATED else None
    if entry is not None:
        key, value = entry.field[0], entry.field[1]
        head = f"map<{_type_name(key)}, {_type_name(value)}>"
    else:
        label = ""
        if not in_oneof:
            if field.label == F.LABEL_REPEATED:
                label = "repeated "
            elif field.label == F.LABEL_REQUIRED:
                label = "required "
            elif field.proto3_optional or not proto3:
                label = "optional "
        head = label + _type_name(field)
    opts = []
    if field.HasField("default_value"):
        default = field.default_value
        opts.append(f"default = {_quote(default) if field.type in (F.TYPE_STRING, F.TYPE_BYTES) else default}")
    if field.json_name and field.json_name != _json_name(field.name):
        opts.append(f"json_name = {_quote(field.json_name)}")
    opts += _options(field.options)
    suffix = f" [{', '.join(opts)}]" if opts else ""
    return f"{head} {field.name} = {field.number}{suffix};"


def _print_enum(e: descriptor_pb2.EnumDescriptorProto, out: list[str], indent: str) -> None:
    out.append(f"{indent}enum {e.name} {{")
    out += [f"{indent}  option {o};" for o in _options(e.options)]
    for v in e.value:
        opts = ", ".join(_options(v.options))
        out.append(f"{indent}  {v.name} = {v.number}{f' [{opts}]' if opts else ''};")
    if e.reserved_range:
        out.append(f"{indent}  reserved {_ranges(e.reserved_range, exclusive=False)};")
    if e.reserved_name:
        out.append(f"{indent}  reserved {', '.join(_quote(n) for n in e.reserved_name)};")
    out.append(f"{indent}}}")
