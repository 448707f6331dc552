"""Log (broker/storage/log.py): one partition — append validation and offset assignment, roll,
read, offset-for-timestamp, retention, truncation and flush. Loading (recovery, temp files,
swaps) is in test_log_loader.py.

Conformance checks against Kafka's behaviour (numbered across tests/storage, each test's
docstring says what Kafka does) are named ``test_check_NN_*``. Time is controlled with the log's ``now_ms`` injection, never by sleeping.
"""

from __future__ import annotations

import dataclasses
import os
import struct
import time

import crc32c
import pytest

from broker.storage.errors import (
    KafkaStorageError,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
)
from broker.storage.file_records import FileSlice
from broker.storage.log import Log
from client.records import (
    CorruptRecordError,
    InvalidRecordError,
    RecordBatchBuilder,
    UnsupportedMagicError,
    decode_batch,
    set_base_offset,
)
from client.records.compression import compress
from tests.storage.conftest import Clock, reload

# ------------------------------------------------------------------------------- helpers


def make_batch(n: int = 1, *, ts: int = 1_000, timestamps=None, value_size: int = 10,
               base_offset: int = 0, tag: int = 0) -> bytearray:
    """A producer batch of ``n`` records with explicit timestamps (``ts`` for all, or
    ``timestamps[i]``); record i has key b"k<i>" and a value of ``value_size`` bytes."""
    b = RecordBatchBuilder()
    for i in range(n):
        t = timestamps[i] if timestamps is not None else ts
        b.append(bytes([65 + (tag + i) % 26]) * value_size, key=b"k%d" % i, timestamp=t)
    out = b.build()
    if base_offset:
        set_base_offset(out, base_offset)
    return out


def whole_batches(data: bytes) -> list[bytes]:
    """The whole batches at the start of ``data`` (a partial tail is dropped, as a client
    does), split with struct on baseOffset/batchLength."""
    out, pos = [], 0
    while len(data) - pos >= 12:
        (length,) = struct.unpack_from(">i", data, pos + 8)
        size = length + 12
        if pos + size > len(data):
            break
        out.append(bytes(data[pos : pos + size]))
        pos += size
    return out


def base_offsets(data: bytes) -> list[int]:
    return [struct.unpack_from(">q", b, 0)[0] for b in whole_batches(data)]


def offsets_in(data: bytes) -> list[int]:
    return [r.offset for b in whole_batches(data) for r in decode_batch(b)]


def read_all(log: Log, start: int | None = None) -> list[int]:
    """Offsets of every record readable from ``start`` (default: the log start offset)."""
    start = log.log_start_offset if start is None else start
    return [o for o in offsets_in(log.read_bytes(start, 1 << 30)) if o >= start]


def bases(log: Log) -> list[int]:
    return [b for b, _ in log.segments.items()]


def seg_path(log: Log, base: int, ext: str = ".log") -> str:
    return os.path.join(log.dir, f"{base:020d}{ext}")


def file_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def flip_byte(path: str, pos: int) -> None:
    with open(path, "r+b") as f:
        f.seek(pos)
        b = f.read(1)
        f.seek(pos)
        f.write(bytes([b[0] ^ 0xFF]))


# ------------------------------------------------------------------------------- append


def test_append_assigns_contiguous_offsets_across_appends(make_log) -> None:
    log = make_log()
    infos = [log.append(make_batch(n)) for n in (3, 1, 5)]
    infos.append(log.append(make_batch(2) + make_batch(4)))  # two batches in one request
    assert [(i.first_offset, i.last_offset, i.num_records) for i in infos] == [
        (0, 2, 3), (3, 3, 1), (4, 8, 5), (9, 14, 6)]
    assert log.log_end_offset == 15
    assert read_all(log) == list(range(15))
    assert base_offsets(log.read_bytes(0, 1 << 20)) == [0, 3, 4, 9, 11]


def test_append_stores_input_bytes_except_base_offset(make_log) -> None:
    """CreateTime: the stored batch differs from the producer's only in bytes 0-7 (the
    assigned baseOffset); the CRC, which starts at byte 21, still verifies."""
    log = make_log()
    inputs = [make_batch(3, tag=1), make_batch(1, tag=2), make_batch(2, tag=3)]
    log.append(bytes(inputs[0]))  # immutable input
    log.append(inputs[1] + inputs[2])
    stored = whole_batches(file_bytes(seg_path(log, 0)))
    assert len(stored) == 3
    for base, inp, out in zip((0, 3, 4), inputs, stored):
        assert len(out) == len(inp)
        assert out[8:] == bytes(inp[8:])
        assert struct.unpack_from(">q", out, 0)[0] == base
        assert struct.unpack_from(">I", out, 17)[0] == crc32c.crc32c(out[21:])
    assert bytes(inputs[0][:8]) == b"\0" * 8  # the caller's immutable bytes are untouched


def _corrupt_crc(b: bytearray) -> bytearray:
    b[len(b) - 1] ^= 0x01
    return b


def _wrong_magic(b: bytearray) -> bytearray:
    b[16] = 1
    return b


def _offset_delta_gap() -> bytearray:
    b = RecordBatchBuilder()
    b.append(b"a", timestamp=1, offset_delta=0)
    b.append(b"b", timestamp=1, offset_delta=2)  # lastOffsetDelta 2 with 2 records
    return b.build()


def _with_records(section: bytes, count: int = 2, codec: int = 0) -> bytearray:
    """A batch whose header (length, attributes' codec, lastOffsetDelta, recordsCount) and CRC
    are right for ``section``, whatever ``section`` holds."""
    b = bytearray(make_batch(2)[:61]) + section
    struct.pack_into(">i", b, 8, len(b) - 12)
    b[22] = (b[22] & ~0x07) | codec
    struct.pack_into(">i", b, 23, count - 1)
    struct.pack_into(">i", b, 57, count)
    struct.pack_into(">I", b, 17, crc32c.crc32c(bytes(b[21:])))
    return b


def _records_of(batch: bytearray) -> bytes:
    return bytes(batch[61:])


INVALID = {
    "bad_crc": (lambda: _corrupt_crc(make_batch(2)), CorruptRecordError, 2),
    "wrong_magic": (lambda: _wrong_magic(make_batch(2)), UnsupportedMagicError, 43),
    "truncated": (lambda: make_batch(2)[:-5], CorruptRecordError, 2),
    "truncated_header": (lambda: make_batch(2)[:40], CorruptRecordError, 2),
    "trailing_garbage": (lambda: make_batch(2) + b"\x00\x01\x02", CorruptRecordError, 2),
    "base_offset_not_0": (lambda: make_batch(2, base_offset=7), InvalidRecordError, 87),
    "offset_delta_gap": (_offset_delta_gap, InvalidRecordError, 87),
    "too_large": (lambda: make_batch(1, value_size=600), RecordTooLargeError, 10),
    # a right CRC over records that do not parse (Kafka's LogValidator refuses them too)
    "garbage_records": (lambda: _with_records(b"\x05garbage-behind-a-good-crc"), InvalidRecordError, 87),
    "records_past_count": (lambda: _with_records(_records_of(make_batch(3)), count=2), InvalidRecordError, 87),
    "fewer_records_than_count": (lambda: _with_records(_records_of(make_batch(2)), count=3), InvalidRecordError, 87),
    "compressed_garbage": (lambda: _with_records(b"\x1f\x8b not gzip at all", codec=1), InvalidRecordError, 87),
    "compressed_bad_records": (lambda: _with_records(compress(1, b"\x05junk!"), codec=1), InvalidRecordError, 87),
}


@pytest.mark.parametrize("position", ["alone", "second"])
@pytest.mark.parametrize("kind", sorted(INVALID))
def test_invalid_append_raises_its_error_code_and_writes_nothing(make_log, kind, position) -> None:
    """Each invalid request raises the specific exception with Kafka's error code, and
    nothing is written — also when only the second batch of the request is bad."""
    log = make_log(max_message_bytes=500)
    log.append(make_batch(3))
    path = seg_path(log, 0)
    before = file_bytes(path)
    make_bad, exc, code = INVALID[kind]
    request = make_bad() if position == "alone" else make_batch(2) + make_bad()
    with pytest.raises(exc) as e:
        log.append(request)
    assert e.value.error_code == code
    assert log.log_end_offset == 3
    assert file_bytes(path) == before and log.active_segment.size == len(before)
    assert log.num_segments == 1
    # the log is still usable and the next append gets the next offset
    assert log.append(make_batch(1)).first_offset == 3
    assert read_all(log) == [0, 1, 2, 3]


def test_empty_append_raises_corrupt_message(make_log) -> None:
    log = make_log()
    with pytest.raises(CorruptRecordError) as e:
        log.append(b"")
    assert e.value.error_code == 2 and log.log_end_offset == 0


def test_max_message_bytes_is_inclusive(make_log) -> None:
    b = make_batch(1, value_size=100)
    log = make_log(max_message_bytes=len(b))
    assert log.append(b).last_offset == 0
    with pytest.raises(RecordTooLargeError):
        log.append(make_batch(1, value_size=101))
    assert log.log_end_offset == 1


def test_append_larger_than_segment_bytes_raises_18_and_writes_nothing(make_log) -> None:
    a, b = make_batch(1, value_size=300), make_batch(1, value_size=300)
    log = make_log(segment_bytes=len(a) + len(b) - 1)
    log.append(make_batch(1))
    size = log.size
    with pytest.raises(RecordBatchTooLargeError) as e:
        log.append(a + b)  # each batch fits max.message.bytes; together > segment.bytes
    assert e.value.error_code == 18
    assert log.log_end_offset == 1 and log.size == size and log.num_segments == 1
    # exactly segment.bytes is accepted (in a new segment)
    log2 = make_log(name="u-0", segment_bytes=len(a) + len(b))
    assert log2.append(a + b).last_offset == 1


def test_log_append_time_rewrites_timestamp_type_max_timestamp_and_crc(make_log) -> None:
    clock = Clock(1_700_000_000_123)
    log = make_log(clock, message_timestamp_type="LogAppendTime")
    inputs = [make_batch(3, timestamps=[5, 9, 7]), make_batch(2, timestamps=[1, 2])]
    info = log.append(inputs[0] + inputs[1])
    assert info.log_append_time == clock.ms and info.max_timestamp == clock.ms
    stored = whole_batches(file_bytes(seg_path(log, 0)))
    assert len(stored) == 2
    for inp, out in zip(inputs, stored):
        assert out[22] & 0x08  # timestamp type bit (low byte of the attributes)
        assert out[22] & ~0x08 & 0xFF == inp[22]
        assert struct.unpack_from(">q", out, 35)[0] == clock.ms  # maxTimestamp
        assert struct.unpack_from(">I", out, 17)[0] == crc32c.crc32c(out[21:])
        assert out[23:35] == bytes(inp[23:35]) and out[43:] == bytes(inp[43:])  # the rest as sent
        assert [r.timestamp for r in decode_batch(out)] == [clock.ms] * (len(decode_batch(out)))
    assert log.offset_for_timestamp(clock.ms).offset == 0


def test_append_after_close_raises_kafka_storage_error(make_log) -> None:
    log = make_log()
    log.append(make_batch(1))
    log.close()
    with pytest.raises(KafkaStorageError) as e:
        log.append(make_batch(1))
    assert e.value.error_code == 56
    with pytest.raises(KafkaStorageError):
        log.read(0, 100)


def test_follower_style_append_below_leo_is_rejected(make_log) -> None:
    log = make_log()
    log.append(make_batch(5))
    with pytest.raises(InvalidRecordError):
        log.append(make_batch(1, base_offset=3), assign_offsets=False)
    assert log.log_end_offset == 5


# ------------------------------------------------------------------------------- roll


def test_check_16_exactly_filling_segment_bytes_does_not_roll(make_log) -> None:
    a, b = make_batch(1, value_size=50), make_batch(1, value_size=30)
    log = make_log(segment_bytes=len(a) + len(b))
    log.append(bytes(a))  # bytes: append stamps offsets into a bytearray in place
    log.append(bytes(b))
    assert bases(log) == [0] and log.active_segment.size == len(a) + len(b)
    log.append(make_batch(1))  # size + incoming > segment.bytes
    assert bases(log) == [0, 2]
    # one byte less and the second append already rolls
    log2 = make_log(name="u-0", segment_bytes=len(a) + len(b) - 1)
    log2.append(bytes(a))
    log2.append(bytes(b))
    assert bases(log2) == [0, 1]


def test_check_17_segment_ms_uses_record_timestamps_not_the_wall_clock(make_log) -> None:
    clock = Clock(10**12)
    log = make_log(clock, segment_ms=100, segment_jitter_ms=0)
    log.append(make_batch(1, ts=1000))
    clock.ms += 10**9  # the wall clock says the segment is ancient: irrelevant
    log.append(make_batch(1, ts=1100))  # 100 ms after the first batch: not > 100
    log.append(make_batch(1, ts=1050))
    assert bases(log) == [0]
    clock.ms = 0  # and a wall clock in the past does not prevent the roll
    log.append(make_batch(1, ts=1101))
    assert bases(log) == [0, 3]
    # the new segment's age counts from its own first batch (1101)
    log.append(make_batch(1, ts=1201))
    assert bases(log) == [0, 3]
    # an empty segment never rolls on time
    empty = log.roll()
    assert bases(log) == [0, 3, 5] and empty.size == 0
    log.append(make_batch(1, ts=10**9))
    assert log.active_segment is empty and bases(log) == [0, 3, 5]


def test_segment_ms_without_timestamps_uses_the_logs_clock(make_log) -> None:
    """Batches with maxTimestamp -1: the segment's age is wall-clock time since it was
    created, on the log's (injected) clock."""
    clock = Clock(5_000)
    log = make_log(clock, segment_ms=100)
    clock.ms = 5_050
    log.append(make_batch(1, ts=-1))
    clock.ms = 5_100
    log.append(make_batch(1, ts=-1))
    assert bases(log) == [0]
    clock.ms = 5_101
    log.append(make_batch(1, ts=-1))
    assert bases(log) == [0, 2]
    clock.ms = 5_201
    log.append(make_batch(1, ts=-1))
    assert bases(log) == [0, 2]
    clock.ms = 5_202
    log.append(make_batch(1, ts=-1))
    assert bases(log) == [0, 2, 4]


def test_check_18_rolls_on_full_offset_index(make_log) -> None:
    # 48 bytes: 6 offset entries; the time index (4 entries, full at 3) gets only one entry
    # because every batch has the same timestamp. index.interval.bytes=0 indexes every batch
    # but the first of a segment.
    log = make_log(segment_index_bytes=48, index_interval_bytes=0)
    for _ in range(7):
        log.append(make_batch(1, ts=5))
    assert bases(log) == [0]
    assert log.active_segment.offset_index.is_full()
    log.append(make_batch(1, ts=5))
    assert bases(log) == [0, 7]
    assert os.path.getsize(seg_path(log, 0, ".index")) == 6 * 8  # trimmed at roll
    assert read_all(log) == list(range(8))


def test_check_18_rolls_on_relative_offset_overflow(make_log) -> None:
    """A batch whose offset does not fit in int32 relative to the segment base rolls; the
    offsets come from a follower-style append (assign_offsets=False) with a huge gap."""
    log = make_log(index_interval_bytes=0)
    log.append(make_batch(2))
    log.append(make_batch(1, base_offset=2**31 - 1), assign_offsets=False)  # relative 2^31-1 fits
    assert bases(log) == [0]
    log.append(make_batch(2, base_offset=2**31), assign_offsets=False)  # relative 2^31 does not
    assert bases(log) == [0, 2**31]
    assert os.path.exists(seg_path(log, 2**31))
    assert log.log_end_offset == 2**31 + 2
    assert read_all(log) == [0, 1, 2**31 - 1, 2**31, 2**31 + 1]
    assert read_all(log, 2) == [2**31 - 1, 2**31, 2**31 + 1]  # offset 2 is in the gap


def test_check_19_new_segment_base_is_first_offset_of_the_append(make_log) -> None:
    a = make_batch(3, value_size=100)
    log = make_log(segment_bytes=len(a) + 10)
    log.append(a)
    log.append(make_batch(2, value_size=100))
    assert bases(log) == [0, 3]
    # with a gap (follower-style offsets) the new base is the batch's offset, not the LEO
    log.append(make_batch(3, value_size=100, base_offset=10), assign_offsets=False)
    assert bases(log) == [0, 3, 10] and log.log_end_offset == 13
    assert read_all(log, 5) == [10, 11, 12]


def test_roll_on_empty_active_segment_replaces_it(make_log) -> None:
    """KAFKA-6388: rolling at the offset of the empty active segment replaces it."""
    log = make_log()
    log.append(make_batch(2))
    first = log.roll()
    second = log.roll()
    assert bases(log) == [0, 2] and first is not second and log.active_segment is second
    assert {n[:20] for n in os.listdir(log.dir)} == {f"{0:020d}", f"{2:020d}"}
    assert log.append(make_batch(1)).first_offset == 2


# ------------------------------------------------------------------------------- read


def _three_segments(make_log, **cfg) -> Log:
    """Segments 0 (offsets 0-5), 6 (6-11), 12 (12-17, active); batches of 2 records."""
    log = make_log(index_interval_bytes=0, **cfg)
    for s in range(3):
        for _ in range(3):
            log.append(make_batch(2, value_size=20))
        if s < 2:
            log.roll()
    assert bases(log) == [0, 6, 12]
    return log


def test_read_returns_file_slices_of_whole_batches_from_the_batch_holding_offset(make_log) -> None:
    log = make_log(index_interval_bytes=0)
    sizes = []
    for n in (3, 3, 3, 3):
        b = make_batch(n)
        sizes.append(len(b))
        log.append(b)
    result = log.read(4, 1 << 20)
    assert all(isinstance(s, FileSlice) for s in result.slices)
    assert len(result.slices) == 1
    s = result.slices[0]
    assert s.position == sizes[0]  # batch 3-5 starts after the first batch
    assert s.size == sum(sizes[1:])
    data = os.pread(s.fd, s.size, s.position)
    assert base_offsets(data) == [3, 6, 9]  # starts at the batch holding 4, includes 3
    assert offsets_in(data) == list(range(3, 12))
    assert (result.high_watermark, result.log_start_offset, result.log_end_offset) == (12, 0, 12)


def test_read_continues_into_the_next_segments(make_log) -> None:
    log = _three_segments(make_log)
    result = log.read(3, 1 << 20)
    assert [s.fd for s in result.slices] == [seg.log.fd for seg in log.segments.values()]
    assert offsets_in(log.read_bytes(3, 1 << 20)) == list(range(2, 18))


def test_read_respects_max_bytes_and_min_one_batch(make_log) -> None:
    log = _three_segments(make_log)
    first = len(whole_batches(log.read_bytes(0, 1 << 20))[0])
    one = log.read_bytes(0, 10, min_one_batch=True)
    assert len(one) == first and offsets_in(one) == [0, 1]
    partial = log.read_bytes(0, 10, min_one_batch=False)
    assert len(partial) == 10 and whole_batches(partial) == []
    # a limit spanning one and a half batches ends mid-batch; the whole ones decode
    data = log.read_bytes(0, first + first // 2)
    assert len(data) == first + first // 2 and offsets_in(data) == [0, 1]


def test_read_out_of_range(make_log) -> None:
    log = _three_segments(make_log)
    with pytest.raises(OffsetOutOfRangeError) as e:
        log.read(19, 100)
    assert e.value.error_code == 1
    log.delete_records_before(7)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(6, 100)
    assert offsets_in(log.read_bytes(7, 1 << 20))[:2] == [6, 7]  # the batch holding 7


def test_read_at_leo_returns_no_slices(make_log) -> None:
    log = _three_segments(make_log)
    result = log.read(18, 1 << 20)
    assert result.slices == [] and result.size == 0 and result.log_end_offset == 18
    empty = make_log(name="e-0")
    assert empty.read(0, 100).slices == []


def test_check_14_read_bounded_by_hw_never_returns_bytes_past_it(make_log) -> None:
    log = _three_segments(make_log)
    everything = log.read_bytes(0, 1 << 30)
    for hw in (2, 6, 9, 14, 17):
        result = log.read(0, 1 << 30, upper_bound=hw)
        data = b"".join(os.pread(s.fd, s.size, s.position) for s in result.slices)
        assert offsets_in(data) == list(range(hw - hw % 2))  # whole batches below the bound
        assert everything.startswith(data)
        # nothing past the HW position: the byte count is exactly that of the batches below it
        assert len(data) == sum(len(b) for b in whole_batches(everything)[: hw // 2])
    # a read starting at or above the bound returns nothing (not an error)
    assert log.read(10, 1 << 20, upper_bound=10).slices == []
    assert log.read(12, 1 << 20, upper_bound=10).slices == []
    # starting in the bound's segment
    result = log.read(12, 1 << 20, upper_bound=16)
    data = b"".join(os.pread(s.fd, s.size, s.position) for s in result.slices)
    assert offsets_in(data) == [12, 13, 14, 15]


def test_check_15_fetch_with_no_batch_in_segment_continues_into_next(make_log) -> None:
    log = make_log(index_interval_bytes=0)
    log.append(make_batch(3))
    log.append(make_batch(2))  # segment 0 holds 0-4
    log.roll(10)  # next segment at 10: offsets 5-9 are a gap
    log.append(make_batch(3, base_offset=10), assign_offsets=False)
    assert bases(log) == [0, 10]
    for start in (5, 7, 9):
        data = log.read_bytes(start, 1 << 20)
        assert base_offsets(data) == [10] and offsets_in(data) == [10, 11, 12]
    assert offsets_in(log.read_bytes(4, 1 << 20)) == [3, 4, 10, 11, 12]


def test_check_12_fetch_in_gap_inside_a_segment_returns_next_batch(make_log) -> None:
    log = make_log()
    log.append(make_batch(2))
    log.append(make_batch(2, base_offset=6), assign_offsets=False)
    assert offsets_in(log.read_bytes(3, 1 << 20)) == [6, 7]


def test_corrupt_batch_length_in_an_older_segment_is_an_error_not_a_jump(make_log) -> None:
    """A batchLength of 0x7fffffff in a closed segment: a read at or after that batch raises
    CorruptRecordError (the fetch gets CORRUPT_MESSAGE) instead of skipping to the next segment
    and handing out later offsets as if the damaged range were empty."""
    log = make_log(index_interval_bytes=0)
    for _ in range(4):
        log.append(make_batch(5, value_size=100))  # offsets 0-19
    log.roll()
    log.append(make_batch(5))  # 20-24
    seg = log.segments.floor(0)[1]
    positions = [pos for pos, _ in seg.log.batch_headers(0)]
    damaged = positions[2]  # the batch of offsets 10-14
    with open(seg.log.path, "r+b") as f:
        f.seek(damaged + 8)
        f.write(struct.pack(">i", 0x7FFFFFFF))
    assert offsets_in(log.read_bytes(0, 1 << 20))[:10] == list(range(10))  # before the damage: served
    for offset in (10, 12, 14):
        with pytest.raises(CorruptRecordError):
            log.read(offset, 1 << 20)
    # the index points past the damage for offset 19: its own batch is intact and served
    assert offsets_in(log.read_bytes(19, 1 << 20)) == list(range(15, 25))


# ------------------------------------------------------------------------------- offsets for timestamps


def test_check_34_list_offsets(make_log) -> None:
    log = make_log(index_interval_bytes=0)
    log.append(make_batch(2, timestamps=[100, 300]))   # 0-1
    log.append(make_batch(2, timestamps=[200, 250]))   # 2-3
    log.roll()
    log.append(make_batch(3, timestamps=[400, 350, 500]))  # 4-6
    log.append(make_batch(1, timestamps=[600]))        # 7
    assert tuple(log.offset_for_timestamp(-1))[:2] == (-1, 8)
    assert tuple(log.offset_for_timestamp(-2))[:2] == (-1, 0)
    found = {t: log.offset_for_timestamp(t) for t in (0, 100, 101, 250, 301, 360, 500, 600)}
    assert {t: (f.timestamp, f.offset) for t, f in found.items()} == {
        0: (100, 0), 100: (100, 0), 101: (300, 1),
        250: (300, 1),  # first batch with maxTs >= 250 is 0-1; its first record >= 250 is 1
        301: (400, 4), 360: (400, 4), 500: (500, 6), 600: (600, 7)}
    assert log.offset_for_timestamp(601) is None
    assert tuple(log.offset_for_timestamp(-3))[:2] == (600, 7)
    # -2 follows the log start offset, and timestamps never return an offset below it
    log.delete_records_before(1)
    assert tuple(log.offset_for_timestamp(-2))[:2] == (-1, 1)
    assert (log.offset_for_timestamp(100).timestamp, log.offset_for_timestamp(100).offset) == (300, 1)


# ------------------------------------------------------------------------------- retention


def _segments_of_sizes(make_log, value_sizes, clock=None, **cfg) -> Log:
    log = make_log(clock, **cfg)
    for i, v in enumerate(value_sizes):
        log.append(make_batch(1, value_size=v))
        if i < len(value_sizes) - 1:
            log.roll()
    return log


def test_check_20_size_retention_stops_at_the_first_segment_that_fails(make_log) -> None:
    sizes = [len(make_batch(1, value_size=v)) for v in (40, 400, 40, 40, 40)]
    total = sum(sizes)
    # diff = sizes[0] + 250: the 1st segment goes, the 400-byte 2nd does not fit in what is
    # left (250), so retention stops there although the 3rd and 4th (2 x ~100) would fit.
    rb = total - sizes[0] - 250
    log = _segments_of_sizes(make_log, (40, 400, 40, 40, 40), retention_bytes=rb, retention_ms=-1)
    assert [s.size for s in log.segments.values()] == sizes
    assert log.delete_old_segments() == 1
    assert bases(log) == [1, 2, 3, 4] and log.log_start_offset == 1
    assert log.size >= rb
    assert log.delete_old_segments() == 0


@pytest.mark.parametrize("keep, extra, deleted", [(2, 0, 3), (2, 1, 2), (5, 0, 0), (5, 1, 0)])
def test_check_20_size_retention_keeps_at_least_retention_bytes(make_log, keep, extra, deleted) -> None:
    """Five equal segments of s bytes; retention.bytes = keep*s + extra."""
    s = len(make_batch(1, value_size=50))
    log = _segments_of_sizes(make_log, [50] * 5, retention_bytes=keep * s + extra, retention_ms=-1)
    assert log.delete_old_segments() == deleted
    assert bases(log) == list(range(deleted, 5))
    assert log.size >= keep * s + extra or deleted == 0
    assert log.log_start_offset == deleted
    # (the HW condition "HW >= next segment base" always holds: one replica, HW == LEO)


def test_check_21_time_retention_uses_the_largest_record_timestamp(make_log) -> None:
    clock = Clock(0)
    log = make_log(clock, retention_ms=1000, retention_bytes=-1)
    log.append(make_batch(1, ts=1000))
    log.append(make_batch(1, ts=5000))  # segment 0: first batch 1000, largest 5000
    log.roll()
    log.append(make_batch(2, timestamps=[5500, 2000]))  # segment 2: largest 5500
    log.roll()
    log.append(make_batch(1, ts=9000))  # active segment 4
    clock.ms = 6000  # 6000 - 5000 = 1000 is not > 1000
    assert log.delete_old_segments() == 0
    clock.ms = 6001
    assert log.delete_old_segments() == 1 and bases(log) == [2, 4]
    clock.ms = 6500
    assert log.delete_old_segments() == 0
    clock.ms = 6501
    assert log.delete_old_segments() == 1 and bases(log) == [4]
    assert log.log_start_offset == 4


def test_check_21_time_retention_falls_back_to_log_mtime_without_timestamps(make_log) -> None:
    now_s = int(time.time())
    clock = Clock(now_s * 1000)
    log = make_log(clock, retention_ms=60_000, retention_bytes=-1)
    for i in range(3):
        log.append(make_batch(1, ts=-1))
        if i < 2:
            log.roll()
    os.utime(seg_path(log, 0), (now_s - 3600, now_s - 3600))
    os.utime(seg_path(log, 1), (now_s - 30, now_s - 30))
    assert log.delete_old_segments() == 1 and bases(log) == [1, 2]
    os.utime(seg_path(log, 1), (now_s - 61, now_s - 61))
    assert log.delete_old_segments() == 1 and bases(log) == [2]
    assert log.log_start_offset == 2 and read_all(log) == [2]


def test_check_22_log_start_and_deleted_suffix_until_the_delay_passed(make_log) -> None:
    clock = Clock(50_000)
    log = make_log(clock, retention_ms=1000, file_delete_delay_ms=5000)
    for ts in (1000, 1000):
        log.append(make_batch(2, ts=ts))
        log.roll()
    log.append(make_batch(2, ts=60_000))  # active segment 4 is recent
    assert log.delete_old_segments() == 2
    assert bases(log) == [4] and log.log_start_offset == 4
    names = set(os.listdir(log.dir))
    for b in (0, 2):
        for ext in (".log", ".index", ".timeindex"):
            assert f"{b:020d}{ext}" not in names
            assert f"{b:020d}{ext}.deleted" in names
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)
    assert read_all(log) == [4, 5]
    assert log.delete_expired_files(54_999) == 0
    assert sum(n.endswith(".deleted") for n in os.listdir(log.dir)) == 6
    assert log.delete_expired_files(55_000) == 2
    assert not any(n.endswith(".deleted") for n in os.listdir(log.dir))


def test_expired_files_can_be_taken_out_and_removed_elsewhere(make_log) -> None:
    """``pop_expired_files`` (the broker then unlinks them in a worker thread): the due
    segments leave the pending list at once, their files stay until the caller removes them."""
    clock = Clock(50_000)
    log = make_log(clock, retention_ms=1000, file_delete_delay_ms=5000)
    for _ in range(2):
        log.append(make_batch(2, ts=1000))
        log.roll()
    log.append(make_batch(2, ts=60_000))
    assert log.delete_old_segments() == 2
    assert log.pop_expired_files(54_999) == []
    due = log.pop_expired_files(55_000)
    assert sorted(seg.base_offset for seg in due) == [0, 2]
    assert log.pop_expired_files(99_000) == [] and log.delete_expired_files(99_000) == 0
    assert sum(n.endswith(".deleted") for n in os.listdir(log.dir)) == 6
    for seg in due:
        seg.delete_if_exists()
    assert not any(n.endswith(".deleted") for n in os.listdir(log.dir))


@pytest.mark.parametrize("policy", ["time", "size"])
def test_check_23_everything_deletable_rolls_an_empty_segment_first(make_log, policy) -> None:
    clock = Clock(10**9)
    cfg = dict(retention_ms=1000) if policy == "time" else dict(retention_bytes=0, retention_ms=-1)
    log = make_log(clock, **cfg)
    for i in range(3):
        log.append(make_batch(2, ts=1000))
        if i < 2:
            log.roll()
    assert log.delete_old_segments() == 3
    assert bases(log) == [6] and log.active_segment.size == 0
    assert log.log_start_offset == log.log_end_offset == 6
    assert os.path.exists(seg_path(log, 6))
    assert log.delete_old_segments() == 0  # an empty last segment is never deleted
    assert log.append(make_batch(1, ts=10**9)).first_offset == 6
    assert bases(log) == [6]


def test_delete_records_before_then_retention_deletes_segments_below(make_log) -> None:
    log = _three_segments(make_log, retention_ms=-1)
    assert log.delete_records_before(7) == 7
    assert log.log_start_offset == 7 and bases(log) == [0, 6, 12]  # nothing deleted yet
    assert log.delete_records_before(3) == 7  # never moves back
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records_before(19)
    assert log.delete_old_segments() == 1
    assert bases(log) == [6, 12] and log.log_start_offset == 7
    log.delete_records_before(12)
    assert log.delete_old_segments() == 1 and bases(log) == [12]
    log.delete_records_before(18)  # up to the LEO: the active segment is kept
    assert log.delete_old_segments() == 0 and bases(log) == [12]
    assert read_all(log) == [] and log.read(18, 100).slices == []


def test_delete_segments_below_log_start_runs_without_a_retention_pass(make_log) -> None:
    """DeleteRecords' own step: only the segments wholly below the log start offset, whatever
    retention.ms says."""
    log = _three_segments(make_log, retention_ms=1)
    log.delete_records_before(13)
    assert log.delete_segments_below_log_start() == 2
    assert bases(log) == [12] and log.log_start_offset == 13
    with pytest.raises(OffsetOutOfRangeError):
        log.read(12, 100)
    assert read_all(log, 13) == list(range(13, 18))


# ------------------------------------------------------------------------------- truncation


def test_check_33_truncate_to_an_offset_in_a_gap(make_log) -> None:
    log = make_log(index_interval_bytes=0, segment_index_bytes=1024)
    log.append(make_batch(5))                                        # 0-4
    log.append(make_batch(5, base_offset=10), assign_offsets=False)  # 10-14 (gap 5-9)
    log.append(make_batch(5))                                        # 15-19
    log.roll()
    log.append(make_batch(5))                                        # 20-24, segment 20
    first_size = len(make_batch(5))
    assert log.truncate_to(7)
    assert bases(log) == [0]
    assert not os.path.exists(seg_path(log, 20))
    assert read_all(log) == [0, 1, 2, 3, 4]
    # LEO is the end of the last kept batch (Kafka would set it to 7, the target).
    assert log.log_end_offset == 5
    seg = log.active_segment
    assert seg.size == first_size == os.path.getsize(seg_path(log, 0))
    assert seg.offset_index.entries == 0
    assert [tuple(seg.time_index.entry(i)) for i in range(seg.time_index.entries)] == [(1000, 4)]
    # appends continue with consistent indexes, and a clean reload reads the same
    for _ in range(3):
        log.append(make_batch(2))
    assert [tuple(seg.offset_index.entry(i)) for i in range(seg.offset_index.entries)] == [
        (8, first_size + len(make_batch(2))), (10, first_size + 2 * len(make_batch(2)))]
    seg.offset_index.verify(seg.size)
    log2 = reload(log, clean=True)
    try:
        assert read_all(log2) == list(range(11)) and log2.log_end_offset == 11
    finally:
        log2.close()


def test_truncate_to_mid_batch_removes_the_whole_batch(make_log) -> None:
    log = _three_segments(make_log)
    assert log.truncate_to(9)  # batch 8-9 goes whole
    assert log.log_end_offset == 8 and bases(log) == [0, 6]
    assert read_all(log) == list(range(8))
    assert not log.truncate_to(8)  # at the LEO: nothing to do
    assert log.append(make_batch(1)).first_offset == 8


def test_truncate_to_below_the_log_start_batch_restarts_empty_at_log_start(make_log) -> None:
    """The batch holding the target starts below the log start offset: the log becomes empty
    at the log start offset rather than ending below it."""
    log = make_log()
    log.append(make_batch(5))
    log.append(make_batch(5))  # 5-9
    log.delete_records_before(7)
    assert log.truncate_to(8)
    assert log.log_start_offset == 7 == log.log_end_offset
    assert bases(log) == [7] and log.active_segment.size == 0
    assert log.read(7, 100).slices == []
    assert log.append(make_batch(1)).first_offset == 7
    assert read_all(log) == [7]


# ------------------------------------------------------------------------------- flush


def test_flush_advances_recovery_point_to_the_leo_at_call_time(make_log) -> None:
    log = make_log()
    log.append(make_batch(3))
    assert log.recovery_point == 0 and log.unflushed_messages == 3
    assert log.flush() == 3 and log.recovery_point == 3
    assert log.flush(up_to=1) == 3  # never moves back
    log.append(make_batch(2))
    assert log.flush(up_to=4) == 4 and log.recovery_point == 4
    # An append racing with the fsync (here: made from inside the segment's fsync) is not
    # covered by it: the recovery point stops at the LEO seen when flush was called.
    seg = log.active_segment
    real_flush = seg.flush

    def flush_with_concurrent_append() -> None:
        log.append(make_batch(3))
        real_flush()

    seg.flush = flush_with_concurrent_append  # type: ignore[method-assign]
    assert log.flush() == 5
    assert log.log_end_offset == 8 and log.recovery_point == 5 and log.unflushed_messages == 3
    seg.flush = real_flush  # type: ignore[method-assign]
    assert log.flush() == 8


def test_flush_messages_flushes_inline_without_a_scheduler(make_log) -> None:
    log = make_log(flush_messages=3)
    log.append(make_batch(2))
    assert log.recovery_point == 0
    log.append(make_batch(1))
    assert log.recovery_point == 3
    log.append(make_batch(5))
    assert log.recovery_point == 8


def test_flush_messages_calls_the_scheduler_when_set(make_log) -> None:
    log = make_log(flush_messages=3)
    calls: list[Log] = []
    log.flush_scheduler = calls.append
    log.append(make_batch(2))
    assert calls == []
    log.append(make_batch(1))
    assert calls == [log] and log.recovery_point == 0  # the scheduler flushes, not append
    log.flush()
    assert log.recovery_point == 3


def test_flush_due_after_flush_ms_with_unflushed_data(make_log) -> None:
    clock = Clock(10_000)
    log = make_log(clock, flush_ms=1000)
    assert not log.flush_due(20_000)  # nothing to flush
    log.append(make_batch(1))
    assert not log.flush_due(10_999)
    assert log.flush_due(11_000)
    clock.ms = 12_000
    log.flush()
    assert not log.flush_due(12_999) and not log.flush_due(50_000)
    log.append(make_batch(1))
    assert not log.flush_due(12_999) and log.flush_due(13_000)


def test_flush_survives_retention_of_flushed_segments(make_log) -> None:
    log = _three_segments(make_log, retention_bytes=0, retention_ms=-1)
    log.flush()
    log.delete_old_segments()
    log.append(make_batch(1))
    assert log.flush() == log.log_end_offset == 19


# ------------------------------------------------------------------------------- config


def test_log_config_is_replaceable_at_runtime(make_log) -> None:
    """AlterConfigs-style: a new LogConfig on a live log takes effect at the next append."""
    log = make_log()
    log.append(make_batch(1, value_size=100))
    log.config = dataclasses.replace(log.config, segment_bytes=100)
    log.append(make_batch(1))
    assert bases(log) == [0, 1]


def test_max_timestamp_answers_the_record_not_the_batch_end(make_log) -> None:
    """ListOffsets -3 (KAFKA-16310, Kafka 3.8+): records +100, +400, +250 in one batch give
    offset 1, the record with the largest timestamp, not 2, the batch's last offset."""
    log = make_log()
    log.append(make_batch(2, timestamps=[10, 20]))            # 0-1
    log.append(make_batch(3, timestamps=[100, 400, 250]))     # 2-4
    log.append(make_batch(2, timestamps=[300, 399]))          # 5-6
    got = log.offset_for_timestamp(-3)
    assert got is not None and (got.timestamp, got.offset) == (400, 3)
    log.roll()
    log.append(make_batch(1, timestamps=[50]))                # 7: the largest stays in segment 0
    got = log.offset_for_timestamp(-3)
    assert (got.timestamp, got.offset) == (400, 3)
    log.append(make_batch(3, timestamps=[500, 500, 1]))       # 8-10: ties: the first record
    got = log.offset_for_timestamp(-3)
    assert (got.timestamp, got.offset) == (500, 8)
