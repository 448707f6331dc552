"""Confluent's wire format of a schema-registry-framed value, sans I/O.

    byte 0      magic, 0
    bytes 1-4   the schema id, big-endian signed 32-bit
    [Protobuf only] the message indexes: which message of the schema's file the payload is,
                as a path of indexes (top-level message, then nested ones). Written as a
                zigzag varint count, then each index as a zigzag varint; the path [0] (the
                first top-level message, the common case) is written as the single byte 0
    the payload (Avro binary, JSON text in UTF-8, or the Protobuf message's bytes)
"""

from __future__ import annotations

import struct

__all__ = ["MAGIC", "SerdeError", "decode_indexes", "encode_indexes", "frame", "unframe"]

MAGIC = 0
_HEADER = struct.Struct(">bi")


class SerdeError(ValueError):
    """Bytes that are not Confluent-framed, or a value its schema refuses."""


def frame(schema_id: int, payload: bytes, indexes: bytes = b"") -> bytes:
    return _HEADER.pack(MAGIC, schema_id) + indexes + payload


def unframe(data: bytes) -> tuple[int, memoryview]:
    """(schema id, the bytes after the header)."""
    if len(data) < _HEADER.size:
        raise SerdeError(f"{len(data)} bytes: too short for Confluent's framing")
    magic, schema_id = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise SerdeError(f"unknown magic byte {magic}")
    return schema_id, memoryview(data)[_HEADER.size:]


def _zigzag(n: int) -> bytes:
    v = (n << 1) ^ (n >> 63)
    out = bytearray()
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _read_zigzag(buf: memoryview, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise SerdeError("truncated or overlong varint in the message indexes")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def encode_indexes(path: list[int]) -> bytes:
    if path == [0]:
        return b"\0"
    return _zigzag(len(path)) + b"".join(_zigzag(i) for i in path)


def decode_indexes(buf: memoryview) -> tuple[list[int], memoryview]:
    """(the index path, the payload after it)."""
    count, pos = _read_zigzag(buf, 0)
    if count == 0:
        return [0], buf[pos:]
    if count < 0 or count > len(buf):
        raise SerdeError(f"bad message index count {count}")
    path = []
    for _ in range(count):
        i, pos = _read_zigzag(buf, pos)
        path.append(i)
    return path, buf[pos:]
