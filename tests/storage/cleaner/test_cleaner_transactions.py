"""Log compaction with transactions (broker/storage/cleaner/): the last stable offset bounds
a cleaning, aborted records neither survive nor supersede, markers and ``.txnindex`` entries
are carried into cleaned segments, and the producer state (sequences, epochs, open
transactions) stays right across cleanings and restarts."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError

from broker.storage.checkpoint import read_offset_checkpoint
from broker.storage.cleaner import CLEANER_OFFSET_CHECKPOINT, LogCleaner, OffsetMap
from broker.storage.config import LogConfig
from broker.storage.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from broker.storage.log import Log
from broker.testing import BrokerProcess, create_topic
from broker.tools.dump_log import dump_files

from .helpers import CLEANER_MODE, cleaner_config, end_txn, keyed_batch, read_all, read_committed, txn_batch

pytestmark = pytest.mark.usefixtures("cleaner_mode")


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


def open_log(tmp_path: Path, clock: Clock, **overrides: object) -> Log:
    settings: dict[str, object] = {"cleanup_policy": "compact", "min_cleanable_dirty_ratio": 0.01,
                                   "file_delete_delay_ms": 0, **overrides}
    return Log.load(str(tmp_path / "t-0"), "t", 0, LogConfig(**settings), now_ms=clock)  # type: ignore[arg-type]


def cleaner_for(tmp_path: Path, log: Log, clock: Clock) -> LogCleaner:
    return LogCleaner(cleaner_config(), str(tmp_path), lambda: {("t", 0): log}, now_ms=clock)


def values(recs) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for r in recs]


def dump_text(log: Log, suffix: str, **kwargs: object) -> str:
    out = io.StringIO()
    files = sorted(os.path.join(log.dir, n) for n in os.listdir(log.dir) if n.endswith(suffix))
    assert dump_files(files, out=out, err=io.StringIO(), **kwargs) == 0  # type: ignore[arg-type]
    return out.getvalue()


def test_an_open_transaction_bounds_the_cleaning(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path, clock)
    log.append(keyed_batch([(b"a", b"a0"), (b"b", b"b0")]))          # 0-1
    log.append(keyed_batch([(b"a", b"a1")]))                          # 2
    log.roll()
    log.append(keyed_batch([(b"b", b"b1")]))                          # 3
    log.append(txn_batch([(b"a", b"a-txn")], 5, 0))                  # 4: producer 5 opens a transaction
    log.append(keyed_batch([(b"b", b"b2")]))                          # 5
    log.roll()
    log.append(keyed_batch([(b"a", b"a2"), (b"b", b"b3")]))           # 6-7
    log.roll()
    assert log.last_stable_offset == 4
    cleaner = cleaner_for(tmp_path, log, clock)
    ltc = cleaner.grab_filthiest_log()
    assert ltc is not None and ltc.first_uncleanable_offset == 3  # the segment holding the LSO
    cleaner._in_progress.clear()  # give the grab back
    assert cleaner.clean_once()
    assert read_offset_checkpoint(str(tmp_path / CLEANER_OFFSET_CHECKPOINT)) == {("t", 0): 3}
    # Below 3 only the last of each key; from 3 on, untouched although a and b are superseded.
    assert values(read_all(log)) == [(1, b"b", b"b0"), (2, b"a", b"a1"), (3, b"b", b"b1"), (4, b"a", b"a-txn"),
                                     (5, b"b", b"b2"), (6, b"a", b"a2"), (7, b"b", b"b3")]
    end_txn(log, 5, commit=True)                                       # 8
    log.roll()
    assert log.last_stable_offset == log.log_end_offset
    assert cleaner.clean_once()
    assert values(read_all(log)) == [(6, b"a", b"a2"), (7, b"b", b"b3")]
    assert read_committed(log) == read_all(log)


def test_an_aborted_record_never_supersedes_a_committed_one(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path, clock)
    log.append(txn_batch([(b"k", b"committed"), (b"x", b"x-committed")], 7, 0))  # 0-1
    end_txn(log, 7, commit=True)                                                   # 2
    log.append(keyed_batch([(b"p", b"plain")]))                                    # 3
    log.append(txn_batch([(b"k", b"aborted"), (b"p", None)], 7, 2, codec="lz4"))   # 4-5: the tombstone too
    log.append(txn_batch([(b"x", b"open-then-aborted")], 8, 0))                    # 6
    end_txn(log, 7, commit=False)                                                  # 7
    end_txn(log, 8, commit=False)                                                  # 8
    log.roll()
    expected = [(0, b"k", b"committed"), (1, b"x", b"x-committed"), (3, b"p", b"plain")]
    assert values(read_committed(log)) == expected
    before = log.collect_aborted_transactions(0, log.log_end_offset)
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in before] == [(7, 4, 7), (8, 6, 8)]
    cleaner = cleaner_for(tmp_path, log, clock)
    for _ in range(3):  # any number of cleanings
        cleaner.clean_once()
        assert values(read_all(log)) == expected  # the aborted records are gone, read_uncommitted too
        assert values(read_committed(log)) == expected
        assert log.collect_aborted_transactions(0, log.log_end_offset) == before
        log.append(keyed_batch([(b"filler", b"f")]))  # more dirt for the next round
        expected = [e for e in expected if e[1] != b"filler"] + [(log.log_end_offset - 1, b"filler", b"f")]
        log.roll()
    # Markers stay: COMMIT at 2, ABORTs at 7 and 8.
    text = dump_text(log, ".log", deep_iteration=True)
    assert [line.split("| offset: ")[1].split()[0] for line in text.splitlines() if "endTxnMarker" in line] == \
        ["2", "7", "8"]


def test_aborted_transactions_spanning_segments_and_groups_keep_their_txnindex(tmp_path: Path) -> None:
    """Each segment is its own group (segment.bytes is small and distinct keys keep them
    full): producer 7's aborted data sits in the first segments, its marker two segments
    later; producer 8 aborts inside one segment. Every entry must stay with its marker's
    segment, and read_committed must see the same records before and after, restarts included."""
    clock = Clock()
    log = open_log(tmp_path, clock, segment_bytes=400)
    n = 0

    def plain(count: int) -> None:
        nonlocal n
        for _ in range(count):
            log.append(keyed_batch([(b"key-%d" % n, b"value-%d" % n)]))
            n += 1

    seq = {7: 0, 8: 0}

    def txn(pid: int, key: bytes) -> None:
        log.append(txn_batch([(key, b"aborted-" + key)], pid, seq[pid]))
        seq[pid] += 1

    plain(2)
    txn(7, b"key-0")       # supersedes key-0 if it were counted
    plain(3)
    txn(7, b"key-1")
    plain(6)
    txn(8, b"key-2")
    end_txn(log, 8, commit=False)
    plain(4)
    end_txn(log, 7, commit=False)
    plain(8)
    log.roll()
    assert log.num_segments > 4
    entries_before = log.collect_aborted_transactions(0, log.log_end_offset)
    assert [(a.producer_id, a.first_offset) for a in entries_before] == [(8, 13), (7, 2)]
    committed = read_committed(log)
    markers_before = dump_text(log, ".log", deep_iteration=True).count("endTxnMarker: ABORT")
    txnindex_before = dump_text(log, ".txnindex").splitlines()
    cleaner = cleaner_for(tmp_path, log, clock)
    assert cleaner.clean_once()
    assert read_all(log) == committed  # aborted data gone, everything else kept (distinct keys)
    assert read_committed(log) == committed
    assert log.collect_aborted_transactions(0, log.log_end_offset) == entries_before
    assert dump_text(log, ".log", deep_iteration=True).count("endTxnMarker: ABORT") == markers_before
    # The same entries, in the files of the segments holding their markers.
    lines = [line for line in dump_text(log, ".txnindex").splitlines() if line.startswith("version:")]
    assert lines == [line for line in txnindex_before if line.startswith("version:")]
    for a in entries_before:
        holder = log.segments.floor(a.last_offset)[1]  # type: ignore[index]
        assert a in holder.txn_index.entries
    for clean_shutdown in (True, False):
        leo = log.log_end_offset
        log.close()
        log = Log.load(log.dir, "t", 0, log.config, now_ms=clock, had_clean_shutdown=clean_shutdown,
                       recovery_point=leo if clean_shutdown else 0)
        assert read_committed(log) == committed
        assert log.collect_aborted_transactions(0, log.log_end_offset) == entries_before
    log.close()


def test_producer_state_survives_cleaning_with_transactions(tmp_path: Path) -> None:
    """Sequences and epochs of transactional producers after their batches were cleaned:
    producer 9's last batch (aborted) is kept emptied; producer 10 was fenced by a marker of a
    newer epoch (the coordinator's abort), which no data batch carries: only the kept marker
    holds that epoch. Checked live, after restarts, and after a rebuild from the log alone."""
    clock = Clock()
    log = open_log(tmp_path, clock)
    log.append(txn_batch([(b"k", b"v0")], 9, 0))
    end_txn(log, 9, commit=True)
    log.append(txn_batch([(b"k", b"v1")], 9, 1))
    end_txn(log, 9, commit=False)                    # 9's last batch is aborted data
    log.append(txn_batch([(b"j", b"j0")], 10, 0))
    end_txn(log, 10, commit=False, epoch=1)          # fenced: the marker bumps 10's epoch to 1
    log.append(keyed_batch([(b"k", b"v2"), (b"j", b"j1")]))
    log.roll()
    last_of_9 = 2
    cleaner = cleaner_for(tmp_path, log, clock)
    assert cleaner.clean_once()
    assert values(read_all(log)) == [(6, b"k", b"v2"), (7, b"j", b"j1")]
    text = dump_text(log, ".log")
    assert (f"baseOffset: {last_of_9} lastOffset: {last_of_9} count: 0 baseSequence: 1 lastSequence: 1"
            " producerId: 9 producerEpoch: 0 partitionLeaderEpoch: -1 isTransactional: true") in text

    def check(log: Log) -> None:
        dup = log.append(txn_batch([(b"k", b"v1")], 9, 1))
        assert dup.first_offset == last_of_9 and dup.num_records == 0  # a retry, recognised
        with pytest.raises(OutOfOrderSequenceError):
            log.append(txn_batch([(b"k", b"x")], 9, 5))
        with pytest.raises(InvalidProducerEpochError):
            log.append(txn_batch([(b"j", b"zombie")], 10, 1, epoch=0))
        assert log.last_stable_offset == log.log_end_offset

    check(log)
    for how in ("clean", "unclean", "no snapshots"):
        leo = log.log_end_offset
        log.close()
        if how == "no snapshots":
            for name in os.listdir(log.dir):
                if name.endswith(".snapshot"):
                    os.unlink(os.path.join(log.dir, name))
        log = Log.load(log.dir, "t", 0, log.config, now_ms=clock, had_clean_shutdown=how == "clean",
                       recovery_point=leo if how == "clean" else 0)
        check(log)
    log.append(txn_batch([(b"k", b"v3")], 9, 2))
    log.append(txn_batch([(b"j", b"j2")], 10, 0, epoch=1))
    assert log.last_stable_offset == log.log_end_offset - 2
    log.close()


def test_a_full_offset_map_ends_the_cleaning_mid_segment_with_aborted_data_past_it(tmp_path: Path) -> None:
    """With an offset map of a few keys, a cleaning ends inside a segment; the rest of that
    segment is rewritten too (its group), records past the map's end kept as they are, except
    aborted data, which goes wherever it is: its entry (with the marker, in a segment this
    cleaning does not reach) stays valid. Repeated cleanings end where a full map would."""
    clock = Clock()
    log = open_log(tmp_path, clock, segment_bytes=700)
    seq = 0
    expected: dict[bytes, tuple[int, bytes]] = {}
    for i in range(40):
        key = b"key-%d" % (i % 13)
        if i % 5 == 3:
            log.append(txn_batch([(key, b"aborted-%d" % i)], 7, seq))
            seq += 1
            if i % 10 == 8:
                end_txn(log, 7, commit=False)
        else:
            info = log.append(keyed_batch([(key, b"v%d" % i)]))
            expected[key] = (info.first_offset, b"v%d" % i)
    end_txn(log, 7, commit=False)
    log.roll()
    entries = log.collect_aborted_transactions(0, log.log_end_offset)
    assert len(entries) == 4
    cleaner = cleaner_for(tmp_path, log, clock)
    ends = []
    while cleaner.clean_once(offset_map=OffsetMap(600)):
        ends.append(read_offset_checkpoint(str(tmp_path / CLEANER_OFFSET_CHECKPOINT))[("t", 0)])
        committed = read_committed(log)
        assert not [r for r in read_all(log) if r.value is not None and r.value.startswith(b"aborted")
                    and r.offset < ends[-1]]
        assert {r.key: (r.offset, r.value) for r in committed} == expected
        assert log.collect_aborted_transactions(0, log.log_end_offset) == entries
        if ends[-1] == log.active_segment.base_offset:
            break
    assert len(ends) > 2 and ends == sorted(ends)  # several partial cleanings
    assert sorted((r.offset, r.value) for r in read_all(log)) == sorted(expected.values())


# ---------------------------------------------------------------------- a real broker, librdkafka


def _segment_bases(part: Path) -> list[int]:
    return sorted(int(n[:20]) for n in os.listdir(part) if len(n) == 24 and n.endswith(".log") and n[:20].isdigit())


def _consume_all(bootstrap: str, topic: str, isolation: str) -> list[tuple[int, bytes, bytes]]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{isolation}", "enable.auto.commit": False,
                  "isolation.level": isolation, "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        out = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                if m.error().code() == KafkaError._PARTITION_EOF:
                    return out
                raise AssertionError(m.error())
            out.append((m.offset(), m.key(), m.value()))
        raise AssertionError("no end of partition within 30 s")
    finally:
        c.close()


def _wait_for_checkpoint(data: Path, offset: int, what: str) -> int:
    checkpoint = data / CLEANER_OFFSET_CHECKPOINT
    deadline = time.monotonic() + 30
    done = 0
    while time.monotonic() < deadline:
        done = read_offset_checkpoint(str(checkpoint)).get(("ct", 0), 0) if checkpoint.exists() else 0
        if done >= offset:
            return done
        time.sleep(0.05)
    raise AssertionError(f"{what}: cleaner checkpoint {done} did not reach {offset}")


@pytest.mark.slow
def test_read_committed_consumers_of_a_compacted_transactional_topic(tmp_path: Path) -> None:
    """librdkafka's transactional producers write to a compacted topic of small segments
    while the broker's cleaner thread compacts it. Each phase: rounds of the same keys,
    every third round aborted; then an aborted round, followed by committed transactions of
    new keys so that the aborted round leaves the active segment (an aborted value counted by
    the cleaner would supersede the committed ones). Meanwhile a second producer keeps a
    transaction open on key k0 through a cleaning, then aborts it (the cleaner must stop at the
    segment holding it). After each phase, once the cleaner has caught up: a read_committed
    consumer (librdkafka) gets only committed values, each key's last one among them, every
    key once below the cleaned offset; a read_uncommitted consumer gets exactly the same below
    the cleaned offset (aborted records are gone)."""
    from confluent_kafka import Producer

    data = tmp_path / "data"
    part = data / "ct-0"
    keys = [b"k%d" % i for i in range(8)]
    with BrokerProcess(str(data), ["log.cleaner.backoff.ms=50", f"log.cleaner.mode={CLEANER_MODE[0]}"]) as b:
        create_topic(b.bootstrap_servers, "ct", 1, {"cleanup.policy": "compact", "segment.bytes": "1500",
                                                  "min.cleanable.dirty.ratio": "0.01"})
        p = Producer({"bootstrap.servers": b.bootstrap_servers, "transactional.id": "compact-tx", "linger.ms": 0})
        other = Producer({"bootstrap.servers": b.bootstrap_servers, "transactional.id": "compact-open",
                          "linger.ms": 0})
        p.init_transactions(30)
        other.init_transactions(30)
        last_committed: dict[bytes, bytes] = {}
        aborted_values: set[bytes] = set()
        filler = 0
        offsets: list[int] = []

        def delivered(err: object, m: Any) -> None:
            assert err is None
            offsets.append(m.offset())

        def transaction(values: dict[bytes, bytes], commit: bool) -> None:
            p.begin_transaction()
            for k, v in values.items():
                p.produce("ct", v, key=k)
            p.flush(30)
            if commit:
                p.commit_transaction(30)
                last_committed.update(values)
            else:
                p.abort_transaction(30)
                aborted_values.update(values.values())

        def fill(n: int) -> None:
            nonlocal filler
            for _ in range(n):
                transaction({b"f%d" % (filler + i): b"filler" for i in range(8)}, True)
                filler += 8

        for phase in range(3):
            for rnd in range(6):
                transaction({k: b"phase-%d-round-%d-" % (phase, rnd) + k for k in keys}, rnd % 3 != 2)
            transaction({k: b"phase-%d-aborted-" % phase + k for k in keys}, False)
            # The other producer's transaction stays open across a cleaning.
            other.begin_transaction()
            other.produce("ct", b"open-%d" % phase, key=b"k0", on_delivery=delivered)
            other.flush(30)
            fill(4)
            open_at = offsets.pop()
            holder = max(base for base in _segment_bases(part) if base <= open_at)
            _wait_for_checkpoint(data, holder, f"phase {phase}, open transaction at {open_at}")
            other.abort_transaction(30)
            aborted_values.add(b"open-%d" % phase)
            fill(3)
            done = _wait_for_checkpoint(data, _segment_bases(part)[-1], f"phase {phase}")
            committed = _consume_all(b.bootstrap_servers, "ct", "read_committed")
            assert committed and not [v for _, _, v in committed if v in aborted_values]
            latest = {}
            for _, k, v in committed:
                latest[k] = v
            assert latest == last_committed
            cleaned = [(k, v) for o, k, v in committed if o < done]
            assert len({k for k, _ in cleaned}) == len(cleaned)
            uncommitted = _consume_all(b.bootstrap_servers, "ct", "read_uncommitted")
            assert [r for r in uncommitted if r[0] < done] == [r for r in committed if r[0] < done]
