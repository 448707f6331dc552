"""AbstractIndex behaviour shared by OffsetIndex and TimeIndex (broker/storage/index.py):
file life cycle (preallocate, trim, resize, reset), warm/cold search, read-only mode, LazyIndex."""

from __future__ import annotations

import os
import struct

import pytest

from broker.storage.errors import CorruptIndexError, IndexFullError, IndexOffsetOverflowError
from broker.storage.index import KEY, VALUE, WARM_SECTION_BYTES, LazyIndex
from broker.storage.offset_index import OffsetIndex
from broker.storage.time_index import TimeIndex

from .conftest import file_digest

BASE = 1000


def fill(idx, n: int, start: int = 0) -> None:
    """Append entries start..n-1: key 10*i (+base for offsets), value 100*i."""
    for i in range(start, n):
        if isinstance(idx, OffsetIndex):
            idx.append(BASE + 2 * i, 100 * i)
        else:
            idx.maybe_append(10_000 + 10 * i, BASE + 2 * i)


def keys(idx) -> list[tuple[int, int]]:
    return [tuple(idx.entry(i)) for i in range(idx.entries)]


def expected(cls, n: int) -> list[tuple[int, int]]:
    if issubclass(cls, OffsetIndex):
        return [(BASE + 2 * i, 100 * i) for i in range(n)]
    return [(10_000 + 10 * i, BASE + 2 * i) for i in range(n)]


index_classes = pytest.mark.parametrize("cls", [OffsetIndex, TimeIndex], ids=["offset", "time"])


@index_classes
def test_check_02_new_index_is_preallocated_and_empty(tmp_path, cls) -> None:
    """A new file is roundDown(max_index_size, entry size) zero bytes and has 0 entries."""
    path = str(tmp_path / "x")
    idx = cls(path, BASE, max_index_size=1001)
    size = 1001 - 1001 % cls.ENTRY_SIZE
    assert os.path.getsize(path) == size == idx.length
    assert open(path, "rb").read() == b"\0" * size
    assert idx.entries == 0
    assert idx.max_entries == size // cls.ENTRY_SIZE
    idx.close()


@index_classes
def test_new_index_below_one_entry_raises_and_leaves_no_file(tmp_path, cls) -> None:
    """max_index_size smaller than one entry is rejected and the file is removed."""
    path = tmp_path / "x"
    with pytest.raises(ValueError):
        cls(str(path), BASE, max_index_size=cls.ENTRY_SIZE - 1)
    assert not path.exists()


@index_classes
def test_existing_file_is_taken_at_face_value(tmp_path, cls) -> None:
    """An existing untrimmed file loads with entries = length // entry size (Kafka)."""
    path = tmp_path / "x"
    path.write_bytes(b"\0" * (5 * cls.ENTRY_SIZE))
    idx = cls(str(path), BASE, max_index_size=4096)
    assert idx.entries == 5 == idx.max_entries
    assert idx.is_full()
    idx.close()
    assert path.stat().st_size == 5 * cls.ENTRY_SIZE


@index_classes
def test_check_03_close_trims_to_entries_and_reopen_keeps_them(tmp_path, cls) -> None:
    """close() trims the file to exactly entries * entry size; reopening reads the same entries."""
    path = str(tmp_path / "x")
    idx = cls(path, BASE, max_index_size=4096)
    fill(idx, 7)
    idx.close()
    assert idx.closed
    assert os.path.getsize(path) == 7 * cls.ENTRY_SIZE
    idx2 = cls(path, BASE, max_index_size=4096)
    assert idx2.entries == 7 and keys(idx2) == expected(cls, 7)
    idx2.close()
    idx2.close()  # idempotent
    assert os.path.getsize(path) == 7 * cls.ENTRY_SIZE


@index_classes
def test_close_handler_does_not_trim(tmp_path, cls) -> None:
    """close_handler() unmaps and closes without touching the file length."""
    path = str(tmp_path / "x")
    idx = cls(path, BASE, max_index_size=4096)
    fill(idx, 3)
    idx.close_handler()
    assert os.path.getsize(path) == 4096 - 4096 % cls.ENTRY_SIZE


@index_classes
def test_resize_rounds_down_keeps_entries_and_reports_change(tmp_path, cls) -> None:
    """resize() rounds down to the entry size, remaps, keeps entries; False when unchanged."""
    path = str(tmp_path / "x")
    idx = cls(path, BASE, max_index_size=4096)
    fill(idx, 4)
    new = 100 * cls.ENTRY_SIZE + cls.ENTRY_SIZE - 1
    assert idx.resize(new) is True
    assert idx.length == os.path.getsize(path) == 100 * cls.ENTRY_SIZE
    assert idx.max_entries == 100
    assert idx.resize(100 * cls.ENTRY_SIZE) is False
    assert keys(idx) == expected(cls, 4)
    fill(idx, 6, start=4)  # the remapped file is writable
    assert keys(idx) == expected(cls, 6)
    idx.close()
    assert os.path.getsize(path) == 6 * cls.ENTRY_SIZE


@index_classes
def test_resize_below_entries_drops_the_tail(tmp_path, cls) -> None:
    """Shrinking below the valid size drops entries past the new end and reloads the last one."""
    idx = cls(str(tmp_path / "x"), BASE, max_index_size=4096)
    fill(idx, 6)
    idx.resize(3 * cls.ENTRY_SIZE)
    assert idx.entries == 3 and keys(idx) == expected(cls, 3)
    if issubclass(cls, OffsetIndex):
        assert idx.last_offset == BASE + 4
    else:
        assert idx.last_entry == expected(cls, 3)[-1]
    idx.close()


@index_classes
def test_reset_drops_entries_and_grows_to_max_size(tmp_path, cls) -> None:
    """reset() (before a rebuild) empties the index and preallocates it again."""
    path = str(tmp_path / "x")
    idx = cls(path, BASE, max_index_size=4096)
    fill(idx, 5)
    idx.trim_to_valid_size()
    assert os.path.getsize(path) == 5 * cls.ENTRY_SIZE
    idx.reset()
    assert idx.entries == 0
    assert os.path.getsize(path) == 4096 - 4096 % cls.ENTRY_SIZE
    fill(idx, 2)
    assert keys(idx) == expected(cls, 2)
    idx.close()


@index_classes
def test_zero_length_file_opens_and_can_grow(tmp_path, cls) -> None:
    """A trimmed empty index is 0 bytes (mmap cannot map it): it opens, answers lookups with
    the 'nothing found' value, is full, and works again after resize."""
    path = tmp_path / "x"
    path.write_bytes(b"")
    idx = cls(str(path), BASE, max_index_size=4096)
    assert idx.entries == 0 and idx.max_entries == 0 and idx.is_full()
    if cls is OffsetIndex:
        assert idx.lookup(BASE + 5) == (BASE, 0)
        with pytest.raises(IndexFullError):
            idx.append(BASE + 1, 0)
    else:
        assert idx.lookup(10**9) == (-1, BASE)
        with pytest.raises(IndexFullError):
            idx.maybe_append(5, BASE)
    assert idx.largest_lower_bound_slot_for(0) == -1
    assert idx.smallest_upper_bound_slot_for(0) == -1
    idx.resize(idx.max_index_size)
    fill(idx, 3)
    assert keys(idx) == expected(cls, 3)
    idx.close()
    assert path.stat().st_size == 3 * cls.ENTRY_SIZE


@index_classes
def test_relative_offset_bounds(tmp_path, cls) -> None:
    """offset - base must lie in [0, 2^31-1]; outside it raises IndexOffsetOverflowError."""
    idx = cls(str(tmp_path / "x"), BASE, max_index_size=4096)
    assert idx.relative_offset(BASE) == 0
    assert idx.relative_offset(BASE + 2**31 - 1) == 2**31 - 1
    assert idx.can_append_offset(BASE + 2**31 - 1)
    assert not idx.can_append_offset(BASE + 2**31)
    assert not idx.can_append_offset(BASE - 1)
    for bad in (BASE - 1, BASE + 2**31):
        with pytest.raises(IndexOffsetOverflowError):
            idx.relative_offset(bad)
    idx.close()


@index_classes
def test_sanity_check_rejects_length_not_multiple_of_entry_size(tmp_path, cls) -> None:
    """A file whose length is not a multiple of the entry size fails sanity_check with
    CorruptIndexError; neither opening nor checking changes the file."""
    path = tmp_path / "x"
    good = struct.pack(">ii", 1, 0) if cls is OffsetIndex else struct.pack(">qi", 5, 1)
    path.write_bytes(good * 2 + b"\x01")
    before = file_digest(str(path))
    idx = cls(str(path), BASE, max_index_size=4096)
    with pytest.raises(CorruptIndexError):
        idx.sanity_check()
    idx.close_handler()
    assert file_digest(str(path)) == before


@index_classes
def test_sanity_check_passes_for_a_good_file(tmp_path, cls) -> None:
    """A closed index with valid entries passes sanity_check and verify."""
    path = str(tmp_path / "x")
    idx = cls(path, BASE, max_index_size=4096)
    fill(idx, 10)
    idx.close()
    idx = cls(path, BASE, max_index_size=4096)
    idx.sanity_check()
    idx.verify()
    idx.close()


@index_classes
def test_sanity_check_rejects_last_offset_below_base(tmp_path, cls) -> None:
    """A last entry whose relative offset is negative (offset < base) is corrupt."""
    path = tmp_path / "x"
    if cls is OffsetIndex:
        path.write_bytes(struct.pack(">ii", 1, 0) + struct.pack(">ii", -1, 10))
    else:
        path.write_bytes(struct.pack(">qi", 5, 1) + struct.pack(">qi", 6, -1))
    idx = cls(str(path), BASE, max_index_size=4096)
    with pytest.raises(CorruptIndexError):
        idx.sanity_check()
    idx.close_handler()


# -- warm / cold search (KAFKA-6432) ---------------------------------------------------------


class _Recording:
    """Mixin recording which slots a search reads (a real index on a real file, not a mock)."""

    def _search_value(self, slot, entity):
        self.touched.append(slot)
        return super()._search_value(slot, entity)


class RecordingOffsetIndex(_Recording, OffsetIndex):
    touched: list[int] = []


class RecordingTimeIndex(_Recording, TimeIndex):
    touched: list[int] = []


@pytest.mark.parametrize("cls", [RecordingOffsetIndex, RecordingTimeIndex], ids=["offset", "time"])
def test_warm_section_lookup_reads_only_warm_slots(tmp_path, cls) -> None:
    """A lookup above entry[first_hot] only reads slots >= first_hot (the last 8 KiB), so tail
    lookups keep touching the same pages; a lookup below it falls back to the cold part."""
    warm = WARM_SECTION_BYTES // cls.ENTRY_SIZE
    assert warm == {8: 1024, 12: 682}[cls.ENTRY_SIZE]
    n = 3 * warm
    idx = cls(str(tmp_path / "x"), BASE, max_index_size=(n + 5) * cls.ENTRY_SIZE)
    idx.touched = []
    fill(idx, n)
    first_hot = n - 1 - warm
    exp = expected(cls, n)
    key = lambda i: exp[i][0]

    for i in (first_hot + 1, n // 2 + warm, n - 1):
        idx.touched = []
        assert idx.largest_lower_bound_slot_for(key(i)) == i
        assert min(idx.touched) >= first_hot, (i, sorted(set(idx.touched)))
    idx.touched = []
    assert idx.largest_lower_bound_slot_for(key(n - 1) + 1) == n - 1
    assert min(idx.touched) >= first_hot

    for i in (0, 5, first_hot - 1, first_hot):
        idx.touched = []
        assert idx.largest_lower_bound_slot_for(key(i)) == i
        assert idx.touched[0] == first_hot  # the warm check comes first
        assert max(idx.touched[1:] or [0]) <= first_hot
    idx.close()


@pytest.mark.parametrize("cls", [OffsetIndex, TimeIndex], ids=["offset", "time"])
@pytest.mark.parametrize("extra", [-2, -1, 0, 1, 2, 3])
def test_search_at_the_warm_boundary(tmp_path, cls, extra) -> None:
    """With entries = warm + 1 + extra (first_hot flips from 0 to >0 at extra = 1), every key,
    every key +- 1, below the first and above the last give the bisect answers."""
    import bisect

    warm = WARM_SECTION_BYTES // cls.ENTRY_SIZE
    n = warm + 1 + extra
    idx = cls(str(tmp_path / "x"), BASE, max_index_size=(n + 1) * cls.ENTRY_SIZE)
    fill(idx, n)
    ks = [k for k, _ in expected(cls, n)]
    assert ks[-1] - ks[0] > 0
    for t in [ks[0] - 1, ks[-1] + 1] + [k + d for k in ks for d in (-1, 0, 1)]:
        lo = bisect.bisect_right(ks, t) - 1
        up = bisect.bisect_left(ks, t)
        assert idx.largest_lower_bound_slot_for(t, KEY) == lo, t
        assert idx.smallest_upper_bound_slot_for(t, KEY) == (up if up < n else -1), t
    idx.close()


@pytest.mark.parametrize("n", [1, 2, 3])
def test_smallest_upper_bound_of_first_entry_is_slot_0(tmp_path, n) -> None:
    """A target equal to entry 0 has smallest upper bound 0 (the binary search never compares
    its first slot; Kafka returns 1, or -1 for a single entry, here)."""
    idx = OffsetIndex(str(tmp_path / "x"), BASE, max_index_size=4096)
    fill(idx, n)
    assert idx.smallest_upper_bound_slot_for(BASE, KEY) == 0
    assert idx.smallest_upper_bound_slot_for(0, VALUE) == 0
    assert idx.fetch_upper_bound_offset(idx.entry(0)._replace(position=0), 0) == (BASE, 0)
    idx.close()


# -- read-only mode (KAFKA-5104) -------------------------------------------------------------


@index_classes
def test_kafka_5104_read_only_open_of_live_index_changes_nothing(tmp_path, cls) -> None:
    """Opening a live (untrimmed, still written) index read-only, reading it and closing it
    leaves the file's size and bytes unchanged, and the writer keeps working."""
    path = str(tmp_path / "x")
    writer = cls(path, BASE, max_index_size=4096)
    fill(writer, 20)
    writer.flush()
    before = file_digest(path)
    ro = cls(path, BASE, writable=False)
    assert not ro.writable
    # Every byte of the preallocated file is taken as an entry (Kafka's face-value rule) ...
    assert ro.entries == (4096 - 4096 % cls.ENTRY_SIZE) // cls.ENTRY_SIZE
    # ... and the written prefix reads back exactly.
    assert keys(ro)[:20] == expected(cls, 20)
    if cls is OffsetIndex:
        assert ro.lookup(BASE - 1) == (BASE, 0)
    else:
        assert ro.lookup(0) == (-1, BASE)
    ro.close()
    assert ro.closed
    assert file_digest(path) == before
    fill(writer, 25, start=20)
    assert keys(writer) == expected(cls, 25)
    writer.close()
    assert os.path.getsize(path) == 25 * cls.ENTRY_SIZE


@index_classes
def test_read_only_index_of_closed_file_looks_up_correctly(tmp_path, cls) -> None:
    """A trimmed index opened read-only answers lookups like the writer did; close() keeps it."""
    path = str(tmp_path / "x")
    w = cls(path, BASE, max_index_size=4096)
    fill(w, 30)
    w.close()
    before = file_digest(path)
    ro = cls(path, BASE, writable=False)
    assert ro.entries == 30
    ro.sanity_check()
    ex = expected(cls, 30)
    for _i, (k, v) in enumerate(ex):
        assert tuple(ro.lookup(k)) == (k, v)
        assert tuple(ro.lookup(k + 1)) == (k, v)
    ro.close()
    assert file_digest(path) == before


@index_classes
def test_read_only_index_refuses_resize_reset_and_appends(tmp_path, cls) -> None:
    """resize/reset/trim on a read-only index raise PermissionError; appends raise; the file
    is unchanged."""
    path = str(tmp_path / "x")
    w = cls(path, BASE, max_index_size=4096)
    fill(w, 3)
    w.close()
    before = file_digest(path)
    ro = cls(path, BASE, writable=False)
    with pytest.raises(PermissionError):
        ro.resize(4096)
    with pytest.raises(PermissionError):
        ro.reset()
    with pytest.raises(PermissionError):
        ro.trim_to_valid_size()
    with pytest.raises(IndexFullError):
        fill(ro, 4, start=3)
    ro.close()
    assert file_digest(path) == before


@index_classes
def test_read_only_open_of_missing_file_creates_nothing(tmp_path, cls) -> None:
    """Read-only mode never creates a file."""
    path = tmp_path / "missing"
    with pytest.raises(FileNotFoundError):
        cls(str(path), BASE, writable=False)
    assert not path.exists()


# -- LazyIndex ----------------------------------------------------------------------------


def test_lazy_index_creates_file_on_first_use(tmp_path) -> None:
    """LazyIndex touches nothing until get(); then the file exists, preallocated."""
    path = tmp_path / "00000000000000001000.index"
    lazy = LazyIndex(str(path), lambda p: OffsetIndex(p, BASE, 800))
    assert not lazy.is_loaded and not path.exists()
    idx = lazy.get()
    assert lazy.get() is idx and lazy.is_loaded
    assert path.stat().st_size == 800
    idx.append(BASE + 3, 7)
    lazy.close()
    assert not lazy.is_loaded and path.stat().st_size == 8
    assert lazy.get().lookup(BASE + 10) == (BASE + 3, 7)
    lazy.close_handler()


def test_lazy_index_rename_and_delete_before_and_after_load(tmp_path) -> None:
    """rename_to moves the file whether or not the index was loaded; delete removes it."""
    a, b, c = (tmp_path / n for n in ("a", "b", "c"))
    w = OffsetIndex(str(a), BASE, 800)
    w.append(BASE + 1, 0)
    w.close()
    lazy = LazyIndex(str(a), lambda p: OffsetIndex(p, BASE, 800))
    lazy.rename_to(str(b))
    assert not a.exists() and b.exists() and lazy.path == str(b)
    assert lazy.get().entries == 1
    lazy.rename_to(str(c))
    assert not b.exists() and c.exists() and lazy.get().path == str(c)
    assert lazy.delete_if_exists() is True
    assert not c.exists() and not lazy.is_loaded
    assert lazy.delete_if_exists() is False
