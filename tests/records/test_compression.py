"""Tests for ``client/records/compression.py``: the five codecs of RecordBatch v2."""

from __future__ import annotations

import struct

import cramjam
import pytest
from aiokafka.codec import snappy_encode as aiokafka_xerial_snappy_encode
from hypothesis import given, settings
from hypothesis import strategies as st

from client.records import (
    RECORDS_OFFSET,
    Compression,
    Record,
    build_batch,
    compress,
    compute_crc,
    decode_batch,
    decompress,
    validate_batch,
)
from client.records.compression import XERIAL_MAGIC, DecompressedSizeError, UnsupportedCodecError

ALL_CODECS = list(Compression)
COMPRESSING = [c for c in Compression if c != Compression.NONE]

# Compressible but not trivial: every 64 KiB LZ4 block repeats text seen in earlier blocks, so a
# compressor allowed to link blocks will reference across block boundaries.
SAMPLE = b"".join(b"record %06d: the quick brown fox jumps over the lazy dog\n" % i for i in range(6000))


def xerial_frame(data: bytes, chunk_size: int) -> bytes:
    """Java's SnappyOutputStream framing, by hand: magic, version 1, compat 1, then
    int32-length-prefixed raw snappy blocks of ``chunk_size`` input bytes each."""
    out = bytearray(XERIAL_MAGIC + struct.pack(">ii", 1, 1))
    assert out[:8] == b"\x82SNAPPY\x00"
    for i in range(0, len(data), chunk_size):
        block = bytes(cramjam.snappy.compress_raw(data[i : i + chunk_size]))
        out += struct.pack(">i", len(block)) + block
    return bytes(out)


# --- Compression.from_name ------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,expected",
    [
        ("none", Compression.NONE),
        ("gzip", Compression.GZIP),
        ("snappy", Compression.SNAPPY),
        ("lz4", Compression.LZ4),
        ("zstd", Compression.ZSTD),
        ("GZIP", Compression.GZIP),
        (" Zstd ", Compression.ZSTD),
        (None, Compression.NONE),
        (0, Compression.NONE),
        (1, Compression.GZIP),
        (2, Compression.SNAPPY),
        (3, Compression.LZ4),
        (4, Compression.ZSTD),
        (Compression.LZ4, Compression.LZ4),
    ],
)
def test_from_name_accepts_kafka_names_and_ids(name: object, expected: Compression) -> None:
    """``compression.type`` names (any case), wire ids and members all map to the codec."""
    assert Compression.from_name(name) is expected  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["brotli", "", "producer", "gzip2", 5, 7, -1])
def test_from_name_rejects_unknown(name: object) -> None:
    """Unknown names and ids outside 0-4 raise ValueError."""
    with pytest.raises(ValueError):
        Compression.from_name(name)  # type: ignore[arg-type]


def test_codec_ids_are_kafkas() -> None:
    """The enum values are the attribute bits 0-2 Kafka uses."""
    assert [int(c) for c in Compression] == [0, 1, 2, 3, 4]
    assert [c.name.lower() for c in Compression] == ["none", "gzip", "snappy", "lz4", "zstd"]


# --- round trips and framing --------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(ALL_CODECS), st.binary(max_size=2048))
def test_round_trip(codec: Compression, data: bytes) -> None:
    """decompress(codec, compress(codec, x)) == x for every codec and any bytes (also empty)."""
    packed = compress(codec, data)
    assert isinstance(packed, bytes)
    assert decompress(codec, packed) == data
    assert decompress(codec, compress(codec, bytearray(data))) == data  # what the builder passes
    assert decompress(codec, compress(codec, memoryview(data))) == data
    assert decompress(codec, memoryview(packed)) == data
    assert decompress(codec, bytearray(packed)) == data


@pytest.mark.parametrize("codec", COMPRESSING, ids=lambda c: c.name.lower())
def test_large_round_trip_compresses(codec: Compression) -> None:
    """A ~350 KB compressible payload (several LZ4/xerial-sized blocks) survives and shrinks."""
    packed = compress(codec, SAMPLE)
    assert len(packed) < len(SAMPLE) // 2
    assert decompress(codec, packed) == SAMPLE


def test_none_is_identity() -> None:
    """Codec 0 copies the bytes unchanged."""
    assert compress(Compression.NONE, b"abc") == b"abc"
    assert decompress(Compression.NONE, memoryview(b"abc")) == b"abc"


def test_wire_framings() -> None:
    """Each codec writes the framing the table in the module docstring promises."""
    assert compress(Compression.GZIP, b"x")[:2] == b"\x1f\x8b"  # RFC 1952
    assert compress(Compression.LZ4, b"x")[:4] == struct.pack("<I", 0x184D2204)  # LZ4 frame
    assert compress(Compression.ZSTD, b"x")[:4] == struct.pack("<I", 0xFD2FB528)  # zstd frame
    snappy = compress(Compression.SNAPPY, SAMPLE)
    assert not snappy.startswith(XERIAL_MAGIC)  # raw block, what librdkafka writes
    assert bytes(cramjam.snappy.decompress_raw(snappy)) == SAMPLE


def _lz4_blocks_decoded_independently(frame: bytes) -> bytes:
    """Decode an LZ4 frame the way Kafka's Java ``Lz4BlockInputStream`` does: every data block
    on its own, with no dictionary carried over from the previous block."""
    assert frame[:4] == struct.pack("<I", 0x184D2204)
    flg, bd = frame[4], frame[5]
    max_block = {4: 1 << 16, 5: 1 << 18, 6: 1 << 20, 7: 1 << 22}[(bd >> 4) & 7]
    pos = 6 + (8 if flg & 0x08 else 0) + 1  # FLG, BD, optional content size, header checksum
    out = bytearray()
    while True:
        (size,) = struct.unpack_from("<I", frame, pos)
        pos += 4
        if size == 0:
            break
        stored = bool(size & 0x80000000)
        size &= 0x7FFFFFFF
        block = frame[pos : pos + size]
        pos += size + (4 if flg & 0x10 else 0)  # block checksum
        if stored:
            out += block
        else:
            buf = bytearray(max_block)
            n = cramjam.lz4.decompress_block_into(block, buf)
            out += buf[:n]
    return bytes(out)


def test_lz4_blocks_are_independent() -> None:
    """Kafka reads LZ4 frames block by block without linking (KIP-57; kafka-python and aiokafka
    both force ``block_linked=False``), so our frames must set the block-independence flag and
    every block must decode on its own."""
    frame = compress(Compression.LZ4, SAMPLE)
    assert frame[4] & 0xC0 == 0x40, "LZ4 frame version must be 01"
    assert frame[4] & 0x20, "block independence flag (FLG bit 5) must be set"
    assert _lz4_blocks_decoded_independently(frame) == SAMPLE


# --- snappy: raw and xerial ---------------------------------------------------------------


@pytest.mark.parametrize("chunk_size", [1, 7, 1000, 32 * 1024, 10**7])
def test_snappy_decodes_xerial_framing(chunk_size: int) -> None:
    """Java's xerial framing decodes, with one chunk or many (a 1-byte chunk size on a short
    prefix; 32 KiB is xerial's default)."""
    data = SAMPLE[:500] if chunk_size == 1 else SAMPLE
    framed = xerial_frame(data, chunk_size)
    assert framed.startswith(XERIAL_MAGIC)
    assert decompress(Compression.SNAPPY, framed) == data


def test_snappy_decodes_aiokafka_xerial_output() -> None:
    """aiokafka's producer writes xerial-framed snappy: we read it."""
    framed = aiokafka_xerial_snappy_encode(SAMPLE, xerial_compatible=True, xerial_blocksize=4096)
    assert framed.startswith(XERIAL_MAGIC)
    assert decompress(Compression.SNAPPY, framed) == SAMPLE


def test_snappy_xerial_header_only_is_empty() -> None:
    """A xerial stream with no chunks is the empty payload."""
    assert decompress(Compression.SNAPPY, XERIAL_MAGIC + struct.pack(">ii", 1, 1)) == b""


@pytest.mark.parametrize(
    "framed",
    [
        XERIAL_MAGIC,  # header cut after the magic
        XERIAL_MAGIC + b"\x00\x00\x00\x01\x00\x00",  # header cut inside the compat field
        XERIAL_MAGIC + struct.pack(">ii", 1, 1) + b"\x00\x00",  # chunk length cut short
        XERIAL_MAGIC + struct.pack(">iii", 1, 1, 100) + b"abc",  # chunk runs past the end
        XERIAL_MAGIC + struct.pack(">iii", 1, 1, -5) + b"abc",  # negative chunk length
        XERIAL_MAGIC + struct.pack(">iii", 1, 1, 4) + b"\xff\xff\xff\xff",  # garbage chunk
    ],
    ids=["magic-only", "short-header", "short-length", "overrun", "negative", "garbage"],
)
def test_snappy_malformed_xerial_raises_value_error(framed: bytes) -> None:
    """Malformed xerial framing is a ValueError, never a silent empty result or another type."""
    with pytest.raises(ValueError):
        decompress(Compression.SNAPPY, framed)


def test_batch_with_xerial_snappy_records_decodes() -> None:
    """A batch whose records section is xerial-framed snappy (as Java producers write) decodes
    to the same records as the uncompressed batch."""
    records = [
        Record(100 + i, 1_700_000_000_000 + i, b"key-%d" % i, SAMPLE[i * 50 : i * 50 + 300], (("h", b"v"),))
        for i in range(40)
    ]
    plain = build_batch(records)
    section = bytes(plain[RECORDS_OFFSET:])
    batch = bytearray(plain[:RECORDS_OFFSET]) + xerial_frame(section, 1024)
    assert len(section) > 3 * 1024  # several chunks
    struct.pack_into(">i", batch, 8, len(batch) - 12)  # batchLength
    struct.pack_into(">h", batch, 21, int(Compression.SNAPPY))  # attributes
    struct.pack_into(">I", batch, 17, compute_crc(batch))
    assert validate_batch(batch).compression is Compression.SNAPPY
    assert decode_batch(batch) == records


# --- bad input ----------------------------------------------------------------------------


GARBAGE = [b"", b"\x00", b"garbage data here", bytes(range(256)), b"\xff" * 40]


@pytest.mark.parametrize("codec", COMPRESSING, ids=lambda c: c.name.lower())
@pytest.mark.parametrize("data", GARBAGE, ids=["empty", "zero", "text", "range", "ff"])
def test_garbage_raises_value_error(codec: Compression, data: bytes) -> None:
    """Bytes that are not a valid stream raise ValueError (not cramjam's own error type)."""
    if codec == Compression.SNAPPY and data == b"\x00":
        assert decompress(codec, data) == b""  # the one valid raw-snappy stream here: b""
        return
    with pytest.raises(ValueError):
        decompress(codec, data)


@pytest.mark.parametrize("codec", COMPRESSING, ids=lambda c: c.name.lower())
def test_truncated_stream_raises_value_error(codec: Compression) -> None:
    """A valid stream cut in half is an error, not a short result."""
    packed = compress(codec, SAMPLE)
    with pytest.raises(ValueError):
        decompress(codec, packed[: len(packed) // 2])


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(COMPRESSING), st.binary(max_size=512))
def test_random_bytes_never_escape_as_other_exceptions(codec: Compression, data: bytes) -> None:
    """Fuzz: decompress either returns bytes or raises ValueError."""
    try:
        out = decompress(codec, data)
    except ValueError:
        return
    assert isinstance(out, bytes)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(COMPRESSING), st.binary(min_size=1, max_size=400), st.data())
def test_corrupted_stream_never_escapes_as_other_exceptions(
    codec: Compression, payload: bytes, data: st.DataObject
) -> None:
    """Fuzz: a real compressed stream with one byte changed decodes or raises ValueError."""
    packed = bytearray(compress(codec, payload))
    i = data.draw(st.integers(0, len(packed) - 1))
    packed[i] ^= data.draw(st.integers(1, 255))
    try:
        decompress(codec, bytes(packed))
    except ValueError:
        pass


@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_unknown_codec_ids_raise(codec_id: int) -> None:
    """Ids 5-7 are unsupported both ways; the error is a ValueError."""
    assert issubclass(UnsupportedCodecError, ValueError)
    with pytest.raises(UnsupportedCodecError):
        compress(codec_id, b"abc")
    with pytest.raises(UnsupportedCodecError):
        decompress(codec_id, b"abc")


# ---------------------------------------------------------------- decompression bombs


def zeros_compressed(codec: Compression, size: int) -> bytes:
    """``size`` zero bytes compressed with ``codec`` without holding them (streamed)."""
    if codec == Compression.SNAPPY:  # a raw block states its size: claim it without the data
        varint = bytearray()
        n = size
        while True:
            b, n = n & 0x7F, n >> 7
            varint.append(b | (0x80 if n else 0))
            if not n:
                return bytes(varint) + b"\x00" * 16
    c = {Compression.GZIP: cramjam.gzip, Compression.LZ4: cramjam.lz4, Compression.ZSTD: cramjam.zstd}[codec].Compressor()
    chunk = b"\0" * (1 << 20)
    for _ in range(size >> 20):
        c.compress(chunk)
    return bytes(c.finish())


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_a_bomb_is_refused_at_the_bound_without_inflating_it(codec: Compression) -> None:
    import resource
    import time

    bomb = zeros_compressed(codec, 256 << 20)
    assert len(bomb) < 2 << 20
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    with pytest.raises(DecompressedSizeError, match="above the limit of 4194304 bytes"):
        decompress(codec, bomb, max_size=4 << 20)
    assert time.perf_counter() - t0 < 5  # stops at the bound, does not inflate 256 MiB first
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 64 << 10  # KB: < 64 MB more


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_sections_up_to_the_bound_decompress(codec: Compression) -> None:
    data = bytes(range(256)) * 4096  # 1 MiB, above the first guess of the growing buffer
    packed = compress(codec, data)
    assert decompress(codec, packed, max_size=len(data)) == data
    with pytest.raises(DecompressedSizeError):
        decompress(codec, packed, max_size=len(data) - 1)


def test_snappy_raw_header_claiming_4_gib_is_refused_before_allocating() -> None:
    claim = b"\xff\xff\xff\xff\x0f" + b"\x00" * 110  # 115 bytes, declared length 2^32 - 1
    with pytest.raises(DecompressedSizeError, match="4294967295"):
        decompress(Compression.SNAPPY, claim)
