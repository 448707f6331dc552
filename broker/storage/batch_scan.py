"""Reading a log back batch by batch when a damaged batch must cost only itself.

Readers that rebuild state from a whole log (the coordinators replaying ``__consumer_offsets``
and ``__transaction_state``, the producer-state rebuild at start-up) cannot stop at the first
bad batch: everything after it would be lost at every restart, and new writes land after the
damage. Kafka's loaders stop there (and Kafka trusts the files after a clean shutdown); these
scans go on past it instead, and say what they skipped.

A batch is *valid* here when ``validate_batch_fields`` accepts it (magic 2, a batchLength that
fits the file, CRC-32C over bytes 21..end, recordsCount and lastOffsetDelta not negative) and
its offsets are in order: base offset at or above the end of the previous valid batch, last
offset below the next segment's base offset (or the log end offset the scan was given). The
CRC does not cover the base offset (bytes 0-7), so that check is what catches a bit flip there.

When a batch is invalid but its length field is plausible (it fits the file), the scan skips
exactly those bytes and goes on at the next batch. When the length field itself is damaged,
the next batch boundary is unknown: the scan looks for it byte by byte (``_resync``) — a
position where a whole batch starts whose magic byte is 2, whose offsets are in the expected
range and whose CRC-32C matches. A false match needs a 32-bit CRC collision of a region that
also passes the magic and offset checks. Candidates are found with ``bytes.find`` on the
magic byte, so most bytes cost no Python work; each candidate costs one header unpack and, if
that passes, one CRC of at most one batch. If no batch follows, the rest of the segment is
reported skipped.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

import crc32c as _crc32c

from client.records.batch import (
    ATTRIBUTES_OFFSET,
    CURRENT_MAGIC,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    RECORDS_OFFSET,
    RecordError,
    validate_batch_fields,
)

from .file_records import FileRecords

__all__ = ["SkippedBatch", "ValidBatch", "scan_segment", "framing_holds"]

_LEN = struct.Struct(">qi")   # baseOffset, batchLength
_CRC = struct.Struct(">I")
_CRC_OFFSET = 17
_MAGIC_BYTE = bytes([CURRENT_MAGIC])
#: bytes read per file read; a batch larger than this is read whole
SCAN_CHUNK = 4 << 20
#: the resync search reads this much at a time (with a header's worth of overlap)
_RESYNC_WINDOW = 1 << 20


class ValidBatch(NamedTuple):
    """A batch that passed the checks: its position in the file and its bytes (a view into
    a buffer read for the scan). ``fields`` are the 13 header fields in layout order
    (``RecordBatchHeader.unpack``)."""
    position: int
    data: memoryview
    fields: tuple[int, ...]

    @property
    def base_offset(self) -> int:
        return self.fields[0]

    @property
    def last_offset(self) -> int:
        return self.fields[0] + self.fields[6]


class SkippedBatch(NamedTuple):
    """Bytes a scan skipped: ``size`` bytes at ``position`` of ``path``; ``base_offset`` as
    the damaged header says (-1 when it could not be read); ``expected_offset`` the first
    offset that was due there (what a reader lost starts at or after it)."""
    path: str
    position: int
    size: int
    base_offset: int
    expected_offset: int
    reason: str

    def describe(self) -> str:
        at = f"header base offset {self.base_offset}, " if self.base_offset >= 0 else ""
        return (f"skipped {self.size} bytes at position {self.position} of {self.path} ({at}offsets from"
                f" {self.expected_offset}): {self.reason}")


def scan_segment(records: FileRecords, start: int, *, min_offset: int, max_offset: int,
                 end: int | None = None, verify_from: int = 0) -> Iterator[ValidBatch | SkippedBatch]:
    """The batches of ``records`` from byte ``start`` (a batch boundary) to ``end`` (default:
    the file's size), each a ValidBatch or, for damaged bytes, a SkippedBatch. Batches must
    have offsets in ``[min_offset, max_offset)``, ascending; a caller scanning a segment that
    may grow passes the ``end`` it read before taking ``max_offset``, so that every batch in
    range is below it. Batches that start before ``verify_from`` get the framing checks only
    (magic, a length that fits, offsets in order), not the CRC: a framing walk of a file
    written and flushed by this broker. Reads about ``SCAN_CHUNK`` bytes at a time."""
    size = records.size if end is None else min(end, records.size)
    pos = start
    expected = min_offset
    buf = b""
    buf_pos = pos  # file position of buf[0]
    while pos < size:
        off = pos - buf_pos
        if len(buf) - off < RECORDS_OFFSET or off < 0:
            buf = records.read(pos, min(SCAN_CHUNK, size - pos))
            buf_pos, off = pos, 0
        avail = size - pos
        if avail < RECORDS_OFFSET:
            yield SkippedBatch(records.path, pos, avail, -1, expected,
                               f"{avail} bytes at the end of the file are not a whole batch")
            return
        base, length = _LEN.unpack_from(buf, off)
        batch_size = length + LOG_OVERHEAD
        if batch_size < RECORDS_OFFSET or batch_size > avail:
            reason = (f"batchLength {length} is below the minimum 49" if batch_size < RECORDS_OFFSET
                      else f"batchLength {length} runs past the end of the file ({avail} bytes left)")
            nxt = _resync(records, pos + 1, size, expected, max_offset)
            stop = size if nxt is None else nxt
            yield SkippedBatch(records.path, pos, stop - pos, base, expected, reason)
            pos = stop
            continue
        if len(buf) - off < batch_size:
            buf = records.read(pos, max(batch_size, min(SCAN_CHUNK, size - pos)))
            buf_pos, off = pos, 0
        try:
            fields = HEADER_STRUCT.unpack_from(buf, off)
            if pos >= verify_from:
                # validate_batch_fields' checks, inline for the batches that pass (a recovery scan
                # runs this per batch); it is called only to name what failed
                (_, _, _, magic, stored_crc, attributes, last_delta, _, _, _, _, _, count) = fields
                if (magic != CURRENT_MAGIC or count < 0 or last_delta < 0 or (attributes & 0x07) > 4
                        or _crc32c.crc32c(memoryview(buf)[off + ATTRIBUTES_OFFSET:off + batch_size]) != stored_crc):
                    validate_batch_fields(buf, off, off + batch_size, allow_empty=True)
                    raise RecordError(f"record batch with codec {attributes & 0x07} is invalid")
            elif fields[3] != CURRENT_MAGIC:
                raise RecordError(f"record batch magic {fields[3]} is not supported (only 2)")
        except RecordError as e:
            # The length field is outside the CRC: trust it only when a valid batch starts
            # right after, else look for the next batch from here (a length that reaches the
            # end of the file exactly proves nothing: a shortened batch followed by others).
            nxt = pos + batch_size
            if nxt == size or _resync(records, nxt, min(size, nxt + RECORDS_OFFSET), expected, max_offset,
                                      whole_to=size) != nxt:
                found = _resync(records, pos + 1, size, expected, max_offset)
                nxt = size if found is None else found
            yield SkippedBatch(records.path, pos, nxt - pos, base, expected, str(e))
            pos = nxt
            continue
        last = base + fields[6]
        if base < expected or last >= max_offset:
            yield SkippedBatch(records.path, pos, batch_size, base, expected,
                               f"offsets {base}..{last} are outside the expected range [{expected}, {max_offset})")
            pos += batch_size
            continue
        yield ValidBatch(pos, memoryview(buf)[off:off + batch_size], fields)
        expected = last + 1
        pos += batch_size


def _resync(records: FileRecords, start: int, size: int, min_offset: int, max_offset: int,
            whole_to: int | None = None) -> int | None:
    """The first position in ``[start, size)`` where a whole valid batch (ending by
    ``whole_to``, default ``size``) with a base offset in ``[min_offset, max_offset)`` starts,
    or None."""
    limit = size if whole_to is None else whole_to
    pos = start
    while limit - pos >= RECORDS_OFFSET and pos < size:
        window = records.read(pos, min(_RESYNC_WINDOW, limit - pos))
        # candidates: a magic byte of 2 at index MAGIC_OFFSET of a would-be batch
        i = window.find(_MAGIC_BYTE, MAGIC_OFFSET)
        last_start = min(len(window) - RECORDS_OFFSET, size - 1 - pos)
        while i != -1 and i - MAGIC_OFFSET <= last_start:
            cand = i - MAGIC_OFFSET
            base, length = _LEN.unpack_from(window, cand)
            batch_size = length + LOG_OVERHEAD
            at = pos + cand
            if (min_offset <= base < max_offset and RECORDS_OFFSET <= batch_size <= limit - at
                    and _crc_matches(records, window, cand, at, batch_size)):
                return at
            i = window.find(_MAGIC_BYTE, i + 1)
        if pos + len(window) >= limit:
            return None
        pos += max(len(window) - RECORDS_OFFSET, 1)  # overlap: a header split across windows
    return None


def _crc_matches(records: FileRecords, window: bytes, cand: int, at: int, batch_size: int) -> bool:
    stored = _CRC.unpack_from(window, cand + _CRC_OFFSET)[0]
    if cand + batch_size <= len(window):
        body: bytes | memoryview = memoryview(window)[cand + ATTRIBUTES_OFFSET:cand + batch_size]
    else:
        body = records.read(at + ATTRIBUTES_OFFSET, batch_size - ATTRIBUTES_OFFSET)
    return bool(_crc32c.crc32c(body) == stored)


def framing_holds(records: FileRecords, start: int, end: int, min_offset: int) -> bool:
    """Whether ``[start, end)`` is whole batches with magic 2 and increasing base offsets (at
    or above ``min_offset``): the fast path of a start-up framing walk, one length read per
    batch and no CRC (``scan_segment`` says where and why when it does not hold)."""
    unpack = _LEN.unpack_from
    pos = start
    last_base = min_offset - 1
    while pos < end:
        buf = records.read(pos, min(SCAN_CHUNK, end - pos))
        n, off = len(buf), 0
        while n - off >= RECORDS_OFFSET:
            base, length = unpack(buf, off)
            size = length + LOG_OVERHEAD
            if size < RECORDS_OFFSET or pos + off + size > end or buf[off + MAGIC_OFFSET] != CURRENT_MAGIC \
                    or base <= last_base:
                return False
            last_base = base
            off += size
        if off == 0:  # a batch larger than the chunk, or a tail too short for a header
            if n < RECORDS_OFFSET:
                return False
            base, length = unpack(buf, 0)
            size = length + LOG_OVERHEAD
            if size < RECORDS_OFFSET or pos + size > end or buf[MAGIC_OFFSET] != CURRENT_MAGIC or base <= last_base:
                return False
            last_base = base
            off = size
        pos += off
    return pos == end
