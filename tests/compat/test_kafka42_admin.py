"""Kafka 4.2's client-facing admin APIs through kafka-python 3's KafkaAdminClient against a broker
process: describe_features (ApiVersions v4's features), update_features (UpdateFeatures),
describe_metadata_quorum (DescribeQuorum), describe_topic_partitions (DescribeTopicPartitions,
paged) and list_config_resources (ListConfigResources v1).

confluent-kafka (librdkafka 2.16) has none of these calls: its describe_topics sends Metadata,
not DescribeTopicPartitions, and it has no features, quorum or config-resource listing calls.
aiokafka 0.14 has none either. The broker's side of each API, error by error, is tested in
tests/broker/test_features.py and tests/broker/test_kafka42_admin.py."""

from __future__ import annotations

from typing import Any

import pytest

from tests.compat._clients import create_topic

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def kp_admin(module_broker: Any) -> Any:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=module_broker.bootstrap, request_timeout_ms=10000)
    yield admin
    admin.close()


def test_describe_and_update_features(kp_admin: Any) -> None:
    from kafka.admin import UpdateFeatureType
    from kafka.errors import InvalidUpdateVersionError

    features = kp_admin.describe_features()
    assert features["metadata.version"] == {"supported": (7, 29), "finalized": (29, 29), "finalized_epoch": 0}
    assert features["kraft.version"]["finalized"] == (1, 1)
    assert features["transaction.version"] == {"supported": (0, 2)}  # not finalized: level 0
    assert {name: f["supported"] for name, f in features.items()} == {
        "metadata.version": (7, 29), "kraft.version": (0, 1), "transaction.version": (0, 2), "group.version": (0, 1),
        "eligible.leader.replicas.version": (0, 1), "share.version": (0, 1), "streams.version": (0, 1)}

    elr = "eligible.leader.replicas.version"
    assert kp_admin.update_features({elr: (UpdateFeatureType.SAFE_DOWNGRADE, 0)}, validate_only=True) == {elr: "OK"}
    assert kp_admin.describe_features()[elr]["finalized"] == (1, 1)
    assert kp_admin.update_features({elr: (UpdateFeatureType.SAFE_DOWNGRADE, 0)}) == {elr: "OK"}
    features = kp_admin.describe_features()
    assert "finalized" not in features[elr] and features["metadata.version"]["finalized_epoch"] == 1
    with pytest.raises(InvalidUpdateVersionError, match="only supports versions 7-29"):
        kp_admin.update_features({"metadata.version": 30})
    with pytest.raises(InvalidUpdateVersionError, match="does not implement streams.version 1"):
        kp_admin.update_features({"streams.version": 1})
    # transactions V2 (KIP-890) are implemented: an operator turns them on, and off again
    assert kp_admin.update_features({"transaction.version": 2}) == {"transaction.version": "OK"}
    assert kp_admin.describe_features()["transaction.version"]["finalized"] == (2, 2)
    assert kp_admin.update_features({"transaction.version": (UpdateFeatureType.SAFE_DOWNGRADE, 0)}) == \
        {"transaction.version": "OK"}
    assert "finalized" not in kp_admin.describe_features()["transaction.version"]
    assert kp_admin.update_features({elr: 1}) == {elr: "OK"}
    assert kp_admin.describe_features()[elr]["finalized"] == (1, 1)


def test_describe_metadata_quorum(kp_admin: Any, module_broker: Any) -> None:
    (topic,) = kp_admin.describe_metadata_quorum()["topics"]
    (p,) = topic["partitions"]
    assert topic["topic_name"] == "__cluster_metadata"
    assert (p["error"], p["leader_id"], p["leader_epoch"], p["observers"]) == (None, 0, 1, [])
    (voter,) = p["current_voters"]
    assert voter["replica_id"] == 0 and voter["log_end_offset"] == p["high_watermark"] > 0


def test_describe_topic_partitions_paged(kp_admin: Any, module_broker: Any, topic: str) -> None:
    create_topic(module_broker.bootstrap, topic, partitions=5)
    first = kp_admin.describe_topic_partitions([topic], response_partition_limit=3)
    (t,) = first["topics"]
    assert (t["error_code"], t["name"], t["is_internal"]) == (0, topic, False)
    assert [p["partition_index"] for p in t["partitions"]] == [0, 1, 2]
    assert all(p["leader_id"] == 0 and p["isr_nodes"] == [0] for p in t["partitions"])
    assert first["next_cursor"] == {"topic_name": topic, "partition_index": 3}
    rest = kp_admin.describe_topic_partitions([topic], response_partition_limit=3, cursor=first["next_cursor"])
    assert [p["partition_index"] for p in rest["topics"][0]["partitions"]] == [3, 4]
    assert rest["next_cursor"] is None
    (ghost,) = kp_admin.describe_topic_partitions([topic + "-ghost"])["topics"]
    assert ghost["error_code"] == 3  # UNKNOWN_TOPIC_OR_PARTITION


def test_list_config_resources(kp_admin: Any, module_broker: Any, topic: str) -> None:
    create_topic(module_broker.bootstrap, topic)
    listed = kp_admin.list_config_resources()
    assert listed["broker"] == ["0"] and topic in listed["topic"]
    assert kp_admin.list_config_resources(["TOPIC"]) == {"topic": listed["topic"]}
    assert kp_admin.list_config_resources(["GROUP", "CLIENT_METRICS"]) == {}
