"""``__consumer_offsets`` and ``__transaction_state`` exist only as their coordinators create
them (their partition count, ``cleanup.policy=compact``): a client's Metadata auto-creation gets
the coordinator's layout, CreateTopics and CreatePartitions are refused, and config changes that
would let retention delete them are refused — against a real broker process."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from client.protocol.api import ApiKey, ErrorCode
from tests.broker_process import BrokerProcess
from tests.server.wire import Conn, create_topic, metadata

TOPIC_RESOURCE = 2
#: a small layout so the tests can tell the coordinators' counts from num.partitions (1)
BROKER_OVERRIDES = ["offsets.topic.num.partitions=7", "transaction.state.log.num.partitions=5"]


@pytest.fixture
def broker(tmp_path) -> Iterator[BrokerProcess]:
    b = BrokerProcess(str(tmp_path / "data"), overrides=BROKER_OVERRIDES).start()
    try:
        yield b
    finally:
        assert b.stop() == 0, b.log_text()


def _topic_configs(c: Conn, name: str) -> dict[str, str]:
    r = c.call(ApiKey.DESCRIBE_CONFIGS, 4, {"resources": [
        {"resource_type": TOPIC_RESOURCE, "resource_name": name, "configuration_keys": None}],
        "include_synonyms": False, "include_documentation": False})
    assert r["results"][0]["error_code"] == 0, r
    return {e["name"]: e["value"] for e in r["results"][0]["configs"]}


def _commit(c: Conn, group: str, topic: str, offset: int) -> list[int]:
    r = c.call(ApiKey.OFFSET_COMMIT, 8, {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                                         "group_instance_id": None, "topics": [{"name": topic, "partitions": [
                                             {"partition_index": 0, "committed_offset": offset,
                                              "committed_leader_epoch": -1, "committed_metadata": ""}]}]})
    return [p["error_code"] for t in r["topics"] for p in t["partitions"]]


@pytest.mark.parametrize("name, partitions", [("__consumer_offsets", 7), ("__transaction_state", 5)])
def test_metadata_auto_creation_uses_the_coordinators_layout(broker: BrokerProcess, name: str,
                                                             partitions: int) -> None:
    """Metadata v9 with allow_auto_topic_creation naming an internal topic creates it as its
    coordinator would (Kafka's AutoTopicCreationManager does the same), not with num.partitions
    (1); groups then find their coordinator and commit (before: the topic got 1 partition and
    every group hashed to another one answered COORDINATOR_NOT_AVAILABLE)."""
    with Conn(broker.port) as c:
        r = c.call(ApiKey.METADATA, 9, metadata([name]))
        t = r["topics"][0]
        assert (t["error_code"], t["is_internal"], len(t["partitions"])) == (0, True, partitions)
        configs = _topic_configs(c, name)
        assert configs["cleanup.policy"] == "compact"
        assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("data", 1))["topics"][0]["error_code"] == 0
        for i in range(20):  # groups over most of the partitions
            group = f"group-{i}"
            found = c.call(ApiKey.FIND_COORDINATOR, 3, {"key": group, "key_type": 0})
            assert found["error_code"] == 0, found
            assert _commit(c, group, "data", i) == [0]
        fetched = c.call(ApiKey.OFFSET_FETCH, 7, {"group_id": "group-19", "topics": [
            {"name": "data", "partition_indexes": [0]}], "require_stable": False})
        assert fetched["topics"][0]["partitions"][0]["committed_offset"] == 19


@pytest.mark.parametrize("name", ["__consumer_offsets", "__transaction_state"])
def test_create_topics_of_an_internal_topic_is_refused(broker: BrokerProcess, name: str) -> None:
    """CreateTopics naming an internal topic that does not exist: INVALID_REQUEST (Kafka's answer
    for its internal ``__cluster_metadata``), nothing created; the coordinator then creates it
    with its own layout. Once it exists: TOPIC_ALREADY_EXISTS."""
    with Conn(broker.port) as c:
        for validate_only in (True, False):
            body = create_topic(name, 1)
            body["validate_only"] = validate_only
            r = c.call(ApiKey.CREATE_TOPICS, 5, body)["topics"][0]
            assert r["error_code"] == ErrorCode.INVALID_REQUEST, r
            assert "internal topic" in r["error_message"]
        assert c.call(ApiKey.METADATA, 9, metadata([name], auto_create=False))["topics"][0]["error_code"] == \
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert c.call(ApiKey.FIND_COORDINATOR, 3, {"key": "k", "key_type": 0 if "offsets" in name else 1}
                      )["error_code"] == 0
        assert len(c.call(ApiKey.METADATA, 9, metadata([name]))["topics"][0]["partitions"]) == \
            (7 if "offsets" in name else 5)
        r = c.call(ApiKey.CREATE_TOPICS, 5, create_topic(name, 1))["topics"][0]
        assert r["error_code"] == ErrorCode.TOPIC_ALREADY_EXISTS, r


def test_create_partitions_of_an_internal_topic_is_refused(broker: BrokerProcess) -> None:
    """More partitions would move groups to other partitions at the next start: INVALID_REQUEST."""
    with Conn(broker.port) as c:
        c.call(ApiKey.FIND_COORDINATOR, 3, {"key": "g", "key_type": 0})
        r = c.call(ApiKey.CREATE_PARTITIONS, 3, {"topics": [{"name": "__consumer_offsets", "count": 9,
                                                            "assignments": None}],
                                                 "timeout_ms": 5000, "validate_only": False})
        assert r["results"][0]["error_code"] == ErrorCode.INVALID_REQUEST, r
        assert len(c.call(ApiKey.METADATA, 9, metadata(["__consumer_offsets"]))["topics"][0]["partitions"]) == 7


def _alter(c: Conn, name: str, configs: dict[str, str | None]) -> dict[str, Any]:
    r = c.call(ApiKey.ALTER_CONFIGS, 2, {"resources": [{"resource_type": TOPIC_RESOURCE, "resource_name": name,
                                                        "configs": [{"name": k, "value": v}
                                                                    for k, v in configs.items()]}],
                                         "validate_only": False})
    return r["responses"][0]  # type: ignore[no-any-return]


def _incremental(c: Conn, name: str, ops: list[tuple[str, int, str | None]]) -> dict[str, Any]:
    r = c.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [
        {"resource_type": TOPIC_RESOURCE, "resource_name": name,
         "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops]}], "validate_only": False})
    return r["responses"][0]  # type: ignore[no-any-return]


SET, DELETE, APPEND = 0, 1, 2


@pytest.mark.parametrize("name", ["__consumer_offsets", "__transaction_state"])
def test_config_changes_that_would_delete_internal_state_are_refused(broker: BrokerProcess, name: str) -> None:
    """cleanup.policy=delete (or compact,delete, or dropping the override so the broker's
    log.cleanup.policy=delete applies) would let retention.ms / retention.bytes delete the
    coordinators' records: INVALID_CONFIG with a message naming the topic, and the topic keeps
    cleanup.policy=compact. Harmless changes still apply."""
    with Conn(broker.port) as c:
        c.call(ApiKey.FIND_COORDINATOR, 3, {"key": "k", "key_type": 0 if "offsets" in name else 1})
        refused = [
            _alter(c, name, {"cleanup.policy": "delete", "retention.ms": "1000"}),
            _alter(c, name, {"retention.bytes": "1"}),  # AlterConfigs replaces all: the override goes
            _incremental(c, name, [("cleanup.policy", SET, "delete")]),
            _incremental(c, name, [("cleanup.policy", APPEND, "delete")]),
            _incremental(c, name, [("cleanup.policy", DELETE, None), ("retention.ms", SET, "1000")]),
        ]
        for r in refused:
            assert r["error_code"] == ErrorCode.INVALID_CONFIG, r
            assert name in r["error_message"] and "compact" in r["error_message"], r
        assert _topic_configs(c, name)["cleanup.policy"] == "compact"
        assert _incremental(c, name, [("retention.ms", SET, "1000")])["error_code"] == 0
        assert _topic_configs(c, name)["retention.ms"] == "1000"
