"""Tests for ``client/records/record.py``: building batches of records and decoding them back,
including byte-level compatibility with two real Kafka clients' record code (kafka-python and
aiokafka) and the behaviour on corrupted records sections."""

from __future__ import annotations

import struct
import time
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from client.records import (
    RECORDS_OFFSET,
    Compression,
    CorruptRecordError,
    Record,
    RecordBatchBuilder,
    RecordBatchHeader,
    UnsupportedCompressionTypeError,
    build_batch,
    compute_crc,
    decode_batch,
    iter_records,
    set_base_offset,
    validate_batch,
)

with warnings.catch_warnings():
    # kafka-python loads its protocol schemas with deprecated importlib.resources calls on import.
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.codec as kp_codec
    from kafka.record._crc32c import crc as pure_python_crc32c
    from kafka.record.default_records import DefaultRecordBatch as KPBatch
    from kafka.record.default_records import DefaultRecordBatchBuilder as KPBuilder
from aiokafka.record.default_records import DefaultRecordBatch as AKBatch
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AKBuilder

ALL_CODECS = list(Compression)
CODEC_IDS = [c.name.lower() for c in Compression]
TS0 = 1_700_000_000_000

# --- strategies ----------------------------------------------------------------------------

nullable_bytes = st.none() | st.binary(max_size=48)
header_keys = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)  # any UTF-8
headers = st.lists(st.tuples(header_keys, nullable_bytes), max_size=4).map(tuple)
timestamps = st.integers(0, 2**43)  # independent draws, so often decreasing within a batch


@st.composite
def record_lists(draw: st.DrawFn, first_offset: st.SearchStrategy[int] = st.integers(0, 2**62)) -> list[Record]:
    """1-10 records with increasing (possibly gapped) offsets and arbitrary timestamps."""
    n = draw(st.integers(1, 10))
    offset = draw(first_offset)
    records = []
    for i in range(n):
        if i:
            offset += draw(st.integers(1, 1000))
        records.append(Record(offset, draw(timestamps), draw(nullable_bytes), draw(nullable_bytes), draw(headers)))
    return records


def reseal(batch: bytearray) -> bytearray:
    """Recompute the CRC so a deliberate corruption gets past validate_batch."""
    struct.pack_into(">I", batch, 17, compute_crc(batch))
    return batch


def set_records_section(batch: bytearray, section: bytes) -> bytearray:
    """Replace bytes 61..end, fix batchLength and the CRC."""
    out = bytearray(batch[:RECORDS_OFFSET]) + section
    struct.pack_into(">i", out, 8, len(out) - 12)
    return reseal(out)


# --- round trips ---------------------------------------------------------------------------


@pytest.mark.parametrize("codec", ALL_CODECS, ids=CODEC_IDS)
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=record_lists())
def test_round_trip(codec: Compression, records: list[Record]) -> None:
    """decode(build(records)) == records for every codec: null and empty keys/values, null
    header values, unicode header keys, gapped offsets, any timestamps."""
    batch = build_batch(records, codec)
    assert decode_batch(batch) == records
    h = validate_batch(batch)
    assert h.records_count == len(records)
    assert h.base_offset == records[0].offset
    assert h.last_offset == records[-1].offset
    assert h.base_timestamp == records[0].timestamp
    assert h.max_timestamp == max(r.timestamp for r in records)
    assert h.compression is codec


def test_decreasing_timestamps_and_edge_values_round_trip() -> None:
    """Timestamps going backwards (negative deltas), empty vs null key/value, empty header
    keys and values, non-ASCII header keys all survive."""
    records = [
        Record(10, TS0, b"", None, (("", b""), ("clé-ключ-鍵-🔑", None))),
        Record(11, TS0 - 86_400_000, None, b"", ()),
        Record(13, TS0 - 1, b"k", b"v", (("dup", b"1"), ("dup", b"2"))),
        Record(2**31 - 1 + 10, 0, None, None, ()),  # the largest offset delta, timestamp 0
    ]
    for codec in ALL_CODECS:
        assert decode_batch(build_batch(records, codec)) == records


@pytest.mark.parametrize("codec", ALL_CODECS, ids=CODEC_IDS)
def test_large_records_round_trip(codec: Compression) -> None:
    """Records larger than one LZ4 block / xerial chunk (and multi-byte length varints)."""
    records = [Record(i, TS0 + i, b"k%d" % i, bytes([i]) * 100_000 + b"tail", (("i", b"%d" % i),)) for i in range(4)]
    assert decode_batch(build_batch(records, codec)) == records


def test_log_append_time_batches_report_max_timestamp() -> None:
    """With LogAppendTime every record's timestamp is the batch's maxTimestamp (Kafka's rule)."""
    batch = build_batch([Record(0, TS0, None, b"a"), Record(1, TS0 + 5, None, b"b")], log_append_time=True)
    struct.pack_into(">q", batch, 35, 1_800_000_000_000)  # the broker stamps its own time
    reseal(batch)
    assert [r.timestamp for r in decode_batch(batch)] == [1_800_000_000_000] * 2


# --- the builder ----------------------------------------------------------------------------


def test_builder_assigns_consecutive_deltas() -> None:
    """Without explicit offsets, record i gets offset base + i."""
    b = RecordBatchBuilder("gzip", base_offset=500)
    for i in range(5):
        b.append(b"v%d" % i, key=b"k", timestamp=TS0 + i)
    assert len(b) == 5
    records = decode_batch(b.build())
    assert [r.offset for r in records] == [500, 501, 502, 503, 504]
    assert [r.value for r in records] == [b"v0", b"v1", b"v2", b"v3", b"v4"]


def test_builder_explicit_deltas_and_limits() -> None:
    """Explicit deltas may skip but must increase and fit an int32."""
    b = RecordBatchBuilder()
    b.append(b"a", timestamp=TS0, offset_delta=0)
    b.append(b"b", timestamp=TS0, offset_delta=7)
    for bad in (7, 3, 2**31):
        with pytest.raises(ValueError):
            b.append(b"c", timestamp=TS0, offset_delta=bad)
    b.append(b"c", timestamp=TS0)  # continues after the last delta
    assert [r.offset for r in decode_batch(b.build())] == [0, 7, 8]
    with pytest.raises(ValueError):
        RecordBatchBuilder().append(b"x", offset_delta=-1)


def test_builder_refuses_empty_batch() -> None:
    """A batch needs at least one record (recordsCount >= 1 is validated)."""
    with pytest.raises(ValueError):
        RecordBatchBuilder().build()


def test_builder_size_estimate_is_uncompressed_size() -> None:
    """size_estimate is exactly the size of the uncompressed batch."""
    b = RecordBatchBuilder()
    assert b.size_estimate == RECORDS_OFFSET
    b.append(b"value", key=b"key", headers=[("h", b"v")], timestamp=TS0)
    b.append(None, timestamp=TS0)
    assert b.size_estimate == len(b.build())


def test_builder_timestamp_defaults_to_now() -> None:
    """timestamp=None stamps the current wall-clock time in milliseconds."""
    before = int(time.time() * 1000)
    b = RecordBatchBuilder()
    b.append(b"x")
    after = int(time.time() * 1000)
    (record,) = decode_batch(b.build())
    assert before <= record.timestamp <= after


def test_build_batch_from_key_value_pairs() -> None:
    """(key, value) pairs become records at offsets 0..n-1; a str codec name is accepted."""
    batch = build_batch([(b"k1", b"v1"), (None, b"v2"), (b"k3", None)], "snappy")
    assert RecordBatchHeader(batch).compression is Compression.SNAPPY
    records = decode_batch(batch)
    assert [(r.offset, r.key, r.value) for r in records] == [(0, b"k1", b"v1"), (1, None, b"v2"), (2, b"k3", None)]


def test_build_batch_rejects_decreasing_offsets() -> None:
    """Record offsets must increase (they become offset deltas)."""
    with pytest.raises(ValueError):
        build_batch([Record(5, TS0, None, b"a"), Record(5, TS0, None, b"b")])


def test_iter_records_at_a_position() -> None:
    """iter_records decodes the batch starting at ``pos`` in a longer buffer."""
    a = build_batch([Record(0, TS0, None, b"a")])
    records = [Record(40, TS0, b"k", b"b"), Record(41, TS0, None, b"c")]
    buf = bytes(a) + bytes(build_batch(records, "lz4")) + bytes(a)
    assert list(iter_records(buf, len(a))) == records
    assert decode_batch(memoryview(buf), len(a)) == records


def test_verify_crc_flag() -> None:
    """A bad CRC is refused by default and ignored with verify_crc=False."""
    records = [Record(0, TS0, None, b"a")]
    batch = build_batch(records)
    batch[17] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        decode_batch(batch)
    assert list(iter_records(batch, verify_crc=False)) == records


# --- corrupted records sections (valid CRC) -------------------------------------------------

# One record laid out byte by byte (uncompressed), so tests can patch single fields:
# 61 length=18 | 62 attributes | 63 tsDelta | 64 offsetDelta | 65 keyLen=3 | 66-68 "key"
# 69 valueLen=5 | 70-74 "value" | 75 headerCount=1 | 76 hKeyLen=1 | 77 "h" | 78 hValueLen=1 | 79 "v"
ONE = [Record(0, TS0, b"key", b"value", (("h", b"v"),))]


def one_record_batch() -> bytearray:
    batch = build_batch(ONE)
    assert len(batch) == 80
    assert bytes(batch[61:]) == b"\x24\x00\x00\x00\x06key\x0avalue\x02\x02h\x02v"
    return batch


@pytest.mark.parametrize(
    "pos,byte",
    [
        (61, 0x7E),  # record length 63: runs past the records section
        (61, 0x22),  # record length 17: one short of its fields
        (61, 0x26),  # record length 19: one more than its fields
        (61, 0x02),  # record length 1: below the 6-byte minimum
        (61, 0x01),  # record length -1
        (65, 0x7E),  # key length 63: runs past the end
        (65, 0x08),  # key length 4: fields shift, record length no longer matches
        (69, 0x7E),  # value length 63
        (75, 0x01),  # header count -1
        (75, 0x64),  # header count 50
        (76, 0x01),  # header key length -1: header keys are never null
        (76, 0x7E),  # header key length 63
        (78, 0x7E),  # header value length 63
        (63, 0x80),  # timestamp varint continues into the next field
    ],
)
def test_corrupt_record_field_raises(pos: int, byte: int) -> None:
    """A record whose fields disagree with its length or the section is CorruptRecordError."""
    batch = one_record_batch()
    batch[pos] = byte
    with pytest.raises(CorruptRecordError):
        decode_batch(reseal(batch))


@pytest.mark.parametrize("count", [2, 3, 2**31 - 1])
def test_records_count_above_actual_raises(count: int) -> None:
    """recordsCount larger than the records present: CorruptRecordError, promptly."""
    batch = one_record_batch()
    struct.pack_into(">i", batch, 57, count)
    with pytest.raises(CorruptRecordError):
        decode_batch(reseal(batch))


def test_records_count_below_actual_raises() -> None:
    """Bytes left over after recordsCount records: CorruptRecordError."""
    batch = build_batch([Record(0, TS0, None, b"a"), Record(1, TS0, None, b"b")])
    struct.pack_into(">i", batch, 57, 1)
    with pytest.raises(CorruptRecordError):
        decode_batch(reseal(batch))


@pytest.mark.parametrize(
    "section",
    [b"", b"\x24\x00", b"\xff" * 11, b"\x80" * 10 + b"\x00"],
    ids=["empty", "cut-record", "long-varint", "ten-continuations"],
)
def test_bad_records_section_raises(section: bytes) -> None:
    """Empty, truncated or over-long-varint records sections: CorruptRecordError."""
    batch = set_records_section(one_record_batch(), section)
    with pytest.raises(CorruptRecordError):
        decode_batch(batch)


def test_truncated_records_section_raises() -> None:
    """Dropping the last byte (and fixing batchLength and CRC) is CorruptRecordError."""
    batch = one_record_batch()
    with pytest.raises(CorruptRecordError):
        decode_batch(set_records_section(batch, bytes(batch[61:-1])))


@pytest.mark.parametrize("codec", [c for c in ALL_CODECS if c], ids=CODEC_IDS[1:])
def test_undecompressable_section_raises_corrupt(codec: Compression) -> None:
    """A compressed section that does not decompress is CorruptRecordError, not a bare
    ValueError from the codec."""
    batch = build_batch(ONE, codec)
    with pytest.raises(CorruptRecordError):
        decode_batch(set_records_section(batch, b"\xde\xad\xbe\xef" * 8))
    packed = bytes(batch[61:])
    with pytest.raises(CorruptRecordError):
        decode_batch(set_records_section(batch, packed[: len(packed) // 2]))


@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_unknown_codec_raises_corrupt(codec_id: int) -> None:
    """Attribute codec bits 5-7 name no codec: UNSUPPORTED_COMPRESSION_TYPE (76)."""
    batch = build_batch(ONE)
    batch[22] = (batch[22] & ~0x07) | codec_id
    with pytest.raises(UnsupportedCompressionTypeError) as e:
        decode_batch(reseal(batch))
    assert e.value.error_code == 76


FUZZ_BATCHES = [build_batch([*ONE, Record(3, TS0 - 9, None, b"x" * 30, (("k", None),))], c) for c in ALL_CODECS]


@settings(max_examples=200, deadline=2000)
@given(st.sampled_from(FUZZ_BATCHES), st.data())
def test_fuzz_mutated_records_section(batch: bytearray, data: st.DataObject) -> None:
    """Fuzz: with the CRC recomputed, any 1-3 byte changes in the (possibly compressed)
    records section decode to records or raise CorruptRecordError, nothing else."""
    mutated = bytearray(batch)
    for _ in range(data.draw(st.integers(1, 3))):
        pos = data.draw(st.integers(RECORDS_OFFSET, len(mutated) - 1))
        mutated[pos] = data.draw(st.integers(0, 255))
    try:
        records = decode_batch(reseal(mutated))
    except CorruptRecordError:
        return
    assert all(isinstance(r, Record) for r in records)


@settings(max_examples=200, deadline=2000)
@given(st.binary(max_size=200), st.integers(1, 2**31 - 1), st.integers(0, 7))
def test_fuzz_random_records_section(section: bytes, count: int, codec_id: int) -> None:
    """Fuzz: random bytes as the records section, any count and codec id, never escape as
    another exception type (or hang)."""
    batch = set_records_section(one_record_batch(), section)
    struct.pack_into(">i", batch, 57, count)
    batch[22] = codec_id
    try:
        decode_batch(reseal(batch))
    except (CorruptRecordError, UnsupportedCompressionTypeError):
        pass


# --- compatibility with kafka-python ------------------------------------------------------

_KP_HAS = {
    Compression.NONE: lambda: True,
    Compression.GZIP: kp_codec.has_gzip,
    Compression.SNAPPY: kp_codec.has_snappy,
    Compression.LZ4: kp_codec.has_lz4,
    Compression.ZSTD: kp_codec.has_zstd,
}
_KP_LIB = {Compression.SNAPPY: "python-snappy", Compression.LZ4: "lz4", Compression.ZSTD: "zstandard"}


def require_kafka_python_codec(codec: Compression) -> None:
    if not _KP_HAS[codec]():
        pytest.skip(
            f"kafka-python needs the optional {_KP_LIB[codec]} package for {codec.name.lower()},"
            " which this venv does not have"
        )


def kp_build(
    records: list[Record], codec: Compression, producer: tuple[int, int, int] = (-1, -1, -1), transactional: bool = False
) -> bytes:
    """Build with kafka-python (its offsets are the deltas; it always writes baseOffset 0)."""
    b = KPBuilder(
        magic=2, compression_type=int(codec), is_transactional=transactional,
        producer_id=producer[0], producer_epoch=producer[1], base_sequence=producer[2], batch_size=2**30,
    )
    for r in records:
        assert b.append(r.offset, r.timestamp, r.key, r.value, list(r.headers)) is not None
    return bytes(b.build())


def kp_decode(batch: bytes | bytearray) -> list[Record]:
    reader = KPBatch(bytes(batch))
    assert reader.validate_crc()
    return [Record(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in reader]


# Compressible enough that kafka-python really compresses (it falls back to codec 0 otherwise).
COMPRESSIBLE = [
    Record(i, TS0 + (i * 37) % 11, b"user-%d" % (i % 3), b"payload " * 50, (("trace", b"abc"), ("n", None)))
    for i in range(25)
]


@pytest.mark.parametrize("codec", ALL_CODECS, ids=CODEC_IDS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=record_lists(first_offset=st.just(0)))
def test_kafka_python_batches_decode_with_ours(codec: Compression, records: list[Record]) -> None:
    """Batches kafka-python's producer code builds decode with ours to the same records."""
    require_kafka_python_codec(codec)
    batch = kp_build(records, codec)
    validate_batch(batch)
    assert decode_batch(batch) == records


@pytest.mark.parametrize("codec", ALL_CODECS, ids=CODEC_IDS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=record_lists())
def test_our_batches_decode_with_kafka_python(codec: Compression, records: list[Record]) -> None:
    """kafka-python accepts our CRC and reads back the same records (any base offset)."""
    require_kafka_python_codec(codec)
    batch = build_batch(records, codec)
    assert kp_decode(batch) == records
    assert RecordBatchHeader(batch).crc == pure_python_crc32c(bytes(batch[21:]))


@pytest.mark.parametrize("codec", ALL_CODECS, ids=CODEC_IDS)
def test_kafka_python_compressed_batches_both_ways(codec: Compression) -> None:
    """With compressible data, kafka-python really uses the codec; each side reads the other's
    batch, producer fields and transactional flag included."""
    require_kafka_python_codec(codec)
    producer = (4242, 7, 100)
    theirs = kp_build(COMPRESSIBLE, codec, producer, transactional=True)
    h = validate_batch(theirs)
    assert h.compression is codec
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.is_transactional) == (*producer, True)
    assert decode_batch(theirs) == COMPRESSIBLE

    ours = build_batch(
        COMPRESSIBLE, codec, producer_id=4242, producer_epoch=7, base_sequence=100, is_transactional=True,
    )
    reader = KPBatch(bytes(ours))
    assert reader.validate_crc()
    assert (reader.producer_id, reader.producer_epoch, reader.base_sequence, reader.is_transactional) == (*producer, True)
    assert kp_decode(ours) == COMPRESSIBLE


def test_kafka_python_rejects_our_batch_after_corruption() -> None:
    """Control: kafka-python's CRC check is live, so the checks above do prove something."""
    batch = build_batch(COMPRESSIBLE, "gzip")
    batch[-1] ^= 1
    assert not KPBatch(bytes(batch)).validate_crc()


@settings(max_examples=60, deadline=None)
@given(
    records=record_lists(first_offset=st.just(0)),
    producer=st.sampled_from([(-1, -1, -1), (0, 0, 0), (2**62, 2**15 - 1, 2**31 - 1)]),
    transactional=st.booleans(),
)
def test_uncompressed_bytes_identical_to_kafka_python(
    records: list[Record], producer: tuple[int, int, int], transactional: bool
) -> None:
    """Same inputs, no compression: our bytes equal kafka-python's except partitionLeaderEpoch,
    where kafka-python writes 0 and we write -1 as Java's producer and the spec do
    (RecordBatch.NO_PARTITION_LEADER_EPOCH); with epoch 0 requested the bytes are identical."""
    pid, pepoch, pseq = producer
    theirs = kp_build(records, Compression.NONE, producer, transactional)
    kwargs = dict(producer_id=pid, producer_epoch=pepoch, base_sequence=pseq, is_transactional=transactional)
    ours = bytes(build_batch(records, Compression.NONE, **kwargs))  # type: ignore[arg-type]
    assert len(ours) == len(theirs)
    assert struct.unpack_from(">i", theirs, 12)[0] == 0
    assert struct.unpack_from(">i", ours, 12)[0] == -1
    assert ours[:12] == theirs[:12] and ours[16:] == theirs[16:]  # the epoch is not CRC-covered
    assert bytes(build_batch(records, Compression.NONE, partition_leader_epoch=0, **kwargs)) == theirs  # type: ignore[arg-type]


# --- compatibility with aiokafka (all five codecs via cramjam) --------------------------------


def ak_build(records: list[Record], codec: Compression) -> bytes:
    b = AKBuilder(2, int(codec), 0, -1, -1, -1, 2**30)
    for r in records:
        assert b.append(r.offset, r.timestamp, r.key, r.value, list(r.headers)) is not None
    return bytes(b.build())


def ak_decode(batch: bytes | bytearray) -> list[Record]:
    reader = AKBatch(bytes(batch))
    assert reader.validate_crc()
    return [Record(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in reader]


@pytest.mark.parametrize("codec", ALL_CODECS, ids=CODEC_IDS)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=record_lists(first_offset=st.just(0)))
def test_aiokafka_round_trips_both_ways(codec: Compression, records: list[Record]) -> None:
    """aiokafka's batches decode with ours and ours with aiokafka's reader, for every codec."""
    assert decode_batch(ak_build(records, codec)) == records
    ours = build_batch(records, codec)
    assert ak_decode(ours) == records
    set_base_offset(ours, 10**12)
    assert [r.offset for r in ak_decode(ours)] == [r.offset + 10**12 for r in records]


@pytest.mark.parametrize("codec", ALL_CODECS, ids=CODEC_IDS)
def test_aiokafka_compressed_batches_both_ways(codec: Compression) -> None:
    """With compressible data aiokafka really compresses (snappy in xerial framing); both
    directions decode, including a >64 KiB section that spans several LZ4 blocks."""
    big = COMPRESSIBLE + [Record(100 + i, TS0, None, (b"row %d " % i) * 9000, ()) for i in range(3)]
    theirs = ak_build(big, codec)
    assert RecordBatchHeader(theirs).compression is codec
    assert decode_batch(theirs) == big
    assert ak_decode(build_batch(big, codec)) == big


@settings(max_examples=40, deadline=None)
@given(records=record_lists(first_offset=st.just(0)))
def test_uncompressed_bytes_identical_to_aiokafka(records: list[Record]) -> None:
    """aiokafka writes partitionLeaderEpoch -1 like Java: our default bytes are identical."""
    assert bytes(build_batch(records)) == ak_build(records, Compression.NONE)


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_reference_decoder_inside_an_inflated_section(codec: Compression) -> None:
    """The pure-Python decoder (the broker's path without the C extension) over an inflated
    section: its keys, values and header values are bytes, not views, so the section's mapping
    closes when the block ends (a view kept it exported: BufferError, every compressed produce
    refused with INVALID_RECORD)."""
    from client.records.compression import inflated
    from client.records.record import decode_lists as reference_decode_lists

    buf = build_batch([Record(0, 0, b"k", b"v" * 100, (("h", b"x"),)), Record(1, 0, None, b"w")], compression=codec)
    with inflated(codec, memoryview(buf)[RECORDS_OFFSET:], 1 << 20) as section:
        offsets, _, keys, values, headers = reference_decode_lists(section, 2)
    assert offsets == [0, 1] and keys == [b"k", None] and values == [b"v" * 100, b"w"]
    assert headers == [(("h", b"x"),), ()]
    assert all(type(b) is bytes for b in (*keys[:1], *values, headers[0][0][1]))
