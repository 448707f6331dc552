"""Framing: every Kafka message is ``int32 size`` (bytes that follow) + header + body.

``FrameDecoder.feed(data)`` buffers bytes; ``next_frame()`` returns complete frames (without
the size prefix) in order. A size above ``max_size`` (``socket.request.max.bytes``, 100 MiB by
default) or below 0 raises FrameTooLargeError / InvalidFrameError *before* any allocation for
the body. Sans-IO: the server and the client drive the same decoder.
"""

from __future__ import annotations

import struct

__all__ = ["FrameDecoder", "FrameError", "FrameTooLargeError", "InvalidFrameError", "DEFAULT_MAX_FRAME"]

DEFAULT_MAX_FRAME = 104857600  # socket.request.max.bytes
_SIZE = struct.Struct(">i")


class FrameError(ValueError):
    pass


class FrameTooLargeError(FrameError):
    pass


class InvalidFrameError(FrameError):
    pass


class FrameDecoder:
    __slots__ = ("max_size", "_buf", "_start")

    def __init__(self, max_size: int = DEFAULT_MAX_FRAME) -> None:
        self.max_size = max_size
        self._buf = bytearray()
        self._start = 0

    @property
    def buffered(self) -> int:
        return len(self._buf) - self._start

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        self._buf += data

    def next_frame(self) -> bytearray | None:
        """The next whole frame's bytes (a fresh, writable buffer), or None if incomplete."""
        buf = self._buf
        start = self._start
        avail = len(buf) - start
        if avail < 4:
            return None
        size = _SIZE.unpack_from(buf, start)[0]
        if size < 0:
            raise InvalidFrameError(f"negative frame size {size}")
        if size > self.max_size:
            raise FrameTooLargeError(
                f"frame of {size} bytes is larger than socket.request.max.bytes ({self.max_size})"
            )
        if avail < 4 + size:
            return None
        frame = buf[start + 4 : start + 4 + size]
        start += 4 + size
        if start == len(buf):
            buf.clear()
            start = 0
        elif start > 65536 and start * 2 > len(buf):
            del buf[:start]
            start = 0
        self._start = start
        return frame

    def frames(self) -> list[bytearray]:
        out = []
        while (f := self.next_frame()) is not None:
            out.append(f)
        return out
