"""Tests for ``client/records/columnar.py`` (the fast record decoders, ``BinaryColumn``) and the
batch-level decoding in ``client/fetched.py``: both must agree with the reference decoder
``iter_records`` on every input, and refuse bad input with CorruptRecordError only."""

from __future__ import annotations

from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from client.fetched import ColumnBatch, ConsumerRecord, decode_batch_columns, decode_batch_rows, whole_batches
from client.records import RECORDS_OFFSET, CorruptRecordError, Record, build_batch, iter_records
from client.records.columnar import BinaryColumn, decode_columns, decode_lists
from client.records.record import RecordBatchBuilder

blobs = st.one_of(st.none(), st.binary(max_size=300))
headers = st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=20))), max_size=3)
records = st.lists(st.tuples(blobs, blobs, headers, st.integers(-(1 << 40), 1 << 40)), min_size=1, max_size=40)


def _batch(recs, codec="none", base_offset=0, gaps=False, **kw) -> bytes:
    b = RecordBatchBuilder(codec, base_offset=base_offset, **kw)
    ts0 = 1_700_000_000_000
    for i, (k, v, h, dts) in enumerate(recs):
        b.append(v, k, tuple(h), ts0 + dts, offset_delta=3 * i if gaps else None)
    return bytes(b.build())


@settings(max_examples=150, deadline=None)
@given(records, st.sampled_from(["none", "gzip", "lz4"]), st.booleans())
def test_rows_and_columns_equal_iter_records(recs, codec, gaps):
    batch = _batch(recs, codec, base_offset=1000, gaps=gaps)
    want = [ConsumerRecord("t", 3, r.offset, r.timestamp, 0, r.key, r.value, r.headers) for r in iter_records(batch)]
    rows, nxt = decode_batch_rows(memoryview(batch), 0, "t", 3, 0)
    assert rows == want
    assert nxt == want[-1].offset + 1
    cb, nxt2 = decode_batch_columns(memoryview(batch), 0, "t", 3, 0)
    assert nxt2 == nxt and cb is not None
    assert cb.to_records() == want
    assert list(cb.offsets) == [r.offset for r in want]
    assert list(cb.timestamps) == [r.timestamp for r in want]
    # Arrow binary layout: offsets n+1, data = the non-null values concatenated, validity bits.
    for col, field in ((cb.values, 6), (cb.keys, 5)):
        vals = [r[field] for r in want]
        assert len(col.offsets) == len(vals) + 1 and col.offsets[0] == 0
        assert col.data == b"".join(v for v in vals if v is not None)
        assert col.null_count == sum(v is None for v in vals)
        assert (col.validity is None) == (col.null_count == 0)
        assert [col.is_null(i) for i in range(len(vals))] == [v is None for v in vals]
        assert col.to_pylist() == vals == list(col)


@settings(max_examples=60, deadline=None)
@given(records, st.integers(0, 45))
def test_position_inside_a_batch_drops_earlier_records(recs, skip):
    batch = _batch(recs, base_offset=500)
    rows, _ = decode_batch_rows(memoryview(batch), 0, "t", 0, 500 + skip)
    assert [r.offset for r in rows] == list(range(500 + min(skip, len(recs)), 500 + len(recs)))
    cb, _ = decode_batch_columns(memoryview(batch), 0, "t", 0, 500 + skip)
    assert cb.to_records() == rows
    assert cb.next_offset == 500 + len(recs)


def test_decoders_on_a_plain_section():
    recs = [(None, b"x" * 100, [], i) for i in range(700)] + [(b"k" * 200, b"y" * 9000, [("h", None)], 5)]
    batch = _batch(recs)
    section = batch[RECORDS_OFFSET:]
    ods, tss, keys, vals, hdrs = decode_lists(section, len(recs))
    assert ods == list(range(len(recs)))
    assert tss == [i for i in range(700)] + [5]
    assert keys[:700] == [None] * 700 and keys[700] == b"k" * 200
    assert vals[0] == b"x" * 100 and vals[700] == b"y" * 9000
    assert hdrs[0] == () and hdrs[700] == (("h", None),)
    _, _, kcol, vcol, _ = decode_columns(section, len(recs))
    assert kcol.to_pylist() == keys and vcol.to_pylist() == vals


@settings(max_examples=300, deadline=None)
@given(records, st.data())
def test_corrupt_sections_raise_corrupt_record_error_only(recs, data):
    section = bytearray(_batch(recs)[RECORDS_OFFSET:])
    how = data.draw(st.sampled_from(["flip", "truncate", "extend", "count"]))
    count = len(recs)
    if how == "flip":
        i = data.draw(st.integers(0, len(section) - 1))
        section[i] = data.draw(st.integers(0, 255))
    elif how == "truncate":
        del section[data.draw(st.integers(0, len(section) - 1)):]
    elif how == "extend":
        section += data.draw(st.binary(min_size=1, max_size=5))
    else:
        count = data.draw(st.integers(0, 2 * count + 1).filter(lambda c: c != len(recs)))
    for decode in (decode_lists, decode_columns):
        try:
            decode(bytes(section), count)
        except CorruptRecordError:
            pass


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200), st.integers(0, 50))
def test_random_bytes_never_crash(section, count):
    for decode in (decode_lists, decode_columns):
        try:
            decode(section, count)
        except CorruptRecordError:
            pass


def test_log_append_time_uses_max_timestamp():
    batch = _batch([(None, b"a", [], 1), (None, b"b", [], 7)], log_append_time=True)
    rows, _ = decode_batch_rows(memoryview(batch), 0, "t", 0, 0)
    assert {r.timestamp_type for r in rows} == {1}
    assert {r.timestamp for r in rows} == {1_700_000_000_007}
    cb, _ = decode_batch_columns(memoryview(batch), 0, "t", 0, 0)
    assert cb.timestamp_type == 1 and list(cb.timestamps) == [1_700_000_000_007] * 2


def test_control_batches_give_nothing_but_move_the_offset():
    batch = _batch([(b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00", [], 0)], base_offset=40,
                   is_control=True, is_transactional=True)
    assert decode_batch_rows(memoryview(batch), 0, "t", 0, 0) == ([], 41)
    assert decode_batch_columns(memoryview(batch), 0, "t", 0, 0) == (None, 41)


def test_crc_is_checked_unless_disabled():
    batch = bytearray(_batch([(None, b"value", [], 0)]))
    batch[-3] ^= 0xFF  # inside the value: the records still decode
    with pytest.raises(CorruptRecordError, match="CRC"):
        decode_batch_rows(memoryview(batch), 0, "t", 0, 0)
    rows, _ = decode_batch_rows(memoryview(batch), 0, "t", 0, 0, check_crc=False)
    assert rows[0].value != b"value"


def test_whole_batches_stops_before_a_partial_one():
    a = _batch([(None, b"a", [], 0)], base_offset=0)
    b = _batch([(None, b"b", [], 0), (None, b"c", [], 0)], base_offset=1)
    buf = memoryview(a + b + b[:30])
    assert whole_batches(buf) == (len(a) + len(b), 3, 2)
    assert whole_batches(memoryview(a[:-1])) == (0, -1, 0)
    with pytest.raises(CorruptRecordError):
        whole_batches(memoryview(bytes(8) + b"\x00\x00\x00\x01" + bytes(60)))


def test_binary_column_slice_and_from_values():
    vals = [b"a", None, b"", b"dd", None, b"eee"]
    col = BinaryColumn.from_values(vals)
    assert col.to_pylist() == vals and len(col) == 6 and col.null_count == 2
    assert list(col.offsets) == [0, 1, 1, 1, 3, 3, 6]
    assert col.validity == bytes([0b101101])
    s = col.slice(1, 5)
    assert s.to_pylist() == vals[1:5] and s.offsets[0] == 0 and s.null_count == 2
    assert col.slice(2, 4).validity is None
    assert col[-1] == b"eee" and col[1] is None
    assert col == vals
    with pytest.raises(IndexError):
        col[6]


def test_column_batch_slice_and_from_records():
    recs = [(b"k%d" % i, b"v%d" % i, [("h", b"%d" % i)] if i % 2 else [], i) for i in range(10)]
    cb, _ = decode_batch_columns(memoryview(_batch(recs, base_offset=100)), 0, "t", 1, 0)
    part = cb.slice(3, 6)
    assert [r.offset for r in part] == [103, 104, 105] and part.next_offset == 106
    assert cb.slice(7).next_offset == cb.next_offset == 110
    assert ColumnBatch.from_records(cb.to_records()).to_records() == cb.to_records()
    assert cb[4] == cb.to_records()[4] and cb[-1].offset == 109
    assert isinstance(cb.offsets, array) and cb.offsets.typecode == "q"


def test_to_arrow_is_zero_copy_binary_layout():
    pa = pytest.importorskip("pyarrow")
    recs = [(None if i % 3 == 0 else b"k%d" % i, None if i == 4 else b"v" * i, [("h", b"x")] if i == 2 else [], i)
            for i in range(8)]
    cb, _ = decode_batch_columns(memoryview(_batch(recs)), 0, "t", 0, 0)
    rb = cb.to_arrow()
    assert rb.num_rows == 8
    assert rb.column("value").to_pylist() == cb.values.to_pylist()
    assert rb.column("key").to_pylist() == cb.keys.to_pylist()
    assert rb.column("offset").to_pylist() == list(range(8))
    assert rb.column("headers").to_pylist()[2] == [{"key": "h", "value": b"x"}]
    assert pa.Array.from_buffers is not None


def test_build_batch_records_round_trip_with_records_api():
    recs = [Record(5, 1000, b"k", b"v", (("a", b"b"),)), Record(6, 1001, None, None, ())]
    batch = build_batch(recs)
    rows, nxt = decode_batch_rows(memoryview(batch), 0, "t", 0, 0)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in rows] == [tuple(r) for r in recs]
    assert nxt == 7
