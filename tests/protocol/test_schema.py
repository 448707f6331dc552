"""Tests for ``client/protocol/schema.py``: version conditions, nullability, defaults, compact
forms and tag buffers in flexible versions, tagged fields after the normal ones, and the
bounds checks of nested arrays."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from client.protocol.primitives import DecodeError, Reader, Writer
from client.protocol.schema import NULL, Array, Message, Struct, parse_versions
from client.protocol.schema import Field as F

from .strategies import message_values


@pytest.mark.parametrize("spec,expected", [
    ("0+", (0, 1 << 30)),
    ("3+", (3, 1 << 30)),
    ("0-4", (0, 4)),
    ("2", (2, 2)),
    ("none", (1 << 30, (1 << 30) - 1)),
    (None, (1 << 30, (1 << 30) - 1)),
])
def test_parse_versions(spec: str | None, expected: tuple[int, int]) -> None:
    assert parse_versions(spec) == expected


# A made-up message exercising every feature: versions 0-3, flexible from 2.
DEMO = Message("DemoRequest", 999, "0-3", "2+", [
    F("id", "int32"),
    F("name", "string", nullable="1+"),
    F("added_in_1", "int64", "1+", default=-1),
    F("only_0", "int16", "0"),
    F("items", Array([
        F("key", "string"),
        F("values", Array("int32")),
        F("blob", "bytes", nullable="0+"),
    ]), nullable="1+"),
    F("flag", "bool", "1+", default=True),
    F("explicit_null", "string", "3+", nullable="3+", default=NULL),
    F("tagged_int", "int32", "2+", tag=1, default=-7),
    F("tagged_str", "string", "2+", tag=0, nullable="2+"),
])


def enc(value: dict, version: int) -> bytes:
    return bytes(DEMO.encode(value, version).buf)


def test_v0_layout() -> None:
    raw = enc({"id": 1, "name": "ab", "only_0": 5,
               "items": [{"key": "k", "values": [7], "blob": None}]}, 0)
    assert raw == (struct.pack(">i", 1) + b"\x00\x02ab" + b"\x00\x05"
                   + struct.pack(">i", 1) + b"\x00\x01k" + struct.pack(">ii", 1, 7) + b"\xff\xff\xff\xff")


def test_v2_layout_compact_forms_and_tag_buffers() -> None:
    raw = enc({"id": 1, "name": None, "added_in_1": 2,
               "items": [{"key": "k", "values": [7], "blob": b"z"}], "flag": False,
               "tagged_int": 9, "tagged_str": "t"}, 2)
    expected = (
        struct.pack(">i", 1)
        + b"\x00"  # compact nullable string: null
        + struct.pack(">q", 2)
        + b"\x02"  # compact array: 1 element
        + b"\x02k" + b"\x02" + struct.pack(">i", 7) + b"\x02z" + b"\x00"  # element + its tag buffer
        + b"\x00"  # flag
        # top-level tag buffer, tags sorted, AFTER all normal fields
        + b"\x02" + b"\x00\x02\x02t" + b"\x01\x04" + struct.pack(">i", 9)
    )
    assert raw == expected
    out = DEMO.decode(Reader(raw), 2)
    assert out["tagged_int"] == 9 and out["tagged_str"] == "t"


def test_tagged_fields_at_their_default_are_not_written() -> None:
    raw = enc({"id": 1, "name": "", "items": [], "flag": False, "tagged_int": -7, "tagged_str": None}, 2)
    assert raw.endswith(b"\x01\x00\x00")  # empty items (len+1 = 1), flag False, empty tag buffer


def test_decode_fills_defaults_for_absent_fields() -> None:
    raw = enc({"id": 1, "name": "n", "only_0": 3, "items": []}, 0)
    out = DEMO.decode(Reader(raw), 0)
    assert out == {"id": 1, "name": "n", "added_in_1": -1, "only_0": 3, "items": [], "flag": True,
                   "explicit_null": None, "tagged_int": -7, "tagged_str": ""}
    out3 = DEMO.decode(Reader(enc({"id": 1, "name": None, "items": None}, 3)), 3)
    assert out3["only_0"] == 0 and out3["explicit_null"] is None and out3["items"] is None


def test_encode_fills_missing_keys_with_defaults() -> None:
    assert enc({}, 1) == enc({"id": 0, "name": None, "added_in_1": -1, "items": None, "flag": True}, 1)


def test_unknown_tags_are_skipped() -> None:
    raw = bytearray(enc({"id": 1, "name": "", "items": []}, 2))
    assert raw[-1] == 0
    raw[-1:] = b"\x01\x63\x03abc"  # one unknown tag 99 of 3 bytes
    assert DEMO.decode(Reader(raw), 2)["id"] == 1


def test_null_where_not_nullable() -> None:
    with pytest.raises(ValueError):
        enc({"items": None}, 0)  # items nullable from v1 only
    with pytest.raises(DecodeError):
        DEMO.decode(Reader(struct.pack(">i", 1) + b"\x00\x00\x00\x00" + struct.pack(">i", -1)), 0)
    with pytest.raises(DecodeError):  # null string in v0
        DEMO.decode(Reader(struct.pack(">i", 1) + b"\xff\xff"), 0)


def test_versions_outside_valid_are_refused() -> None:
    with pytest.raises(ValueError):
        DEMO.encode({}, 4)
    with pytest.raises(ValueError):
        DEMO.decode(Reader(b""), 4)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_huge_nested_count_is_refused_immediately(version: int) -> None:
    head = enc({"id": 1, "name": "x", "items": []}, version)
    # Replace the empty items array with a 2^31-1 (non-flexible) or 2^32 (compact) count.
    if version < 2:
        pos = 4 + 3 + (2 if version == 0 else 8)  # id, name, only_0 (v0) / added_in_1 (v1)
        assert head[pos:pos + 4] == bytes(4)
        raw = head[:pos] + struct.pack(">i", 0x7FFFFFFF) + b"\x00" * 8
    else:
        pos = len(struct.pack(">i", 1) + b"\x02x" + struct.pack(">q", -1))
        raw = head[:pos] + b"\xff\xff\xff\xff\x0f" + b"\x00" * 8
    with pytest.raises(DecodeError, match="cannot fit"):
        DEMO.decode(Reader(raw), version)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([0, 1, 2, 3]), st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    value = data.draw(message_values(DEMO, version))
    raw = enc(value, version)
    r = Reader(raw)
    assert DEMO.decode(r, version) == value
    assert r.remaining == 0


# Struct-typed fields that are not tagged (DescribeTopicPartitions' cursor) and uint16
# (DescribeQuorum's listener ports), in a non-flexible and a flexible version.
STRUCTS = Message("StructsRequest", 998, "0-1", "1+", [
    F("port", "uint16"),
    F("cursor", Struct([F("topic", "string"), F("partition", "int32")]), nullable="0+", default=NULL),
    F("always", Struct([F("n", "int8")])),
])


@pytest.mark.parametrize("codec", ["generated", "interpreted"])
def test_nullable_struct_has_a_marker_and_uint16_is_unsigned(codec: str) -> None:
    def code(value: dict, version: int) -> bytes:
        if codec == "generated":
            return bytes(STRUCTS.encode(value, version).buf)
        w = Writer()
        STRUCTS.interpreted(version)[1](w, value)
        return bytes(w.buf)

    def decode(raw: bytes, version: int) -> dict:
        r = Reader(raw)
        out = (STRUCTS.decode(r, version) if codec == "generated" else STRUCTS.interpreted(version)[0](r))
        assert r.remaining == 0
        return out

    null = {"port": 65535, "cursor": None, "always": {"n": 3}}
    assert code(null, 0) == b"\xff\xff" + b"\xff" + b"\x03"
    assert code(null, 1) == b"\xff\xff" + b"\xff" + b"\x03\x00" + b"\x00"
    some = {"port": 9093, "cursor": {"topic": "t", "partition": 2}, "always": {"n": -1}}
    assert code(some, 0) == struct.pack(">H", 9093) + b"\x01" + b"\x00\x01t" + struct.pack(">i", 2) + b"\xff"
    assert code(some, 1) == (struct.pack(">H", 9093) + b"\x01" + b"\x02t" + struct.pack(">i", 2) + b"\x00"
                             + b"\xff\x00" + b"\x00")
    for value in (null, some):
        for version in (0, 1):
            assert decode(code(value, version), version) == value
    with pytest.raises(DecodeError):  # the marker is there, the struct is not
        decode(b"\x00\x01\x01", 0)
