"""Tests for ``client/records/columnar.py`` (the fast record decoders, ``BinaryColumn``) and the
batch-level decoding in ``client/consumer_records.py``: both must agree with the reference decoder
``iter_records`` on every input, and refuse bad input with CorruptRecordError only."""

from __future__ import annotations

from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from client.consumer_records import ColumnBatch, ConsumerRecord, decode_batch_columns, decode_batch_rows, whole_batches
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


# --- the C decoder (client/records/_codec.c) against the Python one ------------------------

import os
import shutil
import sys

from client.records import columnar
from client.records.record import decode_lists as decode_lists_py
from client.records.varint import write_varint

try:
    from client.records._codec import decode_lists as decode_lists_c
except ImportError:  # not built: the tests below skip
    decode_lists_c = None

needs_c = pytest.mark.skipif(decode_lists_c is None, reason="C extension client.records._codec is not built "
                             "(no C compiler at install time?); the pure-Python decoder is in use")
INT64 = st.integers(-(1 << 63), (1 << 63) - 1)


def test_c_extension_is_built_when_a_compiler_is_available():
    """CI guard: with a compiler, ``pip install -e .`` must have built the extension (it is
    optional only so that installs without one still succeed)."""
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler: the extension is optional")
    assert decode_lists_c is not None, "client.records._codec failed to build; rerun pip install -e . -v"
    if os.environ.get("MINIBROKER_PURE_PYTHON", "") in ("", "0"):
        assert columnar.C_DECODER and columnar.decode_lists is decode_lists_c
    else:
        assert not columnar.C_DECODER and columnar.decode_lists is decode_lists_py


def test_pure_python_env_var_forces_the_python_decoder():
    import subprocess
    code = ("import client.records.codec as c, client.records.record as r;"
            " print(c.C_CODEC, c.decode_lists is r.decode_lists, c.append_record is c.append_record_py)")
    env = dict(os.environ, MINIBROKER_PURE_PYTHON="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "True"]


def _varint(v: int) -> bytes:
    out = bytearray()
    write_varint(out, v)
    return bytes(out)


def _blob(b) -> bytes:
    return _varint(-1) if b is None else _varint(len(b)) + b


def _section(recs) -> bytes:
    """A records section written field by field (any deltas, any headers)."""
    out = bytearray()
    for k, v, hdrs, tsd, od in recs:
        body = b"\x00" + _varint(tsd) + _varint(od) + _blob(k) + _blob(v) + _varint(len(hdrs))
        for hk, hv in hdrs:
            body += _blob(hk.encode("utf-8", "surrogatepass") if isinstance(hk, str) else hk) + _blob(hv)
        out += _varint(len(body)) + body
    return bytes(out)


def _outcome(decode, *args):
    """The result, or CorruptRecordError (the class) when it raised that; anything else fails."""
    try:
        return decode(*args)
    except CorruptRecordError:
        return CorruptRecordError


def _columns(decode, section, count, bo, bt):
    """decode_columns' result as plain values (or CorruptRecordError)."""
    got = _outcome(decode, section, count, bo, bt)
    if got is CorruptRecordError:
        return got
    o, t, k, v, h = got
    assert type(o) is type(t) is array and o.typecode == t.typecode == "q"
    return (list(o), list(t), [(c.data, c.offsets.tobytes(), c.validity, c.null_count) for c in (k, v)], h)


def _same(section, count, bo=0, bt=0):
    """The C and Python decoders agree: decode_lists, and decode_columns (the C one writes the
    column buffers itself)."""
    want = _outcome(decode_lists_py, section, count, bo, bt)
    got = _outcome(decode_lists_c, section, count, bo, bt)
    assert got == want
    if want is not CorruptRecordError:  # same types too (bytes, not bytearray/memoryview; tuples)
        for g, w in zip(got, want):
            assert type(g) is type(w) is list
            assert [type(x) for x in g] == [type(x) for x in w]
    from client.records.columnar import decode_columns_c, decode_columns_py

    assert _columns(decode_columns_c, section, count, bo, bt) == _columns(decode_columns_py, section, count, bo, bt)
    from client.records._codec import decode_records as decode_records_c
    from client.records.columnar import decode_records_py

    for position, fixed in ((bo, None), (min(bo + 2, (1 << 63) - 1), None), (-(1 << 63), 7)):
        args = (section, count, ConsumerRecord, "t", 3, 0 if fixed is None else 1, bo, bt, position, fixed)
        got_rows, want_rows = _outcome(decode_records_c, *args), _outcome(decode_records_py, *args)
        assert got_rows == want_rows
        if want_rows is not CorruptRecordError:
            assert {type(r) for r in got_rows} <= {ConsumerRecord}
    return want


c_blobs = st.one_of(st.none(), st.binary(max_size=200))
# header keys: text (incl. lone surrogates, written with surrogatepass: invalid UTF-8) or raw bytes
c_hkeys = st.one_of(st.text(max_size=8), st.binary(max_size=8))
c_headers = st.lists(st.tuples(c_hkeys, st.one_of(st.none(), st.binary(max_size=20))), max_size=3)
deltas = st.one_of(st.integers(-200, 20000), INT64)
c_records = st.lists(st.tuples(c_blobs, c_blobs, c_headers, deltas, deltas), max_size=30)


@needs_c
@settings(max_examples=400, deadline=None)
@given(c_records, INT64, INT64)
def test_c_and_python_decoders_agree(recs, bo, bt):
    section = _section(recs)
    ods, tss, keys, vals, hdrs = _same(section, len(recs), bo, bt)
    assert ods == [bo + r[4] for r in recs] and tss == [bt + r[3] for r in recs]  # exact, even past int64
    assert keys == [r[0] for r in recs] and vals == [r[1] for r in recs]
    raw = [[(hk.encode("utf-8", "surrogatepass") if isinstance(hk, str) else hk, hv) for hk, hv in r[2]] for r in recs]
    assert hdrs == [tuple((hk.decode("utf-8", "replace"), hv) for hk, hv in h) for h in raw]


@needs_c
@settings(max_examples=400, deadline=None)
@given(c_records.filter(bool), st.data())
def test_c_and_python_agree_on_damaged_sections(recs, data):
    section = bytearray(_section(recs))
    for _ in range(data.draw(st.integers(1, 3))):
        how = data.draw(st.sampled_from(["flip", "insert", "delete", "varint"]))
        i = data.draw(st.integers(0, len(section)))
        if how == "flip" and i < len(section):
            section[i] = data.draw(st.integers(0, 255))
        elif how == "insert":
            section[i:i] = data.draw(st.binary(min_size=1, max_size=3))
        elif how == "delete":
            del section[i:i + data.draw(st.integers(1, 3))]
        else:  # a varint of any value / a non-canonical encoding (e.g. -1 in two bytes)
            section[i:i] = data.draw(st.one_of(st.builds(_varint, INT64), st.sampled_from(
                [b"\x81\x00", b"\x81\x80\x00", b"\x80\x00", b"\xff" * 10, b"\xff" * 9 + b"\x01", b"\x80" * 11])))
    count = data.draw(st.sampled_from([len(recs), len(recs) - 1, len(recs) + 1, 0]))
    _same(bytes(section), count)


@needs_c
def test_c_and_python_agree_on_every_truncation_and_count():
    recs = [(b"k", b"v" * 30, [("h\u00e9", b"x"), ("n", None)], -5, 0), (None, b"", [], 1 << 40, 1),
            (b"", None, [], 0, -(1 << 62))]
    section = _section(recs)
    assert _same(section, 3) is not CorruptRecordError
    for cut in range(len(section)):
        assert _same(section[:cut], 3) is CorruptRecordError
        _same(section[:cut] + bytes(len(section) - cut), 3)  # zero-padded: whatever it gives, the same
    for count in (-1, 0, 1, 2, 4, 5, 1 << 31, 1 << 63, 1 << 70, -(1 << 70)):
        assert _same(section, count) is CorruptRecordError


@needs_c
def test_c_and_python_agree_on_hostile_lengths():
    huge = [(1 << 31) - 1, (1 << 62), (1 << 63) - 1, -(1 << 63), -2, -1000]
    for n in huge:
        rec = b"\x00\x00\x00" + _varint(n) + b"abc" + b"\x01\x00"      # key length n
        _same(_varint(len(rec)) + rec, 1)
        rec = b"\x00\x00\x00\x01" + _varint(n) + b"abc\x00"            # value length n
        _same(_varint(len(rec)) + rec, 1)
        rec = b"\x00\x00\x00\x01\x01" + _varint(n) + b"\x02h\x00"      # header count n
        _same(_varint(len(rec)) + rec, 1)
        rec = b"\x00\x00\x00\x01\x01\x02" + _varint(n) + b"h\x00"      # header key length n
        _same(_varint(len(rec)) + rec, 1)
        rec = b"\x00\x00\x00\x01\x01\x02\x02h" + _varint(n) + b"xyz"   # header value length n
        _same(_varint(len(rec)) + rec, 1)
        _same(_varint(n) + b"\x00" * 12, 1)                             # record length n
    # invalid UTF-8 in a header key: replaced, as bytes.decode("utf-8", "replace")
    rec = b"\x00\x00\x00\x01\x01\x02" + _blob(b"\xff\xed\xa0\x80a\xc3") + b"\x01"
    hdrs = _same(_varint(len(rec)) + rec, 1)[4]
    assert hdrs == [((b"\xff\xed\xa0\x80a\xc3".decode("utf-8", "replace"), None),)]
    # -1 written in two or three bytes is a null key/value in both
    for m1 in (b"\x81\x00", b"\x81\x80\x00"):
        rec = b"\x00\x00\x00" + m1 + m1 + b"\x00"
        assert _same(_varint(len(rec)) + rec, 1)[2:4] == ([None], [None])
    # a negative record length (odd one-byte varint) is corrupt in both
    assert _same(b"\x0d\x00\x00\x00\x01\x01\x00", 1) is CorruptRecordError


@needs_c
@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=300), st.integers(-2, 60), INT64, INT64)
def test_c_and_python_agree_on_random_bytes(section, count, bo, bt):
    _same(section, count, bo, bt)
    _same(memoryview(section), count) if count < 0 else None


@needs_c
def test_c_decoder_keywords_and_defaults():
    section = _section([(b"k", b"v", [], 3, 2)])
    assert decode_lists_c(section, 1) == decode_lists_py(section, 1)
    assert decode_lists_c(data=section, count=1, base_offset=10, base_timestamp=7) == ([12], [10], [b"k"], [b"v"], [()])



def test_python_decoder_takes_a_memoryview():
    """The broker validates records straight from the request buffer (a memoryview)."""
    from client.records.record import decode_lists as decode_lists_py

    recs = [(b"k", b"v", [("h\u00e9", b"x"), ("n", None)], 0), (None, None, [], 1)]
    section = _batch(recs)[RECORDS_OFFSET:]
    got = decode_lists_py(memoryview(section), 2)
    want = decode_lists_py(section, 2)
    assert got[0] == want[0] and got[4] == want[4] == [(("h\u00e9", b"x"), ("n", None)), ()]
    assert [None if k is None else bytes(k) for k in got[2]] == want[2]
