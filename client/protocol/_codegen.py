"""Schema -> Python source: one straight-line decoder and encoder per (message, version).

``schema._compile_struct`` interprets the field tree through a closure and a ``Reader``/``Writer``
method call per field; that cost ~14% of broker CPU on single-record Produce requests. Here the
same tree is turned into the text of two functions, exec'd once per (message, version):

- the read position lives in a local (``pos``); every bounds check is inline;
- runs of consecutive fixed-width fields (int8..int64, uint16, uint32, bool, float64) are read or
  written with one precompiled ``struct.Struct`` and one bounds check
  (ProduceResponse's partition: ``index error_code base_offset log_append_time_ms
  log_start_offset`` is one ``>ihqqq``);
- unsigned varints take a one-byte fast path inline and call a helper otherwise;
- nested arrays of structs are nested ``for`` loops in the same function (no calls);
- every array's length is taken from the reader's element budget (``Reader.elements``, kept in
  a local and stored back at the end): DecodeError once it would go below zero;
- a tag buffer with zero entries (the common case) is one byte compared inline; anything else
  goes through ``Reader.tagged_fields`` and the interpreted codecs of the known tags, exactly
  as the interpreted codec does (unknown tags are skipped).

The result is the same as ``_compile_struct``'s: equal dicts in the same key order (absent
fields' defaults first, then the present fields), the same bytes, ``DecodeError`` for anything
malformed (tests/protocol/test_codegen.py checks both codecs against each other for every
message and version). Error messages keep the interpreted codec's wording where tests match on
it ("cannot fit"). What it costs: ~1 ms of compile per (message, version) on first use, and
generated code is harder to step through — ``Message.interpreted(version)`` gives the reference.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .primitives import DecodeError, Reader, Writer, budget_exceeded

if TYPE_CHECKING:
    from .schema import Field

_FIXED = {"int8": ("b", 1), "int16": ("h", 2), "int32": ("i", 4), "int64": ("q", 8),
          "uint16": ("H", 2), "uint32": ("I", 4), "bool": ("?", 1), "float64": ("d", 8)}

_H = struct.Struct(">h")
_I = struct.Struct(">i")


def _uv(buf: memoryview, pos: int, end: int) -> tuple[int, int]:
    """Unsigned varint at ``pos`` -> (value, next position); the slow path of the inline read."""
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise DecodeError("unsigned varint runs past the end")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 28:
            raise DecodeError("unsigned varint longer than 5 bytes")


def _wuv(buf: bytearray, v: int) -> None:
    Writer(buf).uvarint(v)


def _need(pos: int, n: int, end: int) -> DecodeError:
    return DecodeError(f"need {n} bytes at position {pos}, {end - pos} left")


def _fit(n: int, left: int) -> DecodeError:
    return DecodeError(f"array of {n} elements cannot fit in {left} bytes")


def _dec_tags(buf: memoryview, pos: int, end: int, out: dict[str, Any], tagged: dict[int, Any],
              budget: int) -> tuple[int, int]:
    """A non-empty tag buffer (the rare path): the interpreted codec's reader. Returns the next
    position and the element budget left."""
    from .schema import read_tagged
    r = Reader(buf, pos, end)
    r.elements = budget
    read_tagged(r, out, tagged)
    return r.pos, r.elements


def _enc_tags(buf: bytearray, value: dict[str, Any], tagged: dict[int, Any], version: int) -> None:
    """Tagged fields to write (the rare path): the interpreted codec's writer."""
    from .schema import write_tagged
    write_tagged(Writer(buf), value, tagged, version)


class _Src:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ns: dict[str, Any] = {
            "DecodeError": DecodeError, "_uv": _uv, "_wuv": _wuv, "_need": _need, "_fit": _fit,
            "_dec_tags": _dec_tags, "_enc_tags": _enc_tags, "_budget_exceeded": budget_exceeded,
            "_H": _H, "_I": _I, "_UUID": __import__("uuid").UUID,
        }
        self.n = 0

    def var(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def const(self, obj: Any, prefix: str = "K") -> str:
        name = self.var(prefix)
        self.ns[name] = obj
        return name

    def __call__(self, ind: int, line: str) -> None:
        self.lines.append("    " * ind + line)


def _split(fields: Sequence[Field], version: int, flexible: bool) -> tuple[list[Field], list[Field], dict[int, Any]]:
    """(present, absent, tagged) exactly as ``schema._compile_struct`` splits them."""
    from .schema import _codec, _in, parse_versions
    present: list[Field] = []
    absent: list[Field] = []
    tagged: dict[int, Any] = {}
    for f in fields:
        if f.tag is not None:
            if flexible and _in(parse_versions(f.tagged_versions or f.versions), version):
                d, e = _codec(f, version, True)
                tagged[f.tag] = (f, d, e)
            absent.append(f)
        elif _in(f._versions, version):
            present.append(f)
        else:
            absent.append(f)
    return present, absent, tagged


def _runs(present: list[Field]) -> list[Field | list[Field]]:
    """Group consecutive fixed-width fields into lists."""
    out: list[Field | list[Field]] = []
    for f in present:
        if isinstance(f.type, str) and f.type in _FIXED:
            if out and isinstance(out[-1], list):
                out[-1].append(f)
            else:
                out.append([f])
        else:
            out.append(f)
    return out


# ---- decoding -------------------------------------------------------------------------------

def _d_need(s: _Src, ind: int, n: str) -> None:
    s(ind, f"if pos + {n} > end: raise _need(pos, {n}, end)")


def _d_uvarint(s: _Src, ind: int, target: str) -> None:
    s(ind, "if pos >= end: raise DecodeError('unsigned varint runs past the end')")
    s(ind, f"{target} = buf[pos]")
    s(ind, f"if {target} < 0x80: pos += 1")
    s(ind, f"else: {target}, pos = _uv(buf, pos, end)")


def _d_sized(s: _Src, ind: int, n: str, target: str, is_str: bool) -> None:
    """Bytes [pos, pos+n) (n >= 0) as a str or a memoryview."""
    _d_need(s, ind, n)
    expr = f"str(buf[pos:pos + {n}], 'utf-8')" if is_str else f"buf[pos:pos + {n}]"
    s(ind, f"{target} = {expr}")
    s(ind, f"pos += {n}")


def _d_leaf(s: _Src, ind: int, t: str, nullable: bool, flexible: bool, target: str) -> None:
    if t in _FIXED:
        code, size = _FIXED[t]
        st = s.const(struct.Struct(">" + code), "S")
        _d_need(s, ind, str(size))
        s(ind, f"{target} = {st}.unpack_from(buf, pos)[0]")
        s(ind, f"pos += {size}")
        return
    if t == "uuid":
        _d_need(s, ind, "16")
        s(ind, f"{target} = _UUID(bytes=bytes(buf[pos:pos + 16]))")
        s(ind, "pos += 16")
        return
    is_str = t == "string"
    if t == "records":
        nullable = True
    elif t != "bytes" and not is_str:
        raise ValueError(f"unknown type {t!r}")
    what = "string" if is_str else "bytes"
    n = s.var("n")
    if flexible:
        _d_uvarint(s, ind, n)
        s(ind, f"{n} -= 1")
        s(ind, f"if {n} < 0:")
        if nullable:
            s(ind + 1, f"{target} = None")
        else:
            s(ind + 1, f"raise DecodeError('null where a non-nullable compact {what} was expected')")
    else:
        w = 2 if is_str else 4
        _d_need(s, ind, str(w))
        s(ind, f"{n} = {'_H' if is_str else '_I'}.unpack_from(buf, pos)[0]")
        s(ind, f"pos += {w}")
        s(ind, f"if {n} < 0:")
        if nullable:
            s(ind + 1, f"if {n} != -1: raise DecodeError(f'invalid {what} length {{{n}}}')")
            s(ind + 1, f"{target} = None")
        else:
            s(ind + 1, f"raise DecodeError('null where a non-nullable {what} was expected')")
    s(ind, "else:")
    _d_sized(s, ind + 1, n, target, is_str)


def _d_field(s: _Src, ind: int, f: Field, version: int, flexible: bool, target: str) -> None:
    from .schema import Array, Struct, _in
    nullable = _in(f._nullable, version)
    t = f.type
    if isinstance(t, Struct):
        if nullable:  # an int8 marker: negative for null (Kafka's generated readers test < 0)
            _d_need(s, ind, "1")
            s(ind, f"if buf[pos] >= 0x80: pos += 1; {target} = None")
            s(ind, "else:")
            s(ind + 1, "pos += 1")
            _d_struct(s, ind + 1, t.fields, version, flexible, target)
        else:
            _d_struct(s, ind, t.fields, version, flexible, target)
        return
    if not isinstance(t, Array):
        _d_leaf(s, ind, t, nullable, flexible, target)
        return
    n = s.var("n")
    if flexible:
        _d_uvarint(s, ind, n)
        s(ind, f"{n} -= 1")
    else:
        _d_need(s, ind, "4")
        s(ind, f"{n} = _I.unpack_from(buf, pos)[0]")
        s(ind, "pos += 4")
        s(ind, f"if {n} < -1: raise DecodeError(f'invalid array length {{{n}}}')")
    s(ind, f"if {n} > end - pos: raise _fit({n}, end - pos)")
    s(ind, f"if {n} < 0:")
    if nullable:
        s(ind + 1, f"{target} = None")
    else:
        s(ind + 1, f"raise DecodeError({f'null array for non-nullable field {f.name}'!r})")
    s(ind, "else:")
    s(ind + 1, f"if {n} > budget: raise _budget_exceeded({n}, budget)")
    s(ind + 1, f"budget -= {n}")
    s(ind + 1, f"{target} = []")
    s(ind + 1, f"for _ in range({n}):")
    e = s.var("e")
    if isinstance(t.of, str):
        _d_leaf(s, ind + 2, t.of, False, flexible, e)
    else:
        _d_struct(s, ind + 2, t.of, version, flexible, e)
    s(ind + 2, f"{target}.append({e})")


def _d_struct(s: _Src, ind: int, fields: Sequence[Field], version: int, flexible: bool, target: str) -> None:
    present, absent, tagged = _split(fields, version, flexible)
    names: dict[str, str] = {}
    for item in _runs(present):
        if isinstance(item, list):
            fmt = ">" + "".join(_FIXED[f.type][0] for f in item)  # type: ignore[index]
            st = s.const(struct.Struct(fmt), "S")
            vs = [s.var("v") for _ in item]
            size = struct.calcsize(fmt)
            _d_need(s, ind, str(size))
            s(ind, f"{', '.join(vs)}, = {st}.unpack_from(buf, pos)")
            s(ind, f"pos += {size}")
            for f, v in zip(item, vs):
                names[f.name] = v
        else:
            v = s.var("v")
            _d_field(s, ind, item, version, flexible, v)
            names[item.name] = v
    parts = [f"{f.name!r}: {s.const(f.default_value(version))}" for f in absent]
    parts += [f"{name!r}: {v}" for name, v in names.items()]
    s(ind, f"{target} = {{{', '.join(parts)}}}")
    if flexible:
        s(ind, "if pos >= end: raise DecodeError('unsigned varint runs past the end')")
        s(ind, "if buf[pos] == 0: pos += 1")
        s(ind, f"else: pos, budget = _dec_tags(buf, pos, end, {target}, {s.const(tagged, 'T')}, budget)")


# ---- encoding -------------------------------------------------------------------------------

def _e_uvarint(s: _Src, ind: int, expr: str) -> None:
    m = s.var("m")
    s(ind, f"{m} = {expr}")
    s(ind, f"if {m} < 0x80: buf.append({m})")
    s(ind, f"else: _wuv(buf, {m})")


def _e_leaf(s: _Src, ind: int, t: str, nullable: bool, flexible: bool, x: str) -> None:
    if t in _FIXED:
        st = s.const(struct.Struct(">" + _FIXED[t][0]), "S")
        s(ind, f"buf += {st}.pack({x})")
        return
    if t == "uuid":
        s(ind, f"buf += ({x}.bytes if {x} is not None else {s.const(bytes(16))})")
        return
    is_str = t == "string"
    if t == "records":
        nullable = True
    elif t != "bytes" and not is_str:
        raise ValueError(f"unknown type {t!r}")
    if nullable:
        null = b"\x00" if flexible else (b"\xff\xff" if is_str else b"\xff\xff\xff\xff")
        s(ind, f"if {x} is None: buf += {null!r}")
        s(ind, "else:")
        ind += 1
    b = x
    if is_str:
        b = s.var("b")
        s(ind, f"{b} = {x}.encode('utf-8')")
    if flexible:
        _e_uvarint(s, ind, f"len({b}) + 1")
    else:
        s(ind, f"buf += {'_H' if is_str else '_I'}.pack(len({b}))")
    s(ind, f"buf += {b}")


def _e_field(s: _Src, ind: int, f: Field, version: int, flexible: bool, x: str) -> None:
    from .schema import Array, Struct, _in
    nullable = _in(f._nullable, version)
    t = f.type
    if isinstance(t, Struct):
        if nullable:  # an int8 marker: -1 for null, 1 before a struct
            s(ind, f"if {x} is None: buf.append(0xff)")
            s(ind, "else:")
            s(ind + 1, "buf.append(1)")
            _e_struct(s, ind + 1, t.fields, version, flexible, x)
        else:
            _e_struct(s, ind, t.fields, version, flexible, x)
        return
    if not isinstance(t, Array):
        _e_leaf(s, ind, t, nullable, flexible, x)
        return
    s(ind, f"if {x} is None:")
    if nullable:
        null = b"\x00" if flexible else b"\xff\xff\xff\xff"
        s(ind + 1, f"buf += {null!r}")
    else:
        msg = f"field {f.name} is not nullable in version {version}"
        s(ind + 1, f"raise ValueError({msg!r})")
    s(ind, "else:")
    if flexible:
        _e_uvarint(s, ind + 1, f"len({x}) + 1")
    else:
        s(ind + 1, f"buf += _I.pack(len({x}))")
    it = s.var("it")
    s(ind + 1, f"for {it} in {x}:")
    if isinstance(t.of, str):
        _e_leaf(s, ind + 2, t.of, False, flexible, it)
    else:
        _e_struct(s, ind + 2, t.of, version, flexible, it)


def _e_struct(s: _Src, ind: int, fields: Sequence[Field], version: int, flexible: bool, x: str) -> None:
    present, _, tagged = _split(fields, version, flexible)
    g = s.var("g")
    if present:
        s(ind, f"{g} = {x}.get")
    for item in _runs(present):
        if isinstance(item, list):
            fmt = ">" + "".join(_FIXED[f.type][0] for f in item)  # type: ignore[index]
            st = s.const(struct.Struct(fmt), "S")
            args = ", ".join(f"{g}({f.name!r}, {s.const(f.default_value(version))})" for f in item)
            s(ind, f"buf += {st}.pack({args})")
        else:
            v = s.var("x")
            s(ind, f"{v} = {g}({item.name!r}, {s.const(item.default_value(version))})")
            _e_field(s, ind, item, version, flexible, v)
    if flexible:
        if tagged:  # usually all absent (None): one byte, no call
            absent = " and ".join(f"{x}.get({f.name!r}) is None" for f, _, _ in tagged.values())
            s(ind, f"if {absent}: buf.append(0)")
            s(ind, f"else: _enc_tags(buf, {x}, {s.const(tagged, 'T')}, {version})")
        else:
            s(ind, "buf.append(0)")


def compile_struct(fields: Sequence[Field], version: int, flexible: bool
                   ) -> tuple[Callable[[Reader], Any], Callable[[Writer, Any], None]]:
    """Generated (decoder, encoder) with the signatures of ``schema._compile_struct``'s."""
    s = _Src()
    s(0, "def dec(r):")
    s(1, "buf = r.buf; pos = r.pos; end = r.end; budget = r.elements")
    s(1, "try:")
    _d_struct(s, 2, fields, version, flexible, "out")
    s(1, "except UnicodeDecodeError as e:")
    s(2, "raise DecodeError(f'string is not valid UTF-8: {e}') from None")
    s(1, "r.pos = pos; r.elements = budget")
    s(1, "return out")
    s(0, "def enc(w, value):")
    s(1, "buf = w.buf")
    _e_struct(s, 1, fields, version, flexible, "value")
    ns = s.ns
    ns["__source__"] = "\n".join(s.lines)
    exec(compile("\n".join(s.lines) + "\n", f"<codegen v{version}>", "exec"), ns)
    return ns["dec"], ns["enc"]
