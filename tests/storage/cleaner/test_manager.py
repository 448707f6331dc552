"""Choosing and cleaning logs (broker/storage/cleaner/manager.py, cleaner.py) on real logs:
the dirty ratio, the compaction lags, the active segment, the checkpoint, producer state,
keyless records, compact,delete, and dump-log on cleaned segments."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from broker.storage.checkpoint import read_offset_checkpoint
from broker.storage.cleaner import CLEANER_OFFSET_CHECKPOINT, LogCleaner
from broker.storage.config import LogConfig
from broker.storage.errors import OutOfOrderSequenceError, RecordValidationError
from broker.storage.log import Log
from broker.tools.dump_log import dump_files

from .helpers import cleaner_config, keyed_batch, read_all

pytestmark = pytest.mark.usefixtures("cleaner_mode")


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


def open_log(tmp_path: Path, clock: Clock, name: str = "t", **overrides: object) -> Log:
    settings: dict[str, object] = {"cleanup_policy": "compact", "min_cleanable_dirty_ratio": 0.5, **overrides}
    cfg = LogConfig(**settings)  # type: ignore[arg-type]
    return Log.load(str(tmp_path / f"{name}-0"), name, 0, cfg, now_ms=clock)


def fill(log: Log, segments: int, *, keys: int = 3, per_segment: int = 4, ts: int = 1_000) -> None:
    for s in range(segments):
        for i in range(per_segment):
            log.append(keyed_batch([(b"k%d" % ((s * per_segment + i) % keys), b"v" * 50)], ts=ts))
        log.roll()


def cleaner_for(tmp_path: Path, logs: dict, clock: Clock) -> LogCleaner:
    return LogCleaner(cleaner_config(), str(tmp_path), lambda: logs, now_ms=clock)


def test_active_segment_is_never_cleaned_and_checkpoint_records_the_end(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path, clock)
    fill(log, 3)
    log.append(keyed_batch([(b"k0", b"active-1"), (b"k0", b"active-2")]))
    cleaner = cleaner_for(tmp_path, {("t", 0): log}, clock)
    assert cleaner.clean_once()
    active_base = log.active_segment.base_offset
    recs = read_all(log)
    assert active_base == 12
    assert [(r.offset, r.key) for r in recs] == [(9, b"k0"), (10, b"k1"), (11, b"k2"), (12, b"k0"), (13, b"k0")]
    assert read_offset_checkpoint(str(tmp_path / CLEANER_OFFSET_CHECKPOINT)) == {("t", 0): active_base}
    assert not cleaner.clean_once()  # nothing dirty left


def test_filthiest_log_above_its_ratio_is_chosen(tmp_path: Path) -> None:
    clock = Clock()
    a = open_log(tmp_path, clock, "a")
    b = open_log(tmp_path, clock, "b", min_cleanable_dirty_ratio=0.9)
    fill(a, 2)
    fill(b, 4)
    cleaner = cleaner_for(tmp_path, {("a", 0): a, ("b", 0): b}, clock)
    ltc = cleaner.grab_filthiest_log()
    assert ltc is not None and ltc.cleanable_ratio == 1.0
    other = cleaner.grab_filthiest_log()
    assert other is not None and {ltc.topic_partition, other.topic_partition} == {("a", 0), ("b", 0)}
    assert cleaner.grab_filthiest_log() is None  # both in progress


def test_ratio_below_threshold_is_not_cleaned(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path, clock)
    fill(log, 4, keys=1000)  # distinct keys: the cleaning keeps everything
    cleaner = cleaner_for(tmp_path, {("t", 0): log}, clock)
    assert cleaner.clean_once()
    fill(log, 1, keys=1000)  # a little new dirt: ratio 0.2
    assert cleaner.grab_filthiest_log() is None


def test_min_compaction_lag_keeps_young_segments_dirty(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path, clock, min_compaction_lag_ms=10_000)
    fill(log, 2, ts=clock.ms - 60_000)  # old
    fill(log, 2, ts=clock.ms - 1_000)   # younger than the lag
    cleaner = cleaner_for(tmp_path, {("t", 0): log}, clock)
    ltc = cleaner.grab_filthiest_log()
    assert ltc is not None and ltc.first_uncleanable_offset == 8


def test_max_compaction_lag_forces_a_cleaning_below_the_ratio(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path, clock, max_compaction_lag_ms=5_000)
    fill(log, 4, keys=1000, ts=clock.ms)
    cleaner = cleaner_for(tmp_path, {("t", 0): log}, clock)
    assert cleaner.clean_once()
    fill(log, 1, keys=1000, ts=clock.ms)  # ratio ~0.2: not enough by itself
    assert cleaner.grab_filthiest_log() is None
    clock.ms += 10_000  # now older than max.compaction.lag.ms
    ltc = cleaner.grab_filthiest_log()
    assert ltc is not None and ltc.need_compaction_now


def test_producer_state_survives_cleaning_and_restart(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path, clock)
    seq = 0
    for _segment in range(3):
        for _ in range(3):
            log.append(keyed_batch([(b"same", b"v%d" % seq)], producer_id=9, producer_epoch=0, base_sequence=seq))
            seq += 1
        log.roll()
    last_offset = log.log_end_offset - 1
    log.append(keyed_batch([(b"same", b"newest")]))  # supersedes the producer's last record
    log.roll()
    cleaner = cleaner_for(tmp_path, {("t", 0): log}, clock)
    assert cleaner.clean_once()
    # the producer's last batch is kept, emptied: its offsets and sequence are still on disk
    names = sorted(os.listdir(log.dir))
    out = io.StringIO()
    dump_files([os.path.join(log.dir, n) for n in names if n.endswith(".log")], out=out, err=io.StringIO())
    assert f"baseOffset: {last_offset} lastOffset: {last_offset} count: 0 baseSequence: 8 lastSequence: 8" \
           f" producerId: 9" in out.getvalue()
    for restart in (False, True):
        if restart:
            log.close()
            log = Log.load(log.dir, "t", 0, log.config, now_ms=clock, had_clean_shutdown=False)
        dup = log.append(keyed_batch([(b"same", b"v8")], producer_id=9, producer_epoch=0, base_sequence=8))
        assert dup.first_offset == last_offset and dup.num_records == 0  # a retry: answered, not written
        with pytest.raises(OutOfOrderSequenceError):
            log.append(keyed_batch([(b"same", b"x")], producer_id=9, producer_epoch=0, base_sequence=11))
    log.append(keyed_batch([(b"same", b"v9")], producer_id=9, producer_epoch=0, base_sequence=9))
    log.close()


def test_keyless_records_are_refused_on_a_compacted_topic(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path, clock)
    with pytest.raises(RecordValidationError, match="without key") as e:
        log.append(keyed_batch([(b"k", b"1"), (None, b"2")], codec="lz4"))
    assert (e.value.error_code, e.value.record_errors) == (
        87, [(1, "Compacted topic cannot accept message without key in topic partition t-0")])
    assert log.log_end_offset == 0
    plain = Log.load(str(tmp_path / "p-0"), "p", 0, LogConfig(), now_ms=clock)
    plain.append(keyed_batch([(None, b"fine")]))
    assert plain.log_end_offset == 1


def test_compact_delete_cleans_and_retention_deletes(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path, clock, cleanup_policy="compact,delete", retention_ms=60_000)
    fill(log, 3, ts=clock.ms - 120_000)
    cleaner = cleaner_for(tmp_path, {("t", 0): log}, clock)
    assert cleaner.clean_once()
    assert len(read_all(log)) == 3
    assert log.delete_old_segments() >= 1  # every cleaned segment is older than retention.ms
    assert read_all(log) == []


def test_dump_log_shows_cleaned_segments_with_gaps_and_valid_indexes(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path, clock, index_interval_bytes=0)
    fill(log, 3, keys=3, per_segment=5)
    log.append(keyed_batch([(b"k1", None), (b"k9", b"x")]))  # a tombstone
    log.roll()
    cleaner = cleaner_for(tmp_path, {("t", 0): log}, clock)
    assert cleaner.clean_once()
    first = log.segments.first()[1]
    out, err = io.StringIO(), io.StringIO()
    status = dump_files([first.log.path, first.log.path.replace(".log", ".index"),
                         first.log.path.replace(".log", ".timeindex")], deep_iteration=True, out=out, err=err)
    text = out.getvalue()
    assert status == 0, err.getvalue()
    assert "isvalid: true" in text and "Mismatches" not in err.getvalue()
    assert f"deleteHorizonMs: OptionalLong[{clock.ms + 86_400_000}]" in text  # the tombstone's batch
    offsets = [int(line.split("offset: ")[1].split()[0]) for line in text.splitlines() if line.startswith("| offset:")]
    assert offsets == sorted(offsets) and offsets[-1] - offsets[0] + 1 > len(offsets)  # gaps
