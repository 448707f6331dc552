"""Tests for ``client/protocol/primitives.py``: Reader/Writer round trips, Kafka's byte layouts
for each primitive, and the bounds checks (every length and count is checked against the bytes
left before anything is allocated)."""

from __future__ import annotations

import struct
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from client.protocol.primitives import DecodeError, Reader, Writer


def enc(method: str, *args: object) -> bytes:
    w = Writer()
    getattr(w, method)(*args)
    return bytes(w.buf)


def dec(method: str, data: bytes) -> object:
    r = Reader(data)
    v = getattr(r, method)()
    assert r.remaining == 0, f"{method} left {r.remaining} bytes"
    return v


# ------------------------------------------------------------------ known layouts


@pytest.mark.parametrize("method,value,raw", [
    ("int8", -1, b"\xff"),
    ("int16", 258, b"\x01\x02"),
    ("int32", -2, b"\xff\xff\xff\xfe"),
    ("int64", 1, b"\x00" * 7 + b"\x01"),
    ("uint32", 0xFFFFFFFF, b"\xff\xff\xff\xff"),
    ("boolean", True, b"\x01"),
    ("boolean", False, b"\x00"),
    ("uvarint", 0, b"\x00"),
    ("uvarint", 127, b"\x7f"),
    ("uvarint", 128, b"\x80\x01"),
    ("uvarint", 300, b"\xac\x02"),
    ("uvarint", 0xFFFFFFFF, b"\xff\xff\xff\xff\x0f"),
    ("string", "abc", b"\x00\x03abc"),
    ("string", "", b"\x00\x00"),
    ("nullable_string", None, b"\xff\xff"),
    ("nullable_string", "é", b"\x00\x02\xc3\xa9"),
    ("compact_string", "abc", b"\x04abc"),
    ("compact_string", "", b"\x01"),
    ("compact_nullable_string", None, b"\x00"),
    ("bytes_", b"xy", b"\x00\x00\x00\x02xy"),
    ("nullable_bytes", None, b"\xff\xff\xff\xff"),
    ("compact_bytes", b"xy", b"\x03xy"),
    ("compact_nullable_bytes", None, b"\x00"),
])
def test_known_layouts(method: str, value: object, raw: bytes) -> None:
    assert enc(method, value) == raw
    assert dec(method, raw) == value


def test_compact_string_of_200_bytes_has_a_two_byte_length() -> None:
    s = "x" * 200
    raw = enc("compact_string", s)
    assert raw[:2] == b"\xc9\x01"  # uvarint(201)
    assert dec("compact_string", raw) == s


def test_empty_tag_buffer_is_one_zero_byte() -> None:
    assert enc("tagged_fields") == b"\x00"
    assert enc("tagged_fields", {}) == b"\x00"
    assert dec("tagged_fields", b"\x00") == {}


def test_tag_buffer_layout_sorted_by_tag() -> None:
    raw = enc("tagged_fields", {5: b"\x01\x02", 0: b""})
    # count 2, then (tag 0, size 0), then (tag 5, size 2, bytes)
    assert raw == b"\x02" + b"\x00\x00" + b"\x05\x02\x01\x02"
    assert dec("tagged_fields", raw) == {0: b"", 5: b"\x01\x02"}


def test_uuid_round_trip() -> None:
    import uuid

    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert dec("uuid", enc("uuid", u)) == u
    assert enc("uuid", None) == bytes(16)


def test_uvarint_rejects_negative() -> None:
    with pytest.raises(ValueError):
        Writer().uvarint(-1)


# ------------------------------------------------------------------ round trips

_INT_RANGES = {
    "int8": 8, "int16": 16, "int32": 32, "int64": 64,
}


@given(st.sampled_from(sorted(_INT_RANGES)), st.data())
def test_signed_int_round_trip(method: str, data: st.DataObject) -> None:
    bits = _INT_RANGES[method]
    v = data.draw(st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1))
    raw = enc(method, v)
    assert len(raw) == bits // 8
    assert dec(method, raw) == v


@given(st.integers(0, (1 << 35) - 1))
def test_uvarint_round_trip(v: int) -> None:
    raw = enc("uvarint", v)
    assert len(raw) == max(1, (v.bit_length() + 6) // 7)
    assert dec("uvarint", raw) == v


@given(st.text(max_size=300))
def test_strings_round_trip(s: str) -> None:
    for m in ("string", "nullable_string", "compact_string", "compact_nullable_string"):
        assert dec(m, enc(m, s)) == s


@given(st.binary(max_size=300))
def test_bytes_round_trip(b: bytes) -> None:
    for m in ("bytes_", "nullable_bytes", "compact_bytes", "compact_nullable_bytes"):
        out = dec(m, enc(m, b))
        assert isinstance(out, memoryview) and out == b


@given(st.dictionaries(st.integers(0, 1000), st.binary(max_size=20), max_size=5))
def test_tagged_fields_round_trip(fields: dict[int, bytes]) -> None:
    assert dec("tagged_fields", enc("tagged_fields", fields)) == fields


def test_bytes_decode_without_copy() -> None:
    buf = bytearray(b"\x00\x00\x00\x03abc")
    v = Reader(buf).bytes_()
    buf[4] = ord("z")
    assert v == b"zbc"  # a view of the frame, not a copy


# ------------------------------------------------------------------ bounds checks


@pytest.mark.parametrize("method,raw", [
    ("int8", b""),
    ("int16", b"\x00"),
    ("int32", b"\x00\x00\x00"),
    ("int64", b"\x00" * 7),
    ("uuid", b"\x00" * 15),
    ("boolean", b""),
    ("uvarint", b""),
    ("uvarint", b"\x80\x80"),  # continuation bit set on the last byte
    ("uvarint", b"\x80\x80\x80\x80\x80\x01"),  # longer than 5 bytes
    ("string", b"\x00\x05abc"),
    ("string", b"\xff\xff"),  # null where not nullable
    ("string", b"\x80\x00"),  # negative length
    ("nullable_string", b"\xff\xfe"),  # -2 is not null
    ("string", b"\x00\x02\xff\xfe"),  # not UTF-8
    ("compact_string", b"\x00"),  # null where not nullable
    ("compact_string", b"\x05abc"),
    ("compact_string", b"\xff\xff\xff\xff\x0f"),  # 4 GiB string in 5 bytes
    ("compact_nullable_string", b"\x03\xc3"),
    ("bytes_", b"\x7f\xff\xff\xff"),
    ("bytes_", b"\xff\xff\xff\xff"),
    ("nullable_bytes", b"\xff\xff\xff\xfe"),
    ("nullable_bytes", b"\x00\x00\x00\x04abc"),
    ("compact_bytes", b"\x00"),
    ("compact_bytes", b"\x05abc"),
    ("compact_nullable_bytes", b"\xff\xff\xff\xff\x0f"),
    ("array_length", b"\x7f\xff\xff\xff" + b"\x00" * 10),
    ("array_length", b"\xff\xff\xff\xfe"),  # -2
    ("array_length", b"\x80\x00\x00\x00"),
    ("compact_array_length", b"\xff\xff\xff\xff\x07" + b"\x00" * 10),
    ("tagged_fields", b"\x05\x00\x00"),  # 5 tags in 2 bytes
    ("tagged_fields", b"\x01\x00\x05abc"),  # tag of 5 bytes, 3 left
    ("tagged_fields", b"\xff\xff\xff\xff\x0f"),
])
def test_truncated_or_invalid_raises_decode_error(method: str, raw: bytes) -> None:
    with pytest.raises(DecodeError):
        getattr(Reader(raw), method)()


def test_array_length_null_and_exact_fit() -> None:
    assert Reader(b"\xff\xff\xff\xff").array_length() == -1
    assert Reader(b"\x00\x00\x00\x03abc").array_length() == 3
    assert Reader(b"\x00").compact_array_length() == -1
    assert Reader(b"\x04abc").compact_array_length() == 3


def test_huge_counts_fail_fast_without_allocating() -> None:
    """CVE-2022-34917: a 2^31-1 element count in a 10-byte buffer is refused at once."""
    raw = struct.pack(">i", 0x7FFFFFFF) + b"\x00" * 6
    t0 = time.perf_counter()
    for _ in range(1000):
        with pytest.raises(DecodeError):
            Reader(raw).array_length()
        with pytest.raises(DecodeError):
            Reader(b"\xff\xff\xff\xff\x07").compact_array_length()
        with pytest.raises(DecodeError):
            Reader(raw).bytes_()
    assert time.perf_counter() - t0 < 2.0


def test_reader_respects_end_and_start() -> None:
    r = Reader(b"\x00\x01\x00\x02\x00\x03", pos=2, end=4)
    assert r.remaining == 2
    assert r.int16() == 2
    with pytest.raises(DecodeError):
        r.int16()


@settings(max_examples=300)
@given(st.binary(max_size=40), st.sampled_from([
    "int8", "int16", "int32", "int64", "uint32", "boolean", "uuid", "uvarint", "string",
    "nullable_string", "compact_string", "compact_nullable_string", "bytes_", "nullable_bytes",
    "compact_bytes", "compact_nullable_bytes", "array_length", "compact_array_length",
    "tagged_fields",
]))
def test_random_bytes_raise_only_decode_error(raw: bytes, method: str) -> None:
    try:
        getattr(Reader(raw), method)()
    except DecodeError:
        pass
