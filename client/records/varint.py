"""Zigzag variable-length integers, as used *inside* RecordBatch v2 records.

Format (protobuf's, which Kafka's ``ByteUtils.writeVarint``/``writeVarlong`` follow):
the value is zigzag-mapped to an unsigned integer ``(n << 1) ^ (n >> 63)``, so small
magnitudes of either sign are short, then written 7 bits at a time, least significant group
first, with the high bit of each byte set when more bytes follow. A varint carries a 32-bit
value (at most 5 bytes), a varlong a 64-bit value (at most 10 bytes).

These are *not* the unsigned varints of the flexible wire protocol (compact lengths and tagged
fields); those live in ``client.protocol``.
"""

from __future__ import annotations

__all__ = ["write_varint", "read_varint", "size_of_varint", "VarintError"]


class VarintError(ValueError):
    """A varint ran past the end of its buffer or past 10 bytes."""


def write_varint(out: bytearray, value: int) -> None:
    """Append the zigzag varint/varlong encoding of ``value`` to ``out``."""
    v = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def size_of_varint(value: int) -> int:
    """Number of bytes ``write_varint`` uses for ``value``."""
    v = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


def read_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Decode one zigzag varint/varlong at ``buf[pos]``; return ``(value, next_pos)``.

    Raises VarintError when the encoding is longer than 10 bytes or the buffer ends first.
    """
    end = len(buf)
    if pos >= end:
        raise VarintError("varint starts past the end of the buffer")
    b = buf[pos]
    if b < 0x80:  # fast path: one byte (most lengths, deltas and counts in small records)
        return (b >> 1) ^ -(b & 1), pos + 1
    result = b & 0x7F
    shift = 7
    pos += 1
    while True:
        if pos >= end:
            raise VarintError("varint runs past the end of the buffer")
        if shift > 63:
            raise VarintError("varint longer than 10 bytes")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    result &= 0xFFFFFFFFFFFFFFFF
    return (result >> 1) ^ -(result & 1), pos
