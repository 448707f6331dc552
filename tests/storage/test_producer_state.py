"""The idempotent producer's checks in the log, and the producer state snapshots
(broker/storage/producer_state.py, Log.append / Log.load).

Snapshot files are parsed here by a decoder written from Kafka's layout (ProducerStateManager's
schema: int16 version, uint32 CRC-32C of the rest, int32 count, 46-byte entries), not by the
code under test."""

from __future__ import annotations

import os
import struct

import crc32c
import pytest

from broker.storage.errors import InvalidProducerEpochError, InvalidTxnStateError, OutOfOrderSequenceError
from broker.storage.log import Log
from broker.storage.producer_state import INT32_MAX
from client.records import RecordBatchBuilder, decode_batch
from client.records.batch import InvalidRecordError
from tests.storage.conftest import Clock, reload

PID = 4000


def idem_batch(base_seq: int, n: int = 1, *, pid: int = PID, epoch: int = 0, txn: bool = False,
               control: bool = False, ts: int = 1_000) -> bytearray:
    b = RecordBatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=base_seq,
                           is_transactional=txn, is_control=control)
    for i in range(n):
        b.append(b"v%d" % (base_seq + i), key=b"k", timestamp=ts)
    return b.build()


def values(log: Log) -> list[bytes]:
    data = log.read_bytes(log.log_start_offset, 1 << 24)
    out, pos = [], 0
    while pos < len(data):
        size = struct.unpack_from(">i", data, pos + 8)[0] + 12
        out += [r.value for r in decode_batch(data[pos:pos + size])]
        pos += size
    return out


def parse_snapshot(path: str) -> list[tuple[int, int, int, int, int, int, int, int]]:
    """Kafka's producer snapshot layout, checked field by field."""
    with open(path, "rb") as f:
        data = f.read()
    version, crc, count = struct.unpack_from(">hIi", data, 0)
    assert version == 1
    assert crc == crc32c.crc32c(data[6:])
    assert len(data) == 10 + 46 * count
    return [struct.unpack_from(">qhiqiqiq", data, 10 + 46 * i) for i in range(count)]


def snapshots(log: Log) -> list[str]:
    return sorted(n for n in os.listdir(log.dir) if n.endswith(".snapshot"))


# ------------------------------------------------------------------------- the checks


def test_a_retried_batch_is_answered_with_its_first_offsets_and_not_written_again(make_log) -> None:
    log = make_log()
    log.append(idem_batch(0, 3))
    first = log.append(idem_batch(3, 2))
    again = log.append(idem_batch(3, 2))
    assert (again.first_offset, again.last_offset) == (first.first_offset, first.last_offset) == (3, 4)
    assert again.num_records == 0
    assert log.log_end_offset == 5 and values(log) == [b"v0", b"v1", b"v2", b"v3", b"v4"]


def test_the_last_five_batches_are_recognised_and_an_older_retry_is_out_of_order(make_log) -> None:
    log = make_log()
    infos = [log.append(idem_batch(seq, 2)) for seq in range(0, 12, 2)]  # six batches
    for seq, info in list(zip(range(0, 12, 2), infos))[1:]:
        again = log.append(idem_batch(seq, 2))
        assert again.first_offset == info.first_offset
    with pytest.raises(OutOfOrderSequenceError):
        log.append(idem_batch(0, 2))  # the oldest, no longer retained
    assert log.log_end_offset == 12


def test_a_gap_is_out_of_order_and_writes_nothing(make_log) -> None:
    log = make_log()
    log.append(idem_batch(0, 2))
    with pytest.raises(OutOfOrderSequenceError) as e:
        log.append(idem_batch(3))
    assert e.value.error_code == 45
    assert log.log_end_offset == 2
    assert log.append(idem_batch(2)).first_offset == 2


def test_a_batch_with_an_overlapping_but_different_range_is_out_of_order(make_log) -> None:
    log = make_log()
    log.append(idem_batch(0, 4))
    with pytest.raises(OutOfOrderSequenceError):
        log.append(idem_batch(2, 2))


def test_an_older_epoch_is_fenced_and_a_new_epoch_starts_at_zero(make_log) -> None:
    log = make_log()
    log.append(idem_batch(0, 2, epoch=1))
    with pytest.raises(InvalidProducerEpochError) as e:
        log.append(idem_batch(2, epoch=0))
    assert e.value.error_code == 47
    with pytest.raises(OutOfOrderSequenceError):
        log.append(idem_batch(5, epoch=2))
    assert log.append(idem_batch(0, epoch=2)).first_offset == 2
    # the retained batches of epoch 1 are gone with the new epoch: its retry is fenced
    with pytest.raises(InvalidProducerEpochError):
        log.append(idem_batch(0, 2, epoch=1))


def test_an_unknown_producer_may_start_at_any_sequence(make_log) -> None:
    log = make_log()
    assert log.append(idem_batch(777, 3, pid=1)).first_offset == 0
    assert log.append(idem_batch(780, pid=1)).first_offset == 3
    assert log.append(idem_batch(5, pid=2, epoch=9)).first_offset == 4


def test_sequences_wrap_from_int32_max_to_zero(make_log) -> None:
    log = make_log()
    log.append(idem_batch(INT32_MAX - 1, 2))  # ends at 2^31-1
    log.append(idem_batch(0, 2))
    wrapping = log.append(idem_batch(2, 1))
    assert wrapping.first_offset == 4
    across = make_log(name="t-1")
    across.append(idem_batch(INT32_MAX - 1, 3))  # INT32_MAX-1, INT32_MAX, 0
    assert across.append(idem_batch(1)).first_offset == 3
    assert across.append(idem_batch(INT32_MAX - 1, 3)).first_offset == 0  # its retry


def test_a_plain_batch_from_a_producer_with_an_open_transaction_is_refused(make_log) -> None:
    log = make_log()
    log.append(idem_batch(0, txn=True))
    with pytest.raises(InvalidTxnStateError) as e:
        log.append(idem_batch(1))
    assert e.value.error_code == 48


def test_clients_may_not_write_control_batches_or_idempotent_batches_without_sequence(make_log) -> None:
    log = make_log()
    with pytest.raises(InvalidRecordError):
        log.append(idem_batch(-1))
    with pytest.raises(InvalidRecordError):
        log.append(idem_batch(0, control=True))
    assert log.log_end_offset == 0


def test_batches_without_producer_id_are_not_tracked(make_log) -> None:
    log = make_log()
    log.append(_plain())
    log.append(_plain())
    assert log.producer_state.producers == {} and log.log_end_offset == 2


def _plain() -> bytearray:
    b = RecordBatchBuilder()
    b.append(b"x", timestamp=1)
    return b.build()


# ------------------------------------------------------------------------- snapshots


def test_snapshots_are_written_at_roll_and_close_in_kafkas_layout(make_log) -> None:
    log = make_log()
    log.append(idem_batch(0, 3, ts=5_000))
    log.append(idem_batch(10, 2, pid=77, epoch=3, ts=6_000))
    log.roll()
    assert snapshots(log) == ["00000000000000000005.snapshot"]
    entries = sorted(parse_snapshot(os.path.join(log.dir, "00000000000000000005.snapshot")))
    #       pid, epoch, lastSeq, lastOffset, offsetDelta, timestamp, coordinatorEpoch, txnFirstOffset
    assert entries == [(77, 3, 11, 4, 1, 6_000, -1, -1), (PID, 0, 2, 2, 2, 5_000, -1, -1)]
    log.append(idem_batch(3, ts=7_000))
    log.close()
    assert snapshots(log) == ["00000000000000000005.snapshot", "00000000000000000006.snapshot"]
    entries = sorted(parse_snapshot(os.path.join(log.dir, "00000000000000000006.snapshot")))
    assert entries == [(77, 3, 11, 4, 1, 6_000, -1, -1), (PID, 0, 3, 5, 0, 7_000, -1, -1)]


def test_after_a_crash_the_last_five_batches_are_rebuilt_from_the_log(make_log) -> None:
    log = make_log()
    infos = [log.append(idem_batch(seq, 2)) for seq in range(0, 20, 2)]
    new = reload(log, clean=False)
    try:
        for seq, info in list(zip(range(0, 20, 2), infos))[-5:]:
            assert new.append(idem_batch(seq, 2)).first_offset == info.first_offset
        with pytest.raises(OutOfOrderSequenceError):
            new.append(idem_batch(21))
        assert new.append(idem_batch(20)).first_offset == 20
    finally:
        new.close()


@pytest.mark.parametrize("clean", [True, False])
def test_after_a_restart_the_snapshot_plus_the_tail_recognise_retries(make_log, clean: bool) -> None:
    """Kafka's snapshot keeps one batch per producer: after a clean restart (state from the
    snapshot at the log end) the last batch is recognised; after a crash the batches after the
    last roll's snapshot are replayed too. Older retries are OUT_OF_ORDER, as on Kafka."""
    log = make_log(segment_bytes=400)  # several segments
    infos = [log.append(idem_batch(seq, 2)) for seq in range(0, 40, 2)]
    active = log.active_segment.base_offset
    assert log.num_segments > 2 and active < 38
    new = reload(log, clean=clean)
    try:
        recognised = [(s, i) for s, i in zip(range(0, 40, 2), infos)
                      if i.first_offset == 38 or (not clean and i.first_offset >= active - 2)]
        for seq, info in recognised:
            assert new.append(idem_batch(seq, 2)).first_offset == info.first_offset
        with pytest.raises(OutOfOrderSequenceError):
            new.append(idem_batch(41))
        assert new.append(idem_batch(40)).first_offset == 40
        assert new.log_end_offset == 41
    finally:
        new.close()


def test_an_unclean_restart_without_snapshots_rebuilds_from_the_whole_log(make_log) -> None:
    log = make_log()
    for seq in range(0, 10, 2):
        log.append(idem_batch(seq, 2))
    for name in snapshots(log):
        os.unlink(os.path.join(log.dir, name))
    new = reload(log, clean=False)
    try:
        assert new.append(idem_batch(8, 2)).first_offset == 8
        with pytest.raises(OutOfOrderSequenceError):
            new.append(idem_batch(11))
    finally:
        new.close()


def test_a_corrupt_snapshot_is_deleted_and_the_state_rebuilt_from_the_log(make_log) -> None:
    log = make_log()
    log.append(idem_batch(0, 2))
    log.roll()
    log.append(idem_batch(2, 2))
    log.close()
    latest = os.path.join(log.dir, "00000000000000000004.snapshot")
    with open(latest, "r+b") as f:
        f.seek(20)
        f.write(b"\xff")
    new = Log.load(log.dir, "t", 0, log.config, had_clean_shutdown=True, now_ms=Clock())
    try:
        assert "00000000000000000004.snapshot" in snapshots(new)  # rewritten, valid
        parse_snapshot(latest)
        assert new.append(idem_batch(2, 2)).first_offset == 2  # rebuilt from snapshot 2 + the log
    finally:
        new.close()


def test_snapshots_go_with_their_segments(make_log) -> None:
    log = make_log(retention_bytes=0, retention_ms=-1)
    for seq in range(3):
        log.append(idem_batch(seq))
        log.roll()
    assert snapshots(log) == [f"{o:020d}.snapshot" for o in (1, 2, 3)]
    log.delete_old_segments()
    assert bases_of(log) == [3]
    assert snapshots(log) == ["00000000000000000003.snapshot"]
    # the producer stays known after its data is gone (as Kafka): a retry of the last batch is
    # still recognised, and the sequence goes on
    assert log.append(idem_batch(2)).first_offset == 2
    assert log.append(idem_batch(3)).first_offset == 3


def bases_of(log: Log) -> list[int]:
    return list(log.segments.keys())


def test_idle_producers_expire(tmp_path) -> None:
    clock = Clock(10_000)
    from broker.storage.config import LogConfig
    log = Log.load(str(tmp_path / "t-0"), "t", 0, LogConfig(), now_ms=clock, producer_id_expiration_ms=1_000)
    try:
        log.append(idem_batch(0, ts=10_000))
        log.append(idem_batch(0, pid=5, ts=10_900))
        assert log.producer_state.remove_expired_producers(11_000) == 1
        assert set(log.producer_state.producers) == {5}
        # forgotten: any sequence is accepted again
        assert log.append(idem_batch(50, ts=11_000)).first_offset == 2
    finally:
        log.close()


def test_truncation_rebuilds_the_state(make_log) -> None:
    log = make_log()
    for seq in range(0, 8, 2):
        log.append(idem_batch(seq, 2))
    log.truncate_to(4)
    assert log.producer_state.producers[PID].last_seq == 3
    assert log.append(idem_batch(4, 2)).first_offset == 4  # not a duplicate any more: written
    assert log.log_end_offset == 6
