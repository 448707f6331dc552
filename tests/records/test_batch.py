"""Tests for ``client/records/batch.py``: the 61-byte header view, validation, CRC, offsets."""

from __future__ import annotations

import struct
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from client.records import (
    LOG_OVERHEAD,
    RECORDS_OFFSET,
    Compression,
    CorruptRecordError,
    InvalidRecordError,
    Record,
    RecordBatchHeader,
    RecordError,
    UnsupportedMagicError,
    build_batch,
    compute_crc,
    decode_batch,
    iter_batch_headers,
    set_base_offset,
    validate_batch,
)

with warnings.catch_warnings():
    # kafka-python loads its protocol schemas with deprecated importlib.resources calls on import.
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record._crc32c import crc as pure_python_crc32c
    from kafka.record.default_records import DefaultRecordBatch as KafkaPythonBatch

BASE_OFFSET = 1_000_000_007
LEADER_EPOCH = 7
PRODUCER_ID = 123_456_789_012
PRODUCER_EPOCH = 3
BASE_SEQUENCE = 42
TS0 = 1_700_000_000_000

RECORDS = [
    Record(BASE_OFFSET, TS0, b"k0", b"v0" * 40),
    Record(BASE_OFFSET + 1, TS0 + 50, None, b"v1" * 40, (("h", b"x"),)),
    Record(BASE_OFFSET + 4, TS0 - 20, b"k2", None),  # offset gap, earlier timestamp
]


def known_batch(codec: Compression | str = "gzip", **overrides: object) -> bytearray:
    """RECORDS as one batch with every header field set to a distinctive value."""
    kwargs: dict[str, object] = dict(
        partition_leader_epoch=LEADER_EPOCH,
        producer_id=PRODUCER_ID,
        producer_epoch=PRODUCER_EPOCH,
        base_sequence=BASE_SEQUENCE,
        is_transactional=True,
    )
    kwargs.update(overrides)
    return build_batch(RECORDS, codec, **kwargs)


def simple_batch(base_offset: int = 0, n: int = 3, codec: Compression = Compression.NONE) -> bytearray:
    records = [Record(base_offset + i, TS0 + i, b"key%d" % i, b"value-%d" % i) for i in range(n)]
    return build_batch(records, codec)


def reseal(batch: bytearray) -> bytearray:
    """Recompute the CRC after patching covered bytes (as a broker stamping LogAppendTime does)."""
    struct.pack_into(">I", batch, 17, compute_crc(batch))
    return batch


BATCHES = [known_batch(c) for c in Compression] + [simple_batch(5, 1), simple_batch(0, 20)]


# --- the header view -----------------------------------------------------------------------


def test_header_exposes_every_field() -> None:
    """Each property reads back the value the batch was built with."""
    batch = known_batch("gzip")
    h = validate_batch(batch)
    assert h.base_offset == BASE_OFFSET
    assert h.batch_length == len(batch) - 12
    assert h.size_in_bytes == len(batch)
    assert h.partition_leader_epoch == LEADER_EPOCH
    assert h.magic == 2
    assert h.crc == struct.unpack_from(">I", batch, 17)[0]
    assert h.crc == pure_python_crc32c(bytes(batch[21:]))  # an independent CRC-32C
    assert h.attributes == 0x11  # gzip (1) | transactional (0x10)
    assert h.compression is Compression.GZIP
    assert h.compression_id == 1
    assert h.timestamp_type == 0
    assert h.is_transactional is True
    assert h.is_control is False
    assert h.has_delete_horizon is False
    assert h.last_offset_delta == 4
    assert h.base_timestamp == TS0  # the first record's timestamp, not the smallest
    assert h.max_timestamp == TS0 + 50
    assert h.producer_id == PRODUCER_ID
    assert h.producer_epoch == PRODUCER_EPOCH
    assert h.base_sequence == BASE_SEQUENCE
    assert h.last_sequence == BASE_SEQUENCE + 4
    assert h.records_count == 3
    assert h.last_offset == BASE_OFFSET + 4
    assert h.next_offset == BASE_OFFSET + 5
    assert h.is_valid()


def test_unpack_matches_properties_and_layout() -> None:
    """``unpack()`` returns the 13 fixed fields in layout order, and they sit at the documented
    byte offsets (checked with independent struct reads)."""
    batch = known_batch("zstd")
    h = RecordBatchHeader(batch)
    assert h.unpack() == (
        h.base_offset, h.batch_length, h.partition_leader_epoch, h.magic, h.crc, h.attributes,
        h.last_offset_delta, h.base_timestamp, h.max_timestamp, h.producer_id, h.producer_epoch,
        h.base_sequence, h.records_count,
    )
    assert struct.unpack_from(">q", batch, 0)[0] == BASE_OFFSET
    assert struct.unpack_from(">i", batch, 12)[0] == LEADER_EPOCH
    assert batch[16] == 2
    assert struct.unpack_from(">i", batch, 23)[0] == 4
    assert struct.unpack_from(">q", batch, 27)[0] == TS0
    assert struct.unpack_from(">q", batch, 35)[0] == TS0 + 50
    assert struct.unpack_from(">q", batch, 43)[0] == PRODUCER_ID
    assert struct.unpack_from(">h", batch, 51)[0] == PRODUCER_EPOCH
    assert struct.unpack_from(">i", batch, 53)[0] == BASE_SEQUENCE
    assert struct.unpack_from(">i", batch, 57)[0] == 3


@pytest.mark.parametrize("codec", list(Compression), ids=lambda c: c.name.lower())
def test_header_agrees_with_kafka_python_parser(codec: Compression) -> None:
    """kafka-python's DefaultRecordBatch reads the same field values from our bytes."""
    batch = known_batch(codec)
    ours = RecordBatchHeader(batch)
    theirs = KafkaPythonBatch(bytes(batch))
    assert theirs.validate_crc()
    assert (theirs.base_offset, theirs.size_in_bytes, theirs.leader_epoch, theirs.magic) == (
        ours.base_offset, ours.size_in_bytes, ours.partition_leader_epoch, ours.magic,
    )
    assert (theirs.crc, theirs.attributes, theirs.compression_type) == (
        ours.crc, ours.attributes, ours.compression_id,
    )
    assert (theirs.is_transactional, theirs.is_control_batch, theirs.timestamp_type) == (
        ours.is_transactional, ours.is_control, ours.timestamp_type,
    )
    assert (theirs.last_offset_delta, theirs.first_timestamp, theirs.max_timestamp) == (
        ours.last_offset_delta, ours.base_timestamp, ours.max_timestamp,
    )
    assert (theirs.producer_id, theirs.producer_epoch, theirs.base_sequence) == (
        ours.producer_id, ours.producer_epoch, ours.base_sequence,
    )
    assert (theirs.records_count, theirs.last_offset, theirs.next_offset) == (
        ours.records_count, ours.last_offset, ours.next_offset,
    )


def test_control_and_log_append_time_flags() -> None:
    """Control and LogAppendTime set attribute bits 5 and 3; defaults give -1 producer fields."""
    batch = build_batch(RECORDS, "none", is_control=True, log_append_time=True)
    h = validate_batch(batch)
    assert h.attributes == 0x28
    assert h.is_control is True
    assert h.timestamp_type == 1
    assert h.is_transactional is False
    assert h.compression is Compression.NONE
    assert (h.partition_leader_epoch, h.producer_id, h.producer_epoch, h.base_sequence) == (-1, -1, -1, -1)
    assert h.last_sequence == -1


def test_delete_horizon_flag() -> None:
    """Attribute bit 6 is reported as ``has_delete_horizon``."""
    batch = known_batch("none")
    batch[22] |= 0x40
    assert validate_batch(reseal(batch)).has_delete_horizon is True


def test_last_sequence_wraps_like_kafka() -> None:
    """lastSequence wraps past int32 max to 0 (Kafka's DefaultRecordBatch.incrementSequence)."""
    batch = known_batch("none", base_sequence=2**31 - 3)  # deltas 0..4
    assert RecordBatchHeader(batch).last_sequence == 1
    batch = known_batch("none", base_sequence=2**31 - 5)
    assert RecordBatchHeader(batch).last_sequence == 2**31 - 1


def test_header_view_does_not_copy() -> None:
    """A view over a memoryview (or bytearray) sees later writes to the underlying buffer."""
    buf = bytearray(known_batch())
    view = memoryview(buf)
    h = RecordBatchHeader(view)
    assert h.buf is view
    struct.pack_into(">q", buf, 0, 555)
    assert h.base_offset == 555
    struct.pack_into(">i", buf, 12, 99)
    assert h.partition_leader_epoch == 99
    buf[22] |= 0x20
    assert h.is_control is True
    struct.pack_into(">i", buf, 57, 12345)
    assert h.records_count == 12345

    h2 = RecordBatchHeader(buf)
    assert h2.buf is buf
    set_base_offset(buf, 777)
    assert (h.base_offset, h2.base_offset) == (777, 777)


def test_header_view_at_a_position() -> None:
    """A view at ``pos`` reads the batch that starts there, not the first one."""
    first, second = simple_batch(0, 2), simple_batch(50, 4)
    buf = bytes(first + second)
    h = RecordBatchHeader(buf, len(first))
    assert (h.base_offset, h.records_count, h.size_in_bytes) == (50, 4, len(second))
    assert h.is_valid()


def test_header_view_needs_61_bytes() -> None:
    """Fewer than 61 bytes from ``pos`` cannot hold a header: CorruptRecordError."""
    batch = known_batch()
    with pytest.raises(CorruptRecordError):
        RecordBatchHeader(batch[:60])
    with pytest.raises(CorruptRecordError):
        RecordBatchHeader(batch, len(batch) - 60)
    RecordBatchHeader(batch[:61])  # exactly a header is enough for the view


def test_repr_mentions_offsets() -> None:
    """The repr is informative (and does not raise)."""
    text = repr(RecordBatchHeader(known_batch("lz4")))
    assert f"base_offset={BASE_OFFSET}" in text and "codec=lz4" in text


def test_set_base_offset_touches_only_bytes_0_to_7() -> None:
    """set_base_offset writes a big-endian int64 at 0-7 and nothing else."""
    batch = known_batch()
    before = bytes(batch)
    set_base_offset(batch, -2)
    assert bytes(batch[:8]) == b"\xff" * 7 + b"\xfe"
    assert bytes(batch[8:]) == before[8:]
    mv = memoryview(batch)
    set_base_offset(mv, 0x0102030405060708)
    assert bytes(batch[:8]) == bytes(range(1, 9))


def test_compute_crc_covers_attributes_to_end() -> None:
    """compute_crc is CRC-32C of bytes [21, end), matching a pure-Python CRC-32C."""
    for batch in BATCHES:
        assert compute_crc(batch) == pure_python_crc32c(bytes(batch[21:]))
        assert compute_crc(batch) == struct.unpack_from(">I", batch, 17)[0]


# --- validate_batch ----------------------------------------------------------------------


@pytest.mark.parametrize("batch", BATCHES, ids=range(len(BATCHES)))
def test_validate_accepts_good_batches(batch: bytearray) -> None:
    """Well-formed batches pass whatever buffer type holds them."""
    for buf in (batch, bytes(batch), memoryview(batch)):
        h = validate_batch(buf)
        assert h.size_in_bytes == len(batch)


def test_validate_within_a_larger_buffer() -> None:
    """``pos``/``end`` select one batch among several; following bytes are not its concern."""
    a, b, c = simple_batch(0), simple_batch(3, 5), simple_batch(8, 2)
    buf = bytes(a + b + c)
    assert validate_batch(buf, len(a)).base_offset == 3
    assert validate_batch(buf, len(a), len(a) + len(b)).base_offset == 3
    with pytest.raises(CorruptRecordError):
        validate_batch(buf, len(a), len(a) + len(b) - 1)


@pytest.mark.parametrize("keep", [0, 1, 16, 17, 20, 21, 40, 60, 61, 62, -1])
def test_truncated_batch_is_corrupt(keep: int) -> None:
    """A batch cut anywhere (< 17, < 61, inside the records, 1 byte short) is CORRUPT_MESSAGE."""
    batch = known_batch("none")
    assert len(batch) > 70
    with pytest.raises(CorruptRecordError) as info:
        validate_batch(batch[:keep])
    assert info.value.error_code == 2
    with pytest.raises(CorruptRecordError):  # the same, via ``end`` on the whole buffer
        validate_batch(batch, 0, keep % len(batch))


@pytest.mark.parametrize("pos", [17, 20, 21, 22, 23, 30, 57, 60, 61, -1])
def test_bad_crc_is_corrupt(pos: int) -> None:
    """Changing the stored CRC or any byte it covers is CORRUPT_MESSAGE."""
    batch = known_batch("none")
    batch[pos] ^= 0x01
    with pytest.raises(CorruptRecordError) as info:
        validate_batch(batch)
    assert info.value.error_code == 2
    assert not RecordBatchHeader(batch).is_valid()


@pytest.mark.parametrize("magic", [0, 1, 3, 255])
def test_wrong_magic_is_unsupported(magic: int) -> None:
    """Magic other than 2 is UNSUPPORTED_FOR_MESSAGE_FORMAT (43), checked before the CRC."""
    batch = known_batch()
    batch[16] = magic
    with pytest.raises(UnsupportedMagicError) as info:
        validate_batch(batch)
    assert info.value.error_code == 43
    assert isinstance(info.value, RecordError)
    with pytest.raises(UnsupportedMagicError):  # even when fewer than 61 bytes follow
        validate_batch(batch[:30])


@pytest.mark.parametrize("batch_length", [-(2**31), -1, 0, 48])
def test_batch_length_below_minimum_is_corrupt(batch_length: int) -> None:
    """batchLength < 49 (a batch shorter than its own header) is CORRUPT_MESSAGE."""
    batch = known_batch()
    struct.pack_into(">i", batch, 8, batch_length)
    with pytest.raises(CorruptRecordError) as info:
        validate_batch(batch)
    assert info.value.error_code == 2


@pytest.mark.parametrize("extra", [1, 100, None])
def test_batch_length_beyond_buffer_is_corrupt(extra: int | None) -> None:
    """batchLength pointing past the available bytes is CORRUPT_MESSAGE."""
    batch = known_batch()
    new_length = 2**31 - 1 if extra is None else len(batch) - LOG_OVERHEAD + extra
    struct.pack_into(">i", batch, 8, new_length)
    with pytest.raises(CorruptRecordError):
        validate_batch(batch)


def test_batch_length_shorter_than_records_fails_crc() -> None:
    """A batchLength that cuts the records short (but >= 49) fails the CRC over the shorter span."""
    batch = known_batch("none")
    struct.pack_into(">i", batch, 8, len(batch) - LOG_OVERHEAD - 1)
    with pytest.raises(CorruptRecordError):
        validate_batch(batch)


@pytest.mark.parametrize("count", [0, -1, -(2**31)])
def test_records_count_below_one_is_invalid(count: int) -> None:
    """recordsCount < 1 is INVALID_RECORD (87) once the CRC matches; before resealing, the
    CRC check (which comes first) reports corruption."""
    batch = known_batch()
    struct.pack_into(">i", batch, 57, count)
    with pytest.raises(CorruptRecordError):
        validate_batch(batch)
    with pytest.raises(InvalidRecordError) as info:
        validate_batch(reseal(batch))
    assert info.value.error_code == 87
    assert not isinstance(info.value, CorruptRecordError)


@pytest.mark.parametrize("delta", [-1, -(2**31)])
def test_negative_last_offset_delta_is_invalid(delta: int) -> None:
    """lastOffsetDelta < 0 is INVALID_RECORD (87) once the CRC matches."""
    batch = known_batch()
    struct.pack_into(">i", batch, 23, delta)
    with pytest.raises(CorruptRecordError):
        validate_batch(batch)
    with pytest.raises(InvalidRecordError) as info:
        validate_batch(reseal(batch))
    assert info.value.error_code == 87


def test_error_hierarchy() -> None:
    """One small hierarchy: all are RecordError (a ValueError) with Kafka error codes."""
    assert issubclass(RecordError, ValueError)
    for cls, code in ((CorruptRecordError, 2), (UnsupportedMagicError, 43), (InvalidRecordError, 87)):
        assert issubclass(cls, RecordError)
        assert cls.error_code == code


# --- properties ----------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(BATCHES), st.data())
def test_any_byte_flip_from_21_breaks_the_crc(batch: bytearray, data: st.DataObject) -> None:
    """Changing any one byte at position >= 21 (CRC-covered) makes validation fail as corrupt."""
    corrupted = bytearray(batch)
    pos = data.draw(st.integers(21, len(batch) - 1), label="pos")
    corrupted[pos] ^= data.draw(st.integers(1, 255), label="xor")
    assert compute_crc(corrupted) != RecordBatchHeader(corrupted).crc
    with pytest.raises(CorruptRecordError):
        validate_batch(corrupted)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(BATCHES), st.data())
def test_every_byte_outside_offset_and_epoch_is_checked(batch: bytearray, data: st.DataObject) -> None:
    """Only bytes 0-7 and 12-15 may change freely; a change anywhere else (length, magic, CRC,
    covered bytes) makes validate_batch raise a RecordError."""
    corrupted = bytearray(batch)
    pos = data.draw(st.sampled_from([*range(8, 12), *range(16, len(batch))]), label="pos")
    corrupted[pos] ^= data.draw(st.integers(1, 255), label="xor")
    with pytest.raises(RecordError):
        validate_batch(corrupted)


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(BATCHES),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-(2**31), 2**31 - 1),
)
def test_rewriting_offset_and_leader_epoch_keeps_batch_valid(
    batch: bytearray, base_offset: int, epoch: int
) -> None:
    """What a broker does on append (bytes 0-7 and 12-15 overwritten in place) leaves the CRC
    valid, and the records' offsets move with the base offset."""
    original = decode_batch(batch)
    patched = bytearray(batch)
    set_base_offset(patched, base_offset)
    struct.pack_into(">i", patched, 12, epoch)
    h = validate_batch(patched)
    assert (h.base_offset, h.partition_leader_epoch, h.crc) == (
        base_offset, epoch, RecordBatchHeader(batch).crc,
    )
    if 0 <= base_offset <= 2**62:  # keep record offsets within int64 for the comparison
        shift = base_offset - original[0].offset
        assert decode_batch(patched) == [r._replace(offset=r.offset + shift) for r in original]


# --- iter_batch_headers --------------------------------------------------------------------


CHAIN = [simple_batch(0, 3), known_batch("gzip"), simple_batch(2_000_000_000, 1, Compression.LZ4)]


def test_iter_batch_headers_walks_concatenated_batches() -> None:
    """Every whole batch is yielded in order, each view positioned at its batch."""
    buf = b"".join(bytes(b) for b in CHAIN)
    headers = list(iter_batch_headers(buf))
    assert [h.base_offset for h in headers] == [0, BASE_OFFSET, 2_000_000_000]
    assert [h.size_in_bytes for h in headers] == [len(b) for b in CHAIN]
    assert [h.pos for h in headers] == [0, len(CHAIN[0]), len(CHAIN[0]) + len(CHAIN[1])]
    assert all(h.is_valid() for h in headers)
    assert list(iter_batch_headers(b"")) == []


def test_iter_batch_headers_respects_pos_and_end() -> None:
    """``pos`` and ``end`` bound the walk."""
    buf = b"".join(bytes(b) for b in CHAIN)
    start = len(CHAIN[0])
    assert [h.base_offset for h in iter_batch_headers(buf, start)] == [BASE_OFFSET, 2_000_000_000]
    assert [h.base_offset for h in iter_batch_headers(buf, 0, start + len(CHAIN[1]))] == [0, BASE_OFFSET]


@pytest.mark.parametrize("keep", [1, 11, 12, 17, 60, 61, 62, -1])
def test_iter_batch_headers_stops_silently_at_partial_batch(keep: int) -> None:
    """A partial trailing batch (as a fetch size limit leaves) ends the walk without an error."""
    tail = simple_batch(99, 4)
    buf = b"".join(bytes(b) for b in CHAIN) + bytes(tail[:keep])
    assert [h.base_offset for h in iter_batch_headers(buf)] == [0, BASE_OFFSET, 2_000_000_000]


@settings(max_examples=50, deadline=None)
@given(st.integers(0, len(CHAIN[1]) - 1))
def test_iter_batch_headers_any_cut_yields_only_whole_batches(cut: int) -> None:
    """Cutting the chain anywhere inside the second batch yields exactly the first."""
    buf = bytes(CHAIN[0]) + bytes(CHAIN[1][:cut])
    assert [h.base_offset for h in iter_batch_headers(buf)] == [0]


def test_iter_batch_headers_does_not_check_crcs() -> None:
    """The walk is structural only: a batch with a bad CRC is still yielded (is_valid says so)."""
    bad = bytearray(CHAIN[1])
    bad[-1] ^= 0xFF
    headers = list(iter_batch_headers(bytes(CHAIN[0]) + bytes(bad)))
    assert len(headers) == 2
    assert headers[0].is_valid() and not headers[1].is_valid()


@pytest.mark.parametrize("batch_length", [48, 0, -1, -(2**31)])
def test_iter_batch_headers_rejects_size_below_61(batch_length: int) -> None:
    """A size field < 61 (batchLength < 49) would never advance: CorruptRecordError, after
    the batches before it were yielded."""
    bad = bytearray(CHAIN[1])
    struct.pack_into(">i", bad, 8, batch_length)
    it = iter_batch_headers(bytes(CHAIN[0]) + bytes(bad) + bytes(CHAIN[2]))
    assert next(it).base_offset == 0
    with pytest.raises(CorruptRecordError) as info:
        next(it)
    assert info.value.error_code == 2


def test_records_offset_constant() -> None:
    """The records section starts right after the 61-byte header."""
    assert RECORDS_OFFSET == 61
    assert LOG_OVERHEAD == 12
