"""OffsetMap (broker/storage/cleaner/offset_map.py): last offset per key, bounded memory."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.storage.cleaner.offset_map import ENTRY_COST, OffsetMap


@given(st.lists(st.binary(max_size=40), max_size=200))
def test_map_gives_each_keys_last_offset(keys: list[bytes]) -> None:
    m = OffsetMap(1 << 22)
    for off, k in enumerate(keys):
        assert m.put(k, off)
    expected = {k: off for off, k in enumerate(keys)}
    assert all(m.get(k) == o for k, o in expected.items())
    assert m.get(b"absent" * 10) == -1 and len(m) == len(expected)


def test_map_is_full_at_its_memory_budget() -> None:
    m = OffsetMap(100 * (ENTRY_COST + 3), load_factor=1.0)
    for i in range(100):
        assert m.put(b"%03d" % i, i)
    assert not m.put(b"new", 100)  # a new key does not fit
    assert m.put(b"007", 101) and m.get(b"007") == 101  # an existing key is updated
    assert 0.99 < m.utilization <= 1.0


def test_long_keys_are_hashed_short_keys_kept_exact() -> None:
    m = OffsetMap(1 << 20)
    m.put(b"x" * 100, 1)
    m.put(b"x" * 16, 2)
    assert m.get(b"x" * 100) == 1 and m.get(b"x" * 16) == 2 and m.get(b"x" * 101) == -1


def test_too_small_a_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="dedupe.buffer.size"):
        OffsetMap(64)
