"""LogValidator: the checks a batch passes before the log writes it, and its offset assignment.

Validation is its own step, as in Kafka: ``validate_batches`` walks the batch headers of an
append (no lock held) and hands back one ``BatchMetadata`` per batch — position, size, record
count, offsets, max timestamp and the producer fields — so that nothing after it (the
producer state check, ``LogSegment.append``, the indexes) parses the bytes again.
``assign_offsets`` then runs under the log's lock and gives the batches their offsets.

What is checked (each failure raises the ``RecordError`` with Kafka's error code; the append
writes nothing):

- each batch header (``client.records.batch.validate_batch``): magic 2, batchLength inside the
  buffer, CRC-32C over bytes 21..end;
- ``max.message.bytes`` per batch (MESSAGE_TOO_LARGE) and ``segment.bytes`` per append
  (RECORD_LIST_TOO_LARGE), as Kafka;
- a producer's batch has baseOffset 0 and lastOffsetDelta == recordsCount - 1, is not a
  control batch (only the broker writes those), and has a baseSequence >= 0 if it has a
  producerId (INVALID_RECORD);
- every record of a producer's batch parses (``client.records.validate.check_records``): a
  correct CRC only proves the bytes arrived as sent, not that they mean anything; a
  compressed batch may inflate to at most min(64 x ``max.message.bytes``,
  ``message.max.decompressed.bytes``) and, given a ``RequestInflation``, to what its request
  has left of ``request.max.decompressed.bytes`` (MESSAGE_TOO_LARGE; storage/inflation.py),
  its buffers paid from the broker-wide ``broker.max.decompressed.bytes`` (REQUEST_TIMED_OUT
  when there is no room within a second);
- then each record of a producer's batch, as Kafka's ``LogValidator.validateRecord`` does: on a
  compacted topic (``cleanup.policy`` with ``compact``) it has a key (the cleaner could not
  tell which record of a key is the last); otherwise, with ``message.timestamp.type=CreateTime``
  its timestamp (other than -1, none) lies within [now - ``message.timestamp.before.max.ms``,
  now + ``message.timestamp.after.max.ms``] (the deprecated ``message.timestamp.difference.max.ms``
  stands in for either bound left unset; both default to unbounded, and the check costs
  nothing then); and it is not marked LogAppendTime by its batch, unless the topic uses
  CreateTime and the batch has a maxTimestamp (which then is its records' timestamp).
  Every record is checked and the refused ones are listed (KIP-467): one or more refuse the
  batch with ``RecordValidationError``, INVALID_TIMESTAMP if any is a timestamp's, else
  INVALID_RECORD, carrying each refused record's index in its batch and Kafka's message
  (Produce v8+ answers them as ``record_errors``).

``compression.type`` other than ``producer``: ``recompress`` rewrites each producer batch whose
codec differs into the topic's codec (``uncompressed`` = none) before offsets are assigned,
keeping its records (offset deltas, timestamps, keys, values, headers) and its producer fields;
the rewritten batches are validated again (``max.message.bytes`` applies to what is stored).
This is the one path where the broker re-encodes records, as Kafka does for the same setting.

Offset assignment patches bytes 0-7 of each batch in place (the CRC does not cover them). With
``message.timestamp.type=LogAppendTime`` the attributes' timestamp-type bit and maxTimestamp
are rewritten too and the CRC recomputed (it covers them). Records are never re-encoded.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from client.protocol.api import ErrorCode
from client.records.batch import (
    ATTRIBUTES_OFFSET,
    BASE_TIMESTAMP_OFFSET,
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    CRC_OFFSET,
    LOG_OVERHEAD,
    MAX_TIMESTAMP_OFFSET,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    CorruptRecordError,
    InvalidRecordError,
    compute_crc,
    validate_batch_fields,
)
from client.records.compression import Compression, DecompressedSizeError
from client.records.record import RecordBatchBuilder, iter_records
from client.records.validate import Decoded, check_records

from .config import LogConfig
from .errors import RecordBatchTooLargeError, RecordTooLargeError, RecordValidationError
from .inflation import DEFAULTS as INFLATION_DEFAULTS
from .inflation import RequestInflation

__all__ = ["BatchMetadata", "AssignedOffsets", "validate_batches", "assign_offsets", "batch_metadata",
           "recompress", "target_codec", "record_validation_error"]

_Q = struct.Struct(">q")
_I = struct.Struct(">I")
#: ``_new(NamedTupleClass, (fields...))`` builds a NamedTuple without its generated Python-level
#: ``__new__`` (a frame per call); used on the append path, where the fields are all given.
_new = tuple.__new__


class BatchMetadata(NamedTuple):
    """What validation learned about one batch of an append (Kafka's LogAppendInfo, per batch).

    ``position`` is relative to the start of the appended buffer; ``base_offset`` is the
    batch's baseOffset field as it is in the buffer when the metadata is made (0 for a
    producer's batch until ``assign_offsets`` rewrites it)."""

    position: int
    size: int
    base_offset: int
    last_offset_delta: int
    record_count: int
    max_timestamp: int
    attributes: int
    producer_id: int
    producer_epoch: int
    base_sequence: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG_MASK)


class AssignedOffsets(NamedTuple):
    """The result of ``assign_offsets``: the batches with their offsets and the append's span."""

    batches: list[BatchMetadata]
    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int


def max_decompressed_size(config: LogConfig) -> int:
    """How large a producer's compressed records section may inflate by its topic's config:
    64 x max.message.bytes (64 MiB by default). Kafka has no such bound, but it never holds a
    whole inflated batch (it streams the records); this broker decompresses a batch to walk its
    records, so the bound is what keeps a 100 KB zstd batch of zeros from taking gigabytes. A
    client can raise it (max.message.bytes is a topic config): the broker's own bounds
    (storage/inflation.py) apply on top of it."""
    return 64 * config.max_message_bytes


_MESSAGE_MAX = INFLATION_DEFAULTS["message.max.decompressed.bytes"]


def batch_metadata(buf: bytes | bytearray | memoryview, pos: int) -> BatchMetadata:
    """Validate the header (and CRC) of the batch at ``buf[pos]`` and describe it."""
    (base, length, _, _, _, attributes, last_delta, _, max_ts, producer_id, producer_epoch, base_sequence,
     count) = validate_batch_fields(buf, pos)
    return BatchMetadata(pos, length + LOG_OVERHEAD, base, last_delta, count, max_ts, attributes,
                         producer_id, producer_epoch, base_sequence)


def validate_batches(buf: bytes | bytearray | memoryview, config: LogConfig, *,
                     from_producer: bool = True, now_ms: int = 0,
                     inflation: RequestInflation | None = None, topic_partition: str = "") -> list[BatchMetadata]:
    """Check every batch of ``buf`` (see the module docstring); ``from_producer=False`` is for
    batches that already carry their offsets (a follower-style append), whose records were
    checked when they were first written. ``now_ms`` is the broker's clock for the timestamp
    bounds (read only when ``config.timestamps_bounded``). ``inflation``: the request's share
    of the broker's decompression bounds (without it, a batch may inflate to
    min(64 x max.message.bytes, the default ``message.max.decompressed.bytes``)).
    ``topic_partition`` (``name-partition``) is named in the record errors' messages."""
    n = len(buf)
    if n == 0:
        raise CorruptRecordError("empty record set")
    create_time = not config.log_append_time
    bounded = from_producer and config.timestamps_bounded
    max_message_bytes = config.max_message_bytes
    topic_bound = max_decompressed_size(config)
    require_keys = config.compact
    batches: list[BatchMetadata] = []
    pos = 0
    while pos < n:
        # The fields of BatchMetadata, unpacked once (this runs per batch of every append).
        (base_offset, length, _, _, _, attributes, last_delta, _, max_ts, producer_id, producer_epoch,
         base_sequence, count) = validate_batch_fields(buf, pos)
        size = length + LOG_OVERHEAD
        if size > max_message_bytes:
            raise RecordTooLargeError(
                f"the record batch is {size} bytes, larger than max.message.bytes ({max_message_bytes})"
            )
        if from_producer:
            if base_offset != 0:
                raise InvalidRecordError(
                    f"the baseOffset of a producer's record batch should be 0, but it is {base_offset}")
            if attributes & CONTROL_FLAG_MASK:
                raise InvalidRecordError("clients are not allowed to write control records")
            if producer_id >= 0 and base_sequence < 0:
                raise InvalidRecordError(
                    f"invalid sequence number {base_sequence} in record batch with producerId {producer_id}")
        if last_delta != count - 1:
            raise InvalidRecordError(
                f"record batch has lastOffsetDelta {last_delta} but {count} records")
        if from_producer:
            codec = attributes & COMPRESSION_CODEC_MASK
            bound = (topic_bound if not codec else min(topic_bound, _MESSAGE_MAX) if inflation is None
                     else inflation.bound(topic_bound))
            try:
                decoded = check_records(buf, pos, size, count, codec, bound, memory=inflation)
            except DecompressedSizeError as e:
                limit = ("64 x max.message.bytes" if bound >= topic_bound else "message.max.decompressed.bytes"
                         if inflation is None else inflation.describe(bound, topic_bound))
                raise RecordTooLargeError(f"{e} ({limit})") from None
            stamped = attributes & TIMESTAMP_TYPE_MASK
            # Kafka's rule: a producer may not ask for LogAppendTime, except that a CreateTime
            # topic takes such a batch's timestamp (its maxTimestamp) as the records' CreateTime.
            if (bounded or (stamped and (not create_time or max_ts == NO_TIMESTAMP))
                    or (require_keys and None in decoded[2])):  # else no record can be refused
                if stamped:
                    base = max_ts
                else:
                    (base,) = _Q.unpack_from(buf, pos + BASE_TIMESTAMP_OFFSET)
                errors = _record_errors(decoded, base, bool(stamped), config, bounded, now_ms, topic_partition,
                                        partial=bool(codec) and _in_place(codec, config))
                if errors:
                    raise record_validation_error(errors)
        batches.append(_new(BatchMetadata, (pos, size, base_offset, last_delta, count, max_ts, attributes,
                                            producer_id, producer_epoch, base_sequence)))
        pos += size
    if n > config.segment_bytes:
        raise RecordBatchTooLargeError(
            f"the request includes {n} bytes of records, larger than segment.bytes ({config.segment_bytes})"
        )
    return batches


def _record_errors(decoded: Decoded, base_ts: int, stamped: bool, config: LogConfig, bounded: bool, now_ms: int,
                   topic_partition: str, *, partial: bool) -> list[tuple[int, str, bool]]:
    """Each refused record of a batch as (index, message, whether a timestamp's), in record
    order: Kafka's ``validateRecord`` — a compacted topic's record needs a key; else a
    CreateTime record's timestamp (but -1) lies within the bounds when they are ``bounded``;
    else a record of a batch marked LogAppendTime is refused. A LogAppendTime batch's records
    all have its maxTimestamp (``base_ts``; the deltas do not count). ``partial``: Kafka reads
    the batch with its key/value-skipping iterator (a compressed batch it stores as it came),
    which its LogAppendTime message shows (PartialDefaultRecord, null sizes as -1). A record's
    offset in a producer's batch is its index (the baseOffset is 0)."""
    _, deltas, keys, values, _ = decoded
    compact, create_time = config.compact, not config.log_append_time
    before, after = config.timestamp_before_max_ms, config.timestamp_after_max_ms
    errors: list[tuple[int, str, bool]] = []
    for i, delta in enumerate(deltas):
        if compact and keys[i] is None:
            errors.append((i, f"Compacted topic cannot accept message without key in topic partition {topic_partition}",
                           False))
            continue
        ts = base_ts if stamped else base_ts + delta
        if create_time and ts != NO_TIMESTAMP:
            if bounded and (now_ms - ts > before or ts - now_ms > after):
                errors.append((i, f"Timestamp {ts} of message with offset {i} is out of range. The timestamp should be"
                                  f" within [{now_ms - before}, {now_ms + after}]", True))
        elif stamped:
            errors.append((i, f"Invalid timestamp type in message {_record_str(i, ts, keys[i], values[i], partial)}."
                              " Producer should not set timestamp type to LogAppendTime.", True))
    return errors


def _record_str(offset: int, ts: int, key: bytes | None, value: bytes | None, partial: bool) -> str:
    """A record as Kafka's ``DefaultRecord.toString`` (or ``PartialDefaultRecord``'s) shows it."""
    if partial:
        return (f"PartialDefaultRecord(offset={offset}, timestamp={ts}, key={-1 if key is None else len(key)} bytes,"
                f" value={-1 if value is None else len(value)} bytes)")
    return (f"DefaultRecord(offset={offset}, timestamp={ts}, key={0 if key is None else len(key)} bytes,"
            f" value={0 if value is None else len(value)} bytes)")


def _in_place(codec: int, config: LogConfig) -> bool:
    """Whether a batch compressed with ``codec`` is stored in it (no recompression)."""
    target = target_codec(config)
    return target is None or target[0] == codec


def record_validation_error(errors: list[tuple[int, str, bool]]) -> RecordValidationError:
    """Kafka's ``processRecordErrors``: INVALID_TIMESTAMP when any refused record is refused for
    its timestamp (the message then says only that), else INVALID_RECORD, whose message shows
    the first three record errors; every record error is kept for the response."""
    record_errors = [(i, m) for i, m, _ in errors]
    if any(timestamp for _, _, timestamp in errors):
        return RecordValidationError("One or more records have been rejected due to invalid timestamp", record_errors,
                                     error_code=ErrorCode.INVALID_TIMESTAMP)
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in record_errors[:3])
    return RecordValidationError(f"One or more records have been rejected due to {len(record_errors)} record errors in"
                                 f" total, and only showing the first three errors at most: [{shown}]", record_errors,
                                 error_code=ErrorCode.INVALID_RECORD)


_TARGET_CODECS = {"uncompressed": Compression.NONE, "gzip": Compression.GZIP, "snappy": Compression.SNAPPY,
                  "lz4": Compression.LZ4, "zstd": Compression.ZSTD}


def target_codec(config: LogConfig) -> tuple[Compression, int | None] | None:
    """The codec (and level) batches are stored in, or None for ``compression.type=producer``."""
    codec = _TARGET_CODECS.get(config.compression_type)
    if codec is None:
        return None
    level = {Compression.GZIP: config.compression_gzip_level, Compression.LZ4: config.compression_lz4_level,
             Compression.ZSTD: config.compression_zstd_level}.get(codec)
    return codec, level


def recompress(buf: bytes | bytearray | memoryview, batches: list[BatchMetadata],
               config: LogConfig) -> bytearray | None:
    """The producer batches of ``buf`` rewritten in the topic's codec, or None when every batch
    already uses it (or ``compression.type=producer``). ``batches`` come from
    ``validate_batches``, so every record is known to parse."""
    target = target_codec(config)
    if target is None:
        return None
    codec, level = target
    if all(b.attributes & COMPRESSION_CODEC_MASK == codec for b in batches):
        return None
    out = bytearray()
    view = memoryview(buf)
    for b in batches:
        raw = view[b.position:b.position + b.size]
        if b.attributes & COMPRESSION_CODEC_MASK == codec:
            out += raw
            continue
        builder = RecordBatchBuilder(codec, producer_id=b.producer_id, producer_epoch=b.producer_epoch,
                                     base_sequence=b.base_sequence, is_transactional=b.is_transactional,
                                     compression_level=level)
        for r in iter_records(raw, verify_crc=False):
            builder.append(r.value, r.key, r.headers, r.timestamp, r.offset)
        out += builder.build()
    return out


def assign_offsets(buf: bytearray | memoryview, batches: list[BatchMetadata], first_offset: int,
                   log_append_time_ms: int | None) -> AssignedOffsets:
    """Give the validated ``batches`` of ``buf`` consecutive offsets from ``first_offset``
    (bytes 0-7 patched in place); with ``log_append_time_ms`` also set LogAppendTime."""
    assigned: list[BatchMetadata] = []
    offset = first_offset
    max_ts, offset_of_max_ts = -1, -1
    for b in batches:
        _Q.pack_into(buf, b.position, offset)
        ts = b.max_timestamp
        attributes = b.attributes
        if log_append_time_ms is not None:
            attributes |= TIMESTAMP_TYPE_MASK
            buf[b.position + ATTRIBUTES_OFFSET + 1] |= TIMESTAMP_TYPE_MASK
            _Q.pack_into(buf, b.position + MAX_TIMESTAMP_OFFSET, log_append_time_ms)
            _I.pack_into(buf, b.position + CRC_OFFSET, compute_crc(memoryview(buf)[b.position:b.position + b.size]))
            ts = log_append_time_ms
        # Positional construction, not b._replace(...): ~4x cheaper, and this runs per batch
        # of every produce request.
        last = offset + b.last_offset_delta
        assigned.append(_new(BatchMetadata, (b.position, b.size, offset, b.last_offset_delta, b.record_count, ts,
                                              attributes, b.producer_id, b.producer_epoch, b.base_sequence)))
        if ts > max_ts:
            max_ts, offset_of_max_ts = ts, last
        offset = last + 1
    return _new(AssignedOffsets, (assigned, first_offset, offset - 1, max_ts, offset_of_max_ts))


def offsets_as_given(batches: list[BatchMetadata], log_end_offset: int) -> AssignedOffsets:
    """The span of batches that already carry offsets (a follower-style append): they must
    start at or above ``log_end_offset`` and increase."""
    first = batches[0].base_offset
    if first < log_end_offset:
        raise InvalidRecordError(f"batch offset {first} is below the log end offset {log_end_offset}")
    max_ts, offset_of_max_ts = -1, -1
    expected = first
    for b in batches:
        if b.base_offset < expected:
            raise InvalidRecordError(f"batch offset {b.base_offset} is below the previous batch's end {expected}")
        if b.max_timestamp > max_ts:
            max_ts, offset_of_max_ts = b.max_timestamp, b.last_offset
        expected = b.last_offset + 1
    return AssignedOffsets(batches, first, batches[-1].last_offset, max_ts, offset_of_max_ts)
