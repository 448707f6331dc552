"""What the cleaner does to one stored RecordBatch: keep it, rewrite it with fewer records,
keep only its header (an empty batch), or drop it. Pure functions over bytes, no I/O.

A record is kept when (Kafka's shouldRetainRecord):

- its offset is above the offset map's ``latest_offset`` (not covered by this cleaning), or
- it has a key, its offset is the key's last one in the map (or the key is not in the map:
  only older records in the already clean part hold it), and it has a value or is a tombstone
  still within its delete horizon.

Records without a key in a compacted log are dropped (counted as invalid), as Kafka does.
Every record of a batch of an aborted transaction is dropped, wherever it lies (the caller
tells, see transactions.py): no read_committed reader may see it, and no read_uncommitted
one needs to (Kafka's discard of aborted batches).

A batch with no record left is kept as an empty batch (61 bytes, recordsCount 0, no codec,
baseTimestamp -1, the original baseOffset, lastOffsetDelta, maxTimestamp and producer
fields; Kafka's writeEmptyHeader) when it is the last batch of a producer the log still
tracks (its sequence is what the producer's next batch is checked against), or when it ends
the cleaned range or the group of segments being cleaned (so the rewritten segment covers
exactly the offsets of the segments it replaces: the crash-recovery rule in log_loader.py deletes
the segments inside the swap's offset range). Otherwise it is dropped.

A rewritten batch keeps its baseOffset, lastOffsetDelta (so its last offset, hence the
producer's last sequence, does not move), partitionLeaderEpoch, attributes, producer id,
epoch and baseSequence, and its codec: the surviving records are recompressed with the
batch's own codec. Their bytes are copied unchanged (offset and timestamp deltas stay
relative to the same baseOffset and baseTimestamp), except the first time a batch keeping a
tombstone is cleaned: then its baseTimestamp becomes the delete horizon (cleaning time +
``delete.retention.ms``), the deleteHorizon attribute (bit 6) is set and the records'
timestamp deltas are re-encoded against it (Kafka, KIP-534). The tombstones of that batch go
at the first cleaning after the horizon. maxTimestamp becomes the largest kept timestamp
(CreateTime) or stays (LogAppendTime). Control batches (transaction markers) are kept as
they are (transactions.py says why).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from client.records.batch import (
    CONTROL_FLAG_MASK,
    CRC_OFFSET,
    DELETE_HORIZON_FLAG_MASK,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    RECORDS_OFFSET,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    crc32c,
)
from client.records.codec import decode_lists
from client.records.compression import compress, decompress
from client.records.record import encode_record
from client.records.varint import read_varint

from .offset_map import OffsetMap

__all__ = ["FilterResult", "filter_batch", "empty_batch", "BatchContext"]

_CRC = struct.Struct(">I")


class BatchContext(NamedTuple):
    """What the filter needs besides the batch: the map, the cleaning time, the topic's
    ``delete.retention.ms``, the last data offset of each active producer, and the bound
    for decompression (a stored batch inflates at most as much as a producer's could)."""

    offset_map: OffsetMap
    now_ms: int
    delete_retention_ms: int
    active_producers: dict[int, int]
    max_decompressed: int


class FilterResult(NamedTuple):
    output: bytes | None      # the batch to write (None: dropped)
    records_read: int
    records_kept: int
    invalid: int              # records without a key


def empty_batch(fields: tuple[int, ...]) -> bytes:
    """The 61-byte header Kafka keeps for a batch whose records all went (see module doc)."""
    (base, _, epoch, magic, _, attributes, last_delta, _, max_ts, pid, p_epoch, base_seq, _) = fields
    attrs = attributes & (TIMESTAMP_TYPE_MASK | TRANSACTIONAL_FLAG_MASK | CONTROL_FLAG_MASK)
    out = bytearray(RECORDS_OFFSET)
    HEADER_STRUCT.pack_into(out, 0, base, RECORDS_OFFSET - LOG_OVERHEAD, epoch, magic, 0, attrs, last_delta,
                            -1, max_ts, pid, p_epoch, base_seq, 0)
    _CRC.pack_into(out, CRC_OFFSET, crc32c(memoryview(out)[21:]))
    return bytes(out)


def _record_spans(data: bytes, count: int) -> list[int]:
    """Start positions of the ``count`` records of ``data`` plus its end (records are
    length-prefixed; ``decode_lists`` already checked they parse)."""
    spans = []
    p = 0
    for _ in range(count):
        spans.append(p)
        length, p = read_varint(data, p)
        p += length
    spans.append(p)
    return spans


def filter_batch(batch: memoryview, ctx: BatchContext, *, retain_empty: bool, aborted: bool = False) -> FilterResult:
    """Apply the module's rules to one whole stored batch. ``retain_empty``: the caller's
    reasons to keep an emptied batch (it ends the cleaned range or the segment group); the
    active-producer reason is checked here. ``aborted``: the batch is data of an aborted
    transaction (all its records go)."""
    fields = HEADER_STRUCT.unpack_from(batch, 0)
    (base, _, epoch, magic, _, attributes, last_delta, base_ts, max_ts, pid, p_epoch, base_seq, count) = fields
    if attributes & CONTROL_FLAG_MASK:
        return FilterResult(bytes(batch), 0, 0, 0)
    if pid >= 0 and ctx.active_producers.get(pid) == base + last_delta:
        retain_empty = True
    if aborted:
        return FilterResult(empty_batch(fields) if retain_empty else None, count, 0, 0)
    codec = attributes & 0x07
    section = batch[RECORDS_OFFSET:]
    data = decompress(codec, section, ctx.max_decompressed) if codec else bytes(section)
    offsets, timestamps, keys, values, headers = decode_lists(data, count, base, base_ts)
    has_horizon = bool(attributes & DELETE_HORIZON_FLAG_MASK)
    retain_deletes = not has_horizon or ctx.now_ms < base_ts
    offset_map = ctx.offset_map
    latest = offset_map.latest_offset
    kept: list[int] = []
    invalid = 0
    tombstones = False
    for i in range(count):
        off = offsets[i]
        if off > latest:
            kept.append(i)
        else:
            key = keys[i]
            if key is None:
                invalid += 1
                continue
            if off < offset_map.get(key) or (values[i] is None and not retain_deletes):
                continue
            kept.append(i)
        if values[i] is None:
            tombstones = True
    if not kept:
        return FilterResult(empty_batch(fields) if retain_empty else None, count, 0, invalid)
    set_horizon = tombstones and not has_horizon
    if len(kept) == count and not set_horizon:
        return FilterResult(bytes(batch), count, count, invalid)
    log_append_time = bool(attributes & TIMESTAMP_TYPE_MASK)
    records = bytearray()
    if set_horizon:
        new_base_ts = ctx.now_ms + ctx.delete_retention_ms
        attributes |= DELETE_HORIZON_FLAG_MASK
        for i in kept:
            records += encode_record(offsets[i] - base, timestamps[i] - new_base_ts, keys[i], values[i], headers[i])
    else:
        new_base_ts = base_ts
        spans = _record_spans(data, count)
        for i in kept:
            records += data[spans[i]:spans[i + 1]]
    new_max_ts = max_ts if log_append_time else max(timestamps[i] for i in kept)
    payload = compress(codec, records) if codec else records
    size = RECORDS_OFFSET + len(payload)
    out = bytearray(size)
    HEADER_STRUCT.pack_into(out, 0, base, size - LOG_OVERHEAD, epoch, magic, 0, attributes, last_delta,
                            new_base_ts, new_max_ts, pid, p_epoch, base_seq, len(kept))
    out[RECORDS_OFFSET:] = payload
    _CRC.pack_into(out, CRC_OFFSET, crc32c(memoryview(out)[21:]))
    return FilterResult(bytes(out), count, len(kept), invalid)
