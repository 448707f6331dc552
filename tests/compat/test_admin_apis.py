"""The admin APIs through four independent admin clients against a broker process:
confluent-kafka's AdminClient (librdkafka), kafka-python's KafkaAdminClient, aiokafka's
AIOKafkaAdminClient (its high-level methods, and its protocol classes where it has no method)
and, for the APIs none of the other two Python clients can send, the Node.js client
@platformatic/kafka (tests/compat/node: its Admin, or its raw per-version API functions).
Each test checks the broker's state afterwards through another client or the data dir.

Which client covers which API (a client missing from a row has no such call):

| API | confluent-kafka | kafka-python | aiokafka | @platformatic/kafka |
|---|---|---|---|---|
| CreatePartitions | yes | yes | yes | |
| DeleteRecords | yes | yes | yes | |
| IncrementalAlterConfigs | yes | yes | | |
| AlterConfigs | yes | yes | yes | |
| DescribeConfigs (synonyms) | yes | yes | yes | |
| DescribeCluster | (Metadata) | yes | (Metadata) | yes (raw v1) |
| DescribeLogDirs | | yes | | yes (Admin) |
| ElectLeaders | yes | yes | | |
| List/AlterPartitionReassignments | | yes | yes (protocol classes) | |
| DescribeProducers | | yes | | yes (raw v0) |
| OffsetForLeaderEpoch | yes (consumer, KIP-320) | yes (protocol class) | | yes (raw v4) |

"(Metadata)": the client's describe_cluster sends a Metadata request, not DescribeCluster.
aiokafka 0.14 has no protocol classes for DescribeCluster (60), DescribeLogDirs (35),
DescribeProducers (61) or OffsetForLeaderEpoch (23), and its consumer never validates positions;
confluent-kafka's AdminClient has no describe_log_dirs or describe_producers.

Our own Admin covers every one (tests/client/test_admin_cluster.py).
"""

from __future__ import annotations

import asyncio
import glob
import os
import time
from typing import Any

import pytest

from tests.compat._clients import PK_MISSING, Msg, ck_produce, create_topic, pk_admin_calls, stored_batches

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def ck_admin(module_broker: Any) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": module_broker.bootstrap, "socket.timeout.ms": 5000})


@pytest.fixture
def kp_admin(module_broker: Any) -> Any:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=module_broker.bootstrap, request_timeout_ms=10000)
    yield admin
    admin.close()


def aio(module_broker: Any, fn: Any) -> Any:
    from aiokafka.admin import AIOKafkaAdminClient

    async def go() -> Any:
        admin = AIOKafkaAdminClient(bootstrap_servers=module_broker.bootstrap, request_timeout_ms=10000)
        await admin.start()
        try:
            return await fn(admin)
        finally:
            await admin.close()

    return asyncio.run(go())


def partitions_of(module_broker: Any, topic: str) -> int:
    return len(glob.glob(os.path.join(module_broker.data_dir, f"{topic}-*")))


def log_start(kp_admin: Any, topic: str, partition: int) -> int:
    from kafka import TopicPartition
    from kafka.admin import OffsetSpec

    got = kp_admin.list_partition_offsets({TopicPartition(topic, partition): OffsetSpec.EARLIEST})
    return next(iter(got.values())).offset


# ---------------------------------------------------------------- CreatePartitions


def test_create_partitions_three_clients(module_broker: Any, ck_admin: Any, kp_admin: Any, topic: str) -> None:
    from aiokafka.admin import NewPartitions as AioNewPartitions
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewPartitions as CkNewPartitions
    from kafka.admin import NewPartitions as KpNewPartitions
    from kafka.errors import InvalidPartitionsError

    create_topic(module_broker.bootstrap, topic, 1)
    assert ck_admin.create_partitions([CkNewPartitions(topic, 2)])[topic].result(10) is None
    assert partitions_of(module_broker, topic) == 2
    with pytest.raises(KafkaException, match="INVALID_PARTITIONS"):
        ck_admin.create_partitions([CkNewPartitions(topic, 1)])[topic].result(10)
    kp_admin.create_partitions({topic: KpNewPartitions(3)})
    assert partitions_of(module_broker, topic) == 3
    with pytest.raises(InvalidPartitionsError):
        kp_admin.create_partitions({topic: KpNewPartitions(3)})
    kp_admin.create_partitions({topic: KpNewPartitions(9)}, validate_only=True)
    assert partitions_of(module_broker, topic) == 3
    aio(module_broker, lambda a: a.create_partitions({topic: AioNewPartitions(4)}))
    assert partitions_of(module_broker, topic) == 4
    # librdkafka's producer finds the new partition through metadata
    assert ck_produce(module_broker.bootstrap, topic, 3, [Msg(None, b"in the new partition")]) == [0]


# ---------------------------------------------------------------- DeleteRecords


def test_delete_records_three_clients(module_broker: Any, ck_admin: Any, kp_admin: Any, topic: str) -> None:
    from aiokafka.admin import RecordsToDelete
    from aiokafka.structs import TopicPartition as AioTP
    from confluent_kafka import TopicPartition as CkTP
    from kafka import TopicPartition as KpTP

    create_topic(module_broker.bootstrap, topic, 3, {"segment.bytes": "3000"})
    for p in range(3):
        for _ in range(6):  # small batches: several segments
            ck_produce(module_broker.bootstrap, topic, p, [Msg(None, b"%03d" % i * 30) for i in range(10)],
                       **{"linger.ms": 0})
    before = len(glob.glob(os.path.join(module_broker.data_dir, f"{topic}-0", "*.log")))
    got = ck_admin.delete_records([CkTP(topic, 0, 40)], request_timeout=10)
    assert next(iter(got.values())).result(10).low_watermark == 40
    assert len(glob.glob(os.path.join(module_broker.data_dir, f"{topic}-0", "*.log"))) < before
    assert kp_admin.delete_records({KpTP(topic, 1): 25}) == {
        KpTP(topic, 1): {"partition_index": 1, "low_watermark": 25, "error_code": 0}}
    res = aio(module_broker, lambda a: a.delete_records({AioTP(topic, 2): RecordsToDelete(10)}))
    assert res == {AioTP(topic, 2): 10}
    assert [log_start(kp_admin, topic, p) for p in range(3)] == [40, 25, 10]


def test_delete_records_refused_on_a_compacted_topic(module_broker: Any, ck_admin: Any, kp_admin: Any,
                                                    topic: str) -> None:
    """``cleanup.policy=compact`` alone: POLICY_VIOLATION and the log start stays (Kafka keeps
    a compacted log's history whole); ``compact,delete`` allows it."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka import TopicPartition as CkTP

    for suffix, policy in (("c", "compact"), ("cd", "compact,delete")):
        create_topic(module_broker.bootstrap, f"{topic}-{suffix}", 1, {"cleanup.policy": policy})
        ck_produce(module_broker.bootstrap, f"{topic}-{suffix}", 0, [Msg(b"k%d" % i, b"v") for i in range(10)])
    (refused,) = ck_admin.delete_records([CkTP(f"{topic}-c", 0, 5)], request_timeout=10).values()
    with pytest.raises(KafkaException) as err:
        refused.result(10)
    assert err.value.args[0].code() == KafkaError.POLICY_VIOLATION, err.value
    assert log_start(kp_admin, f"{topic}-c", 0) == 0
    (allowed,) = ck_admin.delete_records([CkTP(f"{topic}-cd", 0, 5)], request_timeout=10).values()
    assert allowed.result(10).low_watermark == 5
    assert log_start(kp_admin, f"{topic}-cd", 0) == 5


# ---------------------------------------------------------------- configs


def test_incremental_and_legacy_alter_configs_three_clients(module_broker: Any, ck_admin: Any, kp_admin: Any,
                                                            topic: str) -> None:
    from aiokafka.admin.config_resource import ConfigResource as AioCR
    from aiokafka.admin.config_resource import ConfigResourceType as AioCRT
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry
    from confluent_kafka.admin import ConfigResource as CkCR
    from kafka.admin import ConfigResource as KpCR
    from kafka.admin import ConfigResourceType as KpCRT

    create_topic(module_broker.bootstrap, topic, 1, {"retention.ms": "3600000"})

    def ck_describe() -> dict[str, Any]:
        return next(iter(ck_admin.describe_configs([CkCR("TOPIC", topic)]).values())).result(10)

    # confluent-kafka: IncrementalAlterConfigs (SET, APPEND, DELETE)
    res = ck_admin.incremental_alter_configs([CkCR("TOPIC", topic, incremental_configs=[
        ConfigEntry("segment.bytes", "1048576", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])])
    assert next(iter(res.values())).result(10) is None
    entries = ck_describe()
    assert entries["segment.bytes"].value == "1048576" and entries["segment.bytes"].source == 1
    assert entries["cleanup.policy"].value == "delete,compact"
    assert entries["retention.ms"].value == "604800000" and entries["retention.ms"].is_default
    # a bad value: INVALID_CONFIG with Kafka's message
    res = ck_admin.incremental_alter_configs([CkCR("TOPIC", topic, incremental_configs=[
        ConfigEntry("segment.bytes", "12", incremental_operation=AlterConfigOpType.SET)])])
    with pytest.raises(KafkaException, match="Invalid value 12 for configuration segment.bytes: Value must be at"
                                             " least 14"):
        next(iter(res.values())).result(10)
    # kafka-python: IncrementalAlterConfigs, then the legacy AlterConfigs (replaces the whole set)
    kp_admin.alter_configs([KpCR(KpCRT.TOPIC, topic, configs={"max.message.bytes": ("SET", "20000")})],
                           incremental=True)
    assert ck_describe()["max.message.bytes"].value == "20000"
    assert ck_describe()["segment.bytes"].value == "1048576"
    # kafka-python's legacy path sends the other dynamic configs along, so they stay
    kp_admin.alter_configs([KpCR(KpCRT.TOPIC, topic, configs={"retention.ms": "1000"})], incremental=False)
    entries = ck_describe()
    assert {k for k, e in entries.items() if e.source == 1} == {"retention.ms", "segment.bytes", "cleanup.policy",
                                                                "max.message.bytes"}
    assert entries["retention.ms"].value == "1000"
    # aiokafka: AlterConfigs, and DescribeConfigs with synonyms
    aio(module_broker, lambda a: a.alter_configs([AioCR(AioCRT.TOPIC, topic, {"retention.ms": "5000",
                                                                               "compression.type": "lz4"})]))
    described = aio(module_broker, lambda a: a.describe_configs([AioCR(AioCRT.TOPIC, topic)], include_synonyms=True))
    configs = {c["config_names"]: c for c in described[0].to_object()["resources"][0]["config_entries"]}
    assert (configs["retention.ms"]["config_value"], configs["retention.ms"]["config_source"]) == ("5000", 1)
    assert [s["config_name"] for s in configs["segment.bytes"]["config_synonyms"]] == ["log.segment.bytes"]
    entries = ck_describe()
    assert (entries["retention.ms"].value, entries["compression.type"].value) == ("5000", "lz4")
    # AlterConfigs replaces the whole set: what aiokafka did not name went back to its default
    assert {k for k, e in entries.items() if e.source == 1} == {"retention.ms", "compression.type"}
    # confluent-kafka's legacy alter_configs
    assert next(iter(ck_admin.alter_configs([CkCR("TOPIC", topic, set_config={"retention.ms": "6000"})])
                     .values())).result(10) is None
    entries = ck_describe()
    assert entries["retention.ms"].value == "6000"
    assert {k for k, e in entries.items() if e.source == 1} == {"retention.ms"}
    # kafka-python DescribeConfigs with synonyms: Kafka's sources and synonym order
    got = kp_admin.describe_configs([KpCR(KpCRT.TOPIC, topic)], include_synonyms=True, config_filter="all")
    retention = got["topic"][topic]["retention.ms"]
    assert retention["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert [s["source"] for s in retention["synonyms"]] == ["DYNAMIC_TOPIC_CONFIG"]
    seg = got["topic"][topic]["segment.bytes"]
    assert (seg["config_source"], [s["name"] for s in seg["synonyms"]]) == ("DEFAULT_CONFIG", ["log.segment.bytes"])


def test_compression_type_recompresses_what_librdkafka_sends(module_broker: Any, ck_admin: Any, topic: str) -> None:
    create_topic(module_broker.bootstrap, topic, 1, {"compression.type": "zstd"})
    ck_produce(module_broker.bootstrap, topic, 0, [Msg(b"k", b"value %d " % i * 10) for i in range(500)],
               codec="gzip")
    assert {codec for _, codec, _, _ in stored_batches(module_broker.data_dir, topic, 0)} == {4}


def test_broker_dynamic_configs_two_clients(module_broker: Any, ck_admin: Any, kp_admin: Any, topic: str) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry
    from confluent_kafka.admin import ConfigResource as CkCR
    from kafka.admin import ConfigResource as KpCR
    from kafka.admin import ConfigResourceType as KpCRT

    create_topic(module_broker.bootstrap, topic, 1)
    try:
        res = ck_admin.incremental_alter_configs([CkCR("BROKER", "0", incremental_configs=[
            ConfigEntry("log.retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)])])
        assert next(iter(res.values())).result(10) is None
        got = kp_admin.describe_configs([KpCR(KpCRT.TOPIC, topic)], include_synonyms=True, config_filter="all")
        retention = got["topic"][topic]["retention.ms"]
        assert (retention["value"], retention["config_source"]) == ("7200000", "DYNAMIC_BROKER_CONFIG")
        broker = next(iter(ck_admin.describe_configs([CkCR("BROKER", "0")]).values())).result(10)
        assert broker["log.retention.ms"].source == 2 and not broker["log.retention.ms"].is_read_only
        assert broker["num.partitions"].is_read_only
        res = ck_admin.incremental_alter_configs([CkCR("BROKER", "0", incremental_configs=[
            ConfigEntry("num.partitions", "7", incremental_operation=AlterConfigOpType.SET)])])
        with pytest.raises(KafkaException, match="Cannot update these configs dynamically"):
            next(iter(res.values())).result(10)
    finally:
        kp_admin.reset_configs([KpCR(KpCRT.BROKER, "0")], incremental=False)  # AlterConfigs with no configs
    broker = next(iter(ck_admin.describe_configs([CkCR("BROKER", "0")]).values())).result(10)
    assert broker["log.retention.ms"].value is None and broker["log.retention.ms"].source == 5


# ---------------------------------------------------------------- cluster, log dirs, leaders


def test_describe_cluster_two_clients(module_broker: Any, ck_admin: Any, kp_admin: Any) -> None:
    """kafka-python and @platformatic/kafka send DescribeCluster; confluent-kafka's
    describe_cluster is built from a Metadata request (librdkafka), so it only cross-checks."""
    got = kp_admin.describe_cluster()
    assert got["controller_id"] == 0 and [b["broker_id"] for b in got["brokers"]] == [0]
    assert got["brokers"][0]["port"] == int(module_broker.bootstrap.rsplit(":", 1)[1])
    assert {"ALTER_CONFIGS", "DESCRIBE_CONFIGS", "ALTER", "DESCRIBE"} <= set(got["authorized_operations"])
    desc = ck_admin.describe_cluster(request_timeout=10).result(10)
    assert desc.cluster_id == got["cluster_id"] and desc.controller.id == 0
    if PK_MISSING:
        pytest.skip(PK_MISSING)
    # v1: include_cluster_authorized_operations, endpoint_type (1 BROKER, 2 CONTROLLER)
    with_ops, without_ops, controller = pk_admin_calls(module_broker.bootstrap, [
        ("describeCluster", [True, 1]), ("describeCluster", [False, 1]), ("describeCluster", [False, 2])])
    host, port = module_broker.bootstrap.rsplit(":", 1)
    assert (with_ops["errorCode"], with_ops["clusterId"], with_ops["controllerId"]) == (0, got["cluster_id"], 0)
    assert [(b["brokerId"], b["host"], b["port"]) for b in with_ops["brokers"]] == [(0, host, int(port))]
    ops = {5, 7, 8, 9, 10, 11, 12}  # CREATE ALTER DESCRIBE CLUSTER_ACTION DESCRIBE_CONFIGS ALTER_CONFIGS IDEMPOTENT_WRITE
    assert with_ops["clusterAuthorizedOperations"] == sum(1 << op for op in ops)
    assert without_ops["clusterAuthorizedOperations"] == -2147483648  # not asked for
    assert controller["response"]["errorCode"] == 114  # MISMATCHED_ENDPOINT_TYPE


def test_describe_log_dirs_two_clients(module_broker: Any, kp_admin: Any, topic: str) -> None:
    """kafka-python asks for every partition (topics null), @platformatic/kafka's Admin for named
    ones (the version both sides support: v4, with the directory's total and usable bytes)."""
    create_topic(module_broker.bootstrap, topic, 2)
    ck_produce(module_broker.bootstrap, topic, 1, [Msg(None, b"x" * 1000) for _ in range(20)])
    (broker,) = kp_admin.describe_log_dirs()
    (log_dir,) = broker["log_dirs"]
    assert log_dir["log_dir"] == module_broker.data_dir and log_dir["error_code"] == 0
    sizes = {(t["name"], p["partition_index"]): p["partition_size"]
             for t in log_dir["topics"] for p in t["partitions"]}
    on_disk = sum(os.path.getsize(p) for p in glob.glob(os.path.join(module_broker.data_dir, f"{topic}-1", "*.log")))
    assert sizes[(topic, 0)] == 0 and sizes[(topic, 1)] == on_disk > 20_000
    if PK_MISSING:
        pytest.skip(PK_MISSING)
    # partition 7 does not exist: left out, as Kafka does
    ((pk_broker,),) = pk_admin_calls(module_broker.bootstrap, [
        ("describeLogDirs", [{"topics": [{"name": topic, "partitions": [0, 1, 7]}]}])])
    (result,) = pk_broker["results"]
    assert (pk_broker["broker"], result["logDir"]) == (0, module_broker.data_dir)
    assert [(t["name"], [(p["partitionIndex"], int(p["partitionSize"]), int(p["offsetLag"]), p["isFutureKey"])
                         for p in t["partitions"]]) for t in result["topics"]] == [
        (topic, [(0, 0, 0, False), (1, on_disk, 0, False)])]
    assert 0 < int(result["usableBytes"]) <= int(result["totalBytes"])


def test_elect_leaders_two_clients(module_broker: Any, ck_admin: Any, kp_admin: Any, topic: str) -> None:
    from confluent_kafka import ElectionType, KafkaError
    from confluent_kafka import TopicPartition as CkTP

    create_topic(module_broker.bootstrap, topic, 2)
    got = ck_admin.elect_leaders(ElectionType.PREFERRED, [CkTP(topic, 0), CkTP(topic, 1)]).result(10)
    assert {tp.partition: err.code() for tp, err in got.items()} == {0: KafkaError.ELECTION_NOT_NEEDED,
                                                                     1: KafkaError.ELECTION_NOT_NEEDED}
    resp = kp_admin.elect_leaders(1, {topic: [0]}, raise_errors=False)
    (result,) = resp.replica_election_results
    assert [(p.partition_id, p.error_code) for p in result.partition_result] == [(0, 84)]


def test_partition_reassignments_two_clients(module_broker: Any, kp_admin: Any, topic: str) -> None:
    from aiokafka.protocol.admin import AlterPartitionReassignmentsRequest, ListPartitionReassignmentsRequest
    from kafka import TopicPartition as KpTP

    create_topic(module_broker.bootstrap, topic, 2)
    assert kp_admin.list_partition_reassignments() == {}
    assert kp_admin.alter_partition_reassignments({KpTP(topic, 0): [0]}) == {KpTP(topic, 0): None}

    async def aio_calls(admin: Any) -> tuple[Any, Any]:
        listed = await admin._send_request(ListPartitionReassignmentsRequest(5000, [(topic, [0, 1], {})], {}))
        altered = await admin._send_request(AlterPartitionReassignmentsRequest(
            5000, [(topic, [(0, [0], {}), (1, [0, 1], {}), (1, None, {})], {})], {}))
        return listed, altered

    listed, altered = aio(module_broker, aio_calls)
    assert listed.to_object()["error_code"] == 0 and listed.to_object()["topics"] == []
    obj = altered.to_object()
    assert obj["error_code"] == 0
    assert [(p["partition_index"], p["error_code"]) for p in obj["responses"][0]["partitions"]] == [
        (0, 0), (1, 39), (1, 85)]  # ok, INVALID_REPLICA_ASSIGNMENT, NO_REASSIGNMENT_IN_PROGRESS


def test_describe_producers_two_clients(module_broker: Any, kp_admin: Any, topic: str) -> None:
    from kafka import TopicPartition as KpTP

    create_topic(module_broker.bootstrap, topic, 2)
    ck_produce(module_broker.bootstrap, topic, 0, [Msg(None, b"x")] * 5, **{"enable.idempotence": True})
    got = kp_admin.describe_producers([KpTP(topic, 0)])
    (state,) = got[KpTP(topic, 0)].active_producers
    assert (state.producer_epoch, state.last_sequence) == (0, 4)
    if PK_MISSING:
        pytest.skip(PK_MISSING)
    known, unknown = pk_admin_calls(module_broker.bootstrap, [
        ("describeProducers", [[{"name": topic, "partitionIndexes": [0, 1]}]]),
        ("describeProducers", [[{"name": topic, "partitionIndexes": [5]}]])])
    (p0, p1) = known["topics"][0]["partitions"]
    (producer,) = p0["activeProducers"]
    assert (p0["partitionIndex"], p0["errorCode"], p1["partitionIndex"], p1["activeProducers"]) == (0, 0, 1, [])
    assert (int(producer["producerId"]), producer["producerEpoch"], producer["lastSequence"]) == (
        state.producer_id, 0, 4)
    assert (producer["coordinatorEpoch"], producer["currentTxnStartOffset"]) == (-1, "-1")
    assert int(producer["lastTimestamp"]) == state.last_timestamp > 0
    (p5,) = unknown["response"]["topics"][0]["partitions"]
    assert (p5["partitionIndex"], p5["errorCode"]) == (5, 3)  # UNKNOWN_TOPIC_OR_PARTITION


def test_offset_for_leader_epoch_two_clients(module_broker: Any, kp_admin: Any, topic: str) -> None:
    """kafka-python's protocol class and @platformatic/kafka's v4 encoder (librdkafka's consumer
    sends it too: test_offset_for_leader_epoch_librdkafka_validates_position)."""
    from kafka.protocol.consumer import OffsetForLeaderEpochRequest

    create_topic(module_broker.bootstrap, topic, 1)
    ck_produce(module_broker.bootstrap, topic, 0, [Msg(None, b"x")] * 7)
    T, P = OffsetForLeaderEpochRequest.OffsetForLeaderTopic, OffsetForLeaderEpochRequest.OffsetForLeaderTopic.OffsetForLeaderPartition
    # (current epoch, epoch) on partition 0, then partition 4 (no such partition)
    request = OffsetForLeaderEpochRequest(replica_id=-1, topics=[T(topic=topic, partitions=[
        P(partition=0, current_leader_epoch=0, leader_epoch=0), P(partition=0, current_leader_epoch=-1, leader_epoch=3),
        P(partition=0, current_leader_epoch=1, leader_epoch=0), P(partition=4, current_leader_epoch=0, leader_epoch=0)])])

    async def send() -> Any:
        return await kp_admin._manager.send(request, node_id=0)

    resp = kp_admin._manager.run(send)
    assert [(p.partition, p.error_code, p.leader_epoch, p.end_offset) for p in resp.topics[0].partitions] == [
        (0, 0, 0, 7),
        (0, 0, -1, -1),  # an epoch this partition never had: UNDEFINED
        (0, 75, -1, -1),  # UNKNOWN_LEADER_EPOCH: the client knows a newer leader than the broker
        (4, 3, -1, -1)]  # UNKNOWN_TOPIC_OR_PARTITION
    if PK_MISSING:
        pytest.skip(PK_MISSING)
    # @platformatic/kafka 1.35 decodes a v4 partition result as (partition, error_code, ...) where
    # Kafka's schema has (error_code, partition, ...): only results with both 0 decode right, so
    # only those are asked for here (its encoder, the part that talks to the broker, is right).
    (got,) = pk_admin_calls(module_broker.bootstrap, [("offsetForLeaderEpoch", [-1, [{"name": topic, "partitions": [
        {"partitionIndex": 0, "currentLeaderEpoch": 0, "leaderEpoch": 0},
        {"partitionIndex": 0, "currentLeaderEpoch": -1, "leaderEpoch": 0},
        {"partitionIndex": 0, "currentLeaderEpoch": -1, "leaderEpoch": 3}]}]])])
    assert [(q["partition"], q["errorCode"], q["leaderEpoch"], q["endOffset"]) for q in got["topics"][0]["partitions"]] == [
        (0, 0, 0, "7"), (0, 0, 0, "7"), (0, 0, -1, "-1")]


def test_offset_for_leader_epoch_librdkafka_validates_position(tmp_path: Any, topic: str) -> None:
    """librdkafka (>= 2.1, KIP-320) validates a position that carries a leader epoch with
    OffsetForLeaderEpoch before it fetches from it ("validate-epoch-wait"); a position without
    one is fetched at once. The broker's request counters show the call and that it was answered
    without an error (an end offset below the position would have read as a log truncation, and
    librdkafka would have reset the position instead of reading from offset 3)."""
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as CkTP

    from tests.broker_process import BrokerProcess
    from tests.compat.test_mirrormaker_apis import counters

    b = BrokerProcess(str(tmp_path / "data"), metrics=True).start()
    try:
        create_topic(b.bootstrap, topic, 1)
        ck_produce(b.bootstrap, topic, 0, [Msg(None, b"v%d" % i) for i in range(10)])

        def consume_from(tp: Any) -> tuple[list[tuple[int, int | None]], float]:
            before = counters(b.scrape(), "minibroker_requests_total").get("OFFSET_FOR_LEADER_EPOCH", 0)
            c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "unused-by-assign",
                          "enable.auto.commit": False, "socket.timeout.ms": 5000})
            c.assign([tp])
            got: list[Any] = []
            deadline = time.monotonic() + 20
            while len(got) < 7 and time.monotonic() < deadline:
                got += [m for m in c.consume(10, 1.0) if m.error() is None]
            c.close()
            after = counters(b.scrape(), "minibroker_requests_total").get("OFFSET_FOR_LEADER_EPOCH", 0)
            return [(m.offset(), m.leader_epoch()) for m in got], after - before

        assert consume_from(CkTP(topic, 0, 3)) == ([(o, 0) for o in range(3, 10)], 0)
        assert consume_from(CkTP(topic, 0, 3, leader_epoch=0)) == ([(o, 0) for o in range(3, 10)], 1)
        assert "OFFSET_FOR_LEADER_EPOCH" not in counters(b.scrape(), "minibroker_request_errors_total")
    finally:
        assert b.stop() == 0, b.log_text()


# ---------------------------------------------------------------- CreateTopics configs


def test_create_topics_with_the_configs_librdkafka_sets(module_broker: Any, ck_admin: Any, topic: str) -> None:
    """The topic configs librdkafka's admin test and ordinary tools set at creation are accepted
    and reported back as the topic's own (DYNAMIC_TOPIC_CONFIG); values outside Kafka's
    validators are refused with INVALID_CONFIG."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import ConfigResource as CkCR
    from confluent_kafka.admin import ConfigSource, NewTopic

    config = {"compression.type": "zstd", "delete.retention.ms": "3600000", "min.insync.replicas": "1",
              "unclean.leader.election.enable": "true", "min.compaction.lag.ms": "1000",
              "message.timestamp.difference.max.ms": "86400000"}
    fut = ck_admin.create_topics([NewTopic(topic, 1, 1, config=config)], request_timeout=10)
    assert fut[topic].result(10) is None
    entries = next(iter(ck_admin.describe_configs([CkCR("TOPIC", topic)]).values())).result(10)
    assert {k: (entries[k].value, entries[k].source) for k in config} == {
        k: (v, ConfigSource.DYNAMIC_TOPIC_CONFIG.value) for k, v in config.items()}
    for key, value in (("min.insync.replicas", "0"), ("compression.type", "brotli"),
                       ("unclean.leader.election.enable", "yes"), ("delete.retention.ms", "-1")):
        bad = ck_admin.create_topics([NewTopic(topic + "-bad", 1, 1, config={key: value})], request_timeout=10)
        with pytest.raises(KafkaException, match=f"INVALID_CONFIG.*{key}") as err:
            bad[topic + "-bad"].result(10)
        assert err.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert not glob.glob(os.path.join(module_broker.data_dir, f"{topic}-bad-*"))


def test_acl_admin_calls_are_told_security_disabled(ck_admin: Any, kp_admin: Any) -> None:
    """No authorizer: confluent-kafka's and kafka-python's ACL calls reach the broker and get
    SECURITY_DISABLED (before, kafka-python refused them as unsupported by the broker)."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )
    from kafka.admin import ACL, ACLFilter, ACLOperation, ACLPermissionType, ResourcePattern
    from kafka.admin import ACLResourcePatternType as KpPatternType
    from kafka.admin import ResourceType as KpResourceType
    from kafka.errors import SecurityDisabledError

    binding = AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
    any_filter = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                                  AclPermissionType.ANY)
    for fut in (*ck_admin.create_acls([binding]).values(), *ck_admin.delete_acls([any_filter]).values()):
        with pytest.raises(KafkaException) as e:
            fut.result(timeout=30)
        assert e.value.args[0].code() == KafkaError.SECURITY_DISABLED
    # librdkafka drops DescribeAcls' top-level error code (rd_kafka_DescribeAclsResponse_parse):
    # an empty listing; what tells a client there is no authorizer is authorizer.class.name
    assert ck_admin.describe_acls(any_filter).result(timeout=30) == []
    from confluent_kafka.admin import ConfigResource
    (configs,) = ck_admin.describe_configs([ConfigResource("broker", "0")]).values()
    assert configs.result(timeout=30)["authorizer.class.name"].value in ("", None)

    acl_filter = ACLFilter(principal=None, host="*", operation=ACLOperation.ANY,
                           permission_type=ACLPermissionType.ANY,
                           resource_pattern=ResourcePattern(KpResourceType.TOPIC, "orders", KpPatternType.LITERAL))
    with pytest.raises(SecurityDisabledError):
        kp_admin.describe_acls(acl_filter)
    acl = ACL(principal="User:alice", host="*", operation=ACLOperation.READ, permission_type=ACLPermissionType.ALLOW,
              resource_pattern=ResourcePattern(KpResourceType.TOPIC, "orders", KpPatternType.LITERAL))
    result = kp_admin.create_acls([acl])
    assert result == {"succeeded": [], "failed": [SecurityDisabledError]}  # kafka-python lists the error classes


def test_alter_replica_log_dirs_kafka_python(module_broker: Any, kp_admin: Any) -> None:
    """kafka-python's alter_replica_log_dirs: the broker's one log dir answers NONE (nothing to
    move), another path LOG_DIR_NOT_FOUND, a partition not hosted REPLICA_NOT_AVAILABLE."""
    from kafka import TopicPartitionReplica
    from kafka.admin import NewTopic
    from kafka.errors import LogDirNotFoundError, NoError, ReplicaNotAvailableError

    kp_admin.create_topics([NewTopic("ardirs-kp", 1, 1)])
    here, there = os.path.abspath(module_broker.data_dir), os.path.abspath(module_broker.data_dir) + "-elsewhere"
    assert kp_admin.alter_replica_log_dirs({TopicPartitionReplica("ardirs-kp", 0, 0): here}) == {
        TopicPartitionReplica("ardirs-kp", 0, 0): NoError}
    assert kp_admin.alter_replica_log_dirs({TopicPartitionReplica("ardirs-kp", 0, 0): there}) == {
        TopicPartitionReplica("ardirs-kp", 0, 0): LogDirNotFoundError}
    assert kp_admin.alter_replica_log_dirs({TopicPartitionReplica("ardirs-kp", 5, 0): here}) == {
        TopicPartitionReplica("ardirs-kp", 5, 0): ReplicaNotAvailableError}
