"""Kafka protocol primitive types: a bounds-checked Reader and an appending Writer.

Big-endian fixed-width integers; ``STRING`` = int16 length + UTF-8 (-1 = null for
NULLABLE_STRING); ``BYTES``/``RECORDS`` = int32 length (-1 = null); ``ARRAY`` = int32 count
(-1 = null). Flexible versions use *compact* forms: unsigned varint of length+1 (0 = null),
and end every struct with a tagged-field buffer (uvarint count, then uvarint tag, uvarint
size, bytes per field). The unsigned varints here are NOT the zigzag varints used inside
records (client.records.varint).

Every length and element count is checked against the bytes left *before* anything is
allocated (an element takes at least one byte), so a hostile 2^31-1 count costs nothing
(CVE-2022-34917).
"""

from __future__ import annotations

import struct
import uuid as _uuid

__all__ = ["Reader", "Writer", "DecodeError"]

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_F64 = struct.Struct(">d")


class DecodeError(ValueError):
    """The bytes do not decode as the expected message (malformed or truncated)."""


#: ``Reader.elements`` when no budget is set: more than any buffer can hold
UNLIMITED_ELEMENTS = 1 << 62


def budget_exceeded(n: int, budget: int) -> DecodeError:
    return DecodeError(f"array of {n} elements exceeds the decode budget ({budget} elements left)")


class Reader:
    """A position in a buffer. ``elements``: how many more array elements the codecs may decode
    from it (both decrement it by each array's length and raise DecodeError below zero): the
    broker sets it for a large request so that its decoded form (a dict or value per element)
    stays bounded whatever the bytes hold; unlimited otherwise."""

    __slots__ = ("buf", "pos", "end", "elements")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None) -> None:
        self.buf = buf if isinstance(buf, memoryview) else memoryview(buf)
        self.pos = pos
        self.end = len(self.buf) if end is None else end
        self.elements = UNLIMITED_ELEMENTS

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def _need(self, n: int) -> int:
        p = self.pos
        if n < 0 or p + n > self.end:
            raise DecodeError(f"need {n} bytes at position {p}, {self.end - p} left")
        self.pos = p + n
        return p

    def int8(self) -> int:
        return _I8.unpack_from(self.buf, self._need(1))[0]

    def boolean(self) -> bool:
        return self.buf[self._need(1)] != 0

    def int16(self) -> int:
        return _I16.unpack_from(self.buf, self._need(2))[0]

    def int32(self) -> int:
        return _I32.unpack_from(self.buf, self._need(4))[0]

    def uint16(self) -> int:
        return _U16.unpack_from(self.buf, self._need(2))[0]

    def uint32(self) -> int:
        return _U32.unpack_from(self.buf, self._need(4))[0]

    def int64(self) -> int:
        return _I64.unpack_from(self.buf, self._need(8))[0]

    def float64(self) -> float:
        return _F64.unpack_from(self.buf, self._need(8))[0]

    def uuid(self) -> _uuid.UUID:
        p = self._need(16)
        return _uuid.UUID(bytes=bytes(self.buf[p : p + 16]))

    def uvarint(self) -> int:
        result = 0
        shift = 0
        buf = self.buf
        while True:
            if self.pos >= self.end:
                raise DecodeError("unsigned varint runs past the end")
            b = buf[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result
            shift += 7
            if shift > 28:
                raise DecodeError("unsigned varint longer than 5 bytes")

    def _raw(self, n: int) -> memoryview:
        p = self._need(n)
        return self.buf[p : p + n]

    def string(self) -> str:
        n = self.int16()
        if n < 0:
            raise DecodeError("null where a non-nullable string was expected")
        return self._decode_utf8(self._raw(n))

    def nullable_string(self) -> str | None:
        n = self.int16()
        if n < 0:
            if n != -1:
                raise DecodeError(f"invalid string length {n}")
            return None
        return self._decode_utf8(self._raw(n))

    def compact_string(self) -> str:
        n = self.uvarint() - 1
        if n < 0:
            raise DecodeError("null where a non-nullable compact string was expected")
        return self._decode_utf8(self._raw(n))

    def compact_nullable_string(self) -> str | None:
        n = self.uvarint() - 1
        return None if n < 0 else self._decode_utf8(self._raw(n))

    @staticmethod
    def _decode_utf8(raw: memoryview) -> str:
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError as e:
            raise DecodeError(f"string is not valid UTF-8: {e}") from None

    def bytes_(self) -> memoryview:
        n = self.int32()
        if n < 0:
            raise DecodeError("null where non-nullable bytes were expected")
        return self._raw(n)

    def nullable_bytes(self) -> memoryview | None:
        n = self.int32()
        if n < 0:
            if n != -1:
                raise DecodeError(f"invalid bytes length {n}")
            return None
        return self._raw(n)

    def compact_bytes(self) -> memoryview:
        n = self.uvarint() - 1
        if n < 0:
            raise DecodeError("null where non-nullable compact bytes were expected")
        return self._raw(n)

    def compact_nullable_bytes(self) -> memoryview | None:
        n = self.uvarint() - 1
        return None if n < 0 else self._raw(n)

    def array_length(self) -> int:
        """An int32 element count (-1 = null), checked against the bytes left."""
        n = self.int32()
        if n < -1:
            raise DecodeError(f"invalid array length {n}")
        if n > self.end - self.pos:
            raise DecodeError(f"array of {n} elements cannot fit in {self.end - self.pos} bytes")
        self._spend(n)
        return n

    def compact_array_length(self) -> int:
        n = self.uvarint() - 1
        if n > self.end - self.pos:
            raise DecodeError(f"array of {n} elements cannot fit in {self.end - self.pos} bytes")
        self._spend(n)
        return n

    def _spend(self, n: int) -> None:
        if n > 0:
            if n > self.elements:
                raise budget_exceeded(n, self.elements)
            self.elements -= n

    def tagged_fields(self) -> dict[int, bytes]:
        """A tag buffer; unknown tags are kept as raw bytes."""
        n = self.uvarint()
        if n > self.end - self.pos:
            raise DecodeError(f"{n} tagged fields cannot fit in {self.end - self.pos} bytes")
        out: dict[int, bytes] = {}
        for _ in range(n):
            tag = self.uvarint()
            size = self.uvarint()
            out[tag] = bytes(self._raw(size))
        return out


class Writer:
    __slots__ = ("buf",)

    def __init__(self, buf: bytearray | None = None) -> None:
        self.buf = bytearray() if buf is None else buf

    def int8(self, v: int) -> None:
        self.buf += _I8.pack(v)

    def boolean(self, v: bool) -> None:
        self.buf.append(1 if v else 0)

    def int16(self, v: int) -> None:
        self.buf += _I16.pack(v)

    def int32(self, v: int) -> None:
        self.buf += _I32.pack(v)

    def uint16(self, v: int) -> None:
        self.buf += _U16.pack(v)

    def uint32(self, v: int) -> None:
        self.buf += _U32.pack(v)

    def int64(self, v: int) -> None:
        self.buf += _I64.pack(v)

    def float64(self, v: float) -> None:
        self.buf += _F64.pack(v)

    def uuid(self, v: _uuid.UUID | None) -> None:
        self.buf += (v.bytes if v is not None else bytes(16))

    def uvarint(self, v: int) -> None:
        if v < 0:
            raise ValueError(f"unsigned varint cannot hold {v}")
        while v >= 0x80:
            self.buf.append((v & 0x7F) | 0x80)
            v >>= 7
        self.buf.append(v)

    def string(self, v: str) -> None:
        b = v.encode("utf-8")
        self.int16(len(b))
        self.buf += b

    def nullable_string(self, v: str | None) -> None:
        if v is None:
            self.int16(-1)
        else:
            self.string(v)

    def compact_string(self, v: str) -> None:
        b = v.encode("utf-8")
        self.uvarint(len(b) + 1)
        self.buf += b

    def compact_nullable_string(self, v: str | None) -> None:
        if v is None:
            self.uvarint(0)
        else:
            self.compact_string(v)

    def bytes_(self, v: bytes | bytearray | memoryview) -> None:
        self.int32(len(v))
        self.buf += v

    def nullable_bytes(self, v: bytes | bytearray | memoryview | None) -> None:
        if v is None:
            self.int32(-1)
        else:
            self.bytes_(v)

    def compact_bytes(self, v: bytes | bytearray | memoryview) -> None:
        self.uvarint(len(v) + 1)
        self.buf += v

    def compact_nullable_bytes(self, v: bytes | bytearray | memoryview | None) -> None:
        if v is None:
            self.uvarint(0)
        else:
            self.compact_bytes(v)

    def tagged_fields(self, fields: dict[int, bytes] | None = None) -> None:
        if not fields:
            self.buf.append(0)
            return
        self.uvarint(len(fields))
        for tag in sorted(fields):
            self.uvarint(tag)
            self.uvarint(len(fields[tag]))
            self.buf += fields[tag]
