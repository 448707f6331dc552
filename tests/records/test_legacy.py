"""Magic 0/1 message sets converted to RecordBatch v2: message sets written by kafka-python's own
legacy encoder (an independent implementation) come out as the same keys, values and
timestamps, in one batch with the producer's codec; damaged input is refused with Kafka's
errors; inflation is bounded."""

from __future__ import annotations

import struct
import zlib

import pytest

from client.records.batch import CorruptRecordError, InvalidRecordError, RecordBatchHeader, validate_batch
from client.records.compression import Compression, DecompressedSizeError, compress, decompress
from client.records.legacy import _xxh32, convert_legacy, is_legacy
from client.records.record import iter_records

legacy_records = pytest.importorskip("kafka.record.legacy_records")

MESSAGES = [(b"k%d" % i if i % 3 else None, b"value-%d" % i * (i + 1), 1_700_000_000_000 + 7 * i) for i in range(30)]
KP_CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3}


def kp_message_set(magic: int, codec: str, messages=MESSAGES) -> bytes:
    b = legacy_records.LegacyRecordBatchBuilder(magic, KP_CODECS[codec], 1 << 20)
    for i, (key, value, ts) in enumerate(messages):
        assert b.append(i, ts if magic else None, key, value) is not None
    return bytes(b.build())


def converted(records: bytes, max_size: int = 1 << 20) -> tuple[RecordBatchHeader, list[tuple]]:
    assert is_legacy(records)
    batch = convert_legacy(records, max_size)
    assert not is_legacy(batch)
    header = validate_batch(batch)  # magic 2, lengths, CRC-32C
    return header, [(r.key, r.value, r.timestamp) for r in iter_records(batch)]


@pytest.mark.parametrize("codec", list(KP_CODECS))
@pytest.mark.parametrize("magic", [0, 1])
def test_kafka_python_message_sets_convert(magic: int, codec: str) -> None:
    header, records = converted(kp_message_set(magic, codec))
    assert header.base_offset == 0 and header.producer_id == -1 and header.records_count == len(MESSAGES)
    assert header.attributes & 0x07 == KP_CODECS[codec]  # the producer's codec, re-applied
    # magic 0 has no timestamps: -1 (Kafka's NO_TIMESTAMP)
    assert records == [(k, v, ts if magic else -1) for k, v, ts in MESSAGES]


def _message(magic: int, attributes: int, key: bytes | None, value: bytes | None, ts: int = 5) -> bytes:
    body = struct.pack(">bb", magic, attributes) + (struct.pack(">q", ts) if magic else b"")
    for part in (key, value):
        body += struct.pack(">i", -1) if part is None else struct.pack(">i", len(part)) + part
    return struct.pack(">qiI", 0, len(body) + 4, zlib.crc32(body)) + body


def test_xxh32_known_values() -> None:
    assert [_xxh32(s) for s in (b"", b"a", b"abc")] == [0x02CC5D05, 0x550D7456, 0x32D153FF]


def test_magic_0_lz4_with_old_kafkas_header_checksum() -> None:
    """Old clients computed the LZ4 frame header checksum over the frame magic too (KAFKA-3160)."""
    inner = _message(0, 0, b"a", b"1") + _message(0, 0, None, b"2" * 500)
    frame = bytearray(compress(Compression.LZ4, inner))
    n = 2 + (8 if frame[4] & 0x08 else 0) + (4 if frame[4] & 0x01 else 0)
    frame[4 + n] = (_xxh32(bytes(frame[:4 + n])) >> 8) & 0xFF  # as old Kafka wrote it
    with pytest.raises(ValueError):
        decompress(Compression.LZ4, bytes(frame))  # a strict reader refuses it
    header, records = converted(_message(0, 3, None, bytes(frame)))
    assert header.attributes & 0x07 == 3
    assert records == [(b"a", b"1", -1), (None, b"2" * 500, -1)]


def test_several_wrappers_become_one_batch() -> None:
    records = kp_message_set(1, "gzip", MESSAGES[:10]) + kp_message_set(1, "gzip", MESSAGES[10:])
    header, got = converted(records)
    assert header.records_count == len(MESSAGES) and got == [(k, v, ts) for k, v, ts in MESSAGES]


def test_log_append_time_wrapper_stamps_its_messages() -> None:
    inner = _message(1, 0, b"a", b"1", ts=11) + _message(1, 0, b"b", b"2", ts=12)
    _, got = converted(_message(1, 1 | 0x08, None, compress(Compression.GZIP, inner), ts=99))
    assert got == [(b"a", b"1", 99), (b"b", b"2", 99)]


def test_damaged_message_sets_are_refused() -> None:
    good = kp_message_set(1, "none", MESSAGES[:3])
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 1
    with pytest.raises(CorruptRecordError, match="CRC"):
        convert_legacy(bytes(bad_crc), 1 << 20)
    with pytest.raises(CorruptRecordError):
        convert_legacy(good[:-3], 1 << 20)  # a truncated last message
    with pytest.raises(CorruptRecordError):
        convert_legacy(_message(1, 1, None, b"not gzip"), 1 << 20)
    nested = _message(1, 1, None, compress(Compression.GZIP, _message(1, 1, None, compress(Compression.GZIP, good))))
    with pytest.raises(InvalidRecordError):
        convert_legacy(nested, 1 << 20)
    mixed = _message(1, 1, None, compress(Compression.GZIP, _message(0, 0, b"k", b"v")))
    with pytest.raises(InvalidRecordError):
        convert_legacy(mixed, 1 << 20)


def test_inflation_is_bounded_across_wrappers() -> None:
    one = _message(1, 1, None, compress(Compression.GZIP, _message(1, 0, None, bytes(40_000))))
    convert_legacy(one * 2, 100_000)
    with pytest.raises(DecompressedSizeError):
        convert_legacy(one * 3, 100_000)  # each fits, together they do not
