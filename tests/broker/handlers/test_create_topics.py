"""CreateTopics and Metadata's auto-creation against a broker process: topic names that differ
only by '.' and '_' collide (Kafka's controller refuses the second, INVALID_TOPIC_EXCEPTION
"Topic 'a_b' collides with existing topic: a.b"; auto-creation leaves it unknown)."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode
from tests.broker_process import BrokerProcess
from tests.server.wire import Conn, create_topic, metadata


def _create(c: Conn, name: str, *, validate_only: bool = False, version: int = 5) -> dict[str, Any]:
    body = create_topic(name, 1)
    body["validate_only"] = validate_only
    (t,) = c.call(ApiKey.CREATE_TOPICS, version, body)["topics"]
    return t


def test_names_differing_only_by_dot_and_underscore_collide(broker: BrokerProcess) -> None:
    """CreateTopics (v0-7, validate_only too) refuses a name equal to an existing topic's once
    '.' is made '_' with INVALID_TOPIC_EXCEPTION and Kafka's message; Metadata's auto-creation
    creates nothing and answers UNKNOWN_TOPIC_OR_PARTITION, as Kafka's does (its controller's
    refusal reaches only its log); the same name again is TOPIC_ALREADY_EXISTS."""
    with Conn(broker.port) as c:
        assert _create(c, "a.b")["error_code"] == 0
        for version in (0, 4, 7):
            for validate_only in (False, True) if version else (False,):
                t = _create(c, "a_b", validate_only=validate_only, version=version)
                assert t["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION, (version, t)
                if version >= 1:
                    assert t["error_message"] == "Topic 'a_b' collides with existing topic: a.b"
        assert _create(c, "a.b")["error_code"] == ErrorCode.TOPIC_ALREADY_EXISTS
        assert _create(c, "a-b")["error_code"] == 0
        for version in (4, 12):
            r = c.call(ApiKey.METADATA, version, metadata(["a_b", "c.d"]))
            assert {t["name"]: t["error_code"] for t in r["topics"]} == {
                "a_b": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "c.d": 0}
        r = c.call(ApiKey.METADATA, 12, metadata(None))
        assert sorted(t["name"] for t in r["topics"]) == ["a-b", "a.b", "c.d"]
        assert _create(c, "c_d")["error_message"] == "Topic 'c_d' collides with existing topic: c.d"
        deleted = c.call(ApiKey.DELETE_TOPICS, 4, {"topic_names": ["a.b"], "timeout_ms": 5000})
        assert deleted["responses"][0]["error_code"] == 0
        assert _create(c, "a_b")["error_code"] == 0  # free once a.b is gone
