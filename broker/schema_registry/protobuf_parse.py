"""The ``.proto`` text parser of protobuf.py: tokens, then one method per declaration,
building a ``FileDescriptorProto`` as protoc would (map entries, synthetic oneofs, reserved
ranges with exclusive ends for messages and inclusive ones for enums); then ``resolve`` turns
the type names as written into full names by protobuf's scoping rules."""

from __future__ import annotations

import re
from typing import Any

from google.protobuf import descriptor_pb2
from google.protobuf.message import Message

from .avro import InvalidSchema

__all__ = ["MAX_FIELD", "SCALARS", "SCALAR_NAMES", "Parser", "resolve"]

F = descriptor_pb2.FieldDescriptorProto
SCALARS = {"double": F.TYPE_DOUBLE, "float": F.TYPE_FLOAT, "int64": F.TYPE_INT64, "uint64": F.TYPE_UINT64,
           "int32": F.TYPE_INT32, "fixed64": F.TYPE_FIXED64, "fixed32": F.TYPE_FIXED32, "bool": F.TYPE_BOOL,
           "string": F.TYPE_STRING, "bytes": F.TYPE_BYTES, "uint32": F.TYPE_UINT32, "sfixed32": F.TYPE_SFIXED32,
           "sfixed64": F.TYPE_SFIXED64, "sint32": F.TYPE_SINT32, "sint64": F.TYPE_SINT64}
SCALAR_NAMES = {v: k for k, v in SCALARS.items()}
_LABELS = {"optional": F.LABEL_OPTIONAL, "required": F.LABEL_REQUIRED, "repeated": F.LABEL_REPEATED}
MAX_FIELD = 536870911  # 2^29 - 1
_TOKEN = re.compile(r"""
    (?P<ws>\s+|//[^\n]*|/\*.*?\*/)
  | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<num>[-+]?(?:0[xX][0-9a-fA-F]+|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|inf\b|nan\b))
  | (?P<ident>\.?[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<sym>[{}\[\]()<>;,=:])
""", re.VERBOSE | re.DOTALL)


class Parser:
    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str, int]] = []  # (kind, text, line)
        pos, line = 0, 1
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                raise InvalidSchema(f"line {line}: unexpected character {text[pos]!r}")
            kind = m.lastgroup or ""
            if kind != "ws":
                self.tokens.append((kind, m.group(), line))
            line += m.group().count("\n")
            pos = m.end()
        self.i = 0
        self.proto3 = False

    # tokens

    def peek(self, ahead: int = 0) -> str:
        j = self.i + ahead
        return self.tokens[j][1] if j < len(self.tokens) else ""

    def next(self) -> tuple[str, str]:
        if self.i >= len(self.tokens):
            raise InvalidSchema("unexpected end of the schema")
        kind, text, _ = self.tokens[self.i]
        self.i += 1
        return kind, text

    def error(self, what: str) -> InvalidSchema:
        line = self.tokens[min(self.i, len(self.tokens) - 1)][2] if self.tokens else 1
        return InvalidSchema(f"line {line}: {what}")

    def expect(self, text: str) -> None:
        if self.peek() != text:
            raise self.error(f"expected {text!r}, found {self.peek() or 'the end'!r}")
        self.i += 1

    def accept(self, text: str) -> bool:
        if self.peek() == text:
            self.i += 1
            return True
        return False

    def ident(self) -> str:
        kind, text = self.next()
        if kind != "ident":
            self.i -= 1
            raise self.error(f"expected a name, found {text!r}")
        return text

    def simple_name(self) -> str:
        name = self.ident()
        if "." in name:
            raise self.error(f"{name!r}: a declaration's name has no dots")
        return name

    def string(self) -> str:
        kind, text = self.next()
        if kind != "str":
            self.i -= 1
            raise self.error(f"expected a string, found {text!r}")
        return _unquote(text)

    def integer(self) -> int:
        kind, text = self.next()
        if kind != "num":
            self.i -= 1
            raise self.error(f"expected a number, found {text!r}")
        try:
            return int(text, 0) if not re.fullmatch(r"[-+]?0\d+", text) else int(text, 8)
        except ValueError:
            self.i -= 1
            raise self.error(f"expected an integer, found {text!r}") from None

    def constant(self) -> tuple[str, str]:
        """An option's value: (kind, text), strings unquoted."""
        if self.peek() == "{":
            raise self.error("aggregate option values are not supported")
        kind, text = self.next()
        if kind == "str":
            value = _unquote(text)
            while self.tokens[self.i][0] == "str" if self.i < len(self.tokens) else False:
                value += _unquote(self.next()[1])  # adjacent strings concatenate
            return "str", value
        if kind in ("num", "ident"):
            return kind, text
        self.i -= 1
        raise self.error(f"expected a constant, found {text!r}")

    # declarations

    def parse_file(self) -> descriptor_pb2.FileDescriptorProto:
        file = descriptor_pb2.FileDescriptorProto()
        if self.peek() == "edition":
            raise self.error("editions are not supported")
        if self.accept("syntax"):
            self.expect("=")
            syntax = self.string()
            if syntax not in ("proto2", "proto3"):
                raise self.error(f"unknown syntax {syntax!r}")
            self.expect(";")
            self.proto3 = syntax == "proto3"
            file.syntax = syntax
        while self.i < len(self.tokens):
            word = self.peek()
            if self.accept(";"):
                continue
            if self.accept("package"):
                if file.package:
                    raise self.error("a second package")
                file.package = self.ident().lstrip(".")
                self.expect(";")
            elif self.accept("import"):
                kind = "public" if self.accept("public") else "weak" if self.accept("weak") else ""
                path = self.string()
                self.expect(";")
                if kind == "public":
                    file.public_dependency.append(len(file.dependency))
                elif kind == "weak":
                    file.weak_dependency.append(len(file.dependency))
                file.dependency.append(path)
            elif self.accept("option"):
                self.option(file.options)
                self.expect(";")
            elif self.accept("message"):
                self.message(file.message_type.add())
            elif self.accept("enum"):
                self.enum(file.enum_type.add())
            elif self.accept("service"):
                self.service(file.service.add())
            else:
                raise self.error(f"unexpected {word!r} at the top level")
        return file

    def option_name(self) -> str:
        if self.accept("("):
            name = "(" + self.ident() + ")"
            self.expect(")")
            while self.peek().startswith(".") and self.tokens[self.i][0] == "ident":
                name += self.next()[1]
            return name
        return self.ident()

    def option(self, options: Message, name: str | None = None) -> None:
        """``name = constant`` into ``options`` (a standard option) or nowhere (a custom one)."""
        name = name or self.option_name()
        self.expect("=")
        kind, value = self.constant()
        if name.startswith("("):
            return  # custom options need their extension's descriptor: accepted, not kept
        field = options.DESCRIPTOR.fields_by_name.get(name)
        if field is None or field.message_type is not None or field.is_repeated:
            raise self.error(f"unknown option {name!r}")
        try:
            setattr(options, name, _option_value(field, kind, value))
        except (TypeError, ValueError):
            raise self.error(f"bad value {value!r} for option {name!r}") from None

    def field_options(self, field: descriptor_pb2.FieldDescriptorProto) -> None:
        if not self.accept("["):
            return
        while True:
            name = self.option_name()
            if name == "default":
                self.expect("=")
                kind, value = self.constant()
                field.default_value = value
            elif name == "json_name":
                self.expect("=")
                field.json_name = self.constant()[1]
            else:
                self.option(field.options, name)
            if not self.accept(","):
                break
        self.expect("]")

    def message(self, msg: descriptor_pb2.DescriptorProto) -> None:
        msg.name = self.simple_name()
        self.expect("{")
        synthetic: list[descriptor_pb2.FieldDescriptorProto] = []
        while not self.accept("}"):
            word = self.peek()
            if self.accept(";"):
                continue
            if self.accept("message"):
                self.message(msg.nested_type.add())
            elif self.accept("enum"):
                self.enum(msg.enum_type.add())
            elif self.accept("option"):
                self.option(msg.options)
                self.expect(";")
            elif self.accept("oneof"):
                self.oneof(msg)
            elif self.accept("reserved"):
                self.reserved(msg.reserved_range, msg.reserved_name, end_exclusive=True)
            elif self.accept("extensions"):
                self.reserved(msg.extension_range, None, end_exclusive=True)
            elif word in ("extend", "group") or self.peek(1) == "group":
                raise self.error(f"{word!r} is not supported")
            elif self.accept("map"):
                self.map_field(msg)
            else:
                field = msg.field.add()
                self.field(field, in_oneof=False)
                if field.proto3_optional:
                    synthetic.append(field)
        for field in synthetic:  # protoc puts the synthetic oneofs after the real ones
            field.oneof_index = len(msg.oneof_decl)
            msg.oneof_decl.add().name = "_" + field.name

    def field(self, field: descriptor_pb2.FieldDescriptorProto, in_oneof: bool) -> None:
        word = self.peek()
        if word in _LABELS and not in_oneof:
            self.i += 1
            if word == "required" and self.proto3:
                raise self.error("required fields are not allowed in proto3")
            field.label = _LABELS[word]
            if word == "optional" and self.proto3:
                field.proto3_optional = True
        elif self.proto3 or in_oneof:
            field.label = F.LABEL_OPTIONAL
        else:
            raise self.error("a proto2 field needs a label (optional, required or repeated)")
        type_name = self.ident()
        if type_name in SCALARS:
            field.type = SCALARS[type_name]
        else:
            field.type_name = type_name  # resolved once every type is known
        field.name = self.simple_name()
        self.expect("=")
        field.number = self.integer()
        self.field_options(field)
        self.expect(";")

    def map_field(self, msg: descriptor_pb2.DescriptorProto) -> None:
        self.expect("<")
        key = self.ident()
        if key not in SCALARS or key in ("double", "float", "bytes"):
            raise self.error(f"{key!r} cannot be a map key")
        self.expect(",")
        value = self.ident()
        self.expect(">")
        field = msg.field.add()
        field.name = self.simple_name()
        self.expect("=")
        field.number = self.integer()
        self.field_options(field)
        self.expect(";")
        entry = msg.nested_type.add()
        entry.name = "".join(p[:1].upper() + p[1:] for p in field.name.split("_")) + "Entry"
        entry.options.map_entry = True
        for number, (name, type_name) in enumerate((("key", key), ("value", value)), 1):
            f = entry.field.add()
            f.name, f.number, f.label = name, number, F.LABEL_OPTIONAL
            if type_name in SCALARS:
                f.type = SCALARS[type_name]
            else:
                f.type_name = type_name
        field.label = F.LABEL_REPEATED
        field.type_name = entry.name

    def oneof(self, msg: descriptor_pb2.DescriptorProto) -> None:
        index = len(msg.oneof_decl)
        decl = msg.oneof_decl.add()
        decl.name = self.simple_name()
        self.expect("{")
        while not self.accept("}"):
            if self.accept(";"):
                continue
            if self.accept("option"):
                self.option(decl.options)
                self.expect(";")
                continue
            if self.peek() in _LABELS:
                raise self.error("a oneof field has no label")
            field = msg.field.add()
            self.field(field, in_oneof=True)
            field.oneof_index = index

    def reserved(self, ranges: Any, names: Any, end_exclusive: bool) -> None:
        while True:
            if self.tokens[self.i][0] == "str" if self.i < len(self.tokens) else False:
                if names is None:
                    raise self.error("extension ranges are numbers")
                names.append(self.string())
            else:
                start = self.integer()
                end = start
                if self.accept("to"):
                    end = MAX_FIELD if self.accept("max") else self.integer()
                r = ranges.add()
                r.start, r.end = start, end + 1 if end_exclusive else end
            if not self.accept(","):
                break
        if self.peek() == "[":  # extension range options: accepted, dropped
            while not self.accept("]"):
                self.next()
        self.expect(";")

    def enum(self, enum: descriptor_pb2.EnumDescriptorProto) -> None:
        enum.name = self.simple_name()
        self.expect("{")
        while not self.accept("}"):
            if self.accept(";"):
                continue
            if self.accept("option"):
                self.option(enum.options)
                self.expect(";")
            elif self.accept("reserved"):
                self.reserved(enum.reserved_range, enum.reserved_name, end_exclusive=False)
            else:
                value = enum.value.add()
                value.name = self.simple_name()
                self.expect("=")
                value.number = self.integer()
                if self.accept("["):
                    while True:
                        self.option(value.options)
                        if not self.accept(","):
                            break
                    self.expect("]")
                self.expect(";")
        if self.proto3 and (not enum.value or enum.value[0].number != 0):
            raise self.error(f"the first value of proto3 enum {enum.name} must be zero")

    def service(self, service: descriptor_pb2.ServiceDescriptorProto) -> None:
        service.name = self.simple_name()
        self.expect("{")
        while not self.accept("}"):
            if self.accept(";"):
                continue
            if self.accept("option"):
                self.option(service.options)
                self.expect(";")
                continue
            self.expect("rpc")
            method = service.method.add()
            method.name = self.simple_name()
            self.expect("(")
            method.client_streaming = self.accept("stream")
            method.input_type = self.ident()
            self.expect(")")
            self.expect("returns")
            self.expect("(")
            method.server_streaming = self.accept("stream")
            method.output_type = self.ident()
            self.expect(")")
            if self.accept("{"):
                while not self.accept("}"):
                    if self.accept(";"):
                        continue
                    self.expect("option")
                    self.option(method.options)
                    self.expect(";")
            else:
                self.expect(";")


def _unquote(text: str) -> str:
    body = text[1:-1]
    if "\\" not in body:
        return body
    try:
        return body.encode("latin-1", "backslashreplace").decode("unicode_escape")
    except UnicodeDecodeError:
        raise InvalidSchema(f"bad escape in {text}") from None


def _option_value(field: Any, kind: str, value: str) -> object:
    if field.enum_type is not None:
        if kind != "ident" or value not in field.enum_type.values_by_name:
            raise ValueError(value)
        return field.enum_type.values_by_name[value].number
    if field.type == field.TYPE_BOOL:
        if value not in ("true", "false"):
            raise ValueError(value)
        return value == "true"
    if field.type in (field.TYPE_STRING, field.TYPE_BYTES):
        if kind != "str":
            raise ValueError(value)
        return value if field.type == field.TYPE_STRING else value.encode()
    if kind != "num":
        raise ValueError(value)
    return float(value) if field.type in (field.TYPE_DOUBLE, field.TYPE_FLOAT) else int(value, 0)


# -- name resolution --

def resolve(file: descriptor_pb2.FileDescriptorProto, deps: dict[str, descriptor_pb2.FileDescriptorProto]) -> None:
    """Replace every type name written in ``file`` by its full name (``.pkg.Msg``) and set each
    field's type to message or enum, by protobuf's scoping: the innermost scope first."""
    kinds: dict[str, int] = {}  # full name (with a leading dot) -> F.TYPE_MESSAGE / F.TYPE_ENUM

    def collect(prefix: str, messages: Any, enums: Any) -> None:
        for e in enums:
            kinds[f"{prefix}.{e.name}"] = F.TYPE_ENUM
        for m in messages:
            kinds[f"{prefix}.{m.name}"] = F.TYPE_MESSAGE
            collect(f"{prefix}.{m.name}", m.nested_type, m.enum_type)

    for f in (file, *deps.values()):
        collect("." + f.package if f.package else "", f.message_type, f.enum_type)
    packages = {"." + f.package for f in (file, *deps.values()) if f.package}
    for p in list(packages):  # every prefix of a package is a scope a name can start in
        while "." in p[1:]:
            p = p.rsplit(".", 1)[0]
            packages.add(p)

    def lookup(name: str, scope: str) -> tuple[str, int]:
        if name.startswith("."):
            if name in kinds:
                return name, kinds[name]
            raise InvalidSchema(f"unknown type {name!r}")
        first = name.split(".", 1)[0]
        s = scope
        while True:
            candidate = f"{s}.{first}"
            if candidate in kinds or candidate in packages:
                full = f"{s}.{name}"
                if full in kinds:
                    return full, kinds[full]
                raise InvalidSchema(f"unknown type {name!r} (found {candidate!r} in scope {scope or '.'!r})")
            if not s:
                raise InvalidSchema(f"unknown type {name!r} in scope {scope or '.'!r}")
            s = s.rsplit(".", 1)[0] if "." in s else ""

    def walk(scope: str, messages: Any) -> None:
        for m in messages:
            inner = f"{scope}.{m.name}"
            for field in m.field:
                if field.type_name:
                    field.type_name, kind = lookup(field.type_name, inner)
                    field.type = kind
            walk(inner, m.nested_type)

    root = "." + file.package if file.package else ""
    walk(root, file.message_type)
    for service in file.service:
        for method in service.method:
            for attr in ("input_type", "output_type"):
                full, kind = lookup(getattr(method, attr), root)
                if kind != F.TYPE_MESSAGE:
                    raise InvalidSchema(f"rpc {method.name}: {full} is not a message")
                setattr(method, attr, full)
