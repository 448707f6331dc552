"""TimeIndex (broker/storage/time_index.py): the .timeindex file."""

from __future__ import annotations

import bisect
import os
import random
import struct
import tempfile

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from broker.storage.errors import CorruptIndexError, IndexFullError, IndexOffsetOverflowError, InvalidOffsetError
from broker.storage.index import KEY, VALUE
from broker.storage.time_index import TimeIndex, TimestampOffset

from .conftest import file_digest, read_time_index_file

BASE = 700


def make_index(path, entries, max_entries=None):
    idx = TimeIndex(str(path), BASE, max_index_size=12 * (max_entries or len(entries) + 10))
    for ts, off in entries:
        idx.maybe_append(ts, off)
    return idx


def test_entry_layout_is_int64_timestamp_then_int32_relative_offset(tmp_path) -> None:
    """The bytes on disk are big-endian (timestamp, offset - base), 12 per entry."""
    path = tmp_path / "00000000000000000700.timeindex"
    idx = make_index(path, [(1_700_000_000_000, BASE + 4), (2**62, BASE + 2**31 - 1)])
    idx.close()
    assert path.read_bytes() == struct.pack(">qiqi", 1_700_000_000_000, 4, 2**62, 2**31 - 1)
    assert read_time_index_file(str(path), BASE) == [(1_700_000_000_000, BASE + 4), (2**62, BASE + 2**31 - 1)]


def test_empty_index_last_entry_and_lookup(tmp_path) -> None:
    """An empty time index has last_entry (-1, base) and lookup returns (-1, base)."""
    idx = make_index(tmp_path / "t", [])
    assert idx.last_entry == (-1, BASE)
    assert idx.lookup(10**12) == (-1, BASE)
    assert isinstance(idx.lookup(0), TimestampOffset)
    idx.close()


def test_lookup_below_exact_between_above(tmp_path) -> None:
    """lookup(t): (-1, base) below the first timestamp, the entry on a match, the lower
    neighbour between, the last above."""
    idx = make_index(tmp_path / "t", [(100, BASE + 1), (200, BASE + 5), (300, BASE + 9)])
    assert idx.lookup(99) == (-1, BASE)
    assert idx.lookup(100) == (100, BASE + 1)
    assert idx.lookup(250) == (200, BASE + 5)
    assert idx.lookup(300) == (300, BASE + 9)
    assert idx.lookup(10**15) == (300, BASE + 9)
    idx.close()


def test_check_09_non_increasing_timestamp_is_ignored(tmp_path) -> None:
    """A timestamp equal to the last one writes nothing (even with a larger offset)."""
    path = str(tmp_path / "t")
    idx = make_index(path, [(100, BASE + 1), (200, BASE + 5)])
    idx.flush()
    before = file_digest(path)
    idx.maybe_append(200, BASE + 5)
    idx.maybe_append(200, BASE + 8)
    assert idx.entries == 2 and idx.last_entry == (200, BASE + 5)
    idx.flush()
    assert file_digest(path) == before
    idx.close()


def test_check_09_decreasing_timestamp_raises_and_writes_nothing(tmp_path) -> None:
    """A timestamp below the last one raises (ValueError; Kafka's IllegalStateException)."""
    path = str(tmp_path / "t")
    idx = make_index(path, [(100, BASE + 1), (200, BASE + 5)])
    idx.flush()
    before = file_digest(path)
    with pytest.raises(ValueError):
        idx.maybe_append(199, BASE + 6)
    assert idx.entries == 2 and idx.last_entry == (200, BASE + 5)
    idx.flush()
    assert file_digest(path) == before
    idx.close()


def test_check_09_decreasing_offset_raises_and_writes_nothing(tmp_path) -> None:
    """An offset below the last entry's raises InvalidOffsetError, even with a larger ts."""
    path = str(tmp_path / "t")
    idx = make_index(path, [(100, BASE + 1), (200, BASE + 5)])
    idx.flush()
    before = file_digest(path)
    with pytest.raises(InvalidOffsetError):
        idx.maybe_append(300, BASE + 4)
    assert idx.entries == 2 and idx.last_entry == (200, BASE + 5)
    idx.flush()
    assert file_digest(path) == before
    idx.close()


def test_check_09_full_at_max_entries_minus_one(tmp_path) -> None:
    """is_full at max_entries - 1: a normal append then raises IndexFullError, but the final
    entry (skip_full_check, as at roll/close) still fits; after that nothing fits."""
    path = str(tmp_path / "t")
    idx = TimeIndex(path, BASE, max_index_size=12 * 4)
    for i in range(3):
        assert not idx.is_full()
        idx.maybe_append(100 * (i + 1), BASE + i)
    assert idx.entries == 3 and idx.max_entries == 4 and idx.is_full()
    with pytest.raises(IndexFullError):
        idx.maybe_append(400, BASE + 3)
    assert idx.entries == 3
    idx.maybe_append(400, BASE + 3, skip_full_check=True)
    assert idx.entries == 4 and idx.last_entry == (400, BASE + 3)
    with pytest.raises(IndexFullError):
        idx.maybe_append(500, BASE + 4, skip_full_check=True)
    idx.maybe_append(400, BASE + 3, skip_full_check=True)  # same entry again: a no-op
    assert idx.entries == 4
    idx.close()
    assert os.path.getsize(path) == 48


def test_full_check_comes_before_the_timestamp_check(tmp_path) -> None:
    """A full index raises IndexFullError even for an append that would be ignored (Kafka)."""
    idx = TimeIndex(str(tmp_path / "t"), BASE, max_index_size=12 * 2)
    idx.maybe_append(100, BASE)
    assert idx.is_full()
    with pytest.raises(IndexFullError):
        idx.maybe_append(100, BASE)
    idx.close()


def test_relative_offset_overflow_raises_and_writes_nothing(tmp_path) -> None:
    """An offset not storable relative to the base raises IndexOffsetOverflowError."""
    path = str(tmp_path / "t")
    idx = make_index(path, [])
    before = file_digest(path)
    with pytest.raises(IndexOffsetOverflowError):
        idx.maybe_append(100, BASE + 2**31)
    with pytest.raises(IndexOffsetOverflowError):
        idx.maybe_append(100, BASE - 1)
    assert idx.entries == 0 and idx.last_entry == (-1, BASE)
    assert file_digest(path) == before
    idx.close()


@pytest.mark.parametrize("target,kept", [(BASE, 0), (BASE + 1, 0), (BASE + 2, 1), (BASE + 5, 1), (BASE + 6, 2), (BASE + 9, 2), (BASE + 10, 3)])
def test_truncate_to_is_by_offset(tmp_path, target, kept) -> None:
    """truncate_to(o) keeps the entries whose offset < o and reloads the last entry."""
    ents = [(100, BASE + 1), (200, BASE + 5), (300, BASE + 9)]
    idx = make_index(tmp_path / "t", ents)
    idx.truncate_to(target)
    assert idx.entries == kept
    assert idx.last_entry == (ents[kept - 1] if kept else (-1, BASE))
    idx.maybe_append(1000, BASE + 20)  # appends continue after the cut
    assert idx.entries == kept + 1
    idx.close()


def test_sanity_check_rejects_last_timestamp_below_first(tmp_path) -> None:
    """Kafka's check: the last timestamp must not be below the first (a zero-padded tail
    reads as timestamp 0, which is how an untrimmed file gets caught)."""
    path = tmp_path / "t"
    path.write_bytes(struct.pack(">qi", 100, 1) + b"\0" * 12)
    idx = TimeIndex(str(path), BASE, writable=False)
    assert idx.entries == 2 and idx.last_entry == (0, BASE)
    with pytest.raises(CorruptIndexError):
        idx.sanity_check()
    idx.close()


def test_verify_detects_decreasing_offsets(tmp_path) -> None:
    """verify() rejects an offset decrease that sanity_check does not look at."""
    path = tmp_path / "t"
    path.write_bytes(struct.pack(">qiqiqi", 100, 5, 200, 3, 300, 6))
    idx = TimeIndex(str(path), BASE, writable=False)
    idx.sanity_check()
    with pytest.raises(CorruptIndexError):
        idx.verify()
    idx.close()


# -- property test against a sorted-list model ---------------------------------------------


def _model_entries(n: int, seed: int, max_gap: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    ts, off, out = rng.randrange(0, 2**40), BASE + rng.randrange(0, 3), []
    for _ in range(n):
        out.append((ts, off))
        ts += rng.randint(1, max_gap)
        off += rng.randint(1, 50)
    return out


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 2000),
    seed=st.integers(0, 2**32 - 1),
    max_gap=st.sampled_from([1, 2, 10, 10**6]),
    data=st.data(),
)
@example(n=683, seed=1, max_gap=2, data=None)
@example(n=684, seed=2, max_gap=1, data=None)
@example(n=685, seed=3, max_gap=10, data=None)
@example(n=1500, seed=4, max_gap=2, data=None)
def test_lookup_and_bounds_match_bisect_model(n, seed, max_gap, data) -> None:
    """lookup and the slot searches (by timestamp and by offset) equal bisect over the
    entries, for every entry, its neighbours, below the first and above the last, on both
    sides of the warm boundary (682 entries)."""
    ents = _model_entries(n, seed, max_gap)
    tss = [t for t, _ in ents]
    offs = [o for _, o in ents]
    with tempfile.TemporaryDirectory() as d:
        idx = make_index(os.path.join(d, "t"), ents)
        assert idx.entries == n
        targets = {tss[0] - 1, tss[0] - 10**6, tss[-1] + 1, tss[-1] + 10**9}
        for t in tss:
            targets.update((t - 1, t, t + 1))
        if data is not None:
            targets.update(data.draw(st.lists(st.integers(tss[0] - 5, tss[-1] + 5), max_size=50)))
        for t in targets:
            i = bisect.bisect_right(tss, t) - 1
            assert idx.lookup(t) == (ents[i] if i >= 0 else (-1, BASE)), t
            assert idx.largest_lower_bound_slot_for(t, KEY) == i
            j = bisect.bisect_left(tss, t)
            assert idx.smallest_upper_bound_slot_for(t, KEY) == (j if j < n else -1)
        for o in offs[::5] + [offs[-1]]:
            for t in (o - 1, o, o + 1):
                i = bisect.bisect_right(offs, t) - 1
                j = bisect.bisect_left(offs, t)
                assert idx.largest_lower_bound_slot_for(t, VALUE) == i
                assert idx.smallest_upper_bound_slot_for(t, VALUE) == (j if j < n else -1)
        idx.close()


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 1200), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_truncate_to_matches_model(n, seed, data) -> None:
    """truncate_to(o) leaves exactly the model's entries with offset < o, on disk after close."""
    ents = _model_entries(n, seed, 5)
    offs = [o for _, o in ents]
    hi = offs[-1] + 2 if offs else BASE + 5
    target = data.draw(st.one_of(st.integers(BASE - 2, hi), st.sampled_from(offs or [BASE])))
    kept = [e for e in ents if e[1] < target]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t")
        idx = make_index(path, ents)
        idx.truncate_to(target)
        assert idx.entries == len(kept)
        assert idx.last_entry == (kept[-1] if kept else (-1, BASE))
        kept_ts = [t for t, _ in kept]
        for t in data.draw(st.lists(st.integers(0, 2**41), max_size=20)) + kept_ts[-3:]:
            i = bisect.bisect_right(kept_ts, t) - 1
            assert idx.lookup(t) == (kept[i] if i >= 0 else (-1, BASE))
        idx.close()
        assert read_time_index_file(path, BASE) == kept
