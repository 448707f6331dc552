"""OffsetIndex (broker/storage/offset_index.py): the .index file."""

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
from broker.storage.offset_index import OffsetIndex, OffsetPosition

from .conftest import file_digest, read_offset_index_file

BASE = 500


def make_index(path, entries, max_entries=None):
    idx = OffsetIndex(str(path), BASE, max_index_size=8 * (max_entries or len(entries) + 10))
    for off, pos in entries:
        idx.append(off, pos)
    return idx


def test_entry_layout_is_int32_relative_offset_then_int32_position(tmp_path) -> None:
    """The bytes on disk are big-endian (offset - base, position), 8 per entry."""
    path = tmp_path / "00000000000000000500.index"
    idx = make_index(path, [(BASE + 3, 0), (BASE + 70000, 123456), (BASE + 2**31 - 1, 2**31 - 1)])
    idx.close()
    data = path.read_bytes()
    assert data == struct.pack(">iiiiii", 3, 0, 70000, 123456, 2**31 - 1, 2**31 - 1)
    assert read_offset_index_file(str(path), BASE)[1] == (BASE + 70000, 123456)


def test_check_07_lookup_below_exact_between_above(tmp_path) -> None:
    """lookup: (base, 0) below the first entry, the entry on an exact match, the lower
    neighbour between entries, the last entry above the last."""
    idx = make_index(tmp_path / "i", [(BASE + 10, 100), (BASE + 20, 200), (BASE + 30, 300)])
    assert idx.lookup(BASE) == (BASE, 0)
    assert idx.lookup(BASE + 9) == (BASE, 0)
    assert idx.lookup(0) == (BASE, 0)
    assert idx.lookup(BASE + 10) == (BASE + 10, 100)
    assert idx.lookup(BASE + 25) == (BASE + 20, 200)
    assert idx.lookup(BASE + 29) == (BASE + 20, 200)
    assert idx.lookup(BASE + 30) == (BASE + 30, 300)
    assert idx.lookup(10**15) == (BASE + 30, 300)
    assert isinstance(idx.lookup(BASE + 25), OffsetPosition)
    idx.close()


def test_check_07_lookup_on_both_sides_of_the_warm_boundary(tmp_path) -> None:
    """With 3000 entries (> 1025) every key and every gap resolves correctly in the cold part
    (below entry[first_hot]) and in the warm part (the last 1024 entries)."""
    n = 3000
    ents = [(BASE + 3 * i + 1, 17 * i) for i in range(n)]
    idx = make_index(tmp_path / "i", ents)
    first_hot = n - 1 - 1024
    for i in (0, 1, 500, first_hot - 1, first_hot, first_hot + 1, n - 2, n - 1):
        off, pos = ents[i]
        assert idx.lookup(off) == (off, pos)
        assert idx.lookup(off + 1) == (off, pos)
        assert idx.lookup(off + 2) == (off, pos)
        assert idx.lookup(off - 1) == (ents[i - 1] if i else (BASE, 0))
    idx.close()


def test_check_08_append_non_increasing_offset_raises_and_writes_nothing(tmp_path) -> None:
    """An offset equal to or below the last one raises InvalidOffsetError; entry count and
    file bytes are unchanged."""
    path = str(tmp_path / "i")
    idx = make_index(path, [(BASE + 5, 0), (BASE + 9, 40)])
    idx.flush()
    before = file_digest(path)
    for bad in (BASE + 9, BASE + 8, BASE):
        with pytest.raises(InvalidOffsetError):
            idx.append(bad, 80)
    assert idx.entries == 2 and idx.last_offset == BASE + 9
    idx.flush()
    assert file_digest(path) == before
    idx.append(BASE + 10, 80)
    assert idx.entries == 3
    idx.close()


def test_first_append_may_use_the_base_offset(tmp_path) -> None:
    """The first entry is accepted even at the base offset (the check applies once entries > 0)."""
    idx = make_index(tmp_path / "i", [(BASE, 0)])
    assert idx.entries == 1 and idx.lookup(BASE) == (BASE, 0)
    idx.close()


def test_check_08_append_to_full_index_raises(tmp_path) -> None:
    """Appending to a full index raises IndexFullError and writes nothing."""
    path = str(tmp_path / "i")
    idx = make_index(path, [(BASE + i, i) for i in range(4)], max_entries=4)
    assert idx.is_full() and idx.max_entries == 4
    before = file_digest(path)
    with pytest.raises(IndexFullError):
        idx.append(BASE + 4, 4)
    assert idx.entries == 4 and file_digest(path) == before
    idx.close()
    assert os.path.getsize(path) == 32


def test_append_relative_offset_overflow_raises_and_writes_nothing(tmp_path) -> None:
    """offset - base > 2^31-1 (or < 0 on the first entry) raises IndexOffsetOverflowError."""
    path = str(tmp_path / "i")
    idx = make_index(path, [])
    before = file_digest(path)
    with pytest.raises(IndexOffsetOverflowError):
        idx.append(BASE - 1, 0)
    with pytest.raises(IndexOffsetOverflowError):
        idx.append(BASE + 2**31, 0)
    assert idx.entries == 0 and file_digest(path) == before
    idx.append(BASE + 2**31 - 1, 0)
    with pytest.raises(IndexOffsetOverflowError):
        idx.append(BASE + 2**31, 8)
    assert idx.entries == 1 and idx.last_offset == BASE + 2**31 - 1
    idx.close()


def test_entry_out_of_range_raises_index_error(tmp_path) -> None:
    """entry(n) outside [0, entries) raises IndexError instead of reading padding."""
    idx = make_index(tmp_path / "i", [(BASE + 1, 0)])
    assert idx.entry(0) == (BASE + 1, 0)
    for n in (-1, 1, 5):
        with pytest.raises(IndexError):
            idx.entry(n)
    idx.close()


@pytest.mark.parametrize(
    "target,kept",
    [(BASE, 0), (BASE + 10, 0), (BASE + 11, 1), (BASE + 20, 1), (BASE + 25, 2), (BASE + 30, 2), (BASE + 31, 3)],
)
def test_truncate_to_removes_entries_at_or_above(tmp_path, target, kept) -> None:
    """truncate_to(o) keeps exactly the entries with offset < o; appends continue after it."""
    ents = [(BASE + 10, 100), (BASE + 20, 200), (BASE + 30, 300)]
    idx = make_index(tmp_path / "i", ents)
    idx.truncate_to(target)
    assert idx.entries == kept
    assert [tuple(idx.entry(i)) for i in range(kept)] == ents[:kept]
    assert idx.last_offset == (ents[kept - 1][0] if kept else BASE)
    idx.append(BASE + 40, 400)
    assert idx.lookup(BASE + 39) == (ents[kept - 1] if kept else (BASE, 0))
    idx.close()


def test_fetch_upper_bound_offset(tmp_path) -> None:
    """First entry whose position >= start.position + size, or None."""
    idx = make_index(tmp_path / "i", [(BASE + 10, 100), (BASE + 20, 200), (BASE + 30, 300)])
    start = OffsetPosition(BASE, 0)
    assert idx.fetch_upper_bound_offset(start, 50) == (BASE + 10, 100)
    assert idx.fetch_upper_bound_offset(start, 100) == (BASE + 10, 100)
    assert idx.fetch_upper_bound_offset(start, 101) == (BASE + 20, 200)
    assert idx.fetch_upper_bound_offset(OffsetPosition(BASE + 20, 200), 100) == (BASE + 30, 300)
    assert idx.fetch_upper_bound_offset(OffsetPosition(BASE + 20, 200), 101) is None
    idx.close()


def test_verify_detects_disordered_entries_and_positions_past_the_log(tmp_path) -> None:
    """verify() (stricter than Kafka) rejects decreasing keys/positions and positions past
    the .log size; sanity_check, which looks only at the last entry, lets the first through."""
    path = tmp_path / "i"
    path.write_bytes(struct.pack(">iiii", 5, 100, 3, 50))
    idx = OffsetIndex(str(path), BASE, writable=False)
    idx.sanity_check()
    with pytest.raises(CorruptIndexError):
        idx.verify()
    idx.close()
    path.write_bytes(struct.pack(">iiii", 3, 0, 5, 100))
    idx = OffsetIndex(str(path), BASE, writable=False)
    idx.verify(log_size=101)
    with pytest.raises(CorruptIndexError):
        idx.verify(log_size=100)
    idx.close()


# -- property test against a sorted-list model ---------------------------------------------


def _model_entries(n: int, seed: int, max_gap: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    off, pos, out = BASE + rng.randrange(0, 3), 0, []
    for _ in range(n):
        out.append((off, pos))
        off += rng.randint(1, max_gap)
        pos += rng.randint(1, 5000)
    return out


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 2600),
    seed=st.integers(0, 2**32 - 1),
    max_gap=st.sampled_from([1, 2, 7, 1000]),
    data=st.data(),
)
@example(n=1025, seed=1, max_gap=2, data=None)
@example(n=1026, seed=2, max_gap=2, data=None)
@example(n=1027, seed=3, max_gap=1, data=None)
@example(n=2049, seed=4, max_gap=7, data=None)
def test_lookup_and_bounds_match_bisect_model(n, seed, max_gap, data) -> None:
    """lookup, largest_lower_bound / smallest_upper_bound slots (by offset and by position)
    and fetch_upper_bound_offset equal bisect over the sorted entries, for every entry, its
    neighbours, below the first and above the last, on both sides of the warm boundary."""
    ents = _model_entries(n, seed, max_gap)
    offs = [o for o, _ in ents]
    poss = [p for _, p in ents]
    with tempfile.TemporaryDirectory() as d:
        idx = make_index(os.path.join(d, "i"), ents)
        targets = {offs[0] - 1, offs[0] - 1000, offs[-1] + 1, offs[-1] + 10**9}
        for o in offs:
            targets.update((o - 1, o, o + 1))
        if data is not None:
            targets.update(data.draw(st.lists(st.integers(offs[0] - 5, offs[-1] + 5), max_size=50)))
        for t in targets:
            i = bisect.bisect_right(offs, t) - 1
            assert idx.lookup(t) == (ents[i] if i >= 0 else (BASE, 0)), t
            assert idx.largest_lower_bound_slot_for(t, KEY) == i
            j = bisect.bisect_left(offs, t)
            assert idx.smallest_upper_bound_slot_for(t, KEY) == (j if j < n else -1), t
        for p in set(poss[::7] + [poss[-1]]):
            for t in (p - 1, p, p + 1):
                i = bisect.bisect_right(poss, t) - 1
                j = bisect.bisect_left(poss, t)
                assert idx.largest_lower_bound_slot_for(t, VALUE) == i
                assert idx.smallest_upper_bound_slot_for(t, VALUE) == (j if j < n else -1)
                up = idx.fetch_upper_bound_offset(OffsetPosition(0, t), 0)
                assert up == (ents[j] if j < n else None)
        idx.close()


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 1500), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_truncate_to_matches_model(n, seed, data) -> None:
    """truncate_to(o) leaves exactly the model's entries with offset < o (on disk too, after
    close), and lookups afterwards agree with the truncated model."""
    ents = _model_entries(n, seed, 3)
    offs = [o for o, _ in ents]
    hi = offs[-1] + 2 if offs else BASE + 5
    target = data.draw(st.one_of(st.integers(BASE - 2, hi), st.sampled_from(offs or [BASE])))
    kept = [e for e in ents if e[0] < target]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "i")
        idx = make_index(path, ents)
        idx.truncate_to(target)
        assert idx.entries == len(kept)
        assert idx.last_offset == (kept[-1][0] if kept else BASE)
        kept_offs = [o for o, _ in kept]
        for t in data.draw(st.lists(st.integers(BASE - 1, hi), max_size=20)):
            i = bisect.bisect_right(kept_offs, t) - 1
            assert idx.lookup(t) == (kept[i] if i >= 0 else (BASE, 0))
        idx.close()
        assert read_offset_index_file(path, BASE) == kept
