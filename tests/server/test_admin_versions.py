"""Every version the broker advertises of the admin APIs, requested over a real socket with our
codec (non-flexible and flexible encodings both): each answers with the fields of its version
and the same outcome."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from client.conn import BrokerConnection
from client.protocol.api import SUPPORTED_VERSIONS, ApiKey

TOPIC = "versions"

REQUESTS: dict[ApiKey, dict[str, Any]] = {
    ApiKey.CREATE_PARTITIONS: {"topics": [{"name": TOPIC, "count": 1, "assignments": None}], "timeout_ms": 1000,
                               "validate_only": True},
    ApiKey.DELETE_RECORDS: {"topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "offset": 2}]}],
                            "timeout_ms": 1000},
    ApiKey.ALTER_CONFIGS: {"resources": [{"resource_type": 2, "resource_name": TOPIC,
                                          "configs": [{"name": "retention.ms", "value": "123456"}]}],
                           "validate_only": False},
    ApiKey.INCREMENTAL_ALTER_CONFIGS: {"resources": [{"resource_type": 2, "resource_name": TOPIC, "configs": [
        {"name": "retention.ms", "config_operation": 0, "value": "123456"}]}], "validate_only": False},
    ApiKey.DESCRIBE_CONFIGS: {"resources": [{"resource_type": 2, "resource_name": TOPIC,
                                             "configuration_keys": ["retention.ms"]}],
                              "include_synonyms": True, "include_documentation": True},
    ApiKey.DESCRIBE_CLUSTER: {"include_cluster_authorized_operations": True, "endpoint_type": 1},
    ApiKey.DESCRIBE_LOG_DIRS: {"topics": [{"topic": TOPIC, "partitions": [0]}]},
    ApiKey.OFFSET_FOR_LEADER_EPOCH: {"replica_id": -1, "topics": [{"topic": TOPIC, "partitions": [
        {"partition": 0, "current_leader_epoch": 0, "leader_epoch": 0}]}]},
    ApiKey.ELECT_LEADERS: {"election_type": 0, "topic_partitions": [{"topic": TOPIC, "partitions": [0]}],
                           "timeout_ms": 1000},
    ApiKey.LIST_PARTITION_REASSIGNMENTS: {"timeout_ms": 1000, "topics": None},
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: {"timeout_ms": 1000, "topics": [
        {"name": TOPIC, "partitions": [{"partition_index": 0, "replicas": [0]}]}]},
    ApiKey.DESCRIBE_PRODUCERS: {"topics": [{"name": TOPIC, "partition_indexes": [0]}]},
    # the level it has: accepted, nothing changes (v0 has no validate_only)
    ApiKey.UPDATE_FEATURES: {"timeout_ms": 1000, "validate_only": False, "feature_updates": [
        {"feature": "metadata.version", "max_version_level": 29, "allow_downgrade": False, "upgrade_type": 1}]},
    ApiKey.DESCRIBE_QUORUM: {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]},
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: {"topics": [{"name": TOPIC}], "response_partition_limit": 2000, "cursor": None},
    ApiKey.LIST_CONFIG_RESOURCES: {"resource_types": []},  # v0: client metrics; v1: every type
}


def check(key: ApiKey, version: int, resp: dict[str, Any]) -> None:
    if key == ApiKey.CREATE_PARTITIONS:
        assert resp["results"][0]["error_code"] == 37  # 1 is not an increase
    elif key == ApiKey.DELETE_RECORDS:
        assert resp["topics"][0]["partitions"][0] == {"partition_index": 0, "low_watermark": 2, "error_code": 0}
    elif key == ApiKey.DESCRIBE_CONFIGS:
        (entry,) = resp["results"][0]["configs"]
        assert entry["value"] == "123456"
        assert entry["config_source"] == (1 if version >= 1 else -1)  # absent in v0: the schema's default
        assert bool(entry["synonyms"]) == (version >= 1)
        assert (entry["documentation"] is not None) == (version >= 3)
    elif key in (ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS):
        assert resp["responses"][0]["error_code"] == 0
    elif key == ApiKey.DESCRIBE_CLUSTER:
        assert resp["error_code"] == 0 and resp["brokers"][0]["broker_id"] == 0
        assert resp["cluster_authorized_operations"] > 0
    elif key == ApiKey.DESCRIBE_LOG_DIRS:
        (result,) = resp["results"]
        assert result["topics"][0]["partitions"][0]["partition_size"] > 0
        assert (result["total_bytes"] > 0) == (version >= 4)
    elif key == ApiKey.OFFSET_FOR_LEADER_EPOCH:
        p = resp["topics"][0]["partitions"][0]
        assert (p["error_code"], p["end_offset"], p["leader_epoch"]) == (0, 5, 0 if version >= 1 else -1)
    elif key == ApiKey.ELECT_LEADERS:
        assert resp["replica_election_results"][0]["partition_result"][0]["error_code"] == 84
    elif key == ApiKey.LIST_PARTITION_REASSIGNMENTS:
        assert resp["error_code"] == 0 and resp["topics"] == []
    elif key == ApiKey.ALTER_PARTITION_REASSIGNMENTS:
        assert resp["responses"][0]["partitions"][0]["error_code"] == 0
    elif key == ApiKey.DESCRIBE_PRODUCERS:
        assert resp["topics"][0]["partitions"][0]["error_code"] == 0
    elif key == ApiKey.UPDATE_FEATURES:
        assert (resp["error_code"], resp["error_message"]) == (0, None)
        assert [r["feature"] for r in resp["results"]] == (["metadata.version"] if version <= 1 else [])
    elif key == ApiKey.DESCRIBE_QUORUM:
        p = resp["topics"][0]["partitions"][0]
        assert (resp["error_code"], p["error_code"], p["leader_id"], len(p["current_voters"])) == (0, 0, 0, 1)
        assert len(resp["nodes"]) == (1 if version >= 2 else 0)
    elif key == ApiKey.DESCRIBE_TOPIC_PARTITIONS:
        (t,) = resp["topics"]
        assert (t["error_code"], t["name"], len(t["partitions"]), resp["next_cursor"]) == (0, TOPIC, 1, None)
    elif key == ApiKey.LIST_CONFIG_RESOURCES:
        assert resp["error_code"] == 0
        listed = [(r["resource_type"], r["resource_name"]) for r in resp["config_resources"]]
        assert listed == ([] if version == 0 else [(4, "0"), (2, TOPIC)])


def test_every_advertised_version_of_the_admin_apis(module_broker) -> None:
    host, port = module_broker.bootstrap.rsplit(":", 1)

    async def go() -> list[tuple[ApiKey, int]]:
        from client import Admin, Producer

        async with Admin(module_broker.bootstrap) as admin:
            await admin.create_topic(TOPIC)
        async with Producer(module_broker.bootstrap) as producer:
            for _ in range(5):
                await producer.send(TOPIC, b"x", partition=0)
        conn = await BrokerConnection.connect(host, int(port))
        done = []
        try:
            for key, body in REQUESTS.items():
                lo, hi = SUPPORTED_VERSIONS[key]
                assert conn.api_versions[key] == (lo, hi)
                for version in range(lo, hi + 1):
                    resp = await conn.request(key, version, body)
                    check(key, version, resp)
                    done.append((key, version))
        finally:
            await conn.close()
        return done

    done = asyncio.run(go())
    assert len(done) == sum(SUPPORTED_VERSIONS[k][1] - SUPPORTED_VERSIONS[k][0] + 1 for k in REQUESTS) == 46


@pytest.mark.parametrize("key", list(REQUESTS))
def test_ranges_are_kafka_42s(key: ApiKey) -> None:
    expected = {ApiKey.CREATE_PARTITIONS: (0, 3), ApiKey.DELETE_RECORDS: (0, 2), ApiKey.DESCRIBE_CONFIGS: (0, 4),
                ApiKey.ALTER_CONFIGS: (0, 2), ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
                ApiKey.DESCRIBE_CLUSTER: (0, 2), ApiKey.DESCRIBE_LOG_DIRS: (0, 4),
                ApiKey.OFFSET_FOR_LEADER_EPOCH: (0, 4), ApiKey.ELECT_LEADERS: (0, 2),
                ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0), ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 1),
                ApiKey.DESCRIBE_PRODUCERS: (0, 0), ApiKey.UPDATE_FEATURES: (0, 2),
                ApiKey.DESCRIBE_QUORUM: (0, 2), ApiKey.DESCRIBE_TOPIC_PARTITIONS: (0, 0),
                ApiKey.LIST_CONFIG_RESOURCES: (0, 1)}
    assert SUPPORTED_VERSIONS[key] == expected[key]
