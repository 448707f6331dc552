"""log_validator.py through Log.append: broker-side recompression (compression.type) and the
message.timestamp.* bounds, checked on the bytes the log stores."""

from __future__ import annotations

import pytest

from broker.storage.errors import InvalidTimestampError, RecordTooLargeError
from client.records import RecordBatchBuilder
from client.records.batch import iter_batch_headers
from client.records.record import iter_records

from .conftest import Clock

NOW = 1_700_000_000_000


def producer_batch(codec: str = "none", n: int = 50, *, ts: int = NOW, producer_id: int = -1,
                   base_sequence: int = -1, log_append_time: bool = False) -> bytearray:
    b = RecordBatchBuilder(codec, producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
                           base_sequence=base_sequence, log_append_time=log_append_time)
    for i in range(n):
        b.append(b"value-%d " % i * 20, key=b"k%d" % i, headers=[("h", b"%d" % i)], timestamp=ts + i)
    return b.build()


def stored(log) -> tuple[list[int], list]:
    data = log.read_bytes(log.log_start_offset, 1 << 24)
    headers = list(iter_batch_headers(data))
    records = [r for h in headers for r in iter_records(data[h.pos:h.pos + h.size_in_bytes])]
    return [h.compression_id for h in headers], records


@pytest.mark.parametrize(("topic_codec", "sent", "want_id"), [
    ("zstd", "gzip", 4), ("lz4", "none", 3), ("uncompressed", "snappy", 0), ("gzip", "gzip", 1),
    ("producer", "lz4", 3),
])
def test_compression_type_stores_batches_in_the_topics_codec(make_log, topic_codec, sent, want_id) -> None:
    reference = make_log(name="ref-0")
    reference.append(producer_batch(sent))
    log = make_log(compression_type=topic_codec)
    info = log.append(producer_batch(sent) + producer_batch(sent, 10))
    assert (info.first_offset, info.last_offset) == (0, 59)
    codecs, records = stored(log)
    assert codecs == [want_id, want_id]
    # the records themselves are unchanged: keys, values, headers, timestamps, offsets
    assert records[:50] == stored(reference)[1]
    assert [r.offset for r in records] == list(range(60))


def test_recompression_keeps_the_producer_fields(make_log) -> None:
    log = make_log(compression_type="zstd", compression_zstd_level=19)
    log.append(producer_batch("gzip", producer_id=42, base_sequence=0))
    (h,) = iter_batch_headers(log.read_bytes(0, 1 << 24))
    assert (h.compression_id, h.producer_id, h.producer_epoch, h.base_sequence, h.records_count) == (4, 42, 0, 0, 50)
    assert log.producer_state.producers[42].last_seq == 49


def test_recompressed_batch_larger_than_max_message_bytes_is_refused(make_log) -> None:
    log = make_log(compression_type="uncompressed", max_message_bytes=2000)
    batch = producer_batch("zstd")
    assert len(batch) < 2000
    with pytest.raises(RecordTooLargeError):
        log.append(batch)
    assert log.log_end_offset == 0


def test_timestamps_outside_the_bounds_are_refused(make_log) -> None:
    log = make_log(Clock(NOW), message_timestamp_before_max_ms=60_000, message_timestamp_after_max_ms=1_000)
    log.append(producer_batch(n=5, ts=NOW - 60_000))       # oldest allowed
    log.append(producer_batch(n=1, ts=NOW + 1_000))        # newest allowed
    with pytest.raises(InvalidTimestampError) as e:
        log.append(producer_batch(n=5, ts=NOW - 60_003))   # records 0-2 too old
    assert str(e.value) == (f"Timestamp {NOW - 60_003} of message with offset 0 is out of range. The timestamp"
                            f" should be within [{NOW - 60_000}, {NOW + 1_000}]")
    assert e.value.error_code == 32
    with pytest.raises(InvalidTimestampError, match="offset 3 is out of range"):
        log.append(producer_batch("lz4", n=5, ts=NOW + 998))  # record 3 is 1001 ms ahead
    assert log.log_end_offset == 6


def test_deprecated_difference_bounds_both_sides_and_log_append_time_ignores_bounds(make_log) -> None:
    log = make_log(Clock(NOW), message_timestamp_difference_max_ms=10)
    with pytest.raises(InvalidTimestampError):
        log.append(producer_batch(n=1, ts=NOW + 11))
    with pytest.raises(InvalidTimestampError):
        log.append(producer_batch(n=1, ts=NOW - 11))
    log.append(producer_batch(n=1, ts=NOW + 10))
    stamped = make_log(Clock(NOW), name="t-1", message_timestamp_type="LogAppendTime",
                       message_timestamp_difference_max_ms=10)
    stamped.append(producer_batch(n=1, ts=0))


def test_producer_batches_marked_log_append_time(make_log) -> None:
    """Kafka's rule: refused by a LogAppendTime topic; a CreateTime topic takes the batch's
    maxTimestamp as its records' timestamp (and checks it against the bounds)."""
    stamped = make_log(Clock(NOW), message_timestamp_type="LogAppendTime")
    with pytest.raises(InvalidTimestampError, match="should not set timestamp type to LogAppendTime"):
        stamped.append(producer_batch(n=1, log_append_time=True))
    log = make_log(Clock(NOW), name="t-1", message_timestamp_before_max_ms=6000)
    assert log.append(producer_batch(n=3, ts=NOW - 5000, log_append_time=True)).last_offset == 2  # max ts NOW - 4998
    with pytest.raises(InvalidTimestampError, match=f"Timestamp {NOW - 9998} of message with offset 0"):
        log.append(producer_batch(n=3, ts=NOW - 10000, log_append_time=True))
