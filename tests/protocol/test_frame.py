"""Tests for ``client/protocol/frame.py``: cutting a byte stream into frames, whatever the feed
boundaries, and refusing bad sizes before buffering the body."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from client.protocol.frame import (
    DEFAULT_MAX_FRAME,
    FrameDecoder,
    FrameTooLargeError,
    InvalidFrameError,
)


def framed(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def test_partial_feeds() -> None:
    d = FrameDecoder()
    raw = framed(b"hello")
    for i in range(len(raw) - 1):
        d.feed(raw[i : i + 1])
        assert d.next_frame() is None
    d.feed(raw[-1:])
    assert d.next_frame() == b"hello"
    assert d.next_frame() is None
    assert d.buffered == 0


def test_many_frames_in_one_feed() -> None:
    bodies = [b"a", b"", b"bc" * 100, b"d"]
    d = FrameDecoder()
    d.feed(b"".join(framed(b) for b in bodies) + framed(b"tail")[:5])
    assert d.frames() == bodies
    assert d.buffered == 5
    d.feed(framed(b"tail")[5:])
    assert d.frames() == [b"tail"]


def test_zero_size_frame() -> None:
    d = FrameDecoder()
    d.feed(b"\x00\x00\x00\x00")
    assert d.next_frame() == b""


def test_frames_are_fresh_writable_buffers() -> None:
    d = FrameDecoder()
    d.feed(framed(b"abc") + framed(b"def"))
    f1 = d.next_frame()
    assert isinstance(f1, bytearray)
    f1[0] = ord("z")  # Produce patches offsets in place: must not touch the decoder's buffer
    assert d.next_frame() == b"def"


def test_negative_size() -> None:
    d = FrameDecoder()
    d.feed(struct.pack(">i", -1))
    with pytest.raises(InvalidFrameError):
        d.next_frame()


def test_too_large_is_refused_on_the_size_field_alone() -> None:
    d = FrameDecoder(max_size=1000)
    d.feed(struct.pack(">i", 1001))  # no body bytes at all yet
    with pytest.raises(FrameTooLargeError):
        d.next_frame()
    d2 = FrameDecoder(max_size=1000)
    d2.feed(framed(b"x" * 1000))
    assert d2.next_frame() == b"x" * 1000


def test_huge_size_does_not_buffer() -> None:
    d = FrameDecoder()
    assert d.max_size == DEFAULT_MAX_FRAME == 104857600
    d.feed(struct.pack(">i", 0x7FFFFFFF) + b"x" * 10)
    with pytest.raises(FrameTooLargeError):
        d.next_frame()
    assert d.buffered == 14  # nothing was allocated for the announced body


def test_buffer_is_compacted_on_long_streams() -> None:
    d = FrameDecoder()
    body = b"y" * 1000
    chunk = framed(body) * 200
    total = 0
    for _ in range(50):
        d.feed(chunk + framed(body)[:3])
        total += len(d.frames())
        d.feed(framed(body)[3:])
        total += len(d.frames())
        assert d.buffered < 2 * len(chunk)
    assert total == 50 * 201
    assert len(d._buf) < 2 * len(chunk)


@settings(max_examples=100)
@given(st.lists(st.binary(max_size=50), max_size=10), st.lists(st.integers(1, 40), min_size=1, max_size=20))
def test_any_split_yields_the_same_frames(bodies: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(framed(b) for b in bodies)
    d = FrameDecoder()
    out: list[bytes] = []
    pos = 0
    i = 0
    while pos < len(stream):
        n = cuts[i % len(cuts)]
        d.feed(stream[pos : pos + n])
        pos += n
        i += 1
        out.extend(d.frames())
    assert out == bodies
    assert d.buffered == 0


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 3 * 65536), min_size=1, max_size=6), st.lists(st.integers(1, 70000), min_size=1),
       st.data())
def test_preallocated_frames_equal_buffered_ones(sizes, cuts, data) -> None:
    """The client's decoder (big frames preallocated, filled in place) cuts any byte stream into
    the same frames, in the same order, as the plain one, however the stream is chunked."""

    bodies = [bytes([i % 251]) * n + bytes([i]) for i, n in enumerate(sizes)]
    stream = b"".join(framed(b) for b in bodies)
    plain, pre = FrameDecoder(), FrameDecoder(preallocate=True)
    got_plain: list[bytes] = []
    got_pre: list[bytes] = []
    pos = 0
    i = 0
    while pos < len(stream):
        n = cuts[i % len(cuts)]
        i += 1
        chunk = stream[pos:pos + n]
        pos += n
        for d, out in ((plain, got_plain), (pre, got_pre)):
            d.feed(chunk)
            if data.draw(st.booleans()):
                out.extend(bytes(f) for f in d.frames())
    got_plain.extend(bytes(f) for f in plain.frames())
    got_pre.extend(bytes(f) for f in pre.frames())
    assert got_pre == got_plain == bodies
    assert pre.buffered == plain.buffered == 0


def test_preallocation_is_bounded_by_max_size() -> None:
    d = FrameDecoder(max_size=100_000, preallocate=True)
    d.feed(struct.pack(">i", 200_000) + b"x" * 10)  # too large: not preallocated, refused on read
    with pytest.raises(FrameTooLargeError):
        d.next_frame()


def receive(d: FrameDecoder, data: bytes, chunk: int) -> None:
    """Drive ``d`` as an asyncio.BufferedProtocol: at most ``chunk`` bytes per read."""
    mv = memoryview(data)
    while mv:
        buf = d.get_buffer()
        n = min(len(buf), chunk, len(mv))
        buf[:n] = mv[:n]
        d.buffer_updated(n)
        mv = mv[n:]


@pytest.mark.parametrize("chunk", [1, 7, 4096, 1 << 20])
def test_buffered_protocol_reads(chunk: int) -> None:
    # small frames go through the scratch buffer; a large one (preallocated) is read into directly
    big = bytes(range(256)) * 1000
    bodies = [b"a", big, b"", b"bc" * 10, big[:70000]]
    d = FrameDecoder(preallocate=True)
    receive(d, b"".join(framed(b) for b in bodies) + framed(b"tail")[:3], chunk)
    assert d.frames() == bodies
    assert d.buffered == 3
    receive(d, framed(b"tail")[3:], chunk)
    assert d.frames() == [b"tail"]
    assert d.buffered == 0


def test_buffered_protocol_fills_the_preallocated_frame() -> None:
    d = FrameDecoder(preallocate=True)
    body = b"x" * 100000
    receive(d, framed(body)[:10], 10)
    buf = d.get_buffer()
    assert len(buf) == len(body) - 6  # the frame's free tail, not the scratch buffer
    buf[:len(body) - 6] = body[6:]
    d.buffer_updated(len(body) - 6)
    assert d.next_frame() == body
