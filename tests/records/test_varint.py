"""Tests for ``client/records/varint.py``: the zigzag varints/varlongs inside records."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

with warnings.catch_warnings():
    # kafka-python loads its protocol schemas with deprecated importlib.resources calls on import.
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record.util import encode_varint as kp_encode_varint

from client.records.varint import VarintError, read_varint, size_of_varint, write_varint

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

int64s = st.integers(INT64_MIN, INT64_MAX)


def encode(value: int) -> bytes:
    out = bytearray()
    write_varint(out, value)
    return bytes(out)


# (value, encoding) pairs worked out by hand from the zigzag + base-128 rules.
KNOWN = [
    (0, b"\x00"),
    (-1, b"\x01"),
    (1, b"\x02"),
    (-64, b"\x7f"),  # zigzag 127: the largest one-byte value
    (64, b"\x80\x01"),  # zigzag 128: the smallest two-byte value
    (150, b"\xac\x02"),  # zigzag 300, protobuf's documentation example
    (INT32_MAX, b"\xfe\xff\xff\xff\x0f"),
    (INT32_MIN, b"\xff\xff\xff\xff\x0f"),
    (INT64_MAX, b"\xfe" + b"\xff" * 8 + b"\x01"),
    (INT64_MIN, b"\xff" * 9 + b"\x01"),
]


@pytest.mark.parametrize("value,expected", KNOWN, ids=[str(v) for v, _ in KNOWN])
def test_known_encodings(value: int, expected: bytes) -> None:
    """Edge values encode to the exact bytes the zigzag/base-128 rules give, and decode back."""
    assert encode(value) == expected
    assert read_varint(expected, 0) == (value, len(expected))
    assert size_of_varint(value) == len(expected)


@pytest.mark.parametrize("value", [0, -1, 1, INT32_MIN, INT32_MAX, INT64_MIN, INT64_MAX])
def test_edge_values_round_trip_inside_a_larger_buffer(value: int) -> None:
    """Decoding at a non-zero position returns the value and the position just after it."""
    buf = b"\xaa\xbb" + encode(value) + b"\xcc"
    decoded, pos = read_varint(buf, 2)
    assert decoded == value
    assert pos == len(buf) - 1
    assert read_varint(memoryview(buf), 2) == (value, pos)
    assert read_varint(bytearray(buf), 2) == (value, pos)


@settings(max_examples=300)
@given(int64s)
def test_round_trip_and_size(value: int) -> None:
    """decode(encode(x)) == x for any int64; size_of_varint is the length written."""
    data = encode(value)
    assert read_varint(data, 0) == (value, len(data))
    assert size_of_varint(value) == len(data)
    assert 1 <= len(data) <= 10


@settings(max_examples=300)
@given(int64s)
def test_encoding_matches_kafka_python(value: int) -> None:
    """Our bytes equal kafka-python's ``encode_varint`` (an independent implementation)."""
    theirs = bytearray()
    kp_encode_varint(value, theirs.append)
    assert encode(value) == bytes(theirs)


@settings(max_examples=100)
@given(st.lists(int64s, max_size=20))
def test_concatenated_varints_decode_in_order(values: list[int]) -> None:
    """A run of varints decodes value by value, each read ending where the next starts."""
    buf = bytearray()
    for v in values:
        write_varint(buf, v)
    pos = 0
    decoded = []
    while pos < len(buf):
        v, pos = read_varint(buf, pos)
        decoded.append(v)
    assert decoded == values
    assert pos == len(buf)


def test_empty_buffer_and_position_past_end_raise() -> None:
    """Reading where there are no bytes raises VarintError, not IndexError."""
    with pytest.raises(VarintError):
        read_varint(b"", 0)
    with pytest.raises(VarintError):
        read_varint(b"\x02", 1)


@pytest.mark.parametrize("value", [64, 150, INT32_MIN, INT32_MAX, INT64_MIN, INT64_MAX])
def test_every_truncation_raises(value: int) -> None:
    """Each proper prefix of a multi-byte encoding is incomplete: VarintError."""
    data = encode(value)
    assert len(data) > 1
    for cut in range(1, len(data)):
        with pytest.raises(VarintError):
            read_varint(data[:cut], 0)


def test_ten_bytes_is_the_limit() -> None:
    """A 10-byte varint decodes; an 11th continuation byte raises VarintError."""
    ten = b"\x80" * 9 + b"\x00"  # zero padded out to ten bytes: legal, if wasteful
    assert read_varint(ten, 0) == (0, 10)
    with pytest.raises(VarintError):
        read_varint(b"\x80" * 10 + b"\x00", 0)
    with pytest.raises(VarintError):
        read_varint(b"\xff" * 11, 0)
    with pytest.raises(VarintError):
        read_varint(b"\xff" * 64, 0)  # a long run is cut off at the limit, not read to the end


def test_varint_error_is_a_value_error() -> None:
    """Callers that catch ValueError (malformed input in general) also catch VarintError."""
    assert issubclass(VarintError, ValueError)


@settings(max_examples=200)
@given(st.binary(max_size=16))
def test_random_bytes_decode_or_raise_varint_error(data: bytes) -> None:
    """Arbitrary bytes either decode within the 64-bit range or raise VarintError."""
    try:
        value, pos = read_varint(data, 0)
    except VarintError:
        return
    assert INT64_MIN <= value <= INT64_MAX
    assert 1 <= pos <= min(len(data), 10)
