"""Records inside a RecordBatch v2: encoding (``RecordBatchBuilder``) and decoding.

One record (``DefaultRecord``; every integer here is a *zigzag* varint/varlong)::

    varint   length            bytes after this field
    int8     attributes        unused, 0
    varlong  timestampDelta    timestamp - batch baseTimestamp
    varint   offsetDelta       offset - batch baseOffset
    varint   keyLength         -1 = null key
    bytes    key
    varint   valueLength       -1 = null value
    bytes    value
    varint   headerCount
    headers: varint keyLength, utf-8 key (never null), varint valueLength (-1 = null), value

The records of a batch are concatenated and, when the batch's codec is not 0, compressed as one
block that forms bytes 61..end of the batch.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from ..clock import now_ms
from .batch import (
    _HEADER,
    ATTRIBUTES_OFFSET,
    CONTROL_FLAG_MASK,
    CRC_OFFSET,
    CURRENT_MAGIC,
    LOG_OVERHEAD,
    RECORDS_OFFSET,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    CorruptRecordError,
    RecordBatchHeader,
    crc32c,
    validate_batch,
)
from .compression import Compression, compress, decompress
from .varint import VarintError, read_varint, write_varint

__all__ = ["Header", "Record", "RecordBatchBuilder", "build_batch", "iter_records", "decode_batch", "decode_lists",
           "encode_record"]

Header = tuple[str, "bytes | None"]
_NO_HEADERS: tuple[Header, ...] = ()  # shared by every record without headers


class Record(NamedTuple):
    """A decoded record. ``headers`` is a tuple of ``(key, value-or-None)`` pairs."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


_MAX_RECORD_DELTA = 0x7FFFFFFF


class RecordBatchBuilder:
    """Accumulates records and produces one RecordBatch v2 (``build()``).

    Offsets are relative: record i gets offsetDelta i unless ``append`` is given an explicit
    ``offset``; the batch's baseOffset is ``base_offset`` (0 for a producer: the broker
    assigns it). Timestamps are milliseconds; None means "now".
    """

    def __init__(
        self,
        compression: Compression | int | str | None = Compression.NONE,
        *,
        base_offset: int = 0,
        partition_leader_epoch: int = -1,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        is_transactional: bool = False,
        is_control: bool = False,
        log_append_time: bool = False,
        compression_level: int | None = None,
    ) -> None:
        self.compression = Compression.from_name(compression)
        self.compression_level = compression_level  # None: the codec's default
        self.base_offset = base_offset
        self.partition_leader_epoch = partition_leader_epoch
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional
        self.is_control = is_control
        self.log_append_time = log_append_time
        self._records = bytearray()
        self._count = 0
        self._base_timestamp: int | None = None
        self._max_timestamp = -1
        self._last_offset_delta = -1

    def __len__(self) -> int:
        return self._count

    @property
    def size_estimate(self) -> int:
        """Uncompressed size of the batch built so far."""
        return RECORDS_OFFSET + len(self._records)

    def append(
        self,
        value: bytes | None,
        key: bytes | None = None,
        headers: Sequence[Header] = (),
        timestamp: int | None = None,
        offset_delta: int | None = None,
    ) -> None:
        if timestamp is None:
            timestamp = now_ms()
        if self._base_timestamp is None:
            self._base_timestamp = timestamp
        if offset_delta is None:
            offset_delta = self._last_offset_delta + 1
        if offset_delta <= self._last_offset_delta or offset_delta > _MAX_RECORD_DELTA:
            raise ValueError(f"offset delta {offset_delta} is not increasing or overflows int32")
        self._records += encode_record(offset_delta, timestamp - self._base_timestamp, key, value, headers)
        self._count += 1
        self._last_offset_delta = offset_delta
        if timestamp > self._max_timestamp:
            self._max_timestamp = timestamp

    def build(self) -> bytearray:
        """Encode the batch (compressing the records section if asked) with a valid CRC."""
        if self._count == 0:
            raise ValueError("a record batch needs at least one record")
        payload = (
            self._records
            if self.compression == Compression.NONE
            else compress(self.compression, self._records, self.compression_level)
        )
        attributes = int(self.compression)
        if self.log_append_time:
            attributes |= TIMESTAMP_TYPE_MASK
        if self.is_transactional:
            attributes |= TRANSACTIONAL_FLAG_MASK
        if self.is_control:
            attributes |= CONTROL_FLAG_MASK
        size = RECORDS_OFFSET + len(payload)
        out = bytearray(size)
        base_ts = self._base_timestamp if self._base_timestamp is not None else -1
        _HEADER.pack_into(
            out, 0,
            self.base_offset, size - LOG_OVERHEAD, self.partition_leader_epoch, CURRENT_MAGIC,
            0, attributes, self._last_offset_delta, base_ts, self._max_timestamp,
            self.producer_id, self.producer_epoch, self.base_sequence, self._count,
        )
        out[RECORDS_OFFSET:] = payload
        struct.pack_into(">I", out, CRC_OFFSET, crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
        return out


def _write_blob(out: bytearray, data: bytes | bytearray | memoryview | None) -> None:
    if data is None:
        out.append(1)  # zigzag(-1): null
    else:
        write_varint(out, len(data))
        out += data


def encode_record(offset_delta: int, timestamp_delta: int, key: bytes | bytearray | memoryview | None,
                  value: bytes | bytearray | memoryview | None, headers: Sequence[Header] | None = ()) -> bytes:
    """One record with its length prefix, as the module docstring lays it out: the reference
    encoder (the C extension's ``append_record`` writes the same bytes for records without
    headers; tests/records/test_append_record.py checks it)."""
    body = bytearray(b"\x00")  # attributes
    write_varint(body, timestamp_delta)
    write_varint(body, offset_delta)
    _write_blob(body, key)
    _write_blob(body, value)
    write_varint(body, len(headers or ()))
    for hkey, hvalue in headers or ():
        _write_blob(body, hkey.encode("utf-8"))
        _write_blob(body, hvalue)
    out = bytearray()
    write_varint(out, len(body))
    out += body
    return bytes(out)


def build_batch(
    records: Iterable[tuple[bytes | None, bytes | None]] | Iterable[Record],
    compression: Compression | int | str | None = Compression.NONE,
    **kwargs: object,
) -> bytearray:
    """Build one batch from ``Record``s (their offsets become deltas from the first offset
    and the batch baseOffset) or from ``(key, value)`` pairs."""
    b = RecordBatchBuilder(compression, **kwargs)  # type: ignore[arg-type]
    first: int | None = None
    for r in records:
        if isinstance(r, Record):
            if first is None:
                first = r.offset
                b.base_offset = r.offset
            b.append(r.value, r.key, r.headers, r.timestamp, r.offset - first)
        else:
            key, value = r
            b.append(value, key)
    return b.build()


def _read_blob(data: bytes, p: int, end: int, what: str) -> tuple[bytes | None, int]:
    """A length-prefixed field ending at or before ``end``; length -1 is null. Always ``bytes``
    (as the C decoder's): a slice of a memoryview would be a view that keeps its buffer
    exported — an inflated section's mapping could then not be closed."""
    n, p = read_varint(data, p)
    if n == -1:
        return None, p
    if n < -1 or p + n > end:
        raise CorruptRecordError(f"corrupt record: {what} length {n} at {p} runs past the record")
    return bytes(data[p:p + n]), p + n


def _read_headers(data: bytes, p: int, end: int) -> tuple[tuple[Header, ...], int]:
    """The header list at ``data[p]`` (count first); keys decoded as UTF-8 (invalid bytes
    replaced), never null."""
    count, p = read_varint(data, p)
    if count == 0:
        return _NO_HEADERS, p
    if count < 0 or count > end - p:
        raise CorruptRecordError(f"record header count {count} is invalid")
    headers = []
    for _ in range(count):
        key, p = _read_blob(data, p, end, "header key")
        if key is None:
            raise CorruptRecordError("record header key is null")
        value, p = _read_blob(data, p, end, "header value")
        headers.append((str(key, "utf-8", "replace"), value))
    return tuple(headers), p


def decode_lists(data: bytes, count: int, base_offset: int = 0, base_timestamp: int = 0
                 ) -> tuple[list[int], list[int], list[bytes | None], list[bytes | None], list[tuple[Header, ...]]]:
    """Decode ``count`` records of an (uncompressed) records section, field by field as the
    module docstring lays them out: ``(offsets, timestamps, keys, values, headers)``, offsets
    and timestamps being ``base_offset`` / ``base_timestamp`` plus each record's delta.

    The reference decoder: the C extension's ``decode_lists`` (client/records/_codec.c, used
    when built) must give the same results and fail on the same inputs, which
    tests/records/test_columnar.py checks on random, damaged and hostile sections. Raises
    CorruptRecordError when a record does not parse, ends where its length does not say, or
    bytes are left over after ``count`` records.
    """
    if count < 0 or 7 * count > len(data):  # a record takes at least 7 bytes: no huge lists
        raise CorruptRecordError(f"records count {count} cannot fit in {len(data)} bytes")
    offsets: list[int] = []
    timestamps: list[int] = []
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    headers: list[tuple[Header, ...]] = []
    n = len(data)
    p = 0
    try:
        for _ in range(count):
            length, p = read_varint(data, p)
            end = p + length
            if length < 0 or end > n:
                raise CorruptRecordError(f"corrupt record: length {length} at {p} runs past the records section")
            p += 1  # attributes: unused in v2
            timestamp_delta, p = read_varint(data, p)
            offset_delta, p = read_varint(data, p)
            key, p = _read_blob(data, p, end, "key")
            value, p = _read_blob(data, p, end, "value")
            if p >= end:
                raise CorruptRecordError("corrupt record: fields run past the record length")
            record_headers, p = _read_headers(data, p, end)
            if p != end:
                raise CorruptRecordError("corrupt record: record length does not match its fields")
            offsets.append(base_offset + offset_delta)
            timestamps.append(base_timestamp + timestamp_delta)
            keys.append(key)
            values.append(value)
            headers.append(record_headers)
    except (VarintError, IndexError) as e:
        raise CorruptRecordError(f"bad varint in records: {e}") from None
    if p != n:
        raise CorruptRecordError(f"{n - p} bytes left over after {count} records")
    return offsets, timestamps, keys, values, headers


def iter_records(
    batch: bytes | bytearray | memoryview, pos: int = 0, *, verify_crc: bool = True
) -> Iterator[Record]:
    """Decode the records of the whole batch at ``batch[pos]`` (decompressing if needed).

    Raises CorruptRecordError if the batch is invalid (CRC checked unless ``verify_crc`` is
    False) or its records section does not decode to exactly ``recordsCount`` records.
    """
    if verify_crc:
        header = validate_batch(batch, pos, allow_empty=True)
    else:
        header = RecordBatchHeader(batch, pos)
    (base_offset, batch_length, _, _, _, attributes, _, base_ts, max_ts, _, _, _, count) = (
        header.unpack()
    )
    end = pos + batch_length + LOG_OVERHEAD
    section = memoryview(batch)[pos + RECORDS_OFFSET : end]
    codec = attributes & 0x07
    try:
        data = decompress(codec, section) if codec else bytes(section)
    except ValueError as e:  # undecodable stream, or codec id 5-7: the batch is corrupt
        raise CorruptRecordError(f"cannot decode records section: {e}") from e
    offsets, timestamps, keys, values, headers = decode_lists(data, count, base_offset, base_ts)
    if attributes & TIMESTAMP_TYPE_MASK:  # LogAppendTime: every record has the batch's max timestamp
        timestamps = [max_ts] * count
    for record in zip(offsets, timestamps, keys, values, headers, strict=True):
        yield Record(*record)


def decode_batch(batch: bytes | bytearray | memoryview, pos: int = 0) -> list[Record]:
    """All records of one batch, as a list."""
    return list(iter_records(batch, pos))
