"""client/admin.py against a real broker: create/delete/list/describe topics with configs,
list offsets (earliest, latest, by timestamp, max timestamp), describe configs, and the
broker's errors raised as the KafkaError subclass of their code."""

from __future__ import annotations

import uuid

import pytest

from client import Admin, NewTopic, OffsetAndTimestamp, OffsetSpec, Producer, TopicPartition
from client.admin import ConfigSource
from client.errors import (  # type: ignore[attr-defined]
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidTopicExceptionError,
    KafkaConnectionError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from tests.compat._clients import stored_records


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def test_create_list_describe_delete(module_broker) -> None:
    a, b = _topic("adm-a"), _topic("adm-b")
    async with Admin(module_broker.bootstrap) as admin:
        await admin.create_topics([NewTopic(a, 3, configs={"retention.ms": "3600000", "segment.bytes": "1048576"}), b])
        topics = await admin.list_topics()
        assert a in topics and b in topics and topics == sorted(topics)

        desc = await admin.describe_topics([a, b])
        assert [p.partition for p in desc[a].partitions] == [0, 1, 2]
        assert all(p.leader == 0 and p.replicas == (0,) and p.isr == (0,) for p in desc[a].partitions)
        assert len(desc[b].partitions) == 1
        assert desc[a].configs["retention.ms"] == "3600000"
        assert desc[a].configs["segment.bytes"] == "1048576"
        assert desc[b].configs["retention.ms"] == "604800000"  # Kafka's default
        assert not desc[a].internal
        assert a in await admin.describe_topics()  # all topics

        await admin.delete_topics([a])
        assert a not in await admin.list_topics()
        with pytest.raises(UnknownTopicOrPartitionError, match=a):
            await admin.describe_topics([a])
        with pytest.raises(UnknownTopicOrPartitionError, match=a):
            await admin.delete_topic(a)
        await admin.delete_topic(b)


async def test_create_errors(module_broker) -> None:
    name = _topic("adm-err")
    async with Admin(module_broker.bootstrap) as admin:
        await admin.create_topic(name)
        with pytest.raises(TopicAlreadyExistsError, match="already exists"):
            await admin.create_topic(name)
        with pytest.raises(InvalidTopicExceptionError, match="illegal"):
            await admin.create_topic("no spaces allowed")
        with pytest.raises(InvalidTopicExceptionError):
            await admin.create_topic("..")
        with pytest.raises(InvalidPartitionsError):
            await admin.create_topic(_topic("zero"), num_partitions=0)
        with pytest.raises(InvalidReplicationFactorError):
            await admin.create_topic(_topic("rf"), replication_factor=3)
        with pytest.raises(InvalidConfigError, match="retention.ms"):
            await admin.create_topic(_topic("cfg"), configs={"retention.ms": "soon"})
        with pytest.raises(InvalidConfigError, match="no.such.config"):
            await admin.create_topic(_topic("cfg"), configs={"no.such.config": "1"})
        # validate_only checks, creates nothing
        v = _topic("validate")
        await admin.create_topic(v, 2, validate_only=True)
        assert v not in await admin.list_topics()
        with pytest.raises(TopicAlreadyExistsError):
            await admin.create_topic(name, validate_only=True)


async def test_describe_configs(module_broker) -> None:
    name = _topic("adm-cfg")
    async with Admin(module_broker.bootstrap) as admin:
        await admin.create_topic(name, configs={"max.message.bytes": "5000"})
        cfg = await admin.describe_configs("topic", name)
        assert cfg["max.message.bytes"].value == "5000"
        assert cfg["max.message.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG
        assert not cfg["max.message.bytes"].is_default
        assert cfg["cleanup.policy"].value == "delete" and cfg["cleanup.policy"].is_default
        assert cfg["cleanup.policy"].source == ConfigSource.DEFAULT_CONFIG
        only = await admin.describe_configs("topic", name, keys=["retention.ms"])
        assert list(only) == ["retention.ms"]
        broker = await admin.describe_configs("broker", 0)
        assert broker["log.dirs"].value == module_broker.data_dir
        assert broker["log.dirs"].source == ConfigSource.STATIC_BROKER_CONFIG and broker["log.dirs"].read_only
        # not set when the broker started: Kafka's default, reported as such; log.* defaults listed too
        assert broker["num.partitions"].value == "1" and broker["num.partitions"].is_default
        assert broker["num.partitions"].source == ConfigSource.DEFAULT_CONFIG
        assert broker["log.segment.bytes"].value == "1073741824"
        assert broker["log.segment.bytes"].source == ConfigSource.DEFAULT_CONFIG
        with pytest.raises(UnknownTopicOrPartitionError, match="does not exist"):
            await admin.describe_configs("topic", _topic("missing"))


async def test_list_offsets(module_broker) -> None:
    name = _topic("adm-off")
    async with Admin(module_broker.bootstrap) as admin:
        await admin.create_topic(name, 2)
        async with Producer(module_broker.bootstrap) as p:
            # partition 0: timestamps 1000, 2000, ..., 10000 (offsets 0-9)
            for i in range(10):
                await p.send(name, b"%d" % i, partition=0, timestamp_ms=1000 * (i + 1))
        tp0, tp1 = TopicPartition(name, 0), TopicPartition(name, 1)
        res = await admin.list_offsets({tp0: OffsetSpec.EARLIEST, tp1: OffsetSpec.EARLIEST})
        assert res[tp0].offset == 0 and res[tp1].offset == 0
        res = await admin.list_offsets({tp0: OffsetSpec.LATEST, (name, 1): OffsetSpec.LATEST})
        assert res == {tp0: OffsetAndTimestamp(10, -1), tp1: OffsetAndTimestamp(0, -1)}
        # by timestamp: the first record at or after it
        res = await admin.list_offsets({tp0: 2500})
        assert res[tp0] == OffsetAndTimestamp(2, 3000)
        assert (await admin.list_offsets({tp0: 1000}))[tp0] == OffsetAndTimestamp(0, 1000)
        assert (await admin.list_offsets({tp0: 0}))[tp0] == OffsetAndTimestamp(0, 1000)
        assert (await admin.list_offsets({tp0: 10_001}))[tp0] == OffsetAndTimestamp(-1, -1)  # none that recent
        assert (await admin.list_offsets({tp0: OffsetSpec.MAX_TIMESTAMP}))[tp0] == OffsetAndTimestamp(9, 10000)
        assert await admin.topic_offsets(name) == {0: 10, 1: 0}
        assert await admin.topic_offsets(name, 5000) == {0: 4, 1: -1}
        assert stored_records(module_broker.data_dir, name, 0)[4].timestamp == 5000
        with pytest.raises(UnknownTopicOrPartitionError):
            await admin.list_offsets({(name, 7): OffsetSpec.LATEST})
        with pytest.raises(UnknownTopicOrPartitionError):
            await admin.topic_offsets(_topic("missing"))


async def test_admin_unreachable_broker() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(KafkaConnectionError, match=f"no broker reachable within 300 ms; tried 127.0.0.1:{port}"):
        async with Admin(f"127.0.0.1:{port}", connect_timeout_ms=300, retry_backoff_ms=50):
            pass


async def test_consumer_groups(module_broker) -> None:
    """list/describe groups, committed offsets with lag, reset (dry run and executed), refused
    while members are active, delete offsets, delete the group."""
    from client.consumer import Consumer
    from client.errors import ERRORS
    from client.protocol.api import ErrorCode

    t, group = _topic("adm-g"), _topic("grp")
    bs = module_broker.bootstrap
    async with Admin(bs) as admin:
        await admin.create_topic(t, 2)
        async with Producer(bs) as p:
            for i in range(10):
                p.send_nowait(t, b"x", partition=i % 2, timestamp_ms=1_000_000 + i)
            await p.flush()
        assert all(g.group_id != group for g in await admin.list_groups())
        assert (await admin.describe_groups([group]))[group].state == "Dead"

        # no auto-commit: closing would commit the positions, which are 0 or 5 depending on
        # whether a fetch returned before the close (the explicit commit below is the one checked)
        c = Consumer(bs, group_id=group, client_id="lag-client", auto_offset_reset="earliest", fetch_max_wait_ms=100,
                     enable_auto_commit=False)
        await c.start()
        try:
            c.subscribe([t])
            while len(c.assignment()) < 2:
                await c.getmany(timeout_ms=100)
            await c.commit({(t, 0): 2, (t, 1): 5})
            listed = {g.group_id: g for g in await admin.list_groups()}
            assert listed[group].protocol_type == "consumer" and listed[group].state == "Stable"
            assert group in {g.group_id for g in await admin.list_groups(states=["stable"])}
            assert group not in {g.group_id for g in await admin.list_groups(states=["Empty"])}
            desc = (await admin.describe_groups([group]))[group]
            assert (desc.state, desc.protocol_type, desc.protocol) == ("Stable", "consumer", "range")
            [m] = desc.members
            assert m.member_id == c.member_id and m.client_id == "lag-client" and m.client_host
            assert m.assignment == [TopicPartition(t, 0), TopicPartition(t, 1)] and m.topics == [t]
            offsets = await admin.list_group_offsets(group)
            assert offsets[TopicPartition(t, 0)] == (2, "", 5, 3)
            assert offsets[TopicPartition(t, 1)] == (5, "", 5, 0)
            with pytest.raises(ERRORS[ErrorCode.UNKNOWN_MEMBER_ID], match="active members"):
                await admin.alter_group_offsets(group, {(t, 0): 0})
            with pytest.raises(ERRORS[ErrorCode.NON_EMPTY_GROUP]):
                await admin.delete_groups([group])
        finally:
            await c.close()
        assert (await admin.describe_groups([group]))[group].state == "Empty"

        tps = [(t, 0), (t, 1)]
        plan = await admin.reset_group_offsets(group, tps, to_earliest=True, execute=False)
        assert plan == {TopicPartition(t, 0): 0, TopicPartition(t, 1): 0}
        assert (await admin.list_group_offsets(group))[TopicPartition(t, 0)].committed != 0  # dry run
        assert await admin.reset_group_offsets(group, tps, to_offset=99) == {TopicPartition(t, 0): 5,
                                                                            TopicPartition(t, 1): 5}
        assert await admin.reset_group_offsets(group, tps, to_timestamp_ms=1_000_000 + 4) == {
            TopicPartition(t, 0): 2, TopicPartition(t, 1): 2}
        assert {tp: o.committed for tp, o in (await admin.list_group_offsets(group)).items()} == {
            TopicPartition(t, 0): 2, TopicPartition(t, 1): 2}
        await admin.alter_group_offsets(group, {(t, 1): 4})
        assert (await admin.list_group_offsets(group, [(t, 1)])) == {TopicPartition(t, 1): (4, "", 5, 1)}
        await admin.delete_group_offsets(group, [(t, 1)])
        assert list(await admin.list_group_offsets(group)) == [TopicPartition(t, 0)]
        with pytest.raises(ValueError):
            await admin.reset_group_offsets(group, tps)
        await admin.delete_groups([group])
        assert (await admin.describe_groups([group]))[group].state == "Dead"
        assert await admin.list_group_offsets(group) == {}
        with pytest.raises(ERRORS[ErrorCode.GROUP_ID_NOT_FOUND]):
            await admin.delete_groups([group])
