"""RecordBatch v2: the unit Kafka stores in ``.log`` files and sends on the wire.

Layout (all integers big-endian; ``DefaultRecordBatch`` in Kafka's clients module)::

    off size field                 notes
      0   8  baseOffset            assigned by the broker; NOT covered by the CRC
      8   4  batchLength           bytes after this field = total size - 12
     12   4  partitionLeaderEpoch  -1 = none; NOT covered by the CRC
     16   1  magic                 2
     17   4  crc                   unsigned CRC-32C (Castagnoli) of bytes [21, end)
     21   2  attributes            bits 0-2 codec, 3 LogAppendTime, 4 transactional,
                                   5 control, 6 deleteHorizon
     23   4  lastOffsetDelta       last offset = baseOffset + lastOffsetDelta
     27   8  baseTimestamp
     35   8  maxTimestamp          -1 = none
     43   8  producerId            -1 = none
     51   2  producerEpoch
     53   4  baseSequence
     57   4  recordsCount
     61   .  records               one compressed block when the codec is not 0

Because the CRC starts at byte 21, the broker assigns offsets (and stamps the leader epoch) by
overwriting bytes 0-7 (and 12-15) in place without touching anything else.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

import crc32c as _crc32c

from .compression import Compression

__all__ = [
    "BASE_OFFSET_OFFSET", "LENGTH_OFFSET", "PARTITION_LEADER_EPOCH_OFFSET", "MAGIC_OFFSET",
    "CRC_OFFSET", "ATTRIBUTES_OFFSET", "LAST_OFFSET_DELTA_OFFSET", "BASE_TIMESTAMP_OFFSET",
    "MAX_TIMESTAMP_OFFSET", "PRODUCER_ID_OFFSET", "PRODUCER_EPOCH_OFFSET", "BASE_SEQUENCE_OFFSET",
    "RECORDS_COUNT_OFFSET", "RECORDS_OFFSET", "RECORD_BATCH_OVERHEAD", "LOG_OVERHEAD",
    "HEADER_SIZE_UP_TO_MAGIC", "CURRENT_MAGIC", "NO_TIMESTAMP",
    "RecordError", "CorruptRecordError", "UnsupportedMagicError", "InvalidRecordError",
    "UnsupportedCompressionTypeError",
    "RecordBatchHeader", "crc32c", "compute_crc", "set_base_offset", "validate_batch", "validate_batch_fields",
    "iter_batch_headers",
]

BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
LAST_OFFSET_DELTA_OFFSET = 23
BASE_TIMESTAMP_OFFSET = 27
MAX_TIMESTAMP_OFFSET = 35
PRODUCER_ID_OFFSET = 43
PRODUCER_EPOCH_OFFSET = 51
BASE_SEQUENCE_OFFSET = 53
RECORDS_COUNT_OFFSET = 57
RECORDS_OFFSET = 61
RECORD_BATCH_OVERHEAD = RECORDS_OFFSET  # a batch with no records section is 61 bytes
LOG_OVERHEAD = 12  # baseOffset + batchLength: what precedes the part batchLength counts
HEADER_SIZE_UP_TO_MAGIC = 17  # enough to read offset, length and magic of any format
CURRENT_MAGIC = 2
NO_TIMESTAMP = -1

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40

_HEADER = struct.Struct(">qiibIhiqqqhii")  # the 61 fixed bytes
HEADER_STRUCT = _HEADER  # public name: (baseOffset, batchLength, leaderEpoch, magic, crc, attributes,
#                           lastOffsetDelta, baseTimestamp, maxTimestamp, producerId, producerEpoch,
#                           baseSequence, recordsCount)
assert _HEADER.size == RECORDS_OFFSET
_Q = struct.Struct(">q")
_I = struct.Struct(">I")
_LEN = struct.Struct(">qi")  # baseOffset + batchLength


class RecordError(ValueError):
    """A record batch is not acceptable. ``error_code`` is the Kafka wire error code (the
    numbers of ``client.protocol.api.ErrorCode``, written out: this layer is below the protocol
    layer and imports nothing from it)."""

    error_code = 87  # INVALID_RECORD


class CorruptRecordError(RecordError):
    """Truncated batch, inconsistent length or failed CRC (Kafka: CORRUPT_MESSAGE)."""

    error_code = 2  # CORRUPT_MESSAGE


class UnsupportedMagicError(RecordError):
    """Magic byte other than 2 (Kafka: UNSUPPORTED_FOR_MESSAGE_FORMAT)."""

    error_code = 43  # UNSUPPORTED_FOR_MESSAGE_FORMAT


class UnsupportedCompressionTypeError(RecordError):
    """Codec bits name an id Kafka does not define (5-7) (UNSUPPORTED_COMPRESSION_TYPE)."""

    error_code = 76


class InvalidRecordError(RecordError):
    """Structurally well-formed but invalid content (record count < 1, negative delta, ...)."""

    error_code = 87  # INVALID_RECORD


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C (Castagnoli), hardware-accelerated by the ``crc32c`` package."""
    return _crc32c.crc32c(data)


def compute_crc(batch: bytes | bytearray | memoryview) -> int:
    """The CRC a batch must carry: CRC-32C of bytes [21, end)."""
    return _crc32c.crc32c(memoryview(batch)[ATTRIBUTES_OFFSET:])


def set_base_offset(batch: bytearray | memoryview, base_offset: int) -> None:
    """Overwrite bytes 0-7 in place. The CRC does not cover them, so it stays valid."""
    _Q.pack_into(batch, BASE_OFFSET_OFFSET, base_offset)


class RecordBatchHeader:
    """A zero-copy view of the 61-byte header of the batch starting at ``buf[pos]``.

    Holds a reference to ``buf`` and reads fields on demand with ``struct.unpack_from``; nothing
    is copied. ``unpack()`` reads every fixed field at once when most of them are needed.
    """

    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int = 0) -> None:
        if len(buf) - pos < RECORDS_OFFSET:
            raise CorruptRecordError(
                f"record batch header needs {RECORDS_OFFSET} bytes, {len(buf) - pos} available"
            )
        self.buf = buf
        self.pos = pos

    def _i64(self, off: int) -> int:
        return struct.unpack_from(">q", self.buf, self.pos + off)[0]

    def _i32(self, off: int) -> int:
        return struct.unpack_from(">i", self.buf, self.pos + off)[0]

    def _i16(self, off: int) -> int:
        return struct.unpack_from(">h", self.buf, self.pos + off)[0]

    def unpack(self) -> tuple[int, ...]:
        """All 13 fixed fields, in layout order."""
        return _HEADER.unpack_from(self.buf, self.pos)

    @property
    def base_offset(self) -> int:
        return self._i64(BASE_OFFSET_OFFSET)

    @property
    def batch_length(self) -> int:
        return self._i32(LENGTH_OFFSET)

    @property
    def size_in_bytes(self) -> int:
        """Total size of the batch: batchLength + 12."""
        return self._i32(LENGTH_OFFSET) + LOG_OVERHEAD

    @property
    def partition_leader_epoch(self) -> int:
        return self._i32(PARTITION_LEADER_EPOCH_OFFSET)

    @property
    def magic(self) -> int:
        return self.buf[self.pos + MAGIC_OFFSET]

    @property
    def crc(self) -> int:
        return struct.unpack_from(">I", self.buf, self.pos + CRC_OFFSET)[0]

    @property
    def attributes(self) -> int:
        return self._i16(ATTRIBUTES_OFFSET)

    @property
    def compression(self) -> Compression:
        return Compression(self.buf[self.pos + ATTRIBUTES_OFFSET + 1] & COMPRESSION_CODEC_MASK)

    @property
    def compression_id(self) -> int:
        return self.buf[self.pos + ATTRIBUTES_OFFSET + 1] & COMPRESSION_CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        """0 = CreateTime, 1 = LogAppendTime."""
        return 1 if self.buf[self.pos + ATTRIBUTES_OFFSET + 1] & TIMESTAMP_TYPE_MASK else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.buf[self.pos + ATTRIBUTES_OFFSET + 1] & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.buf[self.pos + ATTRIBUTES_OFFSET + 1] & CONTROL_FLAG_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.buf[self.pos + ATTRIBUTES_OFFSET + 1] & DELETE_HORIZON_FLAG_MASK)

    @property
    def last_offset_delta(self) -> int:
        return self._i32(LAST_OFFSET_DELTA_OFFSET)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def base_timestamp(self) -> int:
        return self._i64(BASE_TIMESTAMP_OFFSET)

    @property
    def max_timestamp(self) -> int:
        return self._i64(MAX_TIMESTAMP_OFFSET)

    @property
    def producer_id(self) -> int:
        return self._i64(PRODUCER_ID_OFFSET)

    @property
    def producer_epoch(self) -> int:
        return self._i16(PRODUCER_EPOCH_OFFSET)

    @property
    def base_sequence(self) -> int:
        return self._i32(BASE_SEQUENCE_OFFSET)

    @property
    def last_sequence(self) -> int:
        """Kafka's lastSequence: -1 when baseSequence is -1, wrapping at int32 max."""
        base = self.base_sequence
        if base == -1:
            return -1
        return (base + self.last_offset_delta) % 0x80000000

    @property
    def records_count(self) -> int:
        return self._i32(RECORDS_COUNT_OFFSET)

    def is_valid(self) -> bool:
        """Whether the stored CRC matches bytes [21, end) of the batch (which must be whole)."""
        end = self.pos + self.size_in_bytes
        return self.crc == _crc32c.crc32c(memoryview(self.buf)[self.pos + ATTRIBUTES_OFFSET : end])

    def __repr__(self) -> str:
        return (
            f"RecordBatchHeader(base_offset={self.base_offset}, last_offset={self.last_offset},"
            f" size={self.size_in_bytes}, count={self.records_count},"
            f" codec={_codec_name(self.compression_id)}, max_timestamp={self.max_timestamp})"
        )


def _codec_name(codec_id: int) -> str:
    return Compression(codec_id).name.lower() if codec_id <= 4 else f"unknown({codec_id})"


def validate_batch(
    buf: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None, *, allow_empty: bool = False
) -> RecordBatchHeader:
    """Check the batch at ``buf[pos]`` and return its header view; raise a RecordError if bad
    (the checks: ``validate_batch_fields``)."""
    validate_batch_fields(buf, pos, end, allow_empty=allow_empty)
    return RecordBatchHeader(buf, pos)


def validate_batch_fields(
    buf: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None, *, allow_empty: bool = False
) -> tuple[int, ...]:
    """Check the batch at ``buf[pos]`` and return its 13 fixed header fields in layout order
    (``RecordBatchHeader.unpack``); raise a RecordError if bad.

    Checks, in order: enough bytes for the header, magic == 2, batchLength consistent with the
    bytes available (``end`` defaults to ``len(buf)``; the batch may be followed by others),
    the CRC-32C over [21, batch end), recordsCount >= 1 (>= 0 with ``allow_empty``) and
    lastOffsetDelta >= 0.

    ``allow_empty`` is for batches read from a log: the log cleaner keeps a batch whose records
    all went as an empty one (recordsCount 0, no records section) when it holds the last
    sequence of a producer or ends the cleaned range, so that its offsets stay known. A
    producer never sends one.
    """
    if end is None:
        end = len(buf)
    avail = end - pos
    if avail < HEADER_SIZE_UP_TO_MAGIC:
        raise CorruptRecordError(f"truncated record batch: {avail} bytes, header needs 61")
    magic = buf[pos + MAGIC_OFFSET]
    if magic != CURRENT_MAGIC:
        raise UnsupportedMagicError(f"record batch magic {magic} is not supported (only 2)")
    if avail < RECORDS_OFFSET:
        raise CorruptRecordError(f"truncated record batch: {avail} bytes, header needs 61")
    fields = _HEADER.unpack_from(buf, pos)
    (_, batch_length, _, _, crc, _, last_delta, _, _, _, _, _, count) = fields
    size = batch_length + LOG_OVERHEAD
    if size < RECORDS_OFFSET:
        raise CorruptRecordError(f"record batch length {batch_length} is below the minimum 49")
    if size > avail:
        raise CorruptRecordError(
            f"truncated record batch: batchLength says {size} bytes, {avail} available"
        )
    actual = _crc32c.crc32c(memoryview(buf)[pos + ATTRIBUTES_OFFSET : pos + size])
    if actual != crc:
        raise CorruptRecordError(
            f"record batch CRC mismatch: stored {crc:#010x}, computed {actual:#010x}"
        )
    if count < (0 if allow_empty else 1):
        raise InvalidRecordError(f"record batch has recordsCount {count} (< {0 if allow_empty else 1})")
    if last_delta < 0:
        raise InvalidRecordError(f"record batch has lastOffsetDelta {last_delta} (< 0)")
    codec = buf[pos + ATTRIBUTES_OFFSET + 1] & COMPRESSION_CODEC_MASK
    if codec > 4:
        raise UnsupportedCompressionTypeError(f"record batch uses unknown compression codec id {codec}")
    return fields


def iter_batch_headers(
    buf: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None
) -> Iterator[RecordBatchHeader]:
    """Yield header views of consecutive whole batches in ``buf[pos:end]``, without checking CRCs.

    Stops silently at a partial trailing batch (as Kafka's batch iterator does; callers that
    care compare the position reached with ``end``). Raises CorruptRecordError for a size field
    below the minimum, which would otherwise never advance.
    """
    if end is None:
        end = len(buf)
    while end - pos >= RECORDS_OFFSET:
        base_offset, batch_length = _LEN.unpack_from(buf, pos)
        size = batch_length + LOG_OVERHEAD
        if size < RECORDS_OFFSET:
            raise CorruptRecordError(
                f"record batch at position {pos} has length {batch_length} (< 49)"
            )
        if pos + size > end:
            return
        yield RecordBatchHeader(buf, pos)
        pos += size
