"""client/admin.py and admin_cluster.py against a real broker process: partitions, records,
config changes, cluster and log-dir descriptions, leader elections, reassignments, producers
and leader epochs, and the topic configs whose effect a client sees (compression.type,
min.insync.replicas, message.timestamp.*)."""

from __future__ import annotations

import glob
import os
import time
import uuid

import pytest

from client import Admin, Consumer, Producer, TopicPartition
from client.admin import AlterConfigOp, AlterConfigOpType, ConfigSource
from client.errors import (  # type: ignore[attr-defined]
    ElectionNotNeededError,
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidRequestError,
    InvalidTimestampError,
    NoReassignmentInProgressError,
    NotEnoughReplicasError,
    OffsetOutOfRangeError,
    UnknownTopicOrPartitionError,
)
from tests.compat._clients import stored_batches


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def test_create_partitions_and_clients_pick_them_up(module_broker) -> None:
    name = _topic("cp")
    async with Admin(module_broker.bootstrap) as admin, \
            Producer(module_broker.bootstrap, metadata_max_age_ms=200) as producer:
        await admin.create_topic(name, 2)
        assert await producer.partitions_for(name) == [0, 1]
        await admin.create_partitions({name: 4}, validate_only=True)
        assert len((await admin.describe_topics([name]))[name].partitions) == 2
        await admin.create_partitions({name: 4})
        assert [p.partition for p in (await admin.describe_topics([name]))[name].partitions] == [0, 1, 2, 3]
        with pytest.raises(InvalidPartitionsError, match="currently has 4 partition.*3 would not be an increase"):
            await admin.create_partitions({name: 3})
        with pytest.raises(UnknownTopicOrPartitionError):
            await admin.create_partitions({_topic("none"): 3})
        # the running producer refreshes its metadata (metadata_max_age_ms) and sees 4 partitions
        deadline = time.monotonic() + 10
        while await producer.partitions_for(name) != [0, 1, 2, 3]:
            assert time.monotonic() < deadline
            await producer.send(name, b"tick", partition=0)
        md = await producer.send(name, b"new", partition=3)
        assert (md.partition, md.offset) == (3, 0)


async def test_delete_records_moves_the_log_start_and_deletes_segments(module_broker) -> None:
    name = _topic("dr")
    async with Admin(module_broker.bootstrap) as admin:
        await admin.create_topic(name, 2, configs={"segment.bytes": "1000"})
        async with Producer(module_broker.bootstrap, linger_ms=0) as producer:
            for i in range(40):
                await producer.send(name, b"%04d" % i * 20, partition=0)
        seg_dir = os.path.join(module_broker.data_dir, f"{name}-0")
        before = sorted(glob.glob(os.path.join(seg_dir, "*.log")))
        assert len(before) > 5
        got = await admin.delete_records({(name, 0): 25, TopicPartition(name, 1): -1})
        assert got == {TopicPartition(name, 0): 25, TopicPartition(name, 1): 0}
        assert (await admin.topic_offsets(name, -2)) == {0: 25, 1: 0}  # EARLIEST = the log start
        after = sorted(glob.glob(os.path.join(seg_dir, "*.log")))
        assert len(after) < len(before)
        assert all(int(os.path.basename(p)[:20]) <= 25 for p in after[:1])
        # a fetch below the log start: OFFSET_OUT_OF_RANGE
        async with Consumer(module_broker.bootstrap, auto_offset_reset="none") as consumer:
            consumer.assign([(name, 0)])
            consumer.seek((name, 0), 3)
            with pytest.raises(OffsetOutOfRangeError):
                await consumer.getmany(timeout_ms=5000)
            consumer.seek((name, 0), 25)
            records = (await consumer.getmany(timeout_ms=5000))[TopicPartition(name, 0)]
            assert records[0].offset == 25 and records[0].value == b"0025" * 20
        assert (await admin.delete_records({(name, 0): -1})) == {TopicPartition(name, 0): 40}
        with pytest.raises(OffsetOutOfRangeError):
            await admin.delete_records({(name, 0): 41})


async def test_topic_configs_altered_live_and_described(module_broker) -> None:
    name = _topic("ac")
    async with Admin(module_broker.bootstrap) as admin:
        await admin.create_topic(name, configs={"retention.ms": "3600000", "max.message.bytes": "5000"})
        await admin.incremental_alter_configs("topic", name, [
            AlterConfigOp("segment.bytes", "1048576"),
            AlterConfigOp("max.message.bytes", op=AlterConfigOpType.DELETE),
            AlterConfigOp("cleanup.policy", "compact", AlterConfigOpType.APPEND)])
        cfg = await admin.describe_configs("topic", name, include_synonyms=True, include_documentation=True)
        assert cfg["segment.bytes"].value == "1048576" and cfg["segment.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG
        assert cfg["retention.ms"].value == "3600000"  # untouched
        assert cfg["max.message.bytes"].value == "1048588" and cfg["max.message.bytes"].is_default
        assert cfg["cleanup.policy"].value == "delete,compact"
        assert [(s.name, s.source) for s in cfg["segment.bytes"].synonyms] == [
            ("segment.bytes", ConfigSource.DYNAMIC_TOPIC_CONFIG), ("log.segment.bytes", ConfigSource.DEFAULT_CONFIG)]
        assert cfg["segment.bytes"].config_type == 3 and cfg["segment.bytes"].documentation
        await admin.incremental_alter_configs("topic", name, [
            AlterConfigOp("cleanup.policy", "compact", AlterConfigOpType.SUBTRACT)])
        assert (await admin.describe_configs("topic", name, ["cleanup.policy"]))["cleanup.policy"].value == "delete"
        with pytest.raises(InvalidConfigError, match="because its type is not LIST"):
            await admin.incremental_alter_configs("topic", name, [AlterConfigOp("retention.ms", "1",
                                                                                AlterConfigOpType.APPEND)])
        with pytest.raises(InvalidConfigError, match="Invalid value -5 for configuration retention.ms: Value must"
                                                     " be at least -1"):
            await admin.incremental_alter_configs("topic", name, {"retention.ms": "-5"})
        # the legacy API replaces the whole set
        await admin.alter_configs("topic", name, {"retention.ms": "1000"}, validate_only=True)
        await admin.alter_configs("topic", name, {"retention.ms": "1000"})
        cfg = await admin.describe_configs("topic", name)
        assert {k for k, e in cfg.items() if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG} == {"retention.ms"}
        with pytest.raises(UnknownTopicOrPartitionError):
            await admin.alter_configs("topic", _topic("none"), {"retention.ms": "1000"})


async def test_dynamic_broker_configs(module_broker) -> None:
    async with Admin(module_broker.bootstrap) as admin:
        name = _topic("dyn")
        await admin.create_topic(name)
        try:
            await admin.incremental_alter_configs("broker", "", {"log.retention.ms": "7200000"})
            await admin.incremental_alter_configs("broker", 0, {"message.max.bytes": "300000"})
            topic = await admin.describe_configs("topic", name, include_synonyms=True)
            assert topic["retention.ms"].value == "7200000"
            assert topic["retention.ms"].source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
            assert topic["max.message.bytes"].source == ConfigSource.DYNAMIC_BROKER_CONFIG
            defaults = await admin.describe_configs("broker", "")
            assert {k: e.value for k, e in defaults.items()} == {"log.retention.ms": "7200000"}
            with pytest.raises(InvalidRequestError, match="Cannot update these configs dynamically"):
                await admin.incremental_alter_configs("broker", 0, {"num.partitions": "3"})
            with pytest.raises(InvalidRequestError, match="Broker id must be an integer, but it is: x"):
                await admin.describe_configs("broker", "x")
        finally:
            await admin.alter_configs("broker", "", {})
            await admin.alter_configs("broker", 0, {})
        assert (await admin.describe_configs("topic", name))["retention.ms"].value == "604800000"


async def test_describe_cluster_and_log_dirs(module_broker) -> None:
    name = _topic("ld")
    async with Admin(module_broker.bootstrap) as admin:
        cluster = await admin.describe_cluster(include_authorized_operations=True)
        assert cluster.controller_id == 0 and [b.node_id for b in cluster.brokers] == [0]
        assert cluster.brokers[0].port == int(module_broker.bootstrap.rsplit(":", 1)[1])
        assert {7, 8, 10, 11} <= cluster.authorized_operations  # ALTER, DESCRIBE, DESCRIBE/ALTER_CONFIGS
        assert (await admin.describe_cluster()).authorized_operations is None
        await admin.create_topic(name, 2)
        async with Producer(module_broker.bootstrap) as producer:
            for _ in range(100):
                producer.send_nowait(name, b"x" * 100, partition=1)
            await producer.flush()
        dirs = await admin.describe_log_dirs([(name, 0), (name, 1), (name, 9)])
        (d,) = dirs[0]
        assert d.path == module_broker.data_dir and d.error_code == 0 and d.total_bytes > d.usable_bytes > 0
        on_disk = sum(os.path.getsize(p) for p in glob.glob(os.path.join(module_broker.data_dir, f"{name}-1", "*.log")))
        assert d.replicas == {TopicPartition(name, 0): (0, 0, False), TopicPartition(name, 1): (on_disk, 0, False)}
        assert on_disk > 10_000


async def test_elections_reassignments_producers_and_leader_epochs(module_broker) -> None:
    name = _topic("el")
    async with Admin(module_broker.bootstrap) as admin:
        await admin.create_topic(name, 2)
        got = await admin.elect_leaders([(name, 0), (name, 5)])
        assert isinstance(got[TopicPartition(name, 0)], ElectionNotNeededError)
        assert isinstance(got[TopicPartition(name, 5)], UnknownTopicOrPartitionError)
        assert await admin.elect_leaders() == {}  # every partition: those needing no election are left out
        assert await admin.list_partition_reassignments() == {}
        await admin.alter_partition_reassignments({(name, 0): [0]})
        with pytest.raises(InvalidReplicaAssignmentError, match="includes broker 1, but no such broker"):
            await admin.alter_partition_reassignments({(name, 0): [0, 1]})
        with pytest.raises(NoReassignmentInProgressError):
            await admin.alter_partition_reassignments({(name, 1): None})
        async with Producer(module_broker.bootstrap, enable_idempotence=True) as producer:
            for _ in range(3):
                await producer.send(name, b"v", partition=1)
        producers = await admin.describe_producers([(name, 0), (name, 1)])
        assert producers[TopicPartition(name, 0)] == []
        (state,) = producers[TopicPartition(name, 1)]
        assert (state.producer_epoch, state.last_sequence, state.current_txn_start_offset) == (0, 2, -1)
        assert state.producer_id >= 0 and state.last_timestamp > 0
        epochs = await admin.offset_for_leader_epoch({(name, 1): 0, (name, 0): 3})
        assert epochs == {TopicPartition(name, 1): (0, 3), TopicPartition(name, 0): (-1, -1)}


async def test_compression_type_min_insync_replicas_and_timestamp_bounds(module_broker) -> None:
    name = _topic("cfgfx")
    async with Admin(module_broker.bootstrap) as admin:
        await admin.create_topic(name, configs={"compression.type": "zstd", "min.insync.replicas": "2",
                                                "message.timestamp.before.max.ms": "3600000"})
        async with Producer(module_broker.bootstrap, compression_type="gzip", acks=1) as producer:
            await producer.send(name, b"compress me " * 50, partition=0)
            with pytest.raises(InvalidTimestampError):
                await producer.send(name, b"old", partition=0, timestamp_ms=int(time.time() * 1000) - 7200_000)
        assert [codec for _, codec, _, _ in stored_batches(module_broker.data_dir, name, 0)] == [4]  # zstd
        async with Producer(module_broker.bootstrap, acks="all", retries=0, enable_idempotence=False) as producer:
            with pytest.raises(NotEnoughReplicasError):
                await producer.send(name, b"needs two replicas", partition=0)
        await admin.incremental_alter_configs("topic", name, {"min.insync.replicas": None})
        async with Producer(module_broker.bootstrap, acks="all") as producer:
            assert (await producer.send(name, b"now fine", partition=0)).offset == 1
