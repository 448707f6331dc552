"""LogLoader (broker/storage/log_loader.py), through ``Log.load``: recovery from the recovery
point after an unclean shutdown (a damaged batch costs only itself), index rebuilds, temporary
files and swaps at start-up, a log start offset above the log end offset, clean reloads.

Conformance checks against Kafka's behaviour are named ``test_check_NN_*`` (numbered across
tests/storage). A crash is simulated by abandoning a Log object (closing its file
descriptors without the trimming and final index entries that ``close`` writes) and loading
the directory again. Helpers are test_log.py's.
"""

from __future__ import annotations

import os

import pytest

from broker.storage.log import Log
from client.records import CorruptRecordError, decode_batch
from tests.storage.conftest import Clock, abandon, reload
from tests.storage.test_log import (
    _three_segments,
    bases,
    file_bytes,
    flip_byte,
    make_batch,
    read_all,
    seg_path,
    whole_batches,
)


@pytest.mark.parametrize("k", [1, 2])
def test_check_25_crc_corrupt_batch_costs_only_itself(make_log, k) -> None:
    """A CRC failure in segment k after the recovery point: Kafka truncates k there and deletes
    the later segments; here the batch is recorded as damaged and everything else stays."""
    log = make_log(index_interval_bytes=0)
    for s in range(4):  # segment s holds offsets 6s .. 6s+5 in three 2-record batches
        for _ in range(3):
            log.append(make_batch(2, value_size=30))
        if s < 3:
            log.roll()
    log.flush()
    batch = len(make_batch(2, value_size=30))
    seg_k = seg_path(log, 6 * k)
    size_k = os.path.getsize(seg_k)
    flip_byte(seg_k, batch + 40)  # inside the 2nd batch, in the CRC-covered part
    abandon(log)
    new = Log.load(log.dir, "t", 0, log.config, recovery_point=6, had_clean_shutdown=False, now_ms=Clock())
    try:
        assert bases(new) == [6 * s for s in range(4)]
        assert os.path.getsize(seg_k) == size_k
        assert new.log_end_offset == 24
        assert [(d.position, d.end, d.first_offset, d.next_offset) for d in new.segments.get(6 * k).damaged] == [
            (batch, 2 * batch, 6 * k + 2, 6 * k + 4)]
        assert read_all(new) == list(range(6 * k + 2))  # a read stops before the damage
        assert read_all(new, 6 * k + 4) == list(range(6 * k + 4, 24))
        for offset in (6 * k + 2, 6 * k + 3):
            with pytest.raises(CorruptRecordError):
                new.read(offset, 1 << 20)
        assert new.recovery_point == 6
        assert new.append(make_batch(1)).first_offset == 24
    finally:
        new.close()


def test_recovery_starts_at_the_segment_holding_the_recovery_point(make_log) -> None:
    """Segments below floor(recovery point) are not rescanned after an unclean shutdown."""
    log = _three_segments(make_log)
    log.flush()
    batch = len(make_batch(2, value_size=20))
    flip_byte(seg_path(log, 0), batch + 40)  # corrupt, but below the recovery point
    seg0 = file_bytes(seg_path(log, 0))
    abandon(log)
    new = Log.load(log.dir, "t", 0, log.config, recovery_point=13, had_clean_shutdown=False, now_ms=Clock())
    try:
        assert bases(new) == [0, 6, 12] and new.log_end_offset == 18
        assert file_bytes(seg_path(new, 0)) == seg0
    finally:
        new.close()
    # with the recovery point at 0 the same corruption is found (and costs only its batch)
    new2 = Log.load(log.dir, "t", 0, log.config, recovery_point=0, had_clean_shutdown=False, now_ms=Clock())
    try:
        assert bases(new2) == [0, 6, 12] and new2.log_end_offset == 18
        assert [(d.first_offset, d.next_offset) for d in new2.segments.get(0).damaged] == [(2, 4)]
    finally:
        new2.close()


def test_unclean_restart_rebuilds_untrimmed_active_indexes(make_log) -> None:
    """After a crash the active segment's index files are still at their max size (zero
    padded): recovery rebuilds them, so appends and lookups keep working."""
    log = make_log(index_interval_bytes=0, segment_index_bytes=4096)
    for _ in range(5):
        log.append(make_batch(2))
    assert os.path.getsize(seg_path(log, 0, ".index")) == 4096
    abandon(log)
    new = Log.load(log.dir, "t", 0, log.config, recovery_point=10, had_clean_shutdown=False, now_ms=Clock())
    try:
        seg = new.active_segment
        assert seg.offset_index.entries == 4 and seg.offset_index.length == 4096
        assert new.log_end_offset == 10 and read_all(new, 5) == [5, 6, 7, 8, 9]
        new.append(make_batch(1))
        assert bases(new) == [0] and read_all(new) == list(range(11))
    finally:
        new.close()


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


def test_check_30_startup_removes_temp_files_completes_swaps_and_deletes_orphans(make_log) -> None:
    log = make_log(index_interval_bytes=0)
    for s in range(3):  # segments 0, 3, 6 with 3 single-record batches each
        for i in range(3):
            log.append(make_batch(1, tag=3 * s + i))
        if s < 2:
            log.roll()
    values = [r.value for b in whole_batches(log.read_bytes(0, 1 << 20)) for r in decode_batch(b)]
    log.close()
    d = log.dir
    j = lambda n: os.path.join(d, n)
    # a swap merging segments 0 and 3 (what a cleaner would have produced), with index swaps
    _write(j("00000000000000000000.log.swap"), file_bytes(j("00000000000000000000.log")) +
           file_bytes(j("00000000000000000003.log")))
    _write(j("00000000000000000000.index.swap"), b"\xff" * 64)
    _write(j("00000000000000000000.timeindex.swap"), b"\xff" * 60)
    for name in ("00000000000000000100.log.deleted", "00000000000000000100.index.deleted",
                 "00000000000000000100.timeindex.deleted", "00000000000000000006.log.deleted",
                 "00000000000000000200.log.cleaned", "00000000000000000200.index.cleaned",
                 "00000000000000000300.index", "00000000000000000300.timeindex"):
        _write(j(name), b"junk" * 20)
    new = Log.load(d, "t", 0, log.config, had_clean_shutdown=True, now_ms=Clock())
    try:
        assert sorted(n for n in os.listdir(d) if not n.endswith(".snapshot")) == sorted(
            f"{b:020d}{e}" for b in (0, 6) for e in (".log", ".index", ".timeindex"))
        # producer snapshots: the one of the segment swapped away (3) is a stray and goes; the
        # one at segment 6 and the clean shutdown's at the log end offset (9) stay
        assert sorted(n for n in os.listdir(d) if n.endswith(".snapshot")) == [
            "00000000000000000006.snapshot", "00000000000000000009.snapshot"]
        assert bases(new) == [0, 6] and new.log_end_offset == 9
        got = [r.value for b in whole_batches(new.read_bytes(0, 1 << 20)) for r in decode_batch(b)]
        assert got == values and read_all(new) == list(range(9))
        seg0 = new.segments.first()[1]
        seg0.offset_index.verify(seg0.size)
        assert seg0.offset_index.entries == 5  # rebuilt: every batch but the first (interval 0)
        assert tuple(seg0.offset_index.lookup(4)) == (4, 4 * len(make_batch(1)))
    finally:
        new.close()


def test_check_30_swap_at_or_above_a_cleaned_file_is_discarded(make_log) -> None:
    log = _three_segments(make_log)
    log.close()
    d = log.dir
    _write(os.path.join(d, "00000000000000000006.log.cleaned"), b"partial")
    _write(os.path.join(d, "00000000000000000006.log.swap"), b"\x00" * 100)
    before = {b: file_bytes(seg_path(log, b)) for b in (0, 6, 12)}
    new = Log.load(d, "t", 0, log.config, had_clean_shutdown=True, now_ms=Clock())
    try:
        assert not any(n.endswith((".swap", ".cleaned")) for n in os.listdir(d))
        assert {b: file_bytes(seg_path(new, b)) for b in (0, 6, 12)} == before
        assert read_all(new) == list(range(18))
    finally:
        new.close()


def test_check_30_swaps_complete_whatever_the_directory_listing_order(make_log) -> None:
    """Each of 8 segments has a .log.swap and index swaps; completing a log swap renames
    its index swaps into place, so index swaps must not be handled after it."""
    log = make_log(index_interval_bytes=0)
    for s in range(8):
        log.append(make_batch(2, tag=s))
        log.append(make_batch(2, tag=s + 1))
        if s < 7:
            log.roll()
    log.close()
    d = log.dir
    for s in range(8):
        stem = os.path.join(d, f"{4 * s:020d}")
        _write(stem + ".log.swap", file_bytes(stem + ".log"))
        _write(stem + ".index.swap", b"\x01" * 24)
        _write(stem + ".timeindex.swap", b"\x01" * 24)
    new = Log.load(d, "t", 0, log.config, had_clean_shutdown=True, now_ms=Clock())
    try:
        assert not any(n.endswith(".swap") for n in os.listdir(d))
        assert bases(new) == [4 * s for s in range(8)] and read_all(new) == list(range(32))
        for seg in new.segments.values():
            seg.offset_index.verify(seg.size)
    finally:
        new.close()


def test_check_32_log_start_offset_above_leo_deletes_all_segments(make_log) -> None:
    log = _three_segments(make_log)
    log.close()
    new = Log.load(log.dir, "t", 0, log.config, log_start_offset=100, recovery_point=18,
                   had_clean_shutdown=True, now_ms=Clock())
    try:
        assert bases(new) == [100]
        assert new.log_start_offset == new.log_end_offset == 100
        assert sorted(os.listdir(log.dir)) == [f"{100:020d}{e}" for e in (".index", ".log", ".snapshot", ".timeindex")]
        assert new.append(make_batch(2)).first_offset == 100
        assert read_all(new) == [100, 101]
    finally:
        new.close()


def test_clean_reload_keeps_log_start_offset_and_recovery_point(make_log) -> None:
    log = _three_segments(make_log)
    log.delete_records_before(8)
    new = reload(log, clean=True)
    try:
        assert new.log_start_offset == 8 and new.recovery_point == new.log_end_offset == 18
        assert read_all(new) == list(range(8, 18))
        # an empty active segment reopened after a clean close does not roll on append
        new.roll()
    finally:
        new.close()
    new2 = reload(new, clean=True)
    try:
        assert bases(new2) == [0, 6, 12, 18]
        new2.append(make_batch(1))
        assert bases(new2) == [0, 6, 12, 18]
    finally:
        new2.close()
