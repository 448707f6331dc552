"""PROTOBUF schemas: ``.proto`` text (proto2 and proto3) parsed into the protobuf library's own
model, a ``FileDescriptorProto``, checked by building it in a ``DescriptorPool``, and printed
back as the stored form.

A schema arrives either as ``.proto`` text or, as confluent-kafka's serializers send it, as a
base64-encoded serialized ``FileDescriptorProto``; both end as one descriptor, and the stored
form is that descriptor printed as ``.proto`` text (what Confluent's registry stores too), so
the two spellings of one schema share an id. ``?format=serialized`` answers the descriptor
serialized and base64-encoded (``serialized()``).

The parser is strict and covers what schema-registry users write: ``syntax``, ``package``,
``import`` (``public``/``weak``) of referenced schemas and of the well-known types
(``google/protobuf/*.proto``, and ``google/type/*.proto`` when googleapis-common-protos is
installed), ``option`` (the standard ones are kept in the descriptor's options; custom
``(name)`` options are accepted and dropped), ``message`` with nested messages and enums,
fields with ``optional``/``required``/``repeated`` labels (proto3 ``optional`` becomes the
synthetic oneof protoc makes), ``map<K, V>`` (the ``...Entry`` message protoc makes), ``oneof``,
``reserved`` numbers, ranges and names, ``extensions`` ranges, ``enum`` (values, options,
reserved) and ``service``/``rpc``. Refused with a 42201: ``edition``, ``group``, ``extend``,
anything else. Names are resolved by protobuf's scoping rules (innermost scope first), then the
descriptor pool checks the rest (duplicate numbers, reserved numbers used, unknown types).

The printed form: two-space indentation, one declaration a line, type names fully qualified
(``.pkg.Msg``), options in the options message's field order, ``json_name`` only when it is not
the default one. Comments and blank lines are not kept.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import re
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message import DecodeError

from .avro import InvalidSchema, LookupReference
from .protobuf_parse import SCALARS, Parser, resolve
from .protobuf_print import print_file
from .records import Reference

__all__ = ["ProtobufSchema", "SCALARS"]



class ProtobufSchema:
    schema_type = "PROTOBUF"

    def __init__(self, stored: str, file: descriptor_pb2.FileDescriptorProto,
                 dependencies: dict[str, descriptor_pb2.FileDescriptorProto]) -> None:
        self.stored = stored
        self.file = file
        #: import path -> descriptor of every file this one imports, transitively
        self.dependencies = dependencies

    @classmethod
    def parse(cls, text: str, references: tuple[Reference, ...] = (), lookup: LookupReference | None = None,
              *, normalize: bool = False) -> ProtobufSchema:
        deps: dict[str, descriptor_pb2.FileDescriptorProto] = {}
        _load_references(references, lookup, deps, set())
        file = _from_base64(text)
        if file is None:
            file = Parser(text).parse_file()
            for name in file.dependency:
                if name not in deps:
                    deps[name] = _well_known(name)
            resolve(file, deps)
        else:
            for name in file.dependency:
                if name not in deps:
                    deps[name] = _well_known(name)
        file.name = file.name or "schema.proto"
        _check_reserved(file.message_type, file.enum_type)
        _build(file, deps)
        return cls(print_file(file), file, deps)

    def serialized(self) -> str:
        """The descriptor as ``?format=serialized`` answers it: base64 of its bytes."""
        return base64.standard_b64encode(self.file.SerializeToString()).decode("ascii")


def _from_base64(text: str) -> descriptor_pb2.FileDescriptorProto | None:
    """A serialized descriptor in base64, or None when ``text`` is not one (then it is .proto
    text: ``syntax``, ``message`` and the like are never valid base64 that decodes to a
    descriptor with a message or an enum)."""
    stripped = text.strip()
    if not stripped or not re.fullmatch(r"[A-Za-z0-9+/=\s]+", stripped):
        return None
    try:
        raw = base64.b64decode(stripped, validate=False)
        file = descriptor_pb2.FileDescriptorProto()
        file.ParseFromString(raw)
    except (binascii.Error, DecodeError, ValueError):
        return None
    if not (file.message_type or file.enum_type or file.service):
        return None
    return file


def _well_known(name: str) -> descriptor_pb2.FileDescriptorProto:
    """The descriptor of a file the protobuf packages ship (``google/protobuf/*.proto``,
    ``google/type/*.proto``)."""
    if re.fullmatch(r"google/(protobuf|type)/[a-z_]+\.proto", name):
        module_name = name.removesuffix(".proto").replace("/", ".") + "_pb2"
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            pass
        else:
            out = descriptor_pb2.FileDescriptorProto()
            module.DESCRIPTOR.CopyToProto(out)
            return out
    raise InvalidSchema(f"import {name!r} is neither a reference nor a well-known type")


def _load_references(references: tuple[Reference, ...], lookup: LookupReference | None,
                     deps: dict[str, descriptor_pb2.FileDescriptorProto], seen: set[tuple[str, int]]) -> None:
    for ref in references:
        if (ref.subject, ref.version) in seen:
            continue
        seen.add((ref.subject, ref.version))
        value = lookup(ref) if lookup is not None else None
        if value is None:
            raise InvalidSchema(f"reference {ref.name} to subject {ref.subject!r} version {ref.version} not found")
        if value.schema_type != "PROTOBUF":
            raise InvalidSchema(f"reference {ref.name} is a {value.schema_type} schema")
        parsed = ProtobufSchema.parse(value.schema, value.references, lookup)
        deps.update(parsed.dependencies)
        file = descriptor_pb2.FileDescriptorProto()
        file.CopyFrom(parsed.file)
        file.name = ref.name
        deps[ref.name] = file


def _check_reserved(messages: Any, enums: Any) -> None:
    """No field or enum value uses a number or a name its own declaration reserved (the
    library's pool does not check it; protoc does)."""
    for e in enums:
        for v in e.value:
            if v.name in e.reserved_name or any(r.start <= v.number <= r.end for r in e.reserved_range):
                raise InvalidSchema(f"enum value {e.name}.{v.name} = {v.number} uses a reserved name or number")
    for m in messages:
        for f in m.field:
            if f.name in m.reserved_name or any(r.start <= f.number < r.end for r in m.reserved_range):
                raise InvalidSchema(f"field {m.name}.{f.name} = {f.number} uses a reserved name or number")
        _check_reserved(m.nested_type, m.enum_type)


def _build(file: descriptor_pb2.FileDescriptorProto, deps: dict[str, descriptor_pb2.FileDescriptorProto]) -> None:
    """Build ``file`` in a fresh pool: the library's own validation (numbers, names, types)."""
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(f: descriptor_pb2.FileDescriptorProto) -> None:
        if f.name in added:
            return
        added.add(f.name)
        for d in f.dependency:
            if d in deps:
                add(deps[d])
        pool.Add(f)

    try:
        add(file)
        pool.FindFileByName(file.name)
    except (TypeError, ValueError, KeyError) as e:
        raise InvalidSchema(str(e)) from None
