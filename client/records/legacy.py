"""Magic 0 and 1 message sets (Kafka's record format before 0.11), read and converted to one
RecordBatch v2 — what a broker does with what Produce v0-2 clients send.

A message set is a sequence of entries::

    int64 offset | int32 message_size | message (message_size bytes)

    message: uint32 crc | int8 magic | int8 attributes | int64 timestamp (magic 1 only)
             | int32 key length (-1 = null) + key | int32 value length (-1 = null) + value

``crc`` is CRC-32 (IEEE, zlib's) over magic..end. ``attributes`` bits 0-2 are the codec (0 none,
1 gzip, 2 snappy (xerial framing), 3 lz4), bit 3 the timestamp type of magic 1 (1 =
LogAppendTime). A compressed message ("wrapper") carries in its value the compressed message
set of its inner messages, which have the wrapper's magic and no codec of their own; the
producer's offsets are ignored (the broker assigns them). Magic 0 messages have no timestamp
(-1 once converted, exempt from timestamp bounds as in Kafka).

LZ4 under magic 0 was written by old Kafka clients with a wrong frame-header checksum (computed
over the frame's magic number as well, KAFKA-3160); Kafka reads it without checking that byte,
so the reader recomputes it before decompressing.

The conversion keeps every message's key, value and timestamp, in order, in one batch
compressed with the codec the producer used (the last wrapper's), as Kafka 3.x does; the log
then assigns offsets and applies ``message.timestamp.type`` and ``compression.type`` as for any
batch. Errors: CorruptRecordError (bad CRC, truncated entry, undecodable value),
InvalidRecordError (a wrapper inside a wrapper, an inner magic other than the wrapper's).
"""

from __future__ import annotations

import struct
import zlib

from .batch import CorruptRecordError, InvalidRecordError
from .compression import Compression, DecompressedSizeError, decompress
from .record import RecordBatchBuilder

__all__ = ["is_legacy", "convert_legacy", "LegacyMessage"]

MAGIC_OFFSET = 16  # int64 offset, int32 size, uint32 crc: the same place as a v2 batch's magic
_ENTRY = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_CODEC_MASK = 0x07
_LOG_APPEND_TIME = 0x08
_LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"

LegacyMessage = tuple[bytes | None, bytes | None, int]  # key, value, timestamp


def is_legacy(records: bytes | bytearray | memoryview) -> bool:
    """Whether ``records`` starts with a magic 0 or 1 message (else: a v2 batch, or garbage)."""
    return len(records) > MAGIC_OFFSET and records[MAGIC_OFFSET] in (0, 1)


def _bytes(buf: memoryview, pos: int, end: int) -> tuple[bytes | None, int]:
    if pos + 4 > end:
        raise CorruptRecordError("message truncated inside a key or value length")
    (n,) = _I32.unpack_from(buf, pos)
    pos += 4
    if n < 0:
        return None, pos
    if pos + n > end:
        raise CorruptRecordError(f"key or value of {n} bytes runs past the message")
    return bytes(buf[pos:pos + n]), pos + n


def _messages(data: bytes | bytearray | memoryview, budget: list[int], wrapper_magic: int | None,
              out: list[LegacyMessage]) -> int:
    """Append the messages of ``data`` to ``out`` (inflating wrappers, each within what is left
    of ``budget[0]`` bytes, which shrinks); returns the codec of the last compressed wrapper
    (0 when none)."""
    buf = memoryview(data)
    pos, end = 0, len(buf)
    codec_seen = 0
    while pos < end:
        if pos + _ENTRY.size > end:
            raise CorruptRecordError(f"message set truncated at byte {pos}")
        _, size, crc, magic, attributes = _ENTRY.unpack_from(buf, pos)
        msg_end = pos + 12 + size
        if size < 6 or msg_end > end:
            raise CorruptRecordError(f"message of {size} bytes at byte {pos} does not fit the message set")
        if magic not in (0, 1):
            raise CorruptRecordError(f"message magic {magic} in a magic 0/1 message set")
        if wrapper_magic is not None and magic != wrapper_magic:
            raise InvalidRecordError(f"inner message magic {magic} does not match its wrapper's {wrapper_magic}")
        if zlib.crc32(buf[pos + 16:msg_end]) != crc:
            raise CorruptRecordError(f"message at byte {pos} fails its CRC-32")
        p = pos + 18
        timestamp = -1
        if magic == 1:
            if p + 8 > msg_end:
                raise CorruptRecordError("magic 1 message without its timestamp")
            (timestamp,) = _I64.unpack_from(buf, p)
            p += 8
        key, p = _bytes(buf, p, msg_end)
        value, p = _bytes(buf, p, msg_end)
        codec = attributes & _CODEC_MASK
        if codec == 0:
            out.append((key, value, timestamp))
        else:
            if wrapper_magic is not None:
                raise InvalidRecordError("a compressed message inside a compressed message")
            if value is None:
                raise CorruptRecordError("compressed message without a value")
            first = len(out)
            inner = _inflate(codec, magic, value, budget[0])
            budget[0] -= len(inner)
            _messages(inner, budget, magic, out)
            if magic == 1 and attributes & _LOG_APPEND_TIME:
                out[first:] = [(k, v, timestamp) for k, v, _ in out[first:]]
            codec_seen = codec
        pos = msg_end
    return codec_seen


def _inflate(codec: int, magic: int, value: bytes, max_size: int) -> bytes:
    if codec > Compression.LZ4:
        raise CorruptRecordError(f"compression codec {codec} does not exist in magic {magic} messages")
    if codec == Compression.LZ4 and magic == 0:
        value = _fix_lz4_header_checksum(value)
    try:
        return decompress(codec, value, max_size)
    except DecompressedSizeError:
        raise
    except ValueError as e:
        raise CorruptRecordError(f"cannot decompress a magic {magic} message: {e}") from None


def _fix_lz4_header_checksum(frame: bytes) -> bytes:
    """Rewrite the header-checksum byte of an LZ4 frame: xxh32 of the frame descriptor (FLG,
    BD, and the content size / dictionary id when FLG says they are there), second byte."""
    if len(frame) < 7 or frame[:4] != _LZ4_FRAME_MAGIC:
        return frame
    flg = frame[4]
    n = 2 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if len(frame) < 4 + n + 1:
        return frame
    hc = (_xxh32(frame[4:4 + n]) >> 8) & 0xFF
    return frame[:4 + n] + bytes((hc,)) + frame[4 + n + 1:]


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M


def _xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 of a short input (< 16 bytes, all an LZ4 frame descriptor can be)."""
    assert len(data) < 16
    h = (seed + _P5 + len(data)) & _M
    i = 0
    while i + 4 <= len(data):
        (k,) = struct.unpack_from("<I", data, i)
        h = (_rotl((h + k * _P3) & _M, 17) * _P4) & _M
        i += 4
    for b in data[i:]:
        h = (_rotl((h + b * _P5) & _M, 11) * _P1) & _M
    h ^= h >> 15
    h = (h * _P2) & _M
    h ^= h >> 13
    h = (h * _P3) & _M
    h ^= h >> 16
    return h


def convert_legacy(records: bytes | bytearray | memoryview, max_size: int) -> bytearray:
    """One RecordBatch v2 (baseOffset 0, no producer id) holding every message of the magic 0/1
    message set ``records``; compressed ones may inflate to ``max_size`` bytes in all
    (DecompressedSizeError above)."""
    out: list[LegacyMessage] = []
    codec = _messages(records, [max_size], None, out)
    if not out:
        raise CorruptRecordError("a message set without messages")
    builder = RecordBatchBuilder(Compression(codec))
    for key, value, timestamp in out:
        builder.append(value, key, (), timestamp)
    return builder.build()
