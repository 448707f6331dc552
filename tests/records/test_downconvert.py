"""RecordBatch v2 down-converted to magic 0/1 message sets (what Fetch v0-3 answer): read back
by kafka-python's legacy reader (an independent implementation, CRCs checked) and by our own
magic 0/1 reader; every codec in the framing Kafka writes for each magic; control batches,
transactional data, offsets mid-batch, zstd and the size rules as Kafka's RecordsUtil and
LazyDownConversionRecords apply them."""

from __future__ import annotations

import gzip
import struct
import zlib

import crc32c
import pytest

from client.records.batch import UnsupportedCompressionTypeError
from client.records.compression import Compression, DecompressedSizeError, decompress
from client.records.control import build_control_batch
from client.records.downconvert import (
    LZ4_BLOCK_SIZE,
    XERIAL_BLOCK_SIZE,
    compress_legacy,
    convert_batch,
    down_convert,
    legacy_message,
)
from client.records.legacy import _xxh32, convert_legacy
from client.records.record import RecordBatchBuilder, iter_records

memory_records = pytest.importorskip("kafka.record.memory_records")

TS = 1_700_000_000_000
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3}


def v2_batch(base: int, n: int, codec: int = 0, *, log_append_time: bool = False, value_size: int = 8,
             transactional: bool = False, keys: bool = True) -> bytes:
    b = RecordBatchBuilder(codec, base_offset=base, log_append_time=log_append_time,
                           producer_id=7 if transactional else -1, producer_epoch=0 if transactional else -1,
                           base_sequence=0 if transactional else -1, is_transactional=transactional)
    for i in range(n):
        o = base + i
        value = (b"v%d-" % o) * value_size if o % 5 != 4 else None  # some null values, some null keys
        b.append(value, b"k%d" % o if keys and o % 3 else None, (("h", b"dropped"),), TS + o)
    return bytes(b.build())


def kp_read(data: bytes) -> list[tuple]:
    """(offset, key, value, timestamp, timestamp type) of every message, by kafka-python's
    reader, every CRC checked (wrappers' and inner messages')."""
    mr = memory_records.MemoryRecords(data)
    out = []
    while mr.has_next():
        batch = mr.next_batch()
        assert batch.validate_crc()
        for r in batch:
            assert r.validate_crc()
            out.append((r.offset, r.key, r.value, r.timestamp, r.timestamp_type))
    return out


def entries(data: bytes) -> list[tuple[int, int, int, int, bytes]]:
    """The top-level entries: (offset, magic, attributes, timestamp or -1, message bytes)."""
    out, pos = [], 0
    while pos < len(data):
        offset, size, crc, magic, attributes = struct.unpack_from(">qiIbb", data, pos)
        body = data[pos + 16:pos + 12 + size]
        assert zlib.crc32(body) == crc
        ts = struct.unpack_from(">q", data, pos + 18)[0] if magic else -1
        out.append((offset, magic, attributes, ts, data[pos:pos + 12 + size]))
        pos += 12 + size
    assert pos == len(data)
    return out


def wrapper_value(message: bytes) -> bytes:
    magic = message[16]
    pos = 18 + (8 if magic else 0)
    assert struct.unpack_from(">i", message, pos)[0] == -1  # null key
    (n,) = struct.unpack_from(">i", message, pos + 4)
    return message[pos + 8:pos + 8 + n]


def expected(base: int, n: int, magic: int) -> list[tuple]:
    """What kp_read gives for v2_batch's records base..base+n-1 (CreateTime)."""
    return [(o, b"k%d" % o if o % 3 else None, (b"v%d-" % o) * 8 if o % 5 != 4 else None,
             TS + o if magic else None, 0 if magic else None) for o in range(base, base + n)]


@pytest.mark.parametrize("codec", list(CODECS))
@pytest.mark.parametrize("magic", [0, 1])
def test_every_codec_reads_back(magic: int, codec: str) -> None:
    data = v2_batch(100, 12, CODECS[codec]) + v2_batch(112, 3, CODECS[codec])
    out = down_convert(data, magic, 100, 1 << 20)
    assert kp_read(out) == expected(100, 15, magic)
    top = entries(out)
    assert {m for _, m, _, _, _ in top} == {magic}
    if codec == "none":  # one message per record, at its offset; headers dropped
        assert [o for o, _, _, _, _ in top] == list(range(100, 115))
        assert {a for _, _, a, _, _ in top} == {0}
    else:  # one wrapper per batch, at its last offset, the codec in its attributes
        assert [(o, a) for o, _, a, _, _ in top] == [(111, CODECS[codec]), (114, CODECS[codec])]
        if magic:  # the largest timestamp of its messages
            assert [t for _, _, _, t, _ in top] == [TS + 111, TS + 114]
    # our own magic 0/1 reader (CRC-32 of every message, the wrappers inflated) agrees
    back = convert_legacy(out, 1 << 20)
    assert [(r.key, r.value, r.timestamp) for r in iter_records(back)] == [
        (k, v, t if magic else -1) for _, k, v, t, _ in expected(100, 15, 1)]


@pytest.mark.parametrize("magic", [0, 1])
def test_compressed_inner_offsets_relative_in_magic_1_absolute_in_magic_0(magic: int) -> None:
    b = RecordBatchBuilder(Compression.GZIP, base_offset=50)
    for delta in (0, 2, 5):  # a compacted batch: gaps between offsets
        b.append(b"x%d" % delta, None, (), TS, delta)
    (wrapper,) = entries(down_convert(bytes(b.build()), magic, 50, 1 << 20))
    assert wrapper[0] == 55
    inner = entries(gzip.decompress(wrapper_value(wrapper[4])))
    assert [o for o, _, _, _, _ in inner] == ([0, 2, 5] if magic else [50, 52, 55])
    assert {a for _, _, a, _, _ in inner} == {0}  # inner messages carry no codec
    assert [r[0] for r in kp_read(down_convert(bytes(b.build()), magic, 50, 1 << 20))] == [50, 52, 55]


@pytest.mark.parametrize("codec", [0, 1])
def test_log_append_time_is_kept_in_magic_1(codec: int) -> None:
    data = bytearray(v2_batch(0, 4, codec, log_append_time=True))
    struct.pack_into(">q", data, 35, TS + 999)  # the broker's append time, as the log stamps it
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    out = down_convert(bytes(data), 1, 0, 1 << 20)
    assert {(t, tt) for _, _, _, t, tt in kp_read(out)} == {(TS + 999, 1)}  # LOG_APPEND_TIME
    assert all(a & 0x08 and t == TS + 999 for _, _, a, t, _ in entries(out))
    # magic 0 has neither timestamp nor timestamp type
    assert {a & 0x08 for _, _, a, _, _ in entries(down_convert(bytes(data), 0, 0, 1 << 20))} == {0}


def test_gzip_and_snappy_framing() -> None:
    data = bytes(range(256)) * 600  # 150 KiB: several xerial blocks
    assert gzip.decompress(compress_legacy(1, 1, data)) == data
    framed = compress_legacy(2, 1, data)
    assert framed[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    pos, blocks = 16, []
    while pos < len(framed):
        (n,) = struct.unpack_from(">i", framed, pos)
        blocks.append(decompress(2, framed[pos + 4:pos + 4 + n]))  # each block raw snappy
        pos += 4 + n
    assert b"".join(blocks) == data and max(len(b) for b in blocks) == XERIAL_BLOCK_SIZE
    assert decompress(2, framed) == data


@pytest.mark.parametrize("magic", [0, 1])
def test_lz4_framing_is_kafkas(magic: int) -> None:
    import os

    data = os.urandom(LZ4_BLOCK_SIZE) + b"z" * (2 * LZ4_BLOCK_SIZE + 10)  # a stored block, then compressible ones
    frame = compress_legacy(3, magic, data)
    assert frame[:6] == b"\x04\x22\x4d\x18\x60\x40"
    checked = frame[:6] if magic == 0 else frame[4:6]  # magic 0: Kafka's old checksum over the magic number too
    assert frame[6] == (_xxh32(checked) >> 8) & 0xFF
    (first,) = struct.unpack_from("<I", frame, 7)
    assert first == LZ4_BLOCK_SIZE | 0x80000000  # incompressible: stored, high bit set
    assert frame[-4:] == b"\x00\x00\x00\x00"  # end mark, no content checksum
    if magic == 1:
        lz4_frame = pytest.importorskip("lz4.frame")
        assert lz4_frame.decompress(frame) == data  # a standard frame
    from kafka.codec import lz4_decode, lz4_decode_old_kafka

    assert (lz4_decode_old_kafka if magic == 0 else lz4_decode)(frame) == data


def test_control_batches_are_skipped_and_transactional_data_converted() -> None:
    marker = bytearray(build_control_batch(7, 0, commit=False))
    struct.pack_into(">q", marker, 0, 3)
    data = v2_batch(0, 3, transactional=True) + bytes(marker) + v2_batch(4, 2)
    # read_uncommitted: the aborted records are read too, the ABORT marker is not
    assert [r[0] for r in kp_read(down_convert(data, 1, 0, 1 << 20))] == [0, 1, 2, 4, 5]
    # a fetch whose first batch is a marker starts with the next batch
    assert [r[0] for r in kp_read(down_convert(bytes(marker) + v2_batch(4, 2), 1, 3, 10))] == [4, 5]
    assert down_convert(bytes(marker), 1, 3, 1 << 20) == b""


@pytest.mark.parametrize("magic", [0, 1])
def test_fetch_offset_mid_batch(magic: int) -> None:
    """Uncompressed: the records below the fetch offset are left out (Kafka's RecordsUtil, for
    old librdkafka); compressed: the whole wrapper, the client skips what it did not ask for."""
    plain = v2_batch(10, 8)
    assert [r[0] for r in kp_read(down_convert(plain, magic, 14, 1 << 20))] == [14, 15, 16, 17]
    packed = v2_batch(10, 8, Compression.SNAPPY)
    assert [r[0] for r in kp_read(down_convert(packed, magic, 14, 1 << 20))] == list(range(10, 18))
    # only the first batch can start below the fetch offset; later ones are whole
    assert [r[0] for r in kp_read(down_convert(plain + v2_batch(18, 2), magic, 17, 1 << 20))] == [17, 18, 19]
    # nothing at or past the fetch offset in the batch: the next batch comes first
    assert [r[0] for r in kp_read(down_convert(plain + v2_batch(18, 2), magic, 18, 1 << 20))] == [18, 19]


def test_zstd_cannot_be_down_converted() -> None:
    zstd = v2_batch(5, 3, Compression.ZSTD)
    with pytest.raises(UnsupportedCompressionTypeError, match="zstandard"):
        down_convert(zstd + v2_batch(8, 2), 1, 5, 1 << 20)
    with pytest.raises(UnsupportedCompressionTypeError):
        convert_batch(zstd, 0, 0, 5)
    # after convertible batches, the conversion stops at the zstd one: the client reads what
    # came before, and its next fetch (from the zstd batch) gets the error
    assert [r[0] for r in kp_read(down_convert(v2_batch(0, 5) + zstd + v2_batch(8, 2), 1, 0, 1 << 20))] == [
        0, 1, 2, 3, 4]


@pytest.mark.parametrize("codec", [0, 1])
def test_size_first_batch_whole_then_within_the_bytes_read(codec: int) -> None:
    batches = [v2_batch(10 * i, 10, codec, value_size=20) for i in range(4)]
    data = b"".join(batches)
    single = [len(down_convert(b, 1, 0, 1 << 20)) for b in batches]
    # a limit below the first converted batch: that batch whole, nothing more
    out = down_convert(data, 1, 0, 10)
    assert len(out) == single[0] and [r[0] for r in kp_read(out)] == list(range(10))
    # a limit in the middle of the third batch: whole messages up to it, never past it
    limit = single[0] + single[1] + single[2] // 2
    out = down_convert(data, 1, 0, limit)
    assert len(out) <= limit
    got = [r[0] for r in kp_read(out)]
    if codec:  # one wrapper per batch: the third does not fit
        assert got == list(range(20))
    else:
        assert got[:20] == list(range(20)) and 20 < len(got) < 30 and got == list(range(len(got)))
    assert [r[0] for r in kp_read(down_convert(data, 1, 0, 1 << 20))] == list(range(40))


def test_partial_trailing_batch_is_left_out() -> None:
    data = v2_batch(0, 3) + v2_batch(3, 3)[:-5]
    assert [r[0] for r in kp_read(down_convert(data, 0, 0, 1 << 20))] == [0, 1, 2]
    assert down_convert(v2_batch(0, 3)[:40], 0, 0, 1 << 20) == b""


def test_inflation_is_bounded() -> None:
    bomb = RecordBatchBuilder(Compression.GZIP)
    bomb.append(b"\x00" * (4 << 20))
    with pytest.raises(DecompressedSizeError):
        down_convert(bytes(bomb.build()), 1, 0, 1 << 20, max_inflated=1 << 20)


def test_legacy_message_layout() -> None:
    m1 = legacy_message(7, 1, 0x08, TS, b"k", None)
    assert m1 == struct.pack(">qiIbbqi", 7, 4 + 1 + 1 + 8 + 4 + 1 + 4, zlib.crc32(m1[16:]), 1, 0x08, TS, 1) + b"k" + \
        struct.pack(">i", -1)
    m0 = legacy_message(7, 0, 0, TS, None, b"v")
    assert m0[16:] == b"\x00\x00" + struct.pack(">i", -1) + struct.pack(">i", 1) + b"v"  # no timestamp in magic 0
