"""AlterReplicaLogDirs over a real socket, every version: with one log directory nothing moves,
and each partition gets Kafka's answer (NONE where it already is, LOG_DIR_NOT_FOUND for another
path, REPLICA_NOT_AVAILABLE for a partition not hosted, INVALID_TOPIC_EXCEPTION for a name too
long to move)."""

from __future__ import annotations

import os

import pytest

from client.protocol.api import ApiKey, ErrorCode

from .wire import Conn, create_topic


@pytest.mark.parametrize("version", [0, 1, 2])
def test_one_log_dir_nothing_moves(module_broker, tmp_path, version: int) -> None:
    topic = f"ardirs-{version}"
    long_topic = str(version) + "l" * 248  # 249 characters, the most a topic name may have
    with Conn(module_broker.port) as c:
        for name in (topic, long_topic):
            assert c.call(ApiKey.CREATE_TOPICS, 4, create_topic(name, 2))["topics"][0]["error_code"] == 0
        log_dir = module_broker.data_dir
        spelled_otherwise = os.path.join(log_dir, "..", os.path.basename(log_dir))
        r = c.call(ApiKey.ALTER_REPLICA_LOG_DIRS, version, {"dirs": [
            {"path": spelled_otherwise, "topics": [{"name": topic, "partitions": [0, 1, 7]}]},
            {"path": str(tmp_path / "elsewhere"), "topics": [{"name": topic, "partitions": [0]}]},
            {"path": log_dir, "topics": [{"name": long_topic, "partitions": [0]}, {"name": "nope", "partitions": [0]}]},
        ]})
    got = {(t["topic_name"], p["partition_index"], i): p["error_code"]
           for t in r["results"] for i, p in enumerate(t["partitions"])}
    assert got == {
        (topic, 0, 0): ErrorCode.NONE, (topic, 1, 1): ErrorCode.NONE,
        (topic, 7, 2): ErrorCode.REPLICA_NOT_AVAILABLE, (topic, 0, 3): ErrorCode.LOG_DIR_NOT_FOUND,
        (long_topic, 0, 0): ErrorCode.INVALID_TOPIC_EXCEPTION, ("nope", 0, 0): ErrorCode.REPLICA_NOT_AVAILABLE,
    }
