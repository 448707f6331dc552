"""What the consumer hands out, and how fetched bytes become it.

- ``ConsumerRecord``: one record (a NamedTuple; built in C by ``map``/``zip`` over the columns
  of a decoded batch, never field by field in Python).
- ``ColumnBatch``: bulk mode — the records of one RecordBatch as columns, no object per record.
- ``FetchedChunk``: the record bytes of one partition from one Fetch response (a memoryview
  of the response frame) with a cursor over its whole batches; a partial trailing batch (the
  broker cuts at ``partition_max_bytes``) is excluded when the chunk is made.
- ``decode_batch_rows`` / ``decode_batch_columns``: one batch -> records / ColumnBatch: CRC
  check (optional), decompression, control batches skipped, records below the consumer's
  position dropped (a fetch starts at the batch holding the position).
- ``decode_run_columns``: a run of consecutive plain batches (uncompressed, not control, at or
  after the position, one timestamp type) -> one ColumnBatch, in one call of the C extension's
  ``decode_columns_run``. Producers cut batches at 16 KiB by default (~150 records of 100
  bytes): per-batch Python work (header, CRC call, five buffers, a ColumnBatch) then costs
  more than the decoding itself, and a bulk reader (the Spark source) only wants long columns.

``ColumnBatch`` layout (one RecordBatch; ``n = len(batch)``)::

    topic, partition      str, int
    timestamp_type        int: 0 CreateTime, 1 LogAppendTime (one per RecordBatch)
    next_offset           offset after this batch (the position once it is consumed)
    offsets               array('q') of n int64
    timestamps            array('q') of n int64, milliseconds since the epoch
    keys, values          BinaryColumn: Arrow ``binary`` layout — ``data`` (bytes, the values
                          concatenated), ``offsets`` (array('i'), n + 1 int32), ``validity``
                          (None if no nulls, else an LSB-first bitmap, 1 = valid), ``null_count``
    headers               list of n tuples of (str, bytes | None); records without headers
                          share one empty tuple

Every buffer exposes the buffer protocol, so ``pyarrow.py_buffer`` wraps it without a copy;
``to_arrow()`` builds a ``pyarrow.RecordBatch`` that way (pyarrow is imported only there).
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from itertools import repeat
from typing import Any, NamedTuple

import crc32c as _crc32c

from client.aborted_transactions import AbortedTransactions
from client.records.batch import (
    HEADER_STRUCT,
    LOG_OVERHEAD,
    RECORDS_OFFSET,
    CorruptRecordError,
    validate_batch,
)
from client.records.columnar import BinaryColumn, Header, decode_columns, decode_columns_run, decode_records
from client.records.compression import DEFAULT_MAX_DECOMPRESSED, decompress
from client.records.record import _NO_HEADERS
from client.structs import TopicPartition

__all__ = ["TopicPartition", "ConsumerRecord", "ColumnBatch", "FetchedChunk", "decode_batch_rows",
           "decode_batch_columns", "decode_run_columns", "whole_batches", "batch_next_offset"]

_LEN = struct.Struct(">qi")
_LAST_DELTA = struct.Struct(">i")
CONTROL_FLAG = 0x20
LOG_APPEND_TIME_FLAG = 0x08


class ConsumerRecord(NamedTuple):
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int  # 0 CreateTime, 1 LogAppendTime
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]


_new = tuple.__new__


class ColumnBatch:
    """The records of one RecordBatch as columns (layout in the module docstring)."""

    __slots__ = ("topic", "partition", "timestamp_type", "next_offset", "offsets", "timestamps", "keys",
                 "values", "headers")

    def __init__(self, topic: str, partition: int, timestamp_type: int, next_offset: int, offsets: array[int],
                 timestamps: array[int], keys: BinaryColumn, values: BinaryColumn, headers: list[tuple[Header, ...]]) -> None:
        self.topic = topic
        self.partition = partition
        self.timestamp_type = timestamp_type
        self.next_offset = next_offset
        self.offsets = offsets
        self.timestamps = timestamps
        self.keys = keys
        self.values = values
        self.headers = headers

    def __len__(self) -> int:
        return len(self.offsets)

    def __getitem__(self, i: int) -> ConsumerRecord:
        if i < 0:
            i += len(self.offsets)
        return ConsumerRecord(self.topic, self.partition, self.offsets[i], self.timestamps[i], self.timestamp_type,
                              self.keys[i], self.values[i], self.headers[i])

    def __iter__(self) -> Iterator[ConsumerRecord]:
        return iter(self.to_records())

    def to_records(self) -> list[ConsumerRecord]:
        return list(map(_new, repeat(ConsumerRecord), zip(
            repeat(self.topic), repeat(self.partition), self.offsets, self.timestamps, repeat(self.timestamp_type),
            self.keys.to_pylist(), self.values.to_pylist(), self.headers)))

    def slice(self, start: int, stop: int | None = None) -> ColumnBatch:
        """Records [start, stop) as a new ColumnBatch (``next_offset`` kept when the slice
        reaches the end, else the offset after its last record)."""
        n = len(self.offsets)
        stop = n if stop is None else min(stop, n)
        start = min(max(start, 0), stop)
        nxt = self.next_offset if stop == n else (self.offsets[stop - 1] + 1 if stop > start else self.offsets[start])
        return ColumnBatch(self.topic, self.partition, self.timestamp_type, nxt, self.offsets[start:stop],
                           self.timestamps[start:stop], self.keys.slice(start, stop), self.values.slice(start, stop),
                           self.headers[start:stop])

    @classmethod
    def from_records(cls, records: Sequence[ConsumerRecord], next_offset: int | None = None) -> ColumnBatch:
        """The slow way round (used when a caller switches from records to batches mid-batch)."""
        r0 = records[0]
        return cls(r0.topic, r0.partition, r0.timestamp_type,
                   records[-1].offset + 1 if next_offset is None else next_offset,
                   array("q", [r.offset for r in records]), array("q", [r.timestamp for r in records]),
                   BinaryColumn.from_values([r.key for r in records]),
                   BinaryColumn.from_values([r.value for r in records]), [r.headers for r in records])

    def to_arrow(self) -> Any:
        """A ``pyarrow.RecordBatch``: offset int64, timestamp int64 (ms), key binary, value
        binary, headers list<struct<key: string, value: binary>> — zero-copy except headers."""
        import pyarrow as pa

        n = len(self.offsets)
        header_type = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
        return pa.RecordBatch.from_arrays([
            pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(self.offsets)]),
            pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(self.timestamps)]),
            self.keys.to_arrow(),
            self.values.to_arrow(),
            pa.array([[{"key": k, "value": v} for k, v in h] for h in self.headers], type=header_type),
        ], names=["offset", "timestamp", "key", "value", "headers"])

    def __repr__(self) -> str:
        first = self.offsets[0] if len(self.offsets) else None
        return (f"ColumnBatch({self.topic}-{self.partition}, records={len(self.offsets)}, first_offset={first},"
                f" next_offset={self.next_offset})")


def whole_batches(buf: memoryview, pos: int = 0, end: int | None = None) -> tuple[int, int, int]:
    """Scan batch headers: ``(end of the last whole batch, its next offset, batches)``.

    ``(pos, -1, 0)`` when not even one batch is whole. Raises CorruptRecordError for a length
    below the minimum (which would never advance)."""
    if end is None:
        end = len(buf)
    last_end = pos
    next_offset = -1
    n = 0
    while end - pos >= RECORDS_OFFSET:
        base, length = _LEN.unpack_from(buf, pos)
        size = length + LOG_OVERHEAD
        if size < RECORDS_OFFSET:
            raise CorruptRecordError(f"record batch at offset {base} has length {length} (< 49)")
        if pos + size > end:
            break
        next_offset = base + _LAST_DELTA.unpack_from(buf, pos + 23)[0] + 1
        pos += size
        last_end = pos
        n += 1
    return last_end, next_offset, n


class FetchedChunk:
    """Whole batches of one partition from one Fetch response, consumed front to back;
    ``aborted`` (read_committed answers listing aborted transactions only) says which of them
    to drop (``client.aborted_transactions``)."""

    __slots__ = ("buf", "pos", "end", "fetch_offset", "next_offset", "aborted")

    def __init__(self, buf: memoryview, end: int, fetch_offset: int, next_offset: int,
                 aborted: AbortedTransactions | None = None) -> None:
        self.buf = buf
        self.pos = 0
        self.end = end
        self.fetch_offset = fetch_offset
        self.next_offset = next_offset
        self.aborted = aborted

    def next_batch(self) -> int:
        """Position of the next whole batch (advancing past it), or -1 when done."""
        pos = self.pos
        if pos >= self.end:
            return -1
        self.pos = pos + _LEN.unpack_from(self.buf, pos)[1] + LOG_OVERHEAD
        return pos


def batch_next_offset(buf: memoryview, pos: int) -> int:
    """The offset after the batch at ``buf[pos]`` (base offset + last offset delta + 1)."""
    return int(_LEN.unpack_from(buf, pos)[0]) + _LAST_DELTA.unpack_from(buf, pos + 23)[0] + 1


def _open_batch(buf: memoryview, pos: int, check_crc: bool,
                max_decompressed: int) -> tuple[tuple[int, ...], bytes | None, int]:
    """Header fields, the records section (decompressed, to at most ``max_decompressed`` bytes;
    None for a control batch) and the batch's next offset."""
    if check_crc:
        validate_batch(buf, pos, allow_empty=True)  # a compacted log keeps some empty batches
        h = HEADER_STRUCT.unpack_from(buf, pos)
    else:
        h = HEADER_STRUCT.unpack_from(buf, pos)
        if h[3] != 2:
            raise CorruptRecordError(f"record batch magic {h[3]} is not supported (only 2)")
    base_offset, length, _, _, _, attributes, last_delta = h[:7]
    end = pos + length + LOG_OVERHEAD
    nxt = base_offset + last_delta + 1
    if attributes & CONTROL_FLAG:
        return h, None, nxt
    codec = attributes & 7
    section = buf[pos + RECORDS_OFFSET:end]
    if codec:
        try:
            data = decompress(codec, section, max_decompressed)
        except ValueError as e:
            raise CorruptRecordError(f"cannot decode records section: {e}") from e
    else:
        data = bytes(section)
    return h, data, nxt


def decode_batch_rows(buf: memoryview, pos: int, topic: str, partition: int, position: int,
                      check_crc: bool = True, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED
                      ) -> tuple[list[ConsumerRecord], int]:
    """The records of the batch at ``buf[pos]`` with offsets >= ``position``, and the batch's
    next offset. Control batches give no records. A compressed batch inflating past
    ``max_decompressed`` bytes is a CorruptRecordError that names the limit."""
    h, data, nxt = _open_batch(buf, pos, check_crc, max_decompressed)
    if data is None:
        return [], nxt
    base_offset, attributes, base_ts, max_ts, count = h[0], h[5], h[7], h[8], h[12]
    if attributes & LOG_APPEND_TIME_FLAG:
        rows = decode_records(data, count, ConsumerRecord, topic, partition, 1, base_offset, 0, position, max_ts)
    else:
        rows = decode_records(data, count, ConsumerRecord, topic, partition, 0, base_offset, base_ts, position)
    return rows, nxt


def decode_batch_columns(buf: memoryview, pos: int, topic: str, partition: int, position: int,
                         check_crc: bool = True, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED
                         ) -> tuple[ColumnBatch | None, int]:
    """The batch at ``buf[pos]`` as a ColumnBatch (records below ``position`` dropped; None
    for a control batch, and ``len()`` may be 0), and the batch's next offset."""
    h, data, nxt = _open_batch(buf, pos, check_crc, max_decompressed)
    if data is None:
        return None, nxt
    base_offset, attributes, base_ts, max_ts, count = h[0], h[5], h[7], h[8], h[12]
    log_append = attributes & LOG_APPEND_TIME_FLAG
    offsets, timestamps, keys, vals, hdrs = decode_columns(data, count, base_offset, 0 if log_append else base_ts)
    if log_append:
        timestamps = array("q", [max_ts]) * count
    tt = 1 if log_append else 0
    cb = ColumnBatch(topic, partition, tt, nxt, offsets, timestamps, keys, vals, hdrs)
    if base_offset < position:
        cb = cb.slice(bisect_left(offsets, position))
    return cb, nxt


def _int_array(code: str, raw: bytes) -> array[int]:
    a = array(code)
    a.frombytes(raw)
    return a


def decode_run_columns(buf: memoryview, pos: int, end: int, topic: str, partition: int, position: int,
                       max_records: int, check_crc: bool = True) -> tuple[ColumnBatch, int] | None:
    """The longest run of plain batches from ``buf[pos]`` (before ``end``, at most
    ``max_records`` records; ``decode_columns_run`` in _codec.c says which qualify) as one
    ColumnBatch, and the position after the run; None when the batch at ``pos`` does not
    qualify or the C extension is not there (decode it with ``decode_batch_columns``). A bad
    batch anywhere in the run raises CorruptRecordError and consumes nothing: decoding batch
    by batch then reports it where it is."""
    if decode_columns_run is None:
        return None
    got = decode_columns_run(buf, pos, end, position, max_records, _crc32c.crc32c if check_crc else None)
    if got is None:
        return None
    (run_end, _, nxt, tt, ods, tss, kdata, koffs, kvalid, knulls, vdata, voffs, vvalid, vnulls, hdrs) = got
    n = len(ods) >> 3
    cb = ColumnBatch(topic, partition, tt, nxt, _int_array("q", ods), _int_array("q", tss),
                     BinaryColumn(kdata, _int_array("i", koffs), kvalid, knulls),
                     BinaryColumn(vdata, _int_array("i", voffs), vvalid, vnulls),
                     [_NO_HEADERS] * n if hdrs is None else hdrs)
    return cb, run_end
