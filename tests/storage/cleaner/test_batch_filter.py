"""What the cleaner does to one batch (broker/storage/cleaner/batch_filter.py)."""

from __future__ import annotations

import pytest

from broker.storage.cleaner.batch_filter import BatchContext, filter_batch
from broker.storage.cleaner.offset_map import OffsetMap
from client.records import RecordBatchHeader, iter_records, set_base_offset, validate_batch

from .helpers import keyed_batch


def ctx(mapping: dict[bytes, int], latest: int, *, now: int = 50_000, producers: dict[int, int] | None = None
        ) -> BatchContext:
    m = OffsetMap(1 << 20)
    for k, o in mapping.items():
        m.put(k, o)
    m.update_latest_offset(latest)
    return BatchContext(m, now, 1_000, producers or {}, 1 << 26)


def stored(records, base: int = 100, **kw) -> memoryview:
    b = keyed_batch(records, **kw)
    set_base_offset(b, base)
    return memoryview(bytes(b))


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_rewritten_batch_keeps_offsets_timestamps_headers_producer_fields_and_codec(codec) -> None:
    batch = stored([(b"a", b"1"), (b"b", b"2"), (b"c", b"3")], codec=codec, ts=7_000,
                   headers=(("h", b"v"),), producer_id=42, producer_epoch=3, base_sequence=10)
    r = filter_batch(batch, ctx({b"a": 105, b"b": 101, b"c": 200}, 300), retain_empty=False)
    assert r.output is not None and (r.records_read, r.records_kept) == (3, 1)
    h = validate_batch(r.output)
    orig = RecordBatchHeader(batch)
    assert (h.base_offset, h.last_offset, h.producer_id, h.producer_epoch, h.base_sequence, h.compression_id) == \
        (100, 102, 42, 3, 10, orig.compression_id)
    (rec,) = iter_records(r.output)
    assert (rec.offset, rec.key, rec.value, rec.timestamp, rec.headers) == (101, b"b", b"2", 7_001, (("h", b"v"),))
    assert h.max_timestamp == 7_001


def test_batch_with_every_record_kept_is_copied_byte_for_byte() -> None:
    batch = stored([(b"a", b"1"), (b"b", b"2")])
    r = filter_batch(batch, ctx({b"a": 100, b"b": 101}, 300), retain_empty=False)
    assert r.output == bytes(batch)


def test_records_above_the_map_and_keys_not_in_it_are_kept() -> None:
    batch = stored([(b"a", b"1"), (b"z", b"2")], base=300)
    r = filter_batch(batch, ctx({b"a": 500}, 300), retain_empty=False)
    assert [x.offset for x in iter_records(r.output)] == [301]  # a@300 superseded; z not in the map


def test_emptied_batch_is_dropped_or_kept_as_an_empty_header() -> None:
    batch = stored([(b"a", b"1"), (b"a", b"2")], producer_id=7, producer_epoch=0, base_sequence=4, ts=9_000)
    c = ctx({b"a": 500}, 600)
    assert filter_batch(batch, c, retain_empty=False).output is None
    out = filter_batch(batch, c, retain_empty=True).output
    assert out is not None and len(out) == 61
    h = validate_batch(out, allow_empty=True)
    assert (h.base_offset, h.last_offset, h.records_count, h.producer_id, h.base_sequence, h.max_timestamp,
            h.compression_id, h.base_timestamp) == (100, 101, 0, 7, 4, 9_001, 0, -1)
    assert list(iter_records(out)) == []
    # the last batch of an active producer is kept empty by itself
    active = ctx({b"a": 500}, 600, producers={7: 101})
    assert filter_batch(batch, active, retain_empty=False).output == out


def test_tombstone_gets_a_delete_horizon_then_goes_after_it() -> None:
    batch = stored([(b"a", None), (b"b", b"x"), (b"b", b"y")], ts=3_000)
    first = filter_batch(batch, ctx({b"a": 100, b"b": 102}, 300, now=50_000), retain_empty=False).output
    assert first is not None
    h = validate_batch(first)
    assert h.has_delete_horizon and h.base_timestamp == 51_000  # now + delete.retention.ms
    recs = list(iter_records(first))
    assert [(r.offset, r.key, r.value, r.timestamp) for r in recs] == [(100, b"a", None, 3_000), (102, b"b", b"y", 3_002)]
    again = filter_batch(memoryview(first), ctx({}, 300, now=50_999), retain_empty=False).output
    assert again == first  # before the horizon: unchanged
    after = filter_batch(memoryview(first), ctx({}, 300, now=51_000), retain_empty=False).output
    assert after is not None
    assert [(r.offset, r.value, r.timestamp) for r in iter_records(after)] == [(102, b"y", 3_002)]


def test_keyless_records_below_the_map_are_dropped_as_invalid() -> None:
    batch = stored([(None, b"1"), (b"k", b"2")])
    r = filter_batch(batch, ctx({b"k": 101}, 300), retain_empty=False)
    assert r.invalid == 1 and [x.offset for x in iter_records(r.output)] == [101]


def test_a_batch_of_an_aborted_transaction_loses_every_record() -> None:
    batch = stored([(b"a", b"1"), (b"b", b"2")], codec="zstd", producer_id=7, producer_epoch=1, base_sequence=4,
                   is_transactional=True)
    # The map would keep both (keys unknown, offsets above latest): aborted overrides that.
    r = filter_batch(batch, ctx({}, 50), retain_empty=False, aborted=True)
    assert (r.output, r.records_read, r.records_kept, r.invalid) == (None, 2, 0, 0)
    kept_empty = filter_batch(batch, ctx({}, 50), retain_empty=True, aborted=True)
    assert kept_empty.output is not None
    h = validate_batch(kept_empty.output, allow_empty=True)
    assert (h.base_offset, h.last_offset, h.records_count, h.producer_id, h.base_sequence, h.is_transactional) == \
        (100, 101, 0, 7, 4, True)
    # The producer's last batch is kept, emptied, whatever the caller says (its sequence).
    last = filter_batch(batch, ctx({}, 50, producers={7: 101}), retain_empty=False, aborted=True)
    assert last.output == kept_empty.output
    # Not aborted: the same batch is kept whole.
    assert filter_batch(batch, ctx({}, 50), retain_empty=False).output == bytes(batch)
