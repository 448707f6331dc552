"""Framing: every Kafka message is ``int32 size`` (bytes that follow) + header + body.

``FrameDecoder.feed(data)`` buffers bytes; ``next_frame()`` returns complete frames (without
the size prefix) in order. A size above ``max_size`` (``socket.request.max.bytes``, 100 MiB by
default) or below 0 raises FrameTooLargeError / InvalidFrameError *before* any allocation for
the body. Sans-IO: the server and the client drive the same decoder.

``preallocate=True`` (the client, which trusts its broker's sizes up to ``max_size``): once
the size of a frame of at least ``PREALLOCATE_MIN`` bytes is known, its buffer is allocated
whole and later bytes are copied straight into it, once, instead of being appended to the
stream buffer and sliced out again (two copies of every fetched byte). The server keeps the
default: a peer announcing a large size gets no allocation until the bytes arrive.

``get_buffer()`` / ``buffer_updated(n)`` serve an ``asyncio.BufferedProtocol`` (the client's
connections): while a preallocated frame is being filled, the socket is read straight into its
free tail (no copy at all in user space; a Fetch answer of megabytes otherwise went through the
event loop's read buffer, a ``bytes`` per read, then into the frame); otherwise into a scratch
buffer whose bytes are then ``feed``-ed.
"""

from __future__ import annotations

import struct

__all__ = ["FrameDecoder", "FrameError", "FrameTooLargeError", "InvalidFrameError", "DEFAULT_MAX_FRAME"]

DEFAULT_MAX_FRAME = 104857600  # socket.request.max.bytes
_SIZE = struct.Struct(">i")
PREALLOCATE_MIN = 65536
SCRATCH_SIZE = 262144  # uvloop's own read buffer size


class FrameError(ValueError):
    pass


class FrameTooLargeError(FrameError):
    pass


class InvalidFrameError(FrameError):
    pass


class FrameDecoder:
    __slots__ = ("max_size", "preallocate", "_buf", "_start", "_big", "_filled", "_ready", "_scratch", "_into_big")

    def __init__(self, max_size: int = DEFAULT_MAX_FRAME, preallocate: bool = False) -> None:
        self.max_size = max_size
        self.preallocate = preallocate
        self._buf = bytearray()
        self._start = 0
        self._big: bytearray | None = None  # a preallocated frame being filled
        self._filled = 0
        self._ready: list[bytearray] = []   # complete preallocated frames, before ``_buf``'s
        self._scratch: memoryview | None = None  # get_buffer's buffer between frames
        self._into_big = False  # the last get_buffer handed out the preallocated frame's tail

    @property
    def buffered(self) -> int:
        return len(self._buf) - self._start + self._filled + sum(map(len, self._ready))

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        if not self.preallocate:
            self._buf += data
            return
        mv = memoryview(data)
        while mv:
            big = self._big
            if big is not None:
                n = min(len(mv), len(big) - self._filled)
                big[self._filled:self._filled + n] = mv[:n]
                self._filled += n
                mv = mv[n:]
                if self._filled == len(big):
                    self._ready.append(big)
                    self._big, self._filled = None, 0
                continue
            buf, start = self._buf, self._start
            if len(buf) - start == 0 and len(mv) >= 4:
                size = _SIZE.unpack_from(mv, 0)[0]
                if PREALLOCATE_MIN <= size <= self.max_size and len(mv) < 4 + size:
                    self._big = bytearray(size)
                    mv = mv[4:]
                    continue
            buf += mv
            avail = len(buf) - start
            if avail >= 4:  # the first frame's header is in: preallocate it if big and incomplete
                size = _SIZE.unpack_from(buf, start)[0]
                if PREALLOCATE_MIN <= size <= self.max_size and avail < 4 + size:
                    big = self._big = bytearray(size)
                    big[:avail - 4] = memoryview(buf)[start + 4:]
                    self._filled = avail - 4
                    buf.clear()
                    self._start = 0
            return

    def get_buffer(self) -> memoryview:
        """Where the next bytes received should go (``buffer_updated`` says how many came)."""
        big = self._big
        if big is not None:
            self._into_big = True
            return memoryview(big)[self._filled:]
        self._into_big = False
        if self._scratch is None:
            self._scratch = memoryview(bytearray(SCRATCH_SIZE))
        return self._scratch

    def buffer_updated(self, n: int) -> None:
        """``n`` bytes were written at the start of the last ``get_buffer``'s buffer."""
        if self._into_big:
            big = self._big
            assert big is not None
            self._filled += n
            if self._filled == len(big):
                self._ready.append(big)
                self._big, self._filled = None, 0
        else:
            assert self._scratch is not None
            self.feed(self._scratch[:n])

    def next_frame(self) -> bytearray | None:
        """The next whole frame's bytes (a fresh, writable buffer), or None if incomplete."""
        if self._ready:
            return self._ready.pop(0)
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
