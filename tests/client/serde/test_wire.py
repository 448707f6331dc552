"""client/serde/wire.py: Confluent's framing and Protobuf message indexes, by hand-made bytes
and as properties (decode(encode(x)) == x; random bytes raise only SerdeError)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from client.serde.wire import SerdeError, decode_indexes, encode_indexes, frame, unframe


def test_frame_layout() -> None:
    assert frame(258, b"xy") == b"\x00\x00\x00\x01\x02xy"
    schema_id, rest = unframe(b"\x00\x00\x00\x01\x02xy")
    assert schema_id == 258 and bytes(rest) == b"xy"
    with pytest.raises(SerdeError):
        unframe(b"\x01\x00\x00\x00\x01")  # magic 1
    with pytest.raises(SerdeError):
        unframe(b"\x00\x00")


def test_index_layout() -> None:
    assert encode_indexes([0]) == b"\x00"  # the common case: one byte
    assert encode_indexes([1]) == b"\x02\x02"  # count 1, index 1, zigzag
    assert encode_indexes([0, 2]) == b"\x04\x00\x04"
    assert decode_indexes(memoryview(b"\x00rest")) == ([0], memoryview(b"rest"))


@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=8), st.binary(max_size=16))
def test_indexes_round_trip(path: list[int], payload: bytes) -> None:
    got, rest = decode_indexes(memoryview(encode_indexes(path) + payload))
    assert got == path and bytes(rest) == payload


@given(st.binary(max_size=40))
def test_random_bytes_raise_only_serde_error(data: bytes) -> None:
    try:
        _, rest = unframe(data)
        decode_indexes(rest)
    except SerdeError:
        pass
