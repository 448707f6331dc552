"""FileRecords (broker/storage/file_records.py): the .log file."""

from __future__ import annotations

import os
import struct

import pytest

from broker.storage.file_records import _RECOVERY_CHUNK, FileRecords
from client.records import CorruptRecordError, RecordBatchBuilder, compute_crc, set_base_offset, validate_batch

from .conftest import consecutive_batches, describe, file_digest, make_batch


def open_records(tmp_path, name="00000000000000000000.log", **kw) -> FileRecords:
    return FileRecords.open(str(tmp_path / name), **kw)


def write(tmp_path, batches, name="00000000000000000000.log") -> FileRecords:
    fr = open_records(tmp_path, name)
    for b in batches:
        fr.append(b)
    return fr


def test_check_04_stored_bytes_equal_appended_batches(tmp_path) -> None:
    """The file is exactly the appended batches back to back; each batchLength = size - 12
    and each CRC-32C over [21, end) verifies."""
    batches = consecutive_batches([1, 5, 3, 10], start_offset=42)
    fr = write(tmp_path, batches)
    assert fr.size == sum(map(len, batches))
    data = (tmp_path / "00000000000000000000.log").read_bytes()
    assert data == b"".join(batches)
    for info, _b in zip(describe(batches), batches):
        (length,) = struct.unpack_from(">i", data, info.position + 8)
        assert length == info.size - 12
        (crc,) = struct.unpack_from(">I", data, info.position + 17)
        assert crc == compute_crc(data[info.position : info.position + info.size])
    fr.close()


def test_check_05_offset_and_epoch_outside_crc_other_bytes_inside(tmp_path) -> None:
    """Rewriting baseOffset (0-7) or partitionLeaderEpoch (12-15) keeps the CRC valid;
    flipping any byte at position 21 or later invalidates it."""
    b = make_batch(4, 0)
    set_base_offset(b, 123456789)
    struct.pack_into(">i", b, 12, 77)
    assert validate_batch(b).base_offset == 123456789
    assert validate_batch(b).partition_leader_epoch == 77
    for i in range(21, len(b)):
        bad = bytearray(b)
        bad[i] ^= 0x01
        with pytest.raises(CorruptRecordError):
            validate_batch(bad)


def test_append_returns_size_and_reads_back(tmp_path) -> None:
    """append returns the bytes written; read/slice return the same bytes and clamp at size."""
    b1, b2 = consecutive_batches([2, 3])
    fr = open_records(tmp_path)
    assert fr.append(b1) == len(b1)
    assert fr.append(memoryview(b2)) == len(b2)
    assert fr.read(len(b1), len(b2)) == bytes(b2)
    s = fr.slice(len(b1), 10**6)
    assert (s.fd, s.position, s.size) == (fr.fd, len(b1), len(b2))
    assert fr.slice(fr.size + 5, 10).size == 0
    assert fr.slice(0, -3).size == 0
    fr.close()


def test_batch_headers_positions_and_offsets(tmp_path) -> None:
    """batch_headers yields each batch's position and header without decoding records."""
    batches = consecutive_batches([1, 4, 2], start_offset=10, gap=5)
    fr = write(tmp_path, batches)
    got = [(p, h.base_offset, h.last_offset, h.size_in_bytes) for p, h in fr.batch_headers()]
    assert got == [(i.position, i.base_offset, i.last_offset, i.size) for i in describe(batches)]
    second = describe(batches)[1].position
    assert [p for p, _ in fr.batch_headers(second)] == [i.position for i in describe(batches)[1:]]
    fr.close()


def test_batch_headers_and_iter_batches_stop_at_partial_trailing_batch(tmp_path) -> None:
    """With the last batch cut at any byte, both iterators yield only the whole batches and
    stop silently (the caller compares the position reached with the size)."""
    batches = consecutive_batches([3, 3, 3])
    whole = b"".join(batches)
    infos = describe(batches)
    last = infos[-1]
    for cut in range(last.position + 1, last.position + last.size):
        path = tmp_path / f"{cut}.log"
        path.write_bytes(whole[:cut])
        fr = FileRecords.open(str(path), file_already_exists=True)
        assert fr.size == cut
        assert [p for p, _ in fr.batch_headers()] == [i.position for i in infos[:-1]]
        assert [p for p, _ in fr.iter_batches(validate=True)] == [i.position for i in infos[:-1]]
        fr.close()
        path.unlink()


def test_zero_filled_tail_raises_corrupt_record(tmp_path) -> None:
    """A zero tail of >= 17 bytes has a size field of 12 (< 61): CorruptRecordError after the
    valid batches; a shorter zero tail ends iteration silently."""
    batches = consecutive_batches([2, 2])
    for zeros, raises in ((5, False), (16, False), (17, True), (100, True)):
        path = tmp_path / f"z{zeros}.log"
        path.write_bytes(b"".join(batches) + b"\0" * zeros)
        fr = FileRecords.open(str(path), file_already_exists=True)
        for it in (fr.batch_headers(), fr.iter_batches()):
            seen = []
            if raises:
                with pytest.raises(CorruptRecordError):
                    for p, _ in it:
                        seen.append(p)
            else:
                seen = [p for p, _ in it]
            assert seen == [i.position for i in describe(batches)]
        fr.close()


def test_iter_batches_validate_raises_at_corrupt_batch(tmp_path) -> None:
    """validate=True yields the good batches, then raises CorruptRecordError at the batch
    whose CRC fails; validate=False yields every batch."""
    batches = consecutive_batches([2, 2, 2, 2])
    infos = describe(batches)
    data = bytearray(b"".join(batches))
    data[infos[2].position + 40] ^= 0xFF
    path = tmp_path / "c.log"
    path.write_bytes(bytes(data))
    fr = FileRecords.open(str(path), file_already_exists=True)
    seen = []
    with pytest.raises(CorruptRecordError):
        for p, _ in fr.iter_batches(validate=True):
            seen.append(p)
    assert seen == [infos[0].position, infos[1].position]
    assert [p for p, _ in fr.iter_batches(validate=False)] == [i.position for i in infos]
    fr.close()


def _big_batch(offset: int, value_size: int) -> bytearray:
    b = RecordBatchBuilder()
    b.append(os.urandom(value_size), key=b"big", timestamp=5_000)
    out = b.build()
    set_base_offset(out, offset)
    return out


def test_batch_larger_than_recovery_chunk(tmp_path) -> None:
    """A 5 MiB batch (> the 4 MiB read chunk) between small ones is read whole and validated;
    cut short, iteration stops before it."""
    assert _RECOVERY_CHUNK == 4 << 20
    small1 = make_batch(2, 0)
    big = _big_batch(2, 5 << 20)
    small2 = make_batch(2, 3)
    batches = [small1, big, small2]
    fr = write(tmp_path, batches)
    got = [(p, h.last_offset, h.size_in_bytes) for p, h in fr.iter_batches(validate=True)]
    assert got == [(i.position, i.last_offset, i.size) for i in describe(batches)]
    fr.truncate_to(len(small1) + len(big) - 1)
    assert [p for p, _ in fr.iter_batches(validate=True)] == [0]
    fr.close()


def test_batch_straddling_a_chunk_boundary(tmp_path) -> None:
    """Batches of 1.5 MiB: the third crosses the 4 MiB chunk end and is re-read from its start."""
    batches = [_big_batch(i, 3 << 19) for i in range(4)]
    fr = write(tmp_path, batches)
    got = [(p, h.base_offset) for p, h in fr.iter_batches(validate=True)]
    assert got == [(i.position, i.base_offset) for i in describe(batches)]
    assert describe(batches)[2].position < _RECOVERY_CHUNK < describe(batches)[3].position
    fr.close()


def test_search_for_offset_with_size(tmp_path) -> None:
    """The first batch whose last offset >= target, from a start position; None past the end."""
    batches = consecutive_batches([3, 3, 3], start_offset=100, gap=10)  # 100-102, 113-115, 126-128
    infos = describe(batches)
    fr = write(tmp_path, batches)
    assert fr.search_for_offset_with_size(0, 0) == (102, 0, infos[0].size)
    assert fr.search_for_offset_with_size(101, 0) == (102, 0, infos[0].size)
    assert fr.search_for_offset_with_size(105, 0) == (115, infos[1].position, infos[1].size)
    assert fr.search_for_offset_with_size(101, infos[1].position) == (115, infos[1].position, infos[1].size)
    assert fr.search_for_offset_with_size(128, 0) == (128, infos[2].position, infos[2].size)
    assert fr.search_for_offset_with_size(129, 0) is None
    fr.close()


def test_search_for_timestamp_and_largest_timestamp_after(tmp_path) -> None:
    """search_for_timestamp returns the first record with ts >= target and offset >= start;
    largest_timestamp_after returns the max batch timestamp and that batch's last offset."""
    b0 = make_batch(3, 0, timestamps=[10, 50, 20])
    b1 = make_batch(3, 3, timestamps=[30, 40, 35])
    b2 = make_batch(2, 6, timestamps=[60, 55], leader_epoch=4)
    fr = write(tmp_path, [b0, b1, b2])
    assert fr.search_for_timestamp(15, 0, 0) == (50, 1, None)
    assert fr.search_for_timestamp(15, 0, 2) == (20, 2, None)
    assert fr.search_for_timestamp(31, 0, 2) == (40, 4, None)
    assert fr.search_for_timestamp(51, 0, 0) == (60, 6, 4)
    assert fr.search_for_timestamp(61, 0, 0) is None
    assert fr.largest_timestamp_after(0)[:2] == (60, 7)
    assert fr.largest_timestamp_after(len(b0))[:2] == (60, 7)
    assert fr.largest_timestamp_after(fr.size)[:2] == (-1, -1)
    fr.close()


def test_truncate_to(tmp_path) -> None:
    """truncate_to cuts the file and returns the bytes removed; growing or negative raise."""
    batches = consecutive_batches([2, 2, 2])
    fr = write(tmp_path, batches)
    path = str(tmp_path / "00000000000000000000.log")
    size = fr.size
    with pytest.raises(ValueError):
        fr.truncate_to(size + 1)
    with pytest.raises(ValueError):
        fr.truncate_to(-1)
    assert fr.truncate_to(len(batches[0])) == size - len(batches[0])
    assert fr.size == os.path.getsize(path) == len(batches[0])
    assert fr.truncate_to(fr.size) == 0
    fr.append(batches[1])
    assert open(path, "rb").read() == bytes(batches[0] + batches[1])
    fr.close()


def test_preallocated_file(tmp_path) -> None:
    """preallocate=True extends a new file to init_file_size zeros with logical size 0;
    appends start at 0; trim/close cut it to the logical size."""
    path = str(tmp_path / "00000000000000000000.log")
    fr = FileRecords.open(path, preallocate=True, init_file_size=64 * 1024)
    assert fr.size == 0 and os.path.getsize(path) == 64 * 1024
    b = make_batch(3, 0)
    fr.append(b)
    assert fr.size == len(b) and os.path.getsize(path) == 64 * 1024
    assert open(path, "rb").read(len(b)) == bytes(b)
    fr.close()
    assert os.path.getsize(path) == len(b)
    # Reopened as existing, the file is taken at its length (preallocation not repeated).
    fr = FileRecords.open(path, file_already_exists=True, preallocate=True, init_file_size=64 * 1024)
    assert fr.size == len(b) and os.path.getsize(path) == len(b)
    fr.close()


def test_read_only_open_changes_nothing(tmp_path) -> None:
    """writable=False opens O_RDONLY: the iterators work, close does not trim, append fails."""
    path = str(tmp_path / "00000000000000000000.log")
    fr = FileRecords.open(path, preallocate=True, init_file_size=4096)
    fr.append(make_batch(2, 0))
    fr.close_handlers()  # crash: the preallocated tail stays
    before = file_digest(path)
    ro = FileRecords.open(path, writable=False)
    assert ro.size == 4096
    with pytest.raises(CorruptRecordError):  # the zero tail
        list(ro.iter_batches())
    with pytest.raises(OSError):
        ro.append(b"x")
    ro.close()
    assert file_digest(path) == before


def test_delete_and_rename(tmp_path) -> None:
    """rename_to moves the file; delete_if_exists closes and removes it once."""
    fr = write(tmp_path, [make_batch(1, 0)])
    new = str(tmp_path / "00000000000000000000.log.deleted")
    fr.rename_to(new)
    assert fr.path == new and os.path.exists(new)
    assert fr.delete_if_exists() is True
    assert fr.closed and not os.path.exists(new)
    assert fr.delete_if_exists() is False


def test_released_files_open_on_demand_under_the_lru_bound(tmp_path) -> None:
    """Inactive segments' .log files: at most OpenFiles.limit open at once, reopened on demand
    with the same bytes; a FileSlice keeps its descriptor valid after an eviction."""
    from broker.storage.file_records import OpenFiles

    old = OpenFiles.limit
    OpenFiles.limit = 3
    try:
        batches = consecutive_batches([2, 2])
        files = []
        for i in range(10):
            path = tmp_path / f"{i}.log"
            path.write_bytes(b"".join(batches))
            fr = FileRecords.open(str(path), file_already_exists=True)
            fr.release()
            files.append(fr)

        def open_fds() -> int:
            n = 0
            for f in os.listdir("/proc/self/fd"):
                try:
                    n += os.readlink(f"/proc/self/fd/{f}").startswith(str(tmp_path))
                except FileNotFoundError:  # listdir's own descriptor, closed since
                    pass
            return n

        assert open_fds() == 0
        first = files[0].slice(0, 1 << 20)  # opens file 0 and holds its descriptor
        for fr in files[1:]:
            assert [p for p, _ in fr.batch_headers()] == [0, len(batches[0])]
            assert open_fds() <= OpenFiles.limit + 1  # + the slice's
        assert os.pread(first.fd, first.size, first.position) == b"".join(batches)  # evicted, still valid
        del first
        assert open_fds() <= OpenFiles.limit
        assert files[0].read(0, 10) == b"".join(batches)[:10]  # reopened on demand
        for fr in files:
            fr.close()
        assert open_fds() == 0
    finally:
        OpenFiles.limit = old
