"""RecordBatch v2 down-converted to magic 0 or 1 message sets: what a broker sends Fetch v0-3
(Kafka's ``RecordsUtil.downConvert`` and ``LazyDownConversionRecords``).

Batch by batch, in order (a partial trailing batch is left out, as Kafka's batch iterator
leaves it):

- control batches (transaction markers) are skipped: magic 0/1 have no such thing;
- a zstd batch cannot be written in magic 0/1 (KIP-110): the first batch to convert being zstd
  raises UnsupportedCompressionTypeError (the broker answers UNSUPPORTED_COMPRESSION_TYPE for
  the partition); a later one ends the conversion there, so the client reads what came before
  and its next fetch starts at that batch and gets the error;
- an uncompressed batch becomes one message per record, at the record's offset, **leaving out
  the records below ``first_offset``** (the fetch offset: Kafka drops them because old
  librdkafka relied on it); a compressed one becomes one wrapper message holding every record
  of the batch, compressed with the batch's codec, at the offset of its last record, its inner
  messages at their offsets relative to the first record's (magic 1) or absolute (magic 0);
- every message keeps its record's key and value; magic 1 keeps the timestamp and its type
  (attributes bit 3 set for LogAppendTime, the batch's max timestamp then); record headers and
  producer ids, epochs and sequences are dropped (magic 0/1 have none);
- transactional records are converted like any other: Fetch v0-3 have no isolation level
  (read_uncommitted), so aborted records are read too, as Kafka serves them.

Size: the first batch that converts to anything is returned whole whatever its size (it may
exceed ``limit``: converted records are larger than v2 ones, and the consumer must make
progress); the following messages are added while the total stays within
``max(limit, size of that first converted batch)`` (Kafka's ``sizeInBytes``), ending at a whole
message (Kafka cuts the bytes there and the client drops the partial message).

The wrappers' compression is Kafka's for magic 0/1: gzip (RFC 1952), snappy in xerial's
framing (``\\x82SNAPPY\\x00``, version 1, compatible version 1, then blocks of at most 32 KiB
inflated, each an int32 length and a raw snappy block: Java's SnappyOutputStream), LZ4 as
Kafka's ``Lz4BlockOutputStream`` frames it (FLG 0x60: version 1, independent blocks, no
checksums; BD 0x40: 64 KiB blocks; each block an int32 little-endian size, high bit set when
stored uncompressed; an end mark of 0), whose header checksum for magic 0 is computed, as
Kafka before KAFKA-3160 did and still does for magic 0, over the frame's magic number too.

Compressed batches are inflated within ``max_inflated`` bytes each, their buffers paid from
``memory`` (``compression.inflated``), as the broker's produce path does.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

import cramjam

from .batch import (
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    LOG_OVERHEAD,
    RECORDS_OFFSET,
    TIMESTAMP_TYPE_MASK,
    CorruptRecordError,
    UnsupportedCompressionTypeError,
    iter_batch_headers,
)
from .codec import decode_lists
from .compression import (
    DEFAULT_MAX_DECOMPRESSED,
    Compression,
    DecompressedSizeError,
    DecompressionRefusedError,
    InflateMemory,
    inflated,
)
from .legacy import _xxh32

__all__ = ["down_convert", "convert_batch", "compress_legacy", "legacy_message", "XERIAL_BLOCK_SIZE",
           "LZ4_BLOCK_SIZE"]

_ENTRY = struct.Struct(">qiI")  # offset, message size, crc
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_LE32 = struct.Struct("<I")

#: xerial's SnappyOutputStream default block size (inflated bytes per chunk)
XERIAL_BLOCK_SIZE = 32 * 1024
_XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
#: Kafka's Lz4BlockOutputStream: BLOCKSIZE_64KB
LZ4_BLOCK_SIZE = 64 * 1024
_LZ4_MAGIC = b"\x04\x22\x4d\x18"  # 0x184D2204, little-endian
_LZ4_FLG = 0x60  # version 01, block independence; no block/content checksum, no content size
_LZ4_BD = 0x40  # block maximum size 64 KiB
_LZ4_UNCOMPRESSED = 0x80000000


def _blob(data: bytes | None) -> bytes:
    return b"\xff\xff\xff\xff" if data is None else _I32.pack(len(data)) + data


def legacy_message(offset: int, magic: int, attributes: int, timestamp: int, key: bytes | None,
                   value: bytes | None) -> bytes:
    """One message set entry: offset, size and the message (CRC-32 over magic..end)."""
    body = bytes((magic, attributes & 0xFF)) + (_I64.pack(timestamp) if magic else b"") + _blob(key) + _blob(value)
    return _ENTRY.pack(offset, 4 + len(body), zlib.crc32(body)) + body


def _xerial(data: bytes) -> bytes:
    out = bytearray(_XERIAL_HEADER)
    view = memoryview(data)
    for pos in range(0, len(view), XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(view[pos:pos + XERIAL_BLOCK_SIZE]))
        out += _I32.pack(len(block)) + block
    return bytes(out)


def _kafka_lz4(data: bytes, magic: int) -> bytes:
    descriptor = bytes((_LZ4_FLG, _LZ4_BD))
    # magic 0: the checksum Kafka computed before KAFKA-3160, over the magic number as well
    checked = _LZ4_MAGIC + descriptor if magic == 0 else descriptor
    out = bytearray(_LZ4_MAGIC + descriptor + bytes(((_xxh32(checked) >> 8) & 0xFF,)))
    view = memoryview(data)
    for pos in range(0, len(view), LZ4_BLOCK_SIZE):
        raw = view[pos:pos + LZ4_BLOCK_SIZE]
        block = bytes(cramjam.lz4.compress_block(raw, store_size=False))
        if len(block) >= len(raw):  # incompressible: stored as is
            out += _LE32.pack(len(raw) | _LZ4_UNCOMPRESSED) + raw
        else:
            out += _LE32.pack(len(block)) + block
    out += _LE32.pack(0)  # end mark; no content checksum
    return bytes(out)


def compress_legacy(codec: int, magic: int, data: bytes) -> bytes:
    """The value of a magic 0/1 wrapper message: ``data`` (its inner message set) compressed
    as Kafka writes it for that magic (module docstring)."""
    if codec == Compression.GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == Compression.SNAPPY:
        return _xerial(data)
    if codec == Compression.LZ4:
        return _kafka_lz4(data, magic)
    raise UnsupportedCompressionTypeError(f"compression codec {codec} cannot be written in magic {magic} messages")


def convert_batch(batch: bytes | bytearray | memoryview, pos: int, to_magic: int, first_offset: int,
                  max_inflated: int = DEFAULT_MAX_DECOMPRESSED, memory: InflateMemory | None = None) -> list[bytes]:
    """The message set entries of the (whole, non-control) v2 batch at ``batch[pos]``, as the
    module docstring converts it: one per record at or above ``first_offset`` when
    uncompressed, one wrapper when compressed; [] when nothing is left. Raises
    UnsupportedCompressionTypeError for zstd (or an unknown codec), CorruptRecordError when the
    records do not decode."""
    view = memoryview(batch)
    (base_offset, length, _, _, _, attributes, _, base_ts, max_ts, _, _, _, count) = struct.unpack_from(
        ">qiibIhiqqqhii", view, pos)
    codec = attributes & COMPRESSION_CODEC_MASK
    if codec > Compression.LZ4:
        name = "zstandard" if codec == Compression.ZSTD else f"codec {codec}"
        raise UnsupportedCompressionTypeError(f"Down-conversion of {name}-compressed batches is not supported")
    log_append = bool(attributes & TIMESTAMP_TYPE_MASK)
    section = view[pos + RECORDS_OFFSET:pos + LOG_OVERHEAD + length]
    try:
        if codec:
            with inflated(codec, section, max_inflated, memory) as data:
                offsets, timestamps, keys, values, _ = decode_lists(data, count, base_offset, base_ts)  # type: ignore[arg-type]
        else:
            offsets, timestamps, keys, values, _ = decode_lists(section, count, base_offset, base_ts)  # type: ignore[arg-type]
    except (CorruptRecordError, DecompressedSizeError, DecompressionRefusedError):
        raise
    except ValueError as e:  # an undecodable stream
        raise CorruptRecordError(f"cannot decode the records of the batch at offset {base_offset}: {e}") from None
    ts_attr = TIMESTAMP_TYPE_MASK if (log_append and to_magic > 0) else 0
    if log_append:
        timestamps = [max_ts] * count
    if not codec:
        return [legacy_message(o, to_magic, ts_attr, t, k, v)
                for o, t, k, v in zip(offsets, timestamps, keys, values) if o >= first_offset]
    if not count:
        return []
    first = offsets[0]
    inner = b"".join(legacy_message(o - first if to_magic else o, to_magic, ts_attr, t, k, v)
                     for o, t, k, v in zip(offsets, timestamps, keys, values))
    # the wrapper: null key, the codec, LogAppendTime's timestamp or the largest of its messages
    wrapper_ts = max_ts if log_append else max(max(timestamps), -1)
    return [legacy_message(offsets[-1], to_magic, codec | ts_attr, wrapper_ts, None,
                           compress_legacy(codec, to_magic, inner))]


def _batches(data: bytes | bytearray | memoryview) -> Iterator[tuple[int, int, bool]]:
    """(position, size, is control) of each whole batch of ``data``."""
    pos = 0
    for h in iter_batch_headers(data):
        size = h.size_in_bytes
        yield pos, size, bool(h.attributes & CONTROL_FLAG_MASK)
        pos += size


def down_convert(data: bytes | bytearray | memoryview, to_magic: int, first_offset: int, limit: int,
                 max_inflated: int = DEFAULT_MAX_DECOMPRESSED, memory: InflateMemory | None = None) -> bytes:
    """The v2 batches of ``data`` (a fetch's read, from the batch holding ``first_offset``) as
    a magic ``to_magic`` message set of about ``limit`` bytes (module docstring). Raises
    UnsupportedCompressionTypeError when the first batch with something to convert is zstd."""
    if to_magic not in (0, 1):
        raise ValueError(f"cannot down-convert to magic {to_magic}")
    out: list[bytes] = []
    size = 0
    cap = limit
    for pos, _, control in _batches(data):
        if control:
            continue
        try:
            entries = convert_batch(data, pos, to_magic, first_offset, max_inflated, memory)
        except UnsupportedCompressionTypeError:
            if not out:
                raise
            break
        if not entries:
            continue
        if not out:  # the first converted batch goes whole (the client must make progress)
            out = entries
            size = sum(len(e) for e in entries)
            cap = max(limit, size)
            continue
        for e in entries:
            if size + len(e) > cap:
                return b"".join(out)
            out.append(e)
            size += len(e)
    return b"".join(out)
