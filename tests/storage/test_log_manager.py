"""LogManager (broker/storage/log_manager.py): topics on disk, startup (clean and unclean),
shutdown, checkpoints, retention and flush over every log; validate_topic_name.

Conformance checks against Kafka's behaviour (numbered across tests/storage, each test's
docstring says what Kafka does) are named ``test_check_NN_*``. A crash is simulated by abandoning a manager (closing its logs' file
descriptors without the flush, trim, checkpoints and marker of ``shutdown``).
"""

from __future__ import annotations

import json
import os
import struct

import pytest

from broker.storage.checkpoint import (
    CLEAN_SHUTDOWN_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from broker.storage.config import LogConfig
from broker.storage.errors import (
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidTopicError,
    KafkaStorageError,
    TopicExistsError,
    UnknownTopicOrPartitionError,
)
from broker.storage.log import Log
from broker.storage.log_manager import TOPIC_CONFIGS_FILE, LogManager, validate_topic_name
from client.records import RecordBatchBuilder, decode_batch

# ------------------------------------------------------------------------------- helpers


class Clock:
    def __init__(self, ms: int = 1_000_000) -> None:
        self.ms = ms

    def __call__(self) -> int:
        return self.ms


def make_batch(n: int = 1, *, ts: int = 1_000, value_size: int = 10, tag: int = 0) -> bytearray:
    b = RecordBatchBuilder()
    for i in range(n):
        b.append(bytes([65 + (tag + i) % 26]) * value_size, key=b"k%d" % i, timestamp=ts)
    return b.build()


def whole_batches(data: bytes) -> list[bytes]:
    out, pos = [], 0
    while len(data) - pos >= 12:
        size = struct.unpack_from(">i", data, pos + 8)[0] + 12
        if pos + size > len(data):
            break
        out.append(bytes(data[pos : pos + size]))
        pos += size
    return out


def records(log: Log) -> list[tuple[int, bytes | None]]:
    """(offset, value) of every record from the log start offset."""
    start = log.log_start_offset
    return [(r.offset, r.value) for b in whole_batches(log.read_bytes(start, 1 << 30))
            for r in decode_batch(b) if r.offset >= start]


def bases(log: Log) -> list[int]:
    return [b for b, _ in log.segments.items()]


def seg_path(log: Log, base: int, ext: str = ".log") -> str:
    return os.path.join(log.dir, f"{base:020d}{ext}")


def snapshot(root) -> dict[str, bytes | None]:
    """Every directory (None) and file (its bytes) under ``root``, by relative path."""
    out: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for d in dirnames:
            out[os.path.join(rel, d)] = None
        for f in filenames:
            with open(os.path.join(dirpath, f), "rb") as fh:
                out[os.path.join(rel, f)] = fh.read()
    return out


def abandon(manager: LogManager) -> None:
    """Simulate a crash: close every fd, write nothing (no flush, trim, checkpoint, marker)."""
    for log in manager.logs.values():
        for seg in log.segments.values():
            seg.close_handlers()


def fill(log: Log, segments: int, batches: int = 3, records_per_batch: int = 1) -> None:
    """``segments`` segments of ``batches`` batches each (explicit rolls)."""
    for s in range(segments):
        for i in range(batches):
            log.append(make_batch(records_per_batch, tag=s * batches + i))
        if s < segments - 1:
            log.roll()


@pytest.fixture
def data_dir(tmp_path):
    return str(tmp_path / "data")


@pytest.fixture
def start(data_dir):
    """``start(config=None, clock=None)``: a started LogManager on ``data_dir``; every log of
    every manager is closed at teardown (a no-op for logs already closed or abandoned)."""
    made: list[LogManager] = []

    def factory(config: LogConfig | None = None, clock: Clock | None = None) -> LogManager:
        m = LogManager(data_dir, config, now_ms=clock or Clock())
        m.startup()
        made.append(m)
        return m

    yield factory
    for m in made:
        for log in m.logs.values():
            log.close()


# ------------------------------------------------------------------------------- topics


def test_create_list_and_delete_topics(start, data_dir) -> None:
    m = start()
    info = m.create_topic("orders", 3)
    assert (info.name, info.partitions, info.overrides) == ("orders", 3, {})
    m.create_topic("a.b_c-D9", 1)
    assert sorted(m.topics()) == ["a.b_c-D9", "orders"]
    assert m.topics()["orders"].partitions == 3
    assert {d for d in os.listdir(data_dir) if os.path.isdir(os.path.join(data_dir, d))} == {
        "orders-0", "orders-1", "orders-2", "a.b_c-D9-0"}
    log = m.log_or_raise("orders", 2)
    assert log.log_end_offset == 0 and os.path.exists(seg_path(log, 0))
    m.delete_topic("orders")
    assert sorted(m.topics()) == ["a.b_c-D9"]
    assert m.get_log("orders", 0) is None
    assert sorted(os.listdir(data_dir)) == sorted(
        ["a.b_c-D9-0", "meta.properties", TOPIC_CONFIGS_FILE])
    with pytest.raises(UnknownTopicOrPartitionError) as e:
        m.delete_topic("orders")
    assert e.value.error_code == 3
    with pytest.raises(UnknownTopicOrPartitionError):
        m.log_or_raise("orders", 0)


def test_partition_counts_and_topic_follow_every_change(start) -> None:
    """partition_counts() is kept between calls: each create, growth and delete must show in
    it and in topic(name) at once (Metadata answers from them)."""
    m = start()
    assert m.partition_counts() == {} and m.topic("orders") is None
    m.create_topic("orders", 2, {"retention.ms": "1000"})
    assert m.partition_counts() == {"orders": 2}
    info = m.topic("orders")
    assert info is not None and (info.partitions, info.overrides, info.config.retention_ms) == (2, {"retention.ms": "1000"}, 1000)
    assert info.topic_id == m.topic_id("orders") and info == m.topics()["orders"]
    m.create_partitions("orders", 5)
    assert m.partition_counts() == {"orders": 5} and m.topic("orders").partitions == 5  # type: ignore[union-attr]
    m.create_topic("other", 1)
    m.delete_topic("orders")
    assert m.partition_counts() == {"other": 1} and m.topic("orders") is None
    m.create_topic("orders", 1)
    assert m.partition_counts() == {"orders": 1, "other": 1}


def test_deleted_topic_stays_deleted_after_restart(start, data_dir) -> None:
    m = start()
    m.create_topic("gone", 1, {"retention.ms": "5000"})
    m.create_topic("kept", 1)
    m.delete_topic("gone")
    m.shutdown()
    m2 = start()
    assert sorted(m2.topics()) == ["kept"]
    with open(os.path.join(data_dir, TOPIC_CONFIGS_FILE)) as f:
        assert "gone" not in json.load(f)["topics"]
    # the name can be reused, without the old overrides
    m2.create_topic("gone", 1)
    assert m2.topic_config("gone").retention_ms == LogConfig().retention_ms


def test_delete_topic_with_a_249_character_name(start, data_dir) -> None:
    """The ``-delete`` directory name is capped at 255 bytes (Kafka does the same)."""
    m = start()
    name = "t" * 249
    m.create_topic(name, 2)
    m.log_or_raise(name, 1).append(make_batch(3))
    m.delete_topic(name)
    assert name not in m.topics()
    assert not [d for d in os.listdir(data_dir) if d.startswith("ttt")]


def test_topic_overrides_are_persisted_and_applied_after_restart(start, data_dir) -> None:
    m = start(LogConfig(segment_bytes=10_000))
    one = len(make_batch(1, value_size=100))
    overrides = {"segment.bytes": str(2 * one), "retention.ms": 5000,
                 "message.timestamp.type": "LogAppendTime"}
    info = m.create_topic("t", 1, overrides)
    assert info.overrides == {"segment.bytes": str(2 * one), "retention.ms": "5000",
                              "message.timestamp.type": "LogAppendTime"}
    assert info.config.segment_bytes == 2 * one and info.config.retention_ms == 5000
    m.create_topic("plain", 1)
    m.shutdown()
    m2 = start(LogConfig(segment_bytes=10_000))
    cfg = m2.topic_config("t")
    assert (cfg.segment_bytes, cfg.retention_ms, cfg.message_timestamp_type) == (
        2 * one, 5000, "LogAppendTime")
    assert m2.topics()["t"].overrides == info.overrides
    assert m2.topic_config("plain").segment_bytes == 10_000  # broker default, no override
    log = m2.log_or_raise("t", 0)
    assert log.config == cfg
    for _ in range(3):
        log.append(make_batch(1, value_size=100))
    assert bases(log) == [0, 2]  # rolled at the overridden segment.bytes
    assert log.offset_for_timestamp(0).timestamp == 1_000_000  # LogAppendTime: the clock


INVALID_NAMES = ["../x", "a/b", "a" * 250, "", ".", "..", "a b", "tópico", "a\x00b", "x:y", "a\\b"]


@pytest.mark.parametrize("name", INVALID_NAMES, ids=lambda n: repr(n)[:20])
def test_invalid_topic_names_raise_and_create_nothing(start, tmp_path, name) -> None:
    m = start()
    m.create_topic("existing", 1)
    before = snapshot(tmp_path)
    with pytest.raises(InvalidTopicError) as e:
        m.create_topic(name, 1)
    assert e.value.error_code == 17
    with pytest.raises(InvalidTopicError):
        m.create_topic(name, 1, validate_only=True)
    with pytest.raises(InvalidTopicError):
        validate_topic_name(name)
    assert snapshot(tmp_path) == before
    assert sorted(m.topics()) == ["existing"]


@pytest.mark.parametrize("name", ["a", "a" * 249, "A.b_c-9", "..a", "-", "_"])
def test_legal_topic_names(name) -> None:
    validate_topic_name(name)  # does not raise


BAD_CONFIGS = [
    {"no.such.config": "1"},
    {"segment.bytes": "1"},
    {"segment.bytes": "abc"},
    {"segment.bytes": str(2**31)},
    {"retention.ms": "-5"},
    {"cleanup.policy": "compact,nope"},
    {"compression.type": "brotli"},
    {"compression.gzip.level": "0"},
    {"compression.zstd.level": "23"},
    {"min.insync.replicas": "0"},
    {"min.cleanable.dirty.ratio": "1.5"},
    {"remote.storage.enable": "true"},
    {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
    {"leader.replication.throttled.replicas": "0:x"},
    {"message.format.version": "banana"},
    {"message.timestamp.type": "Foo"},
    {"preallocate": "maybe"},
    {"segment.index.bytes": "8"},  # smaller than one time-index entry
    {"flush.messages": "0"},
    {"segment.ms": "0"},
    {"retention.bytes": "100", "max.message.bytes": "-1"},  # one bad among good ones
]


@pytest.mark.parametrize("configs", BAD_CONFIGS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_invalid_configs_raise_and_create_nothing(start, tmp_path, configs) -> None:
    m = start()
    m.create_topic("existing", 1, {"retention.ms": "1000"})
    before = snapshot(tmp_path)
    with pytest.raises(InvalidConfigError) as e:
        m.create_topic("t", 2, configs)
    assert e.value.error_code == 40
    assert snapshot(tmp_path) == before
    assert sorted(m.topics()) == ["existing"]
    with pytest.raises(UnknownTopicOrPartitionError):
        m.topic_config("t")


@pytest.mark.parametrize("partitions", [0, -1])
def test_invalid_partition_count_creates_nothing(start, tmp_path, partitions) -> None:
    m = start()
    before = snapshot(tmp_path)
    with pytest.raises(ValueError):
        m.create_topic("t", partitions)
    assert snapshot(tmp_path) == before


def test_validate_only_creates_nothing(start, tmp_path) -> None:
    m = start()
    before = snapshot(tmp_path)
    info = m.create_topic("t", 2, {"segment.bytes": "2000"}, validate_only=True)
    assert info.config.segment_bytes == 2000 and info.partitions == 2
    assert snapshot(tmp_path) == before and m.topics() == {}


def test_existing_topic_raises_topic_exists_and_keeps_its_data(start, tmp_path) -> None:
    m = start()
    m.create_topic("t", 1, {"retention.ms": "1000"})
    m.log_or_raise("t", 0).append(make_batch(4))
    before = snapshot(tmp_path)
    with pytest.raises(TopicExistsError) as e:
        m.create_topic("t", 3, {"retention.ms": "2000"})
    assert e.value.error_code == 36
    assert snapshot(tmp_path) == before
    assert m.topics()["t"].partitions == 1 and m.topic_config("t").retention_ms == 1000
    assert [o for o, _ in records(m.log_or_raise("t", 0))] == [0, 1, 2, 3]


def test_names_differing_only_by_dot_and_underscore_collide(start, data_dir) -> None:
    """Kafka's rule (ReplicationControlManager.validateNewTopicNames): a new name equal to an
    existing topic's once every '.' is made '_' is INVALID_TOPIC_EXCEPTION, "Topic 'a_b'
    collides with existing topic: a.b", validate_only too, nothing created; the same name is
    TOPIC_ALREADY_EXISTS; a topic being created counts; once the topic goes, the name is free."""
    m = start()
    m.create_topic("a.b", 1)
    with pytest.raises(InvalidTopicError) as e:
        m.create_topic("a_b", 1)
    assert (e.value.error_code, str(e.value)) == (17, "Topic 'a_b' collides with existing topic: a.b")
    with pytest.raises(InvalidTopicError, match="collides with existing topic: a.b"):
        m.create_topic("a_b", 1, validate_only=True)
    with pytest.raises(TopicExistsError):
        m.create_topic("a.b", 1)
    m.create_topic("x.y_z", 1)
    for name in ("x_y.z", "x.y.z", "x_y_z"):
        with pytest.raises(InvalidTopicError, match=f"Topic '{name}' collides with existing topic: x.y_z"):
            m.create_topic(name, 1)
    m.create_topic("a-b", 1)  # '-' is not one of the two
    m.create_topic("ab", 1)
    assert sorted(m.topics()) == ["a-b", "a.b", "ab", "x.y_z"]
    reserved = m.reserve_topic("r_s", 1)  # being made (off the loop): it counts
    with pytest.raises(InvalidTopicError, match="collides with existing topic: r_s"):
        m.create_topic("r.s", 1)
    m.release_topic(reserved.name)
    m.create_topic("r.s", 1)
    m.delete_topic("a.b")
    m.create_topic("a_b", 1)
    for log in m.logs.values():
        log.close()
    again = start()  # the rule holds over what the data dir holds
    with pytest.raises(InvalidTopicError, match="collides with existing topic: a_b"):
        again.create_topic("a.b", 1)


def test_appends_to_a_deleted_topics_log_raise_kafka_storage_error(start) -> None:
    m = start()
    m.create_topic("t", 1)
    log = m.log_or_raise("t", 0)
    log.append(make_batch(2))
    m.delete_topic("t")
    with pytest.raises(KafkaStorageError) as e:
        log.append(make_batch(1))
    assert e.value.error_code == 56
    with pytest.raises(KafkaStorageError):
        log.read(0, 100)
    assert not os.path.exists(log.dir)


def test_leftover_delete_directory_is_removed_at_startup(start, data_dir) -> None:
    m = start()
    m.create_topic("t", 1)
    m.shutdown()
    leftover = os.path.join(data_dir, "old-0.0123456789abcdef-delete")
    os.makedirs(leftover)
    with open(os.path.join(leftover, "00000000000000000000.log"), "wb") as f:
        f.write(make_batch(1))
    other = os.path.join(data_dir, "not_a_partition")  # ignored, left alone
    os.makedirs(other)
    m2 = start()
    assert not os.path.exists(leftover)
    assert os.path.isdir(other)
    assert sorted(m2.topics()) == ["t"] and sorted(m2.logs) == [("t", 0)]


# ------------------------------------------------------------------------------- startup / shutdown


def test_check_28_clean_restart_rescans_nothing(start, data_dir) -> None:
    m = start(LogConfig(index_interval_bytes=0))
    m.create_topic("t", 1)
    log = m.log_or_raise("t", 0)
    fill(log, 3)
    m.shutdown()
    marker = os.path.join(data_dir, CLEAN_SHUTDOWN_FILE)
    with open(marker) as f:
        assert f.read() == '{"version":0,"brokerEpoch":-1}'
    # Make a non-active segment's .log unreadable garbage after the clean shutdown: a start
    # that rescans would find it; a clean start never reads an inactive segment.
    seg0 = seg_path(log, 0)
    with open(seg0, "r+b") as f:
        f.write(b"\xab" * os.path.getsize(seg0))
    inactive = [seg_path(log, b, e) for b in (0, 3) for e in (".log", ".index", ".timeindex")]
    before = {p: (os.stat(p).st_mtime_ns, os.path.getsize(p), open(p, "rb").read()) for p in inactive}

    m2 = start(LogConfig(index_interval_bytes=0))
    assert m2.had_clean_shutdown
    assert not os.path.exists(marker)  # deleted at once (KAFKA-10471)
    log2 = m2.log_or_raise("t", 0)
    assert bases(log2) == [0, 3, 6] and log2.log_end_offset == 9
    assert log2.recovery_point == 9
    assert {p: (os.stat(p).st_mtime_ns, os.path.getsize(p), open(p, "rb").read()) for p in inactive} == before
    log2.delete_records_before(3)
    assert [o for o, _ in records(log2)] == list(range(3, 9))
    m2.shutdown()
    assert os.path.exists(marker)

    # Control: the same directory started as unclean from recovery point 0 does find the garbage.
    os.unlink(marker)
    write_offset_checkpoint(os.path.join(data_dir, RECOVERY_POINT_CHECKPOINT), {("t", 0): 0})
    write_offset_checkpoint(os.path.join(data_dir, LOG_START_OFFSET_CHECKPOINT), {("t", 0): 0})
    m3 = start(LogConfig(index_interval_bytes=0))
    assert not m3.had_clean_shutdown
    log3 = m3.log_or_raise("t", 0)
    # ... and records it as damage: the later segments stay (Kafka would truncate to 0 there)
    assert bases(log3) == [0, 3, 6] and log3.log_end_offset == 9
    assert [(d.position, d.first_offset, d.next_offset) for d in log3.segments.get(0).damaged] == [(0, 0, 3)]


def test_check_28_marker_is_written_only_by_a_clean_shutdown(start, data_dir) -> None:
    marker = os.path.join(data_dir, CLEAN_SHUTDOWN_FILE)
    m = start()
    assert not os.path.exists(marker)
    m.create_topic("t", 1)
    m.log_or_raise("t", 0).append(make_batch(2))
    abandon(m)  # crash
    assert not os.path.exists(marker)
    m2 = start()
    assert not m2.had_clean_shutdown
    assert [o for o, _ in records(m2.log_or_raise("t", 0))] == [0, 1]
    m2.shutdown()
    assert os.path.exists(marker)
    m3 = start()
    assert m3.had_clean_shutdown and not os.path.exists(marker)
    abandon(m3)
    m4 = start()
    assert not m4.had_clean_shutdown


def test_check_29_active_segment_indexes_are_back_at_max_size_after_restart(start) -> None:
    cfg = LogConfig(segment_index_bytes=4096, index_interval_bytes=0)
    m = start(cfg)
    m.create_topic("t", 1)
    log = m.log_or_raise("t", 0)
    log.append(make_batch(1))  # the first batch of a segment is never indexed: 0 entries
    m.shutdown()
    assert os.path.getsize(seg_path(log, 0, ".index")) == 0
    assert os.path.getsize(seg_path(log, 0, ".timeindex")) == 12  # the final entry
    m2 = start(cfg)
    log2 = m2.log_or_raise("t", 0)
    assert os.path.getsize(seg_path(log2, 0, ".index")) == 4096
    assert os.path.getsize(seg_path(log2, 0, ".timeindex")) == 4096 - 4096 % 12
    assert not log2.active_segment.offset_index.is_full() and not log2.active_segment.time_index.is_full()
    for _ in range(3):
        log2.append(make_batch(1, ts=2000))
    assert bases(log2) == [0]  # no roll: the indexes have room again
    # (a reopened segment counts bytes since the last entry from 0, as Kafka's does)
    assert log2.active_segment.offset_index.entries == 2


def test_check_32_log_start_checkpoint_above_leo_restarts_the_log_there(start, data_dir) -> None:
    m = start()
    m.create_topic("t", 1)
    log = m.log_or_raise("t", 0)
    fill(log, 2)
    m.shutdown()
    write_offset_checkpoint(os.path.join(data_dir, LOG_START_OFFSET_CHECKPOINT), {("t", 0): 100})
    m2 = start()
    log2 = m2.log_or_raise("t", 0)
    assert bases(log2) == [100]
    assert log2.log_start_offset == log2.log_end_offset == 100
    assert sorted(os.listdir(log2.dir)) == [f"{100:020d}{e}" for e in (".index", ".log", ".snapshot", ".timeindex")] + [
        "partition.metadata"]
    assert log2.append(make_batch(1)).first_offset == 100
    m2.shutdown()
    with open(os.path.join(data_dir, LOG_START_OFFSET_CHECKPOINT)) as f:
        assert f.read() == "0\n1\nt 0 100\n"
    with open(os.path.join(data_dir, RECOVERY_POINT_CHECKPOINT)) as f:
        assert f.read() == "0\n1\nt 0 101\n"


def test_shutdown_checkpoints_recovery_points_and_log_start_offsets(start, data_dir) -> None:
    m = start()
    m.create_topic("b", 2)
    m.create_topic("a", 1)
    m.log_or_raise("b", 1).append(make_batch(5))
    m.log_or_raise("a", 0).append(make_batch(2))
    m.log_or_raise("b", 1).delete_records_before(3)
    m.shutdown()
    with open(os.path.join(data_dir, RECOVERY_POINT_CHECKPOINT)) as f:
        assert f.read() == "0\n3\na 0 2\nb 0 0\nb 1 5\n"
    with open(os.path.join(data_dir, LOG_START_OFFSET_CHECKPOINT)) as f:
        assert f.read() == "0\n3\na 0 0\nb 0 0\nb 1 3\n"
    m2 = start()
    assert m2.log_or_raise("b", 1).log_start_offset == 3
    assert [o for o, _ in records(m2.log_or_raise("b", 1))] == [3, 4]


def test_garbage_checkpoint_is_treated_as_empty(start, data_dir) -> None:
    """Unclean start with unparseable checkpoints: recovery point 0, every segment is
    recovered (a zeroed index of the first segment is rebuilt) and the data is intact."""
    cfg = LogConfig(index_interval_bytes=0)
    m = start(cfg)
    m.create_topic("t", 1)
    log = m.log_or_raise("t", 0)
    fill(log, 3, batches=4)
    log.flush()
    m.checkpoint_logs()  # recovery point 12 on disk
    expected = records(log)
    index0 = seg_path(log, 0, ".index")
    with open(index0, "rb") as f:
        good_index = f.read()
    assert len(good_index) == 3 * 8
    abandon(m)
    with open(index0, "wb") as f:
        f.write(b"\0" * 64)  # would load as 8 entries all pointing at (0, 0)
    for name in (RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT):
        with open(os.path.join(data_dir, name), "wb") as f:
            f.write(b"\x00\xffnot a checkpoint\n3\n")
    m2 = start(cfg)
    log2 = m2.log_or_raise("t", 0)
    assert not m2.had_clean_shutdown
    assert log2.recovery_point == 0 and log2.log_start_offset == 0
    assert records(log2) == expected and log2.log_end_offset == 12
    seg0 = log2.segments.first()[1]
    assert seg0.offset_index.entries == 3
    m2.shutdown()
    with open(index0, "rb") as f:
        assert f.read() == good_index


def test_unclean_start_truncates_a_torn_tail_above_the_checkpointed_recovery_point(start, data_dir) -> None:
    m = start()
    m.create_topic("t", 1)
    log = m.log_or_raise("t", 0)
    log.append(make_batch(3))
    log.flush()
    m.checkpoint_logs()
    log.append(make_batch(2))
    abandon(m)
    path = seg_path(log, 0)
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 7)  # the last batch is torn
    m2 = start()
    log2 = m2.log_or_raise("t", 0)
    assert log2.log_end_offset == 3 and log2.recovery_point == 3
    assert os.path.getsize(path) == len(make_batch(3))
    assert [o for o, _ in records(log2)] == [0, 1, 2]


# ------------------------------------------------------------------------------- periodic work


def test_cleanup_logs_applies_retention_and_removes_deleted_files_after_the_delay(start) -> None:
    clock = Clock(100_000)
    m = start(clock=clock)
    m.create_topic("t", 1, {"retention.ms": "1000", "file.delete.delay.ms": "500"})
    m.create_topic("forever", 1, {"retention.ms": "-1"})
    log = m.log_or_raise("t", 0)
    forever = m.log_or_raise("forever", 0)
    for lg in (log, forever):
        lg.append(make_batch(2, ts=1_000))
        lg.roll()
        lg.append(make_batch(2, ts=99_500))
    assert m.cleanup_logs() == 1
    assert bases(log) == [2] and log.log_start_offset == 2
    assert bases(forever) == [0, 2]
    assert os.path.exists(seg_path(log, 0) + ".deleted")
    clock.ms = 100_499
    m.cleanup_logs()
    assert os.path.exists(seg_path(log, 0) + ".deleted")
    clock.ms = 100_500  # the delay has passed; the 99_500 segment is not older than 1000 ms
    assert m.cleanup_logs() == 0
    assert not os.path.exists(seg_path(log, 0) + ".deleted")
    assert bases(log) == [2]
    clock.ms = 100_501  # now it is: an empty segment is rolled first, then it is deleted
    assert m.cleanup_logs() == 1
    assert bases(log) == [4] and log.log_start_offset == log.log_end_offset == 4
    assert os.path.exists(seg_path(log, 2) + ".deleted")


def test_flush_dirty_logs_flushes_logs_past_flush_ms(start) -> None:
    clock = Clock(10_000)
    m = start(clock=clock)
    m.create_topic("fast", 1, {"flush.ms": "1000"})
    m.create_topic("slow", 1)
    fast, slow = m.log_or_raise("fast", 0), m.log_or_raise("slow", 0)
    fast.append(make_batch(3))
    slow.append(make_batch(3))
    clock.ms = 10_999
    assert m.flush_dirty_logs() == 0 and fast.recovery_point == 0
    clock.ms = 11_000
    assert m.flushes_due() == [(fast, None)]
    assert m.flush_dirty_logs() == 1
    assert fast.recovery_point == 3 and slow.recovery_point == 0
    assert m.flush_dirty_logs() == 0  # nothing unflushed any more


def test_create_topic_is_all_or_nothing_when_files_run_out(tmp_path) -> None:
    """Out of file descriptors half way through a CreateTopics: KafkaStorageError, and no
    partition directory, log or topic config is left behind; the same topic can be created
    once descriptors are available again."""
    import resource

    from broker.storage.errors import KafkaStorageError

    m = LogManager(str(tmp_path), LogConfig())
    m.startup()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    in_use = len(os.listdir("/proc/self/fd"))
    resource.setrlimit(resource.RLIMIT_NOFILE, (in_use + 40, hard))  # ~13 partitions' worth
    try:
        with pytest.raises(KafkaStorageError):
            m.create_topic("big", 100)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert not any(t == "big" for t, _ in m.logs)
    assert not [d for d in os.listdir(tmp_path) if d.startswith("big-")]
    assert "big" not in m.topics()
    m.create_topic("big", 100)
    assert len([d for d in os.listdir(tmp_path) if d.startswith("big-")]) == 100
    m.shutdown()


# ------------------------------------------------------------------------------- admin: partitions, configs


def test_create_partitions_grows_never_shrinks_and_survives_restart(start, data_dir) -> None:
    m = start()
    m.create_topic("grow", 2, {"retention.ms": "1000"})
    m.log_or_raise("grow", 0).append(make_batch(3))
    with pytest.raises(InvalidPartitionsError, match="Topic already has 2 partition"):
        m.create_partitions("grow", 2)
    with pytest.raises(InvalidPartitionsError, match="currently has 2 partition.*1 would not be an increase"):
        m.create_partitions("grow", 1)
    with pytest.raises(UnknownTopicOrPartitionError):
        m.create_partitions("nope", 3)
    assert m.create_partitions("grow", 5, validate_only=True) == 3
    assert m.topics()["grow"].partitions == 2 and not os.path.exists(os.path.join(data_dir, "grow-2"))
    assert m.create_partitions("grow", 5) == 3
    assert m.topics()["grow"].partitions == 5
    assert m.log_or_raise("grow", 4).config.retention_ms == 1000  # the topic's config
    m.log_or_raise("grow", 4).append(make_batch(2))
    m.shutdown()
    m2 = start()
    assert m2.topics()["grow"].partitions == 5
    assert m2.log_or_raise("grow", 0).log_end_offset == 3 and m2.log_or_raise("grow", 4).log_end_offset == 2


def test_create_partitions_interrupted_after_its_commit_point_is_completed_at_start(start, data_dir) -> None:
    m = start()
    m.create_topic("half", 1)
    m.shutdown()
    # the count recorded (the commit point), the directories not yet made: a crash in between
    path = os.path.join(data_dir, TOPIC_CONFIGS_FILE)
    with open(path) as f:
        data = json.load(f)
    data["partitions"]["half"] = 3
    with open(path, "w") as f:
        json.dump(data, f)
    m2 = start()
    assert m2.topics()["half"].partitions == 3
    assert os.path.isdir(os.path.join(data_dir, "half-2"))


def test_alter_topic_config_applies_to_live_logs_and_persists(start) -> None:
    m = start()
    m.create_topic("cfg", 2, {"retention.ms": "1000", "segment.bytes": "100000"})
    log = m.log_or_raise("cfg", 1)
    with pytest.raises(InvalidConfigError, match="segment.bytes"):
        m.alter_topic_config("cfg", {"segment.bytes": "1"})
    assert log.config.segment_bytes == 100000
    m.alter_topic_config("cfg", {"retention.ms": "5000"}, validate_only=True)
    assert log.config.retention_ms == 1000
    m.alter_topic_config("cfg", {"retention.ms": "5000"})  # segment.bytes back to its default
    assert (log.config.retention_ms, log.config.segment_bytes) == (5000, LogConfig().segment_bytes)
    with pytest.raises(UnknownTopicOrPartitionError):
        m.alter_topic_config("nope", {})
    m.shutdown()
    m2 = start()
    assert m2.topics()["cfg"].overrides == {"retention.ms": "5000"}
    assert m2.log_or_raise("cfg", 0).config.retention_ms == 5000


def test_new_defaults_reach_every_topic_without_its_own_override(start) -> None:
    m = start()
    m.create_topic("plain", 1)
    m.create_topic("own", 1, {"retention.ms": "1000"})
    m.set_default_config(LogConfig(retention_ms=77, segment_bytes=5000))
    assert (m.log_or_raise("plain", 0).config.retention_ms, m.log_or_raise("plain", 0).config.segment_bytes) \
        == (77, 5000)
    assert (m.log_or_raise("own", 0).config.retention_ms, m.log_or_raise("own", 0).config.segment_bytes) \
        == (1000, 5000)
    m.create_topic("later", 1)
    assert m.log_or_raise("later", 0).config.retention_ms == 77


def test_checkpoint_log_start_offsets_alone(start, data_dir) -> None:
    m = start()
    m.create_topic("ls", 1)
    log = m.log_or_raise("ls", 0)
    log.append(make_batch(10))
    log.delete_records_before(4)
    m.checkpoint_log_start_offsets()
    assert read_offset_checkpoint(os.path.join(data_dir, LOG_START_OFFSET_CHECKPOINT)) == {("ls", 0): 4}
