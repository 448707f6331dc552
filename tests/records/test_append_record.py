"""``append_record`` in ``client/records/_codec.c`` (the producer's C encoder) writes the same
bytes as the reference encoder ``client.records.record.encode_record``, and only when they fit."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from client.records.record import encode_record

_codec = pytest.importorskip("client.records._codec", reason="the C extension is not built")


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.none(), st.binary(max_size=300)), st.binary(max_size=20000), st.integers(0, 1 << 45),
       st.integers(0, 1 << 31), st.binary(max_size=30))
def test_same_bytes_as_python(key, value, tsd, delta, prefix):
    want = encode_record(delta, tsd, key, value, None)
    buf = bytearray(prefix)
    assert _codec.append_record(buf, len(prefix) + len(want), tsd, delta, key, value) is True
    assert bytes(buf) == prefix + want
    # one byte short of the capacity: refused, nothing written
    buf = bytearray(prefix)
    assert _codec.append_record(buf, len(prefix) + len(want) - 1, tsd, delta, key, memoryview(value)) is False
    assert bytes(buf) == prefix


def test_bad_types_raise_type_error():
    with pytest.raises(TypeError):
        _codec.append_record(bytearray(), 100, 0, 0, None, "text")
    with pytest.raises(TypeError):
        _codec.append_record(bytearray(), 100, 0, 0, 5, b"v")
    with pytest.raises(TypeError):
        _codec.append_record(b"not a bytearray", 100, 0, 0, None, b"v")
