"""log_validator.py through Log.append: broker-side recompression (compression.type), the
message.timestamp.* bounds checked on the bytes the log stores, and records refused one by one
(KIP-467: every refused record listed with its index and Kafka's message, nothing written)."""

from __future__ import annotations

import pytest

from broker.storage.errors import RecordTooLargeError
from broker.storage.errors import RecordValidationError as Refused
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
    with pytest.raises(Refused) as e:
        log.append(producer_batch(n=5, ts=NOW - 60_003))   # records 0-2 too old
    assert str(e.value) == "One or more records have been rejected due to invalid timestamp"
    assert e.value.error_code == 32
    assert e.value.record_errors == [
        (i, f"Timestamp {NOW - 60_003 + i} of message with offset {i} is out of range. The timestamp should be within"
            f" [{NOW - 60_000}, {NOW + 1_000}]") for i in range(3)]
    with pytest.raises(Refused) as e:
        log.append(producer_batch("lz4", n=5, ts=NOW + 998))  # records 3 and 4 are 1001 and 1002 ms ahead
    assert [i for i, _ in e.value.record_errors] == [3, 4]
    assert "offset 3 is out of range" in e.value.record_errors[0][1]
    assert log.log_end_offset == 6


def test_deprecated_difference_bounds_both_sides_and_log_append_time_ignores_bounds(make_log) -> None:
    log = make_log(Clock(NOW), message_timestamp_difference_max_ms=10)
    with pytest.raises(Refused):
        log.append(producer_batch(n=1, ts=NOW + 11))
    with pytest.raises(Refused):
        log.append(producer_batch(n=1, ts=NOW - 11))
    log.append(producer_batch(n=1, ts=NOW + 10))
    stamped = make_log(Clock(NOW), name="t-1", message_timestamp_type="LogAppendTime",
                       message_timestamp_difference_max_ms=10)
    stamped.append(producer_batch(n=1, ts=0))


def test_producer_batches_marked_log_append_time(make_log) -> None:
    """Kafka's rule: refused by a LogAppendTime topic; a CreateTime topic takes the batch's
    maxTimestamp as its records' timestamp (and checks it against the bounds)."""
    stamped = make_log(Clock(NOW), message_timestamp_type="LogAppendTime")
    with pytest.raises(Refused) as e:
        stamped.append(producer_batch(n=2, log_append_time=True))
    # every record refused, shown as Kafka's DefaultRecord.toString shows it (its timestamp the
    # batch's maxTimestamp)
    assert (e.value.error_code, str(e.value)) == (32, "One or more records have been rejected due to invalid timestamp")
    assert e.value.record_errors == [
        (i, f"Invalid timestamp type in message DefaultRecord(offset={i}, timestamp={NOW + 1}, key=2 bytes, value="
            f"{len(b'value-%d ' % i * 20)} bytes). Producer should not set timestamp type to LogAppendTime.")
        for i in range(2)]
    with pytest.raises(Refused) as e:  # a compressed batch: Kafka's key/value-skipping iterator shows it
        stamped.append(producer_batch("gzip", n=1, log_append_time=True))
    assert e.value.record_errors[0][1].startswith(f"Invalid timestamp type in message PartialDefaultRecord(offset=0,"
                                                  f" timestamp={NOW}, key=2 bytes, value=160 bytes)")
    log = make_log(Clock(NOW), name="t-1", message_timestamp_before_max_ms=6000)
    assert log.append(producer_batch(n=3, ts=NOW - 5000, log_append_time=True)).last_offset == 2  # max ts NOW - 4998
    with pytest.raises(Refused) as e:
        log.append(producer_batch(n=3, ts=NOW - 10000, log_append_time=True))
    assert [m.split(" is out")[0] for _, m in e.value.record_errors] == [
        f"Timestamp {NOW - 9998} of message with offset {i}" for i in range(3)]


def keyed(keys: list[bytes | None], *, ts: int = NOW, codec: str = "none") -> bytearray:
    b = RecordBatchBuilder(codec)
    for i, key in enumerate(keys):
        b.append(b"v%d" % i, key=key, timestamp=ts)
    return b.build()


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_keyless_records_on_a_compacted_topic_are_each_listed(make_log, codec) -> None:
    """Kafka's KIP-467 answer: every record without a key listed by its index in the batch with
    "Compacted topic cannot accept message without key in topic partition t-0", INVALID_RECORD,
    and a message showing the first three; nothing of the batch is written."""
    log = make_log(cleanup_policy="compact")
    with pytest.raises(Refused) as e:
        log.append(keyed([b"a", None, b"b", None, None, None, b"c"], codec=codec))
    want = "Compacted topic cannot accept message without key in topic partition t-0"
    assert e.value.error_code == 87
    assert e.value.record_errors == [(i, want) for i in (1, 3, 4, 5)]
    assert str(e.value) == (
        "One or more records have been rejected due to 4 record errors in total, and only showing the first three"
        f" errors at most: [RecordError(batchIndex=1, message='{want}'), RecordError(batchIndex=3, message='{want}'),"
        f" RecordError(batchIndex=4, message='{want}')]")
    assert log.log_end_offset == 0
    assert log.append(keyed([b"a", b"b"], codec=codec)).last_offset == 1
    assert make_log(name="t-1").append(keyed([None, None])).last_offset == 1  # not compacted: no key needed


def test_a_timestamp_error_makes_the_batch_invalid_timestamp_with_every_record_error(make_log) -> None:
    """Kafka checks a record's key first, then (if it has one) its timestamp; when any record is
    refused for its timestamp the batch answers INVALID_TIMESTAMP, listing the keyless records
    too."""
    log = make_log(Clock(NOW), cleanup_policy="compact", message_timestamp_after_max_ms=1000)
    b = RecordBatchBuilder()
    b.append(b"0", key=None, timestamp=NOW + 5000)  # keyless and too new: the key's error only
    b.append(b"1", key=b"k", timestamp=NOW)
    b.append(b"2", key=b"k", timestamp=NOW + 5000)
    with pytest.raises(Refused) as e:
        log.append(b.build())
    assert (e.value.error_code, str(e.value)) == (32, "One or more records have been rejected due to invalid timestamp")
    assert [(i, m.split(" in topic")[0].split(" is out")[0]) for i, m in e.value.record_errors] == [
        (0, "Compacted topic cannot accept message without key"), (2, f"Timestamp {NOW + 5000} of message with offset 2")]
    assert log.log_end_offset == 0
