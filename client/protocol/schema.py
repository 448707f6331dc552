"""Declarative message schemas with version conditions, compiled per version to fast codecs.

A message is a tree of ``Field``s, written from Kafka's JSON message specs
(``clients/src/main/resources/common/message/*.json``): each field has the versions it exists
in (``"3+"``, ``"0-4"``), the versions in which it may be null, and optionally a tag (a tagged
field, flexible versions only). Types: ``int8 int16 int32 int64 uint16 uint32 bool float64
uuid string bytes records``, ``Array(type)`` of a primitive, ``Array([...fields])`` of structs,
or ``Struct([...fields])``: one struct (the specs' struct-typed fields). A tagged struct
(FetchResponse's ``diverging_epoch``) absent decodes to None and None is not written; a
nullable untagged one (DescribeTopicPartitions' ``cursor``) is preceded by an int8 marker, -1
for null and 1 for a struct, as Kafka's generated code writes it.

In flexible versions (>= the message's ``flexible`` version) strings, bytes, records and arrays
use their compact forms and every struct ends with a tag buffer. Decoding yields plain dicts
(field name -> value; absent-in-this-version fields get their default); encoding takes dicts
and fills missing keys with defaults. Byte fields decode to ``memoryview``s of the frame (no
copy); keep the frame alive while you use them.

``Message.decode``/``encode`` run code generated per version from the field tree
(``_codegen``); ``_compile_struct`` below is the interpreted reference it must match
(``Message.interpreted``), and still codes the rare tagged fields.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

from .primitives import DecodeError, Reader, Writer

__all__ = ["Field", "Array", "Struct", "Message", "parse_versions", "NULL"]

_INF = 1 << 30


class _Null:
    """An explicit null default (the specs' ``"default": "null"``): ``default=None`` means
    "the type's zero value", so a null default needs its own marker."""

    def __repr__(self) -> str:
        return "NULL"


NULL: Any = _Null()


def parse_versions(spec: str | None) -> tuple[int, int]:
    """``"3+"`` -> (3, inf); ``"0-4"`` -> (0, 4); ``"2"`` -> (2, 2); ``"none"``/None -> empty
    (starting at inf, as ``FLEXIBLE_FROM`` marks an API with no flexible version)."""
    if spec is None or spec == "none":
        return (_INF, _INF - 1)
    if spec.endswith("+"):
        return (int(spec[:-1]), _INF)
    if "-" in spec:
        lo, hi = spec.split("-")
        return (int(lo), int(hi))
    return (int(spec), int(spec))


def _in(versions: tuple[int, int], v: int) -> bool:
    return versions[0] <= v <= versions[1]


@dataclass
class Array:
    of: str | Sequence[Field]


@dataclass
class Struct:
    fields: Sequence[Field]


@dataclass
class Field:
    name: str
    type: str | Array | Struct
    versions: str = "0+"
    nullable: str | None = None
    default: Any = None
    tag: int | None = None
    tagged_versions: str | None = None
    _versions: tuple[int, int] = dc_field(init=False, repr=False)
    _nullable: tuple[int, int] = dc_field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._versions = parse_versions(self.versions)
        self._nullable = parse_versions(self.nullable)

    def default_value(self, version: int) -> Any:
        if self.default is NULL:
            return None
        if self.default is not None:
            return self.default
        if _in(self._nullable, version):
            return None
        t = self.type
        if isinstance(t, Array):
            return []
        if isinstance(t, Struct):
            return None
        return {"string": "", "bytes": b"", "records": b"", "bool": False, "float64": 0.0,
                "uuid": None}.get(t, 0)


Decoder = Callable[[Reader], Any]
Encoder = Callable[[Writer, Any], None]

_PRIM_DEC: dict[str, Decoder] = {
    "int8": Reader.int8, "int16": Reader.int16, "int32": Reader.int32, "int64": Reader.int64,
    "uint16": Reader.uint16, "uint32": Reader.uint32, "bool": Reader.boolean, "float64": Reader.float64, "uuid": Reader.uuid,
}
_PRIM_ENC: dict[str, Encoder] = {
    "int8": Writer.int8, "int16": Writer.int16, "int32": Writer.int32, "int64": Writer.int64,
    "uint16": Writer.uint16, "uint32": Writer.uint32, "bool": Writer.boolean, "float64": Writer.float64, "uuid": Writer.uuid,
}


def _leaf_codec(t: str, nullable: bool, flexible: bool) -> tuple[Decoder, Encoder]:
    if t in _PRIM_DEC:
        return _PRIM_DEC[t], _PRIM_ENC[t]
    if t == "string":
        if flexible:
            return ((Reader.compact_nullable_string, Writer.compact_nullable_string) if nullable
                    else (Reader.compact_string, Writer.compact_string))
        return ((Reader.nullable_string, Writer.nullable_string) if nullable
                else (Reader.string, Writer.string))
    if t in ("bytes", "records"):
        if flexible:
            return ((Reader.compact_nullable_bytes, Writer.compact_nullable_bytes) if nullable or t == "records"
                    else (Reader.compact_bytes, Writer.compact_bytes))
        return ((Reader.nullable_bytes, Writer.nullable_bytes) if nullable or t == "records"
                else (Reader.bytes_, Writer.bytes_))
    raise ValueError(f"unknown type {t!r}")


def _codec(f: Field, version: int, flexible: bool) -> tuple[Decoder, Encoder]:
    nullable = _in(f._nullable, version)
    t = f.type
    if isinstance(t, Struct):
        sdec, senc = _compile_struct(t.fields, version, flexible)
        if f.tag is not None or not nullable:
            return sdec, senc

        def dec_nullable(r: Reader) -> Any:
            return None if r.int8() < 0 else sdec(r)

        def enc_nullable(w: Writer, value: Any) -> None:
            if value is None:
                w.int8(-1)
            else:
                w.int8(1)
                senc(w, value)

        return dec_nullable, enc_nullable
    if not isinstance(t, Array):
        return _leaf_codec(t, nullable, flexible)
    if isinstance(t.of, str):
        elem_dec, elem_enc = _leaf_codec(t.of, False, flexible)
    else:
        elem_dec, elem_enc = _compile_struct(t.of, version, flexible)
    read_len = Reader.compact_array_length if flexible else Reader.array_length

    def dec(r: Reader) -> Any:
        n = read_len(r)
        if n < 0:
            if not nullable:
                raise DecodeError(f"null array for non-nullable field {f.name}")
            return None
        return [elem_dec(r) for _ in range(n)]

    def enc(w: Writer, value: Any) -> None:
        if value is None:
            if not nullable:
                raise ValueError(f"field {f.name} is not nullable in version {version}")
            (w.uvarint(0) if flexible else w.int32(-1))
            return
        (w.uvarint(len(value) + 1) if flexible else w.int32(len(value)))
        for item in value:
            elem_enc(w, item)

    return dec, enc


def _compile_struct(fields: Sequence[Field], version: int, flexible: bool) -> tuple[Decoder, Encoder]:
    present: list[tuple[str, Decoder, Encoder, Any]] = []
    absent: list[tuple[str, Any]] = []
    tagged: dict[int, tuple[Field, Decoder, Encoder]] = {}
    for f in fields:
        if f.tag is not None:
            if flexible and _in(parse_versions(f.tagged_versions or f.versions), version):
                d, e = _codec(f, version, True)
                tagged[f.tag] = (f, d, e)
            absent.append((f.name, f.default_value(version)))
            continue
        if _in(f._versions, version):
            d, e = _codec(f, version, flexible)
            present.append((f.name, d, e, f.default_value(version)))
        else:
            absent.append((f.name, f.default_value(version)))

    def dec(r: Reader) -> dict[str, Any]:
        out = {name: default for name, default in absent}
        for name, d, _, _ in present:
            out[name] = d(r)
        if flexible:
            read_tagged(r, out, tagged)
        return out

    def enc(w: Writer, value: dict[str, Any]) -> None:
        for name, _, e, default in present:
            v = value.get(name, default)
            e(w, v)
        if flexible:
            write_tagged(w, value, tagged, version)

    return dec, enc


def read_tagged(r: Reader, out: dict[str, Any], tagged: dict[int, tuple[Field, Decoder, Encoder]]) -> None:
    """Read a tag buffer into ``out``: known tags decoded by their field, unknown ones skipped."""
    for tag, raw in r.tagged_fields().items():
        if tag in tagged:
            f, d, _ = tagged[tag]
            out[f.name] = d(Reader(raw))


def write_tagged(w: Writer, value: dict[str, Any], tagged: dict[int, tuple[Field, Decoder, Encoder]],
                 version: int) -> None:
    """Write the tag buffer of ``value``: each tagged field whose value is set and not its
    default, in tag order (``Writer.tagged_fields`` sorts)."""
    tf: dict[int, bytes] = {}
    for tag, (f, _, e) in tagged.items():
        v = value.get(f.name)
        if v is not None and v != f.default_value(version):
            sub = Writer()
            e(sub, v)
            tf[tag] = bytes(sub.buf)
    w.tagged_fields(tf)


class Message:
    """One request or response schema, e.g. ``Message("ProduceRequest", 0, "3-7", "9+", [...])``."""

    def __init__(self, name: str, api_key: int, valid: str, flexible: str, fields: Sequence[Field]) -> None:
        self.name = name
        self.api_key = api_key
        self.valid = parse_versions(valid)
        self.flexible = parse_versions(flexible)
        self.fields = list(fields)
        self._compiled: dict[int, tuple[Decoder, Encoder]] = {}

    def is_flexible(self, version: int) -> bool:
        return _in(self.flexible, version)

    def _get(self, version: int) -> tuple[Decoder, Encoder]:
        c = self._compiled.get(version)
        if c is None:
            if not _in(self.valid, version):
                raise ValueError(f"{self.name} has no version {version}")
            # Imported here, not at the top: _codegen compiles this module's field trees (it
            # needs Field, Array, Struct and the interpreted codec), so a module-level import
            # would make the two modules import each other. It runs once per version.
            from ._codegen import compile_struct
            c = self._compiled[version] = compile_struct(self.fields, version, self.is_flexible(version))
        return c

    def interpreted(self, version: int) -> tuple[Decoder, Encoder]:
        """The reference (decoder, encoder): the closure-interpreted field tree that the
        generated codec (``_codegen``, used by ``decode``/``encode``) must match exactly."""
        if not _in(self.valid, version):
            raise ValueError(f"{self.name} has no version {version}")
        return _compile_struct(self.fields, version, self.is_flexible(version))

    def decode(self, reader: Reader, version: int) -> dict[str, Any]:
        return self._get(version)[0](reader)

    def encode(self, value: dict[str, Any], version: int, writer: Writer | None = None) -> Writer:
        w = writer or Writer()
        self._get(version)[1](w, value)
        return w
