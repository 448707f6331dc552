"""A read that holds old segments across a cleaner swap (Log.replace_segments): the FileSlices a
fetch got before the swap still send the pre-clean batches, byte for byte, and the old files,
renamed ``.deleted``, are removed only once ``file.delete.delay.ms`` has passed (Kafka's delayed
delete). The slices are completed with ``os.sendfile``, the server's fetch path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from broker.storage.log import Log
from broker.storage.segment import LogSegment
from client.records.batch import iter_batch_headers, validate_batch
from client.records.record import iter_records

from .helpers import keyed_batch, read_all
from .test_manager import Clock, cleaner_for, open_log

pytestmark = pytest.mark.usefixtures("cleaner_mode")

DELAY_MS = 60_000


def send(slices: list, out_path: Path) -> bytes:
    """Complete a fetch: sendfile every slice into a file (as the server does into a socket)."""
    with open(out_path, "wb") as out:
        for s in slices:
            sent = 0
            while sent < s.size:
                n = os.sendfile(out.fileno(), s.fd, s.position + sent, s.size - sent)
                assert n > 0, f"sendfile returned {n} at {sent} of {s.size}"
                sent += n
    return out_path.read_bytes()


def batches(data: bytes) -> list[tuple[int, list[tuple[int, bytes | None, bytes | None]]]]:
    """(base offset, [(offset, key, value)]) of each batch, every CRC checked."""
    out = []
    for h in iter_batch_headers(data):
        validate_batch(data, h.pos, allow_empty=True)
        batch = data[h.pos:h.pos + h.size_in_bytes]
        out.append((h.base_offset, [(r.offset, r.key, r.value) for r in iter_records(batch)]))
    return out


def segment_files(log: Log, suffix: str) -> list[str]:
    return sorted(n for n in os.listdir(log.dir) if n.endswith(suffix))


def test_a_fetch_holding_old_segments_completes_after_the_swap(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path, clock, file_delete_delay_ms=DELAY_MS)
    for s in range(3):  # three segments of 4 records over 2 keys: cleaning keeps 2 of 12
        for i in range(4):
            log.append(keyed_batch([(b"k%d" % (i % 2), b"seg%d-rec%d" % (s, i))]))
        log.roll()
    log.append(keyed_batch([(b"k0", b"active")]))
    old_segments: list[LogSegment] = log.segment_list(0, 12)
    pre_clean = log.read_bytes(0, 1 << 20)
    # The fetch: slices of the three old segments (and the active one), not yet sent.
    fetch = log.read(0, 1 << 20)
    assert len(fetch.slices) == 4 and sum(s.size for s in fetch.slices) == len(pre_clean)

    assert cleaner_for(tmp_path, {("t", 0): log}, clock).clean_once()
    # The log now serves the cleaned segment; the old ones are out of the map, renamed .deleted.
    assert [(r.offset, r.value) for r in read_all(log)] == [(10, b"seg2-rec2"), (11, b"seg2-rec3"), (12, b"active")]
    assert all(seg not in log.segment_list() for seg in old_segments)
    deleted = segment_files(log, ".log.deleted")
    assert deleted == [f"{seg.base_offset:020d}.log.deleted" for seg in old_segments]
    # Files opened meanwhile (by the cleaner, and here) must not take over the fetch's descriptors.
    others = [os.open(os.path.join(log.dir, n), os.O_RDONLY) for n in os.listdir(log.dir)]
    try:
        got = send(fetch.slices, tmp_path / "sent")
    finally:
        for fd in others:
            os.close(fd)
    assert got == pre_clean
    assert [b for b, _ in batches(got)] == list(range(13))
    assert [recs for _, recs in batches(got)][:4] == [[(i, b"k%d" % (i % 2), b"seg0-rec%d" % i)] for i in range(4)]

    # Delayed delete: nothing goes before file.delete.delay.ms, everything at it.
    clock.ms += DELAY_MS - 1
    assert log.delete_expired_files() == 0
    assert segment_files(log, ".log.deleted") == deleted
    second = log.read(10, 1 << 20)  # a fetch of the cleaned data meanwhile
    clock.ms += 1
    assert log.delete_expired_files() == len(old_segments)
    assert segment_files(log, ".deleted") == []
    assert [recs for _, recs in batches(send(second.slices, tmp_path / "second"))] == [
        [(10, b"k0", b"seg2-rec2")], [(11, b"k1", b"seg2-rec3")], [(12, b"k0", b"active")]]
    log.close()


def test_a_fetch_holding_old_segments_completes_even_after_the_files_are_removed(tmp_path: Path) -> None:
    """A fetch slower than file.delete.delay.ms: its descriptors keep the unlinked files'
    bytes readable (POSIX), so it still sends whole, valid pre-clean batches."""
    clock = Clock()
    log = open_log(tmp_path, clock, file_delete_delay_ms=0)
    for s in range(2):
        for i in range(3):
            log.append(keyed_batch([(b"k", b"s%d-r%d" % (s, i))], codec="gzip"))
        log.roll()
    log.append(keyed_batch([(b"k", b"active")]))
    pre_clean = log.read_bytes(0, 1 << 20)
    fetch = log.read(0, 1 << 20)
    assert cleaner_for(tmp_path, {("t", 0): log}, clock).clean_once()
    assert log.delete_expired_files() == 2
    assert segment_files(log, ".deleted") == []
    got = send(fetch.slices, tmp_path / "sent")
    assert got == pre_clean and [b for b, _ in batches(got)] == list(range(7))
    log.close()


def test_a_swap_never_renames_onto_a_pending_deleted_file(tmp_path: Path) -> None:
    """The second cleaning replaces segment 0 again while the first one's ``00..0.log.deleted``
    still waits for ``file.delete.delay.ms``: the cleaner removes those files before the swap
    (a rename onto them would free their blocks inside the rename, on the event loop), so at
    the swap's first step none of the group's ``.deleted`` names exist. A fetch holding the
    first generation still sends it whole; the delayed deletes then find nothing amiss."""
    clock = Clock()
    log = open_log(tmp_path, clock, file_delete_delay_ms=DELAY_MS)
    for s in range(3):
        for i in range(4):
            log.append(keyed_batch([(b"k%d" % (i % 2), b"seg%d-rec%d" % (s, i))]))
        log.roll()
    log.append(keyed_batch([(b"k0", b"active")]))
    pre_clean = log.read_bytes(0, 1 << 20)
    fetch = log.read(0, 1 << 20)
    seen: list[list[str]] = []

    def pause_at(step: str) -> None:
        if step == "swap-renamed":
            seen.append(segment_files(log, ".deleted"))

    cleaner = cleaner_for(tmp_path, {("t", 0): log}, clock)
    cleaner.pause_at = pause_at
    try:
        assert cleaner.clean_once()
        first_generation = segment_files(log, ".log.deleted")
        assert f"{0:020d}.log.deleted" in first_generation
        for i in range(4):  # more dirt on the same keys: the next cleaning rewrites segment 0 again
            log.append(keyed_batch([(b"k%d" % (i % 2), b"again-%d" % i)]))
        log.roll()
        assert cleaner.clean_once()
    finally:
        cleaner.shutdown()
    assert len(seen) == 2 and seen[0] == []
    assert not [n for n in seen[1] if n.startswith(f"{0:020d}.")]  # removed before the swap
    assert f"{0:020d}.log.deleted" in segment_files(log, ".log.deleted")  # the second generation's
    assert send(fetch.slices, tmp_path / "sent") == pre_clean
    assert [(r.key, r.value) for r in read_all(log)] == [(b"k0", b"again-2"), (b"k1", b"again-3")]
    clock.ms += DELAY_MS
    log.delete_expired_files()
    assert segment_files(log, ".deleted") == []
    log.close()
