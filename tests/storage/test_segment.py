"""LogSegment (broker/storage/segment.py): one .log with its .index and .timeindex."""

from __future__ import annotations

import os
import random
import shutil
import struct

import pytest

from broker.storage.errors import LogSegmentOffsetOverflowError
from broker.storage.offset_index import OffsetIndex
from broker.storage.segment import (
    LogSegment,
    filename_prefix_from_offset,
    log_file_name,
    offset_index_file_name,
    time_index_file_name,
)
from broker.storage.time_index import TimeIndex
from client.records import CorruptRecordError, iter_records

from .conftest import (
    consecutive_batches,
    describe,
    expected_index_entries,
    expected_time_index_entries,
    file_digest,
    make_batch,
    read_offset_index_file,
    read_time_index_file,
)

BASE = 1000
INTERVAL = 256  # index.interval.bytes: an entry every 2-3 of the test batches


def paths(directory, base=BASE):
    d = str(directory)
    return log_file_name(d, base), offset_index_file_name(d, base), time_index_file_name(d, base)


def append_all(seg: LogSegment, batches, group: int = 1) -> None:
    for i in range(0, len(batches), group):
        seg.append(b"".join(batches[i : i + group]))


def fetched(info) -> bytes:
    s = info.slice
    return os.pread(s.fd, s.size, s.position)


def mixed_batches(n: int = 30, seed: int = 0, start: int = BASE):
    """n batches of 1-6 records with consecutive offsets; timestamps drift upwards but go
    back and forth across records and batches."""
    rng = random.Random(seed)
    out, off = [], start
    for i in range(n):
        k = rng.randint(1, 6)
        ts = [10_000 + 50 * i + rng.randint(-400, 400) for _ in range(k)]
        out.append(make_batch(k, off, timestamps=ts, value_size=rng.randint(1, 60)))
        off += k
    return out


# -- byte compatibility ---------------------------------------------------------------------


@pytest.mark.parametrize("base", [0, BASE, 2**63 - 2**31 - 1])
def test_check_01_files_are_named_by_20_digit_base_offset(tmp_path, segment_factory, base) -> None:
    """.log, .index and .timeindex are named by the base offset zero-padded to 20 digits."""
    seg = segment_factory(base)
    seg.append(make_batch(2, base))
    prefix = filename_prefix_from_offset(base)
    assert len(prefix) == 20 and int(prefix) == base
    assert sorted(os.listdir(tmp_path)) == sorted(prefix + s for s in (".index", ".log", ".timeindex"))
    if base == 0:
        assert prefix == "00000000000000000000"
    assert log_file_name(str(tmp_path), 5, ".deleted").endswith(os.sep + "00000000000000000005.log.deleted")


def test_check_02_new_segment_indexes_preallocated_and_empty(tmp_path, segment_factory) -> None:
    """A new segment's .index is roundDown(segment.index.bytes, 8) bytes and its .timeindex
    roundDown(..., 12), both with 0 entries; the .log is empty."""
    seg = segment_factory(BASE, max_index_size=1001)
    log, idx, tidx = paths(tmp_path)
    assert os.path.getsize(log) == 0
    assert seg.offset_index.entries == 0 and seg.time_index.entries == 0
    assert os.path.getsize(idx) == 1000
    assert os.path.getsize(tidx) == 996


def test_check_03_indexes_trimmed_after_inactive_and_close(tmp_path, segment_factory) -> None:
    """After on_become_inactive_segment (roll) the .index is 8*entries bytes, the .timeindex
    12*entries and a preallocated .log its data size; close keeps exactly that."""
    seg = segment_factory(BASE, preallocate=True, init_file_size=64 * 1024)
    batches = mixed_batches(30)
    append_all(seg, batches)
    log, idx, tidx = paths(tmp_path)
    assert os.path.getsize(log) == 64 * 1024
    seg.on_become_inactive_segment()
    n_off, n_time = seg.offset_index.entries, seg.time_index.entries
    assert n_off > 3 and n_time > 0
    assert os.path.getsize(idx) == 8 * n_off
    assert os.path.getsize(tidx) == 12 * n_time
    assert os.path.getsize(log) == sum(map(len, batches))
    seg.close()
    assert (os.path.getsize(idx), os.path.getsize(tidx)) == (8 * n_off, 12 * n_time)
    assert os.path.getsize(log) == sum(map(len, batches))


def test_check_03_empty_segment_closes_to_empty_indexes(tmp_path, segment_factory) -> None:
    """A segment closed with no data leaves 0-byte index files that reopen with 0 entries."""
    seg = segment_factory(BASE)
    seg.offset_index, seg.time_index  # open (create) both
    seg.close()
    log, idx, tidx = paths(tmp_path)
    assert [os.path.getsize(p) for p in (log, idx, tidx)] == [0, 0, 0]
    seg = segment_factory(BASE, file_already_exists=True)
    assert seg.offset_index.entries == 0 and seg.time_index.entries == 0
    assert seg.read_next_offset() == BASE


@pytest.mark.parametrize("group", [1, 3, 7])
def test_check_04_log_bytes_equal_appended_batches(tmp_path, segment_factory, group) -> None:
    """The .log holds exactly the appended batches (offsets already assigned), whatever the
    number of batches per append."""
    seg = segment_factory(BASE)
    batches = mixed_batches(20)
    append_all(seg, batches, group)
    log, _, _ = paths(tmp_path)
    assert open(log, "rb").read() == b"".join(batches)
    assert seg.size == sum(map(len, batches))
    assert seg.read_next_offset() == describe(batches)[-1].last_offset + 1


def test_check_06_first_append_creates_no_index_entry(tmp_path, segment_factory) -> None:
    """The first append is never indexed, even if larger than index.interval.bytes; the next
    one is, keyed by its last offset at its start position."""
    seg = segment_factory(BASE)
    first = make_batch(10, BASE, value_size=100)
    assert len(first) > INTERVAL
    seg.append(first)
    assert seg.offset_index.entries == 0 and seg.time_index.entries == 0
    second = make_batch(3, BASE + 10)
    seg.append(second)
    assert seg.offset_index.entries == 1
    assert seg.offset_index.entry(0) == (BASE + 12, len(first))
    seg.close()
    assert read_offset_index_file(paths(tmp_path)[1], BASE) == [(BASE + 12, len(first))]


def test_first_append_of_several_batches_indexes_its_later_batches(tmp_path, segment_factory) -> None:
    """Per-batch indexing (KAFKA-806, Kafka >= 4.0; the 2024 reference indexes at most once
    per append): only the first *batch* is never indexed, so a first append of three large
    batches gets entries for the second and third."""
    batches = [make_batch(5, BASE + 5 * i, value_size=100) for i in range(3)]
    infos = describe(batches)
    assert all(b.size > INTERVAL for b in infos)
    seg = segment_factory(BASE)
    seg.append(b"".join(batches))
    got = [tuple(seg.offset_index.entry(i)) for i in range(seg.offset_index.entries)]
    assert got == [(infos[1].last_offset, infos[1].position), (infos[2].last_offset, infos[2].position)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_check_06_index_entries_at_batch_starts_keyed_by_last_offset(tmp_path, segment_factory, seed) -> None:
    """Parsed from the raw .index bytes: every entry is (last offset of a batch, that batch's
    start position) and the entries are exactly those of the rule 'index a batch when more
    than index.interval.bytes were written since the last entry'. The raw .timeindex holds
    the running max timestamp at those points plus the final entry."""
    rng = random.Random(seed)
    batches = mixed_batches(60, seed=seed)
    infos = describe(batches)
    seg = segment_factory(BASE)
    i = 0
    while i < len(batches):  # appends of 1-4 batches
        k = rng.randint(1, 4)
        seg.append(b"".join(batches[i : i + k]))
        i += k
    seg.close()
    _, idx, tidx = paths(tmp_path)
    entries = read_offset_index_file(idx, BASE)
    by_position = {b.position: b for b in infos}
    assert len(entries) > 5
    for off, pos in entries:
        assert pos in by_position and by_position[pos].last_offset == off
    assert entries == expected_index_entries(infos, INTERVAL)
    assert read_time_index_file(tidx, BASE) == expected_time_index_entries(infos, INTERVAL)


def test_index_does_not_depend_on_how_batches_were_grouped(tmp_path) -> None:
    """Indexing is per batch (Kafka >= 4.0, KAFKA-806): one append of all batches writes the
    same .index and .timeindex bytes as one append per batch."""
    batches = mixed_batches(40)
    digests = []
    for group in (1, 40):
        d = tmp_path / f"g{group}"
        d.mkdir()
        seg = LogSegment.open(str(d), BASE, index_interval_bytes=INTERVAL, max_index_size=4096)
        append_all(seg, batches, group)
        seg.close()
        digests.append([file_digest(p) for p in paths(d)])
    assert digests[0] == digests[1]


def test_check_10_final_time_index_entry_is_max_timestamp_and_its_batch(tmp_path, segment_factory) -> None:
    """Timestamps that go back: on roll (and close) the last time-index entry is the segment's
    max timestamp with the last offset of the batch that carried it."""
    b0 = make_batch(3, BASE, timestamps=[100, 300, 200])
    b1 = make_batch(4, BASE + 3, timestamps=[400, 9000, 500, 600])  # the max, mid-segment
    b2 = make_batch(2, BASE + 7, timestamps=[700, 800])
    seg = segment_factory(BASE, index_interval_bytes=10**6)  # no index entries on append
    append_all(seg, [b0, b1, b2])
    assert seg.time_index.entries == 0
    assert (seg.max_timestamp_so_far, seg.offset_of_max_timestamp_so_far) == (9000, BASE + 6)
    seg.on_become_inactive_segment()
    assert seg.time_index.last_entry == (9000, BASE + 6)
    seg.close()
    assert read_time_index_file(paths(tmp_path)[2], BASE) == [(9000, BASE + 6)]


def test_check_10_final_entry_written_by_close(tmp_path, segment_factory) -> None:
    """close() alone also writes the final entry (and only once)."""
    batches = mixed_batches(25, seed=5)
    infos = describe(batches)
    seg = segment_factory(BASE)
    append_all(seg, batches)
    seg.close()
    entries = read_time_index_file(paths(tmp_path)[2], BASE)
    top = max(infos, key=lambda b: b.max_timestamp)  # first batch reaching the max
    first_top = next(b for b in infos if b.max_timestamp == top.max_timestamp)
    assert entries[-1] == (first_top.max_timestamp, first_top.last_offset)
    assert [t for t, _ in entries] == sorted(set(t for t, _ in entries))


# -- read path ------------------------------------------------------------------------------


def test_check_11_read_mid_batch_returns_data_from_batch_start(tmp_path, segment_factory) -> None:
    """Reading any offset inside a batch returns bytes starting at that batch's first byte,
    running to the end of the segment (index entries are used on the way)."""
    batches = mixed_batches(30, seed=3)
    infos = describe(batches)
    seg = segment_factory(BASE)
    append_all(seg, batches)
    assert seg.offset_index.entries > 3
    whole = b"".join(batches)
    for b in infos:
        for off in range(b.base_offset, b.last_offset + 1):
            info = seg.read(off, 10**6)
            assert info.position == b.position
            assert info.fetch_offset == off and info.segment_base_offset == BASE
            assert fetched(info) == whole[b.position :]
            assert not info.first_entry_incomplete


def test_check_12_read_in_gap_returns_next_batch_and_past_end_none(tmp_path, segment_factory) -> None:
    """An offset in a gap between batches reads from the next batch; an offset at or past
    the segment's next offset returns None; below the base reads from the first batch."""
    batches = consecutive_batches([3, 2, 4, 1], start_offset=BASE, gap=10)
    infos = describe(batches)
    seg = segment_factory(BASE, index_interval_bytes=100)
    append_all(seg, batches)
    for prev, nxt in zip(infos, infos[1:]):
        for off in range(prev.last_offset + 1, nxt.base_offset):
            info = seg.read(off, 10**6)
            assert info.position == nxt.position
            assert fetched(info)[: nxt.size] == bytes(batches[infos.index(nxt)])
    leo = infos[-1].last_offset + 1
    assert seg.read_next_offset() == leo
    assert seg.read(leo, 10**6) is None
    assert seg.read(leo + 1000, 10**6) is None
    assert seg.read(BASE - 5, 10**6).position == 0


def test_check_13_min_one_batch(tmp_path, segment_factory) -> None:
    """With max_size below the first batch: min_one_batch returns the whole batch; without
    it the slice is truncated (first_entry_incomplete); max_size 0 gives an empty slice."""
    batches = consecutive_batches([5, 5], start_offset=BASE)
    first = len(batches[0])
    seg = segment_factory(BASE)
    append_all(seg, batches)
    info = seg.read(BASE + 2, 10, min_one_batch=True)
    assert info.slice.size == first and fetched(info) == bytes(batches[0])
    assert not info.first_entry_incomplete
    info = seg.read(BASE + 2, 10, min_one_batch=False)
    assert info.slice.size == 10 and fetched(info) == bytes(batches[0][:10])
    assert info.first_entry_incomplete
    info = seg.read(BASE, 0, min_one_batch=True)
    assert info.slice.size == first
    info = seg.read(BASE, 0)
    assert info.slice.size == 0 and info.position == 0
    info = seg.read(BASE, first + 10)  # ends mid-batch: allowed, clients drop the tail
    assert info.slice.size == first + 10


def test_read_is_bounded_by_max_position(tmp_path, segment_factory) -> None:
    """max_position (e.g. the high watermark's position) caps the slice end."""
    batches = consecutive_batches([2, 2, 2, 2], start_offset=BASE)
    infos = describe(batches)
    seg = segment_factory(BASE)
    append_all(seg, batches)
    info = seg.read(BASE, 10**6, max_position=infos[2].position)
    assert info.slice.size == infos[2].position
    info = seg.read(infos[1].base_offset, 10**6, max_position=infos[1].position)
    assert info.slice.size == 0
    info = seg.read(infos[1].base_offset, 10**6, max_position=infos[1].position, min_one_batch=True)
    assert info.slice.size == 0


def test_read_negative_max_size_raises(segment_factory) -> None:
    seg = segment_factory(BASE)
    seg.append(make_batch(1, BASE))
    with pytest.raises(ValueError):
        seg.read(BASE, -1)


def test_find_offset_by_timestamp_matches_a_full_scan(tmp_path, segment_factory) -> None:
    """With timestamps not monotonic across batches (and records), find_offset_by_timestamp
    returns the first record, in log order, with ts >= target and offset >= starting offset,
    whatever the time index points at."""
    batches = mixed_batches(40, seed=9)
    records = [r for b in batches for r in iter_records(b)]
    seg = segment_factory(BASE)
    append_all(seg, batches)
    assert seg.time_index.entries > 2
    rng = random.Random(1)
    targets = [r.timestamp for r in records[::3]] + [rng.randint(9_000, 12_500) for _ in range(80)]
    for start in (None, BASE + 17, BASE + 60):
        lo = BASE if start is None else start
        for t in targets:
            want = next(((r.timestamp, r.offset) for r in records if r.timestamp >= t and r.offset >= lo), None)
            got = seg.find_offset_by_timestamp(t, start)
            assert (None if got is None else (got.timestamp, got.offset)) == want, (t, start)


# -- truncation -----------------------------------------------------------------------------


def _gapped_batches():
    # offsets: 1000-1002, 1003-1007, gap 1008-1019, 1020-1023, 1024, gap 1025-1039, 1040-1045 ...
    counts = [3, 5, 4, 1, 6, 2, 3, 4, 5, 2, 3, 3]
    gaps = [0, 12, 0, 15, 0, 0, 7, 0, 0, 1, 0]
    out, off = [], BASE
    for i, n in enumerate(counts):
        out.append(make_batch(n, off, timestamps=[5000 + 97 * ((i * 7 + j) % 11) for j in range(n)]))
        off += n + (gaps[i] if i < len(gaps) else 0)
    return out


@pytest.mark.parametrize("kind", ["boundary", "mid_batch", "gap", "base", "past_end", "last_offset"])
def test_truncate_to_keeps_log_and_indexes_consistent(tmp_path, segment_factory, kind) -> None:
    """truncate_to(o) cuts the log before the first batch whose last offset >= o (a batch in
    a gap or straddling o goes whole), keeps exactly the index entries below o, and the
    segment reads, appends and closes consistently afterwards (check 33 at segment level)."""
    batches = _gapped_batches()
    infos = describe(batches)
    seg = segment_factory(BASE, index_interval_bytes=100)
    append_all(seg, batches)
    assert seg.offset_index.entries >= 5
    target = {
        "boundary": infos[6].base_offset,
        "mid_batch": infos[6].base_offset + 1,
        "gap": infos[3].last_offset + 5,  # in the 15-offset gap
        "base": BASE,
        "past_end": infos[-1].last_offset + 1,
        "last_offset": infos[-1].last_offset,
    }[kind]
    kept = [b for b in infos if b.last_offset < target]
    kept_size = sum(b.size for b in kept)
    removed = seg.truncate_to(target)
    assert removed == sum(b.size for b in infos) - kept_size
    log, idx, tidx = paths(tmp_path)
    assert seg.size == os.path.getsize(log) == kept_size
    assert open(log, "rb").read() == b"".join(batches[: len(kept)])
    assert [tuple(seg.offset_index.entry(i)) for i in range(seg.offset_index.entries)] == expected_index_entries(kept, 100)
    seg.offset_index.verify(log_size=seg.size)
    seg.time_index.verify()
    assert all(o < target for _, o in (seg.time_index.entry(i) for i in range(seg.time_index.entries)))
    leo = kept[-1].last_offset + 1 if kept else BASE
    assert seg.read_next_offset() == leo
    assert seg.read(target, 10**6) is None
    assert seg.max_timestamp_so_far == max((b.max_timestamp for b in kept), default=-1)
    # The indexes are back at full size (active again) and appends continue.
    assert os.path.getsize(idx) == 4096
    nxt = make_batch(2, max(leo, target))
    seg.append(nxt)
    assert seg.read(max(leo, target), 10**6).position == kept_size
    seg.close()
    final = read_offset_index_file(idx, BASE)
    assert final[: len(expected_index_entries(kept, 100))] == expected_index_entries(kept, 100)
    for _off, pos in final:
        assert pos < kept_size + len(nxt)


# -- recovery -------------------------------------------------------------------------------


def _write_reference(directory, batches, **kw) -> dict[str, bytes]:
    """Append ``batches`` into a fresh segment, close it, return the three files' bytes."""
    os.makedirs(directory, exist_ok=True)
    seg = LogSegment.open(str(directory), BASE, index_interval_bytes=INTERVAL, max_index_size=4096, **kw)
    append_all(seg, batches)
    seg.close()
    return {p.rsplit(".", 1)[1]: open(p, "rb").read() for p in paths(directory)}


def _reopen(directory, **kw) -> LogSegment:
    return LogSegment.open(str(directory), BASE, index_interval_bytes=INTERVAL, max_index_size=4096,
                           file_already_exists=True, **kw)


def test_recover_of_a_clean_segment_rebuilds_identical_indexes(tmp_path) -> None:
    """recover() on an intact segment truncates nothing and writes byte-identical .index and
    .timeindex files."""
    batches = mixed_batches(50, seed=4)
    ref = _write_reference(tmp_path, batches)
    assert len(ref["index"]) >= 8 * 5
    seg = _reopen(tmp_path)
    assert seg.recover() == 0
    seg.close()
    log, idx, tidx = paths(tmp_path)
    assert open(idx, "rb").read() == ref["index"]
    assert open(tidx, "rb").read() == ref["timeindex"]
    assert open(log, "rb").read() == ref["log"]


def test_check_27_deleted_index_is_rebuilt_by_recover(tmp_path) -> None:
    """With the .index (and .timeindex) deleted, recover() rebuilds both byte-identically."""
    batches = mixed_batches(50, seed=6)
    ref = _write_reference(tmp_path, batches)
    _, idx, tidx = paths(tmp_path)
    os.unlink(idx)
    seg = _reopen(tmp_path)
    assert seg.recover() == 0
    seg.close()
    assert open(idx, "rb").read() == ref["index"]
    os.unlink(idx)
    os.unlink(tidx)
    seg = _reopen(tmp_path)
    assert seg.recover() == 0
    seg.close()
    assert open(idx, "rb").read() == ref["index"]
    assert open(tidx, "rb").read() == ref["timeindex"]


def test_check_27_missing_timeindex_is_created_empty(tmp_path) -> None:
    """A missing .timeindex is created when the segment opens it, with 0 entries; lookups by
    time still work (from the log) and close leaves a valid file."""
    batches = mixed_batches(20, seed=7)
    ref = _write_reference(tmp_path, batches)
    _, idx, tidx = paths(tmp_path)
    os.unlink(tidx)
    seg = _reopen(tmp_path)
    assert seg.time_index.entries == 0 and os.path.exists(tidx)
    assert seg.time_index.last_entry == (-1, BASE)
    assert open(idx, "rb").read() == ref["index"]  # the offset index is untouched
    records = [r for b in batches for r in iter_records(b)]
    t = records[10].timestamp
    want = next(r for r in records if r.timestamp >= t)
    assert seg.find_offset_by_timestamp(t)[:2] == (want.timestamp, want.offset)
    seg.time_index.resize(0)  # as Kafka's loader does for a recreated time index
    seg.close()
    assert os.path.getsize(tidx) == 0


def _check_recovered(directory, batches, cut_log: bytes, expect_batches: int, returned: int, seg) -> None:
    infos = describe(batches[:expect_batches])
    valid = sum(b.size for b in infos)
    assert returned == len(cut_log) - valid
    log, idx, tidx = paths(directory)
    assert seg.size == valid
    assert seg.read_next_offset() == (infos[-1].last_offset + 1 if infos else BASE)
    seg.close()
    assert open(log, "rb").read() == cut_log[:valid]
    assert read_offset_index_file(idx, BASE) == expected_index_entries(infos, INTERVAL)
    assert read_time_index_file(tidx, BASE) == expected_time_index_entries(infos, INTERVAL)


def test_check_24_torn_final_batch_is_truncated(tmp_path) -> None:
    """The .log cut at every byte of the last two batches (and a sample of earlier bytes):
    recover() keeps the longest prefix of whole batches, returns the bytes cut, and the
    rebuilt indexes equal the ones appends of that prefix write."""
    batches = mixed_batches(24, seed=8)
    infos = describe(batches)
    whole = b"".join(batches)
    bounds = [b.position for b in infos] + [len(whole)]
    cuts = list(range(infos[-2].position, len(whole) + 1)) + list(range(0, infos[-2].position, 11))
    d = tmp_path / "seg"
    for cut in cuts:
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
        (d / os.path.basename(paths(d)[0])).write_bytes(whole[:cut])
        seg = _reopen(d)
        returned = seg.recover()
        keep = max(i for i, p in enumerate(bounds) if p <= cut)
        _check_recovered(d, batches, whole[:cut], keep, returned, seg)


def test_recover_truncates_at_a_flipped_byte_in_the_last_batch(tmp_path) -> None:
    """Flipping any byte of the last batch from its length field on (except the leader epoch,
    which the CRC does not cover) makes recovery drop that batch; earlier batches survive."""
    batches = mixed_batches(12, seed=10)
    infos = describe(batches)
    whole = b"".join(batches)
    last = infos[-1]
    d = tmp_path / "seg"
    for rel in list(range(8, 12)) + list(range(16, last.size)):
        data = bytearray(whole)
        data[last.position + rel] ^= 0xFF
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
        (d / os.path.basename(paths(d)[0])).write_bytes(bytes(data))
        seg = _reopen(d)
        returned = seg.recover()
        assert returned == last.size, rel
        _check_recovered(d, batches, bytes(data), len(batches) - 1, returned, seg)


def test_recover_keeps_batch_with_changed_leader_epoch(tmp_path) -> None:
    """partitionLeaderEpoch (bytes 12-15) is outside the CRC: such a change is not detected."""
    batches = mixed_batches(5, seed=11)
    data = bytearray(b"".join(batches))
    data[describe(batches)[-1].position + 14] ^= 0xFF
    d = tmp_path
    (d / os.path.basename(paths(d)[0])).write_bytes(bytes(data))
    seg = _reopen(d)
    assert seg.recover() == 0
    seg.close()


def test_recover_drops_offsets_outside_the_segment(tmp_path) -> None:
    """A batch whose offsets cannot be stored relative to the base offset (here a base
    offset below the segment's; Kafka's ensureOffsetInRange raises) is damage, never indexed:
    at the end of the active segment it is truncated like a torn tail."""
    batches = [make_batch(2, BASE), make_batch(2, BASE - 10)]
    (tmp_path / os.path.basename(paths(tmp_path)[0])).write_bytes(b"".join(batches))
    seg = _reopen(tmp_path)
    assert seg.recover() == len(batches[1])
    assert seg.size == len(batches[0]) and seg.read_next_offset() == BASE + 2
    seg.close_handlers()


@pytest.mark.parametrize("zeros", [1, 16, 17, 60, 61, 4096, 100_000])
def test_check_26_zero_filled_tail_is_truncated(tmp_path, zeros) -> None:
    """Zero bytes after the last batch (a preallocated tail) are cut by recover()."""
    batches = mixed_batches(30, seed=12)
    ref = _write_reference(tmp_path, batches)
    log, idx, tidx = paths(tmp_path)
    with open(log, "ab") as f:
        f.write(b"\0" * zeros)
    seg = _reopen(tmp_path)
    assert seg.recover() == zeros
    seg.close()
    assert open(log, "rb").read() == ref["log"]
    assert open(idx, "rb").read() == ref["index"]
    assert open(tidx, "rb").read() == ref["timeindex"]


def test_check_26_preallocated_segment_not_closed_recovers(tmp_path) -> None:
    """A preallocated segment that was never closed (crash: .log still init_file_size bytes,
    indexes untrimmed) recovers to its data: .log and both indexes equal a clean close's."""
    batches = mixed_batches(40, seed=13)
    ref = _write_reference(tmp_path / "ref", batches)
    d = tmp_path / "crash"
    d.mkdir()
    seg = LogSegment.open(str(d), BASE, index_interval_bytes=INTERVAL, max_index_size=4096,
                          preallocate=True, init_file_size=256 * 1024)
    append_all(seg, batches)
    seg.flush()
    seg.close_handlers()  # no trim, no final time-index entry
    log, idx, tidx = paths(d)
    assert os.path.getsize(log) == 256 * 1024 and os.path.getsize(idx) == 4096
    seg = _reopen(d, preallocate=True, init_file_size=256 * 1024)
    assert seg.recover() == 256 * 1024 - len(ref["log"])
    assert seg.read_next_offset() == describe(batches)[-1].last_offset + 1
    seg.close()
    assert open(log, "rb").read() == ref["log"]
    assert open(idx, "rb").read() == ref["index"]
    assert open(tidx, "rb").read() == ref["timeindex"]


def test_recover_then_append_continues_the_index_rule(tmp_path) -> None:
    """recover() leaves the indexes trimmed (full); once resized to the max, as the loader does
    for the active segment, appends continue counting bytes since the last index entry: the
    .log and .index equal one uninterrupted series of appends, and the .timeindex differs
    only by the final entry recovery wrote (as a clean close would have)."""
    batches = mixed_batches(40, seed=14)
    ref = _write_reference(tmp_path / "ref", batches)
    d = tmp_path / "r"
    _write_reference(d, batches[:23])
    seg = _reopen(d)
    assert seg.recover() == 0
    assert seg.offset_index.is_full() and seg.time_index.is_full()
    seg.resize_indexes(4096)
    append_all(seg, batches[23:])
    seg.close()
    log, idx, tidx = paths(d)
    assert [open(p, "rb").read() for p in (log, idx)] == [ref["log"], ref["index"]]
    want = expected_time_index_entries(describe(batches), INTERVAL, closed_after=[23])
    assert read_time_index_file(tidx, BASE) == want
    assert want != read_time_index_file(str(tmp_path / "ref" / os.path.basename(tidx)), BASE)


# -- bad input --------------------------------------------------------------------------------


def test_append_offset_overflow_raises_and_writes_nothing(tmp_path, segment_factory) -> None:
    """A batch whose last offset - base does not fit in an int32 (or lies below the base)
    raises LogSegmentOffsetOverflowError; .log size and indexes are unchanged."""
    seg = segment_factory(BASE)
    seg.append(make_batch(3, BASE))
    log, idx, tidx = paths(tmp_path)
    before = [file_digest(p) for p in (log, idx, tidx)]
    for bad in (make_batch(2, BASE + 2**31 - 1), make_batch(1, BASE + 2**31), make_batch(2, BASE - 5)):
        with pytest.raises(LogSegmentOffsetOverflowError):
            seg.append(bad)
    with pytest.raises(LogSegmentOffsetOverflowError):  # a good batch followed by a bad one
        seg.append(make_batch(1, BASE + 3) + make_batch(1, BASE + 2**31))
    assert seg.size == os.path.getsize(log)
    assert [file_digest(p) for p in (log, idx, tidx)] == before
    seg.append(make_batch(1, BASE + 2**31 - 1))  # the largest storable offset is fine
    assert seg.read_next_offset() == BASE + 2**31


@pytest.mark.parametrize("tail", ["short", "zero_size", "too_long"])
def test_append_of_a_buffer_not_ending_on_a_batch_raises(tmp_path, segment_factory, tail) -> None:
    """A buffer with a trailing partial batch, or a size field below the header size,
    raises CorruptRecordError and writes nothing (it used to raise struct.error, or loop
    forever on a size field of 0)."""
    seg = segment_factory(BASE)
    good = make_batch(2, BASE)
    extra = {
        "short": b"\x00" * 20,
        "zero_size": struct.pack(">qi", BASE + 2, -12) + b"\0" * 60,
        "too_long": bytes(make_batch(2, BASE + 2))[:-1],
    }[tail]
    with pytest.raises(CorruptRecordError):
        seg.append(good + extra)
    assert seg.size == 0 and os.path.getsize(paths(tmp_path)[0]) == 0


# -- read-only access to a live segment (KAFKA-5104) ----------------------------------------


def test_kafka_5104_read_only_indexes_of_live_segment(tmp_path, segment_factory) -> None:
    """Opening the live segment's .index and .timeindex read-only, reading and closing them
    changes neither size nor bytes; resize raises; the segment keeps appending."""
    batches = mixed_batches(30, seed=15)
    seg = segment_factory(BASE)
    append_all(seg, batches[:20])
    seg.flush()
    _, idx, tidx = paths(tmp_path)
    before = [file_digest(idx), file_digest(tidx)]
    n_off, n_time = seg.offset_index.entries, seg.time_index.entries
    assert n_off > 2 and n_time > 0
    ro = OffsetIndex(idx, BASE, writable=False)
    rt = TimeIndex(tidx, BASE, writable=False)
    assert [tuple(ro.entry(i)) for i in range(n_off)] == [tuple(seg.offset_index.entry(i)) for i in range(n_off)]
    assert [tuple(rt.entry(i)) for i in range(n_time)] == [tuple(seg.time_index.entry(i)) for i in range(n_time)]
    assert ro.lookup(BASE - 1) == (BASE, 0) and rt.lookup(0) == (-1, BASE)
    with pytest.raises(PermissionError):
        ro.resize(8 * n_off)
    with pytest.raises(PermissionError):
        rt.resize(12 * n_time)
    ro.close()
    rt.close()
    assert [file_digest(idx), file_digest(tidx)] == before
    append_all(seg, batches[20:])
    seg.close()
    assert read_offset_index_file(idx, BASE) == expected_index_entries(describe(batches), INTERVAL)
