"""Hypothesis strategies derived from the schema tables: a message value for a given version.

``message_values(msg, version)`` draws a dict with every field the version carries (normal
fields, and tagged fields in flexible versions) and the field's default for the others, i.e.
exactly what ``msg.decode`` returns, so ``decode(encode(x)) == x`` can be asserted directly.
Sizes are kept small: the point is the layout, not volume.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from client.protocol.schema import Array, Field, Message, Struct, _in, parse_versions

_INTS = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
    "uint16": (0, (1 << 16) - 1),
    "uint32": (0, (1 << 32) - 1),
}

MAX_LIST = 3


def _leaf(t: str, nullable: bool) -> st.SearchStrategy[Any]:
    if t in _INTS:
        lo, hi = _INTS[t]
        s: st.SearchStrategy[Any] = st.integers(lo, hi)
    elif t == "bool":
        s = st.booleans()
    elif t == "float64":
        s = st.floats(allow_nan=False)
    elif t == "uuid":
        s = st.uuids()
    elif t == "string":
        s = st.text(max_size=12)
    elif t in ("bytes", "records"):
        s = st.binary(max_size=24)
    else:
        raise ValueError(t)
    return st.none() | s if nullable else s


def _field(f: Field, version: int, flexible: bool) -> st.SearchStrategy[Any]:
    nullable = _in(f._nullable, version)
    t = f.type
    if isinstance(t, Array):
        elem = _leaf(t.of, False) if isinstance(t.of, str) else struct_values(t.of, version, flexible)
        s: st.SearchStrategy[Any] = st.lists(elem, max_size=MAX_LIST)
        return st.none() | s if nullable else s
    if isinstance(t, Struct):  # absent (None) or present: tagged or nullable; else always present
        s = struct_values(t.fields, version, flexible)
        return st.none() | s if f.tag is not None or nullable else s
    return _leaf(t, nullable)


def is_present(f: Field, version: int, flexible: bool) -> bool:
    if f.tag is not None:
        return flexible and _in(parse_versions(f.tagged_versions or f.versions), version)
    return _in(f._versions, version)


def struct_values(fields: Sequence[Field], version: int, flexible: bool) -> st.SearchStrategy[dict[str, Any]]:
    parts: dict[str, st.SearchStrategy[Any]] = {}
    for f in fields:
        if is_present(f, version, flexible):
            parts[f.name] = _field(f, version, flexible)
        else:
            parts[f.name] = st.just(f.default_value(version))
    return st.fixed_dictionaries(parts)


def message_values(msg: Message, version: int) -> st.SearchStrategy[dict[str, Any]]:
    return struct_values(msg.fields, version, msg.is_flexible(version))


def all_versions(msgs: Sequence[Message]) -> list[tuple[Message, int]]:
    return [(m, v) for m in msgs for v in range(m.valid[0], m.valid[1] + 1)]
