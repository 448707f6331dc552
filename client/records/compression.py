"""Compression codecs of RecordBatch v2 (attributes bits 0-2), via cramjam.

| id | codec  | framing on the wire                                                       |
|----|--------|---------------------------------------------------------------------------|
| 0  | none   | —                                                                         |
| 1  | gzip   | RFC 1952 gzip stream                                                      |
| 2  | snappy | raw snappy block (librdkafka, kafka-python, aiokafka) **or** xerial framing  |
|    |        | (Java's SnappyOutputStream): 8-byte magic ``\\x82SNAPPY\\x00``, int32 version, |
|    |        | int32 min-compatible version, then chunks of int32 length + raw snappy block  |
| 3  | lz4    | LZ4 frame format (magic 0x184D2204)                                       |
| 4  | zstd   | zstd frame                                                                |

Only the records section (bytes 61..end of a batch) is compressed, as one block. We write raw
snappy (what librdkafka writes; every client reads it) and accept both framings on read.
"""

from __future__ import annotations

import enum
import mmap
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

import cramjam

__all__ = ["Compression", "compress", "decompress", "inflated", "UnsupportedCodecError", "DecompressedSizeError",
           "DecompressionRefusedError", "InflateMemory", "DEFAULT_MAX_DECOMPRESSED"]

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE = 16  # magic (8) + version (4) + min compatible version (4)


class Compression(enum.IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @classmethod
    def from_name(cls, name: str | int | Compression | None) -> Compression:
        """Accept Kafka's ``compression.type`` names (``none``, ``gzip``, ...) or ids."""
        if name is None:
            return cls.NONE
        if isinstance(name, int):
            return cls(name)
        try:
            return cls[name.strip().upper()]
        except KeyError:
            raise ValueError(
                f"unknown compression type {name!r}; expected one of none, gzip, snappy, lz4, zstd"
            ) from None


class UnsupportedCodecError(ValueError):
    """The attributes name a codec id we do not know (5-7)."""


def compress(codec: Compression | int, data: bytes | bytearray | memoryview, level: int | None = None) -> bytes:
    """Compress a records section with ``codec``; ``level`` (gzip 1-9, lz4 1-17, zstd -131072..22,
    Kafka's ``compression.*.level``) or None for the codec's default (snappy has none)."""
    if codec == Compression.NONE:
        return bytes(data)
    if codec == Compression.GZIP:
        if level is None or level == -1:
            return bytes(cramjam.gzip.compress(data))
        return bytes(cramjam.gzip.compress(data, level=level))
    if codec == Compression.SNAPPY:
        return bytes(cramjam.snappy.compress_raw(data))
    if codec == Compression.LZ4:
        # Independent blocks: Kafka's Lz4BlockInputStream decompresses each block on its own
        # (KIP-57), and cramjam.lz4.compress links them by default, which breaks Java readers
        # as soon as the records section exceeds one 64 KiB block. Compressor.compress takes
        # only ``bytes``, hence the copy (small next to the compression itself).
        c = (cramjam.lz4.Compressor(block_linked=False) if level is None
             else cramjam.lz4.Compressor(level=level, block_linked=False))
        c.compress(bytes(data))
        return bytes(c.finish())
    if codec == Compression.ZSTD:
        if level is None:
            return bytes(cramjam.zstd.compress(data))
        return bytes(cramjam.zstd.compress(data, level=level))
    raise UnsupportedCodecError(f"unsupported compression codec id {int(codec)}")


#: The largest records section ``decompress`` inflates unless told otherwise. A batch is at most
#: ``max.message.bytes`` (1 MiB by default) compressed, but a zstd or gzip stream of zeros
#: inflates ~1000x: without a bound, 131 KB on the wire became 4 GiB in memory.
DEFAULT_MAX_DECOMPRESSED = 64 << 20
_FIRST_GUESS = 256 << 10


class DecompressedSizeError(ValueError):
    """The records section inflates past the bound given to ``decompress``."""


def _too_large(codec: int, size: int, max_size: int) -> DecompressedSizeError:
    return DecompressedSizeError(
        f"{Compression(codec).name.lower()} records inflate to {'more than ' if size < 0 else ''}"
        f"{abs(size) if size >= 0 else max_size} bytes, above the limit of {max_size} bytes")


def _snappy_decompress(data: bytes | bytearray | memoryview, max_size: int) -> bytes:
    """Raw snappy (one block) or xerial framing; every declared length is checked against
    ``max_size`` before anything is allocated (a raw block states its size in its header)."""
    view = memoryview(data)
    if bytes(view[:8]) != XERIAL_MAGIC:
        declared = cramjam.snappy.decompress_raw_len(view)
        if declared > max_size:
            raise _too_large(Compression.SNAPPY, declared, max_size)
        return bytes(cramjam.snappy.decompress_raw(view))
    out = bytearray()
    pos = _XERIAL_HEADER_SIZE
    end = len(view)
    if end < pos:
        raise ValueError("xerial snappy: truncated header")
    while pos < end:
        if pos + 4 > end:
            raise ValueError("xerial snappy: truncated chunk length")
        (n,) = struct.unpack_from(">i", view, pos)
        pos += 4
        if n < 0 or pos + n > end:
            raise ValueError("xerial snappy: chunk runs past the end of the data")
        chunk = view[pos : pos + n]
        declared = cramjam.snappy.decompress_raw_len(chunk)
        if len(out) + declared > max_size:
            raise _too_large(Compression.SNAPPY, len(out) + declared, max_size)
        out += cramjam.snappy.decompress_raw(chunk)
        pos += n
    return bytes(out)


_STREAMS = {Compression.GZIP: cramjam.gzip, Compression.LZ4: cramjam.lz4, Compression.ZSTD: cramjam.zstd}


def _stream_decompress(codec: int, data: bytes | bytearray | memoryview, max_size: int) -> bytes:
    """gzip, lz4 and zstd streams do not state their inflated size: decompress into a buffer
    that grows 4x per attempt (256 KiB first, or 4x the input) up to ``max_size``. A stream
    that does not fit stops at the end of the buffer (cramjam writes into it and fails when it
    is full), so a bomb costs at most ~1.3x ``max_size`` of work and ``max_size`` of memory."""
    module = _STREAMS[Compression(codec)]
    size = min(max(_FIRST_GUESS, 4 * len(data)), max_size)
    while True:
        out = bytearray(size)
        try:
            n = module.decompress_into(data, out)
        except cramjam.DecompressionError as e:
            if "whole buffer" not in str(e):  # "failed to write whole buffer": out is full
                raise
            if size >= max_size:
                raise _too_large(codec, -1, max_size) from None
            size = min(size * 4, max_size)
            continue
        return bytes(memoryview(out)[:n])


def decompress(codec: Compression | int, data: bytes | bytearray | memoryview,
               max_size: int = DEFAULT_MAX_DECOMPRESSED) -> bytes:
    """Decompress a records section of at most ``max_size`` bytes inflated; raises
    DecompressedSizeError above it and ValueError (or a subclass) on bad input."""
    if codec == Compression.NONE:
        return bytes(data)
    try:
        if codec == Compression.SNAPPY:
            return _snappy_decompress(data, max_size)
        if codec in _STREAMS:
            return _stream_decompress(codec, data, max_size)
    except cramjam.DecompressionError as e:
        raise ValueError(f"cannot decompress {Compression(codec).name.lower()} records: {e}") from e
    raise UnsupportedCodecError(f"unsupported compression codec id {int(codec)}")


class DecompressionRefusedError(Exception):
    """An ``InflateMemory`` refused the memory a decompression needs (not a fault of the data)."""


class InflateMemory(Protocol):
    """Who pays for ``inflated``'s buffers: ``acquire(n)`` before n bytes are allocated (may
    block; raises DecompressionRefusedError to refuse), ``release(n)`` once they are freed,
    ``inflated(n)`` once a section inflated to n bytes."""

    def acquire(self, n: int) -> None: ...

    def release(self, n: int) -> None: ...

    def inflated(self, n: int) -> None: ...


@contextmanager
def inflated(codec: Compression | int, data: bytes | bytearray | memoryview, max_size: int,
             memory: InflateMemory | None = None) -> Iterator[memoryview]:
    """The records section ``data`` decompressed, as a read-only view valid inside the block.

    As ``decompress`` (same bound, same errors), but for a caller that walks the section and
    drops it: the buffers are anonymous mappings (``mmap``), so allocating one costs nothing and
    its pages are touched by the codec itself, which runs without the GIL (cramjam releases it);
    nothing is copied after decompression; the pages go back to the system when the block
    ends. gzip, lz4 and zstd grow the buffer 4x per attempt as ``decompress`` does; raw snappy
    allocates its declared length. Every buffer is acquired from ``memory`` before it is mapped
    and released when it is unmapped."""
    if codec == Compression.NONE:
        yield memoryview(data).toreadonly()
        return
    held = 0
    buf: mmap.mmap | None = None

    def take(size: int) -> mmap.mmap:
        nonlocal held, buf
        if memory is not None:
            memory.acquire(size)
            held += size
        buf = mmap.mmap(-1, max(size, 1))
        return buf

    def drop() -> None:
        nonlocal held, buf
        if buf is not None:
            buf.close()
            buf = None
        if memory is not None and held:
            memory.release(held)
        held = 0

    try:
        view = memoryview(data)
        try:
            if codec == Compression.SNAPPY:
                if bytes(view[:8]) == XERIAL_MAGIC:  # rare (Java clients): chunked, via decompress
                    take(max_size)
                    out = _snappy_decompress(view, max_size)
                    n = len(out)
                    result = memoryview(out).toreadonly()
                else:
                    declared = cramjam.snappy.decompress_raw_len(view)
                    if declared > max_size:
                        raise _too_large(Compression.SNAPPY, declared, max_size)
                    n = cramjam.snappy.decompress_raw_into(view, take(declared))
                    result = memoryview(buf)[:n].toreadonly()  # type: ignore[arg-type]
            elif codec in _STREAMS:
                module = _STREAMS[Compression(codec)]
                size = min(max(_FIRST_GUESS, 4 * len(view)), max_size)
                while True:
                    try:
                        n = module.decompress_into(view, take(size))
                        break
                    except cramjam.DecompressionError as e:
                        if "whole buffer" not in str(e):  # "failed to write whole buffer": out is full
                            raise
                        drop()
                        if size >= max_size:
                            raise _too_large(codec, -1, max_size) from None
                        size = min(size * 4, max_size)
                result = memoryview(buf)[:n].toreadonly()  # type: ignore[arg-type]
            else:
                raise UnsupportedCodecError(f"unsupported compression codec id {int(codec)}")
        except cramjam.DecompressionError as e:
            raise ValueError(f"cannot decompress {Compression(codec).name.lower()} records: {e}") from e
        if memory is not None:
            memory.inflated(n)
        try:
            yield result
        finally:
            result.release()
    finally:
        drop()
