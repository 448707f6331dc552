"""``decode_run_columns`` (the C ``decode_columns_run``): a run of plain batches decoded in one
call gives exactly what decoding them one by one with ``decode_batch_columns`` gives, stops
where a run must stop, and consumes nothing from a run holding a bad batch."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from client.consumer_records import ColumnBatch, decode_batch_columns, decode_run_columns
from client.records import CorruptRecordError
from client.records.columnar import decode_columns_run
from client.records.record import RecordBatchBuilder

pytestmark = pytest.mark.skipif(decode_columns_run is None, reason="needs the C extension")

blobs = st.one_of(st.none(), st.binary(max_size=60))
headers = st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=8))), max_size=2)
records = st.lists(st.tuples(blobs, blobs, headers, st.integers(-(1 << 30), 1 << 30)), min_size=1, max_size=12)
# (records, codec, LogAppendTime, control)
batches = st.lists(st.tuples(records, st.sampled_from(["none", "none", "none", "gzip"]),
                             st.sampled_from([False, False, False, True]),
                             st.sampled_from([False] * 6 + [True])), min_size=1, max_size=8)


def _chunk(specs: list, base: int = 100) -> bytes:
    out = b""
    for recs, codec, log_append, control in specs:
        b = RecordBatchBuilder(codec, base_offset=base, log_append_time=log_append, is_control=control,
                               is_transactional=control)
        for i, (k, v, h, dts) in enumerate(recs):
            b.append(v, k, tuple(h), 1_700_000_000_000 + dts, offset_delta=2 * i)
        out += bytes(b.build())
        base += 2 * len(recs)
    return out


def _one_by_one(buf: memoryview, position: int) -> list[tuple]:
    rows, pos = [], 0
    while pos < len(buf):
        size = int.from_bytes(buf[pos + 8:pos + 12], "big") + 12
        cb, _ = decode_batch_columns(buf, pos, "t", 1, position)
        if cb is not None:
            rows += cb.to_records()
        pos += size
    return rows


def _walk(buf: memoryview, position: int, limit: int) -> tuple[list[tuple], list[ColumnBatch]]:
    """Runs where they can start, batch by batch elsewhere, as the fetcher's take_column_run."""
    rows, runs, pos = [], [], 0
    while pos < len(buf):
        got = decode_run_columns(buf, pos, len(buf), "t", 1, position, limit)
        if got is not None:
            cb, end = got
            assert end > pos
            runs.append(cb)
            rows += cb.to_records()
            position, pos = cb.next_offset, end
            continue
        size = int.from_bytes(buf[pos + 8:pos + 12], "big") + 12
        cb, nxt = decode_batch_columns(buf, pos, "t", 1, position)
        if cb is not None:
            rows += cb.to_records()
        position, pos = max(position, nxt), pos + size
    return rows, runs


@settings(max_examples=200, deadline=None)
@given(batches, st.integers(0, 40), st.integers(1, 60))
def test_runs_equal_batch_by_batch(specs, skip, limit):
    buf = memoryview(_chunk(specs))
    want = _one_by_one(buf, 100 + skip)
    got, runs = _walk(buf, 100 + skip, limit)
    assert got == want
    for cb in runs:
        assert 0 < len(cb) <= limit
        assert len({r.timestamp_type for r in cb.to_records()}) == 1
        assert cb.next_offset == cb.offsets[-1] + 1  # each batch's last record has the last delta
        n = len(cb)
        for col in (cb.keys, cb.values):  # Arrow's layout over the whole run
            assert len(col.offsets) == n + 1 and col.offsets[0] == 0 and col.offsets[-1] == len(col.data)
            assert (col.validity is None) == (col.null_count == 0)


def test_a_run_stops_at_compression_control_type_change_and_limit():
    plain = [([(None, b"v", [], 0)] * 3, "none", False, False)]
    buf = memoryview(_chunk(plain * 2 + [([(None, b"z", [], 0)], "gzip", False, False)] + plain))
    cb, end = decode_run_columns(buf, 0, len(buf), "t", 0, 0, 100)
    assert len(cb) == 6 and cb.next_offset == 111 and list(cb.offsets) == [100, 102, 104, 106, 108, 110]
    assert decode_run_columns(buf, end, len(buf), "t", 0, 0, 100) is None  # compressed: batch by batch
    cb, _ = decode_run_columns(buf, 0, len(buf), "t", 0, 0, 5)  # the second batch would pass the limit
    assert len(cb) == 3
    assert decode_run_columns(buf, 0, len(buf), "t", 0, 0, 2) is None
    assert decode_run_columns(buf, 0, len(buf), "t", 0, 101, 100) is None  # the position is inside
    mixed = memoryview(_chunk(plain + [([(None, b"v", [], 5)], "none", True, False)]))
    cb, end = decode_run_columns(mixed, 0, len(mixed), "t", 0, 0, 100)
    assert len(cb) == 3 and cb.timestamp_type == 0 and end < len(mixed)
    cb, _ = decode_run_columns(mixed, end, len(mixed), "t", 0, 0, 100)
    assert cb.timestamp_type == 1 and list(cb.timestamps) == [1_700_000_000_005]


@settings(max_examples=150, deadline=None)
@given(st.lists(records, min_size=1, max_size=4), st.data())
def test_a_bad_batch_consumes_nothing(recs, data):
    buf = bytearray(_chunk([(r, "none", False, False) for r in recs]))
    i = data.draw(st.integers(61, len(buf) - 1))
    buf[i] ^= data.draw(st.integers(1, 255))
    try:
        got = decode_run_columns(memoryview(buf), 0, len(buf), "t", 1, 0, 1000)
    except CorruptRecordError:
        return
    if got is not None:
        # The flip hit a field outside the CRC (base offset, length, epoch): the run ends before
        # a batch that no longer qualifies, or reads it as batch by batch reads it.
        cb, end = got
        assert cb.to_records() == _one_by_one(memoryview(buf)[:end], 0)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400), st.integers(0, 400), st.integers(-5, 1 << 40))
def test_random_bytes_never_crash(raw, end, position):
    try:
        decode_columns_run(raw, 0, min(end, len(raw)), position, 1000, None)
    except CorruptRecordError:
        pass
    with pytest.raises(ValueError):
        decode_columns_run(raw, 0, len(raw) + 1, 0, 10, None)


def test_crc_is_checked_unless_disabled():
    buf = bytearray(_chunk([([(None, b"value", [], 0)], "none", False, False)]))
    buf[-3] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="CRC"):
        decode_run_columns(memoryview(buf), 0, len(buf), "t", 0, 0, 10)
    cb, _ = decode_run_columns(memoryview(buf), 0, len(buf), "t", 0, 0, 10, check_crc=False)
    assert cb.values[0] != b"value"
