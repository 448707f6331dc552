"""broker/dynamic_config.py: dynamic broker configs (scopes, validation, persistence) and the
DescribeConfigs rules for sources and synonyms, as Kafka reports them."""

from __future__ import annotations

import pytest

from broker.config import BrokerConfig
from broker.dynamic_config import DynamicBrokerConfig, DynamicConfigError
from broker.storage.config import LogConfig

TOPIC, DYN_BROKER, DYN_DEFAULT, STATIC, DEFAULT = 1, 2, 3, 4, 5


def make(tmp_path, **props: str) -> DynamicBrokerConfig:
    cfg = BrokerConfig.load(extra={"log.dirs": str(tmp_path), **props})
    return DynamicBrokerConfig(cfg, str(tmp_path))


def by_name(entries):
    return {e.name: e for e in entries}


def test_topic_sources_and_synonyms_follow_kafka(tmp_path) -> None:
    d = make(tmp_path, **{"log.segment.bytes": "2000000", "log.retention.hours": "2"})
    topic = by_name(d.describe_topic({"max.message.bytes": "5000"},
                                     d.log_config().with_overrides({"max.message.bytes": "5000"})))
    assert topic["max.message.bytes"].source == TOPIC
    assert topic["max.message.bytes"].synonyms == [("max.message.bytes", "5000", TOPIC),
                                                   ("message.max.bytes", "1048588", DEFAULT)]
    assert topic["segment.bytes"].value == "2000000" and topic["segment.bytes"].source == STATIC
    assert topic["segment.bytes"].synonyms == [("log.segment.bytes", "2000000", STATIC),
                                               ("log.segment.bytes", "1073741824", DEFAULT)]
    # Kafka's quirk: retention.ms follows log.retention.ms only; log.retention.hours gives the
    # value, but the source is DEFAULT_CONFIG and there are no synonyms
    assert topic["retention.ms"].value == str(2 * 3600_000)
    assert (topic["retention.ms"].source, topic["retention.ms"].synonyms) == (DEFAULT, [])
    # a config with no broker synonym
    assert (topic["remote.storage.enable"].source, topic["remote.storage.enable"].synonyms) == (DEFAULT, [])
    assert topic["cleanup.policy"].config_type == 7 and topic["retention.ms"].config_type == 5
    assert "larger than this" in topic["retention.bytes"].documentation


def test_broker_entries_derived_properties_are_default_config(tmp_path) -> None:
    d = make(tmp_path, **{"listeners": "PLAINTEXT://127.0.0.1:9999", "log.retention.hours": "2"})
    broker = by_name(d.describe_broker(True))
    assert (broker["listeners"].source, broker["listeners"].read_only) == (STATIC, True)
    assert (broker["advertised.listeners"].value, broker["advertised.listeners"].source) == (None, DEFAULT)
    assert (broker["broker.id"].value, broker["broker.id"].source) == ("0", DEFAULT)
    assert broker["log.retention.ms"].value is None and broker["log.retention.ms"].source == DEFAULT
    assert broker["log.retention.hours"].synonyms == [("log.retention.hours", "2", STATIC),
                                                      ("log.retention.hours", "168", DEFAULT)]
    assert broker["log.retention.hours"].read_only and not broker["log.retention.ms"].read_only
    assert broker["log.retention.hours"].config_type == 3  # INT, as in Kafka


def test_dynamic_scopes_precedence_validation_and_persistence(tmp_path) -> None:
    d = make(tmp_path, **{"log.retention.ms": "1000"})
    assert d.check_resource("0") is True and d.check_resource("") is False
    with pytest.raises(DynamicConfigError, match="expected 0, but received 3") as e:
        d.check_resource("3")
    assert e.value.error_code == 42
    with pytest.raises(DynamicConfigError, match=r"Cannot update these configs dynamically: Set\(num.partitions\)"):
        d.apply(True, {"num.partitions": "3"})
    with pytest.raises(DynamicConfigError, match="Not a number of type LONG") as e:
        d.apply(True, {"log.retention.ms": "soon"})
    assert e.value.error_code == 42  # INVALID_REQUEST: Kafka's answer to a bad broker config value
    assert d.apply(False, {"log.retention.ms": "2000", "log.segment.bytes": "300000"}).retention_ms == 2000
    cfg: LogConfig = d.apply(True, {"log.retention.ms": "3000"})
    assert (cfg.retention_ms, cfg.segment_bytes) == (3000, 300000)
    entry = by_name(d.describe_broker(True))["log.retention.ms"]
    assert (entry.value, entry.source) == ("3000", DYN_BROKER)
    assert entry.synonyms == [("log.retention.ms", "3000", DYN_BROKER), ("log.retention.ms", "2000", DYN_DEFAULT),
                              ("log.retention.ms", "1000", STATIC), ("log.retention.hours", "168", DEFAULT)]
    default_scope = by_name(d.describe_broker(False))
    assert sorted(default_scope) == ["log.retention.ms", "log.segment.bytes"]
    assert default_scope["log.retention.ms"].synonyms == [("log.retention.ms", "2000", DYN_DEFAULT)]
    again = make(tmp_path, **{"log.retention.ms": "1000"})  # a restart reads them back
    assert (again.per_broker, again.cluster_default) == (d.per_broker, d.cluster_default)
    assert again.log_config().retention_ms == 3000


def test_altering_the_broker_resource_over_the_wire_answers_as_kafka(tmp_path) -> None:
    """IncrementalAlterConfigs and AlterConfigs on the broker resource, against a broker process:
    a bad value of a dynamic config, a timer property (read-only here) at a value that would
    spin and another broker's id are INVALID_REQUEST, as Kafka answers for the broker resource
    (KAFKA-13609); a topic's bad value stays INVALID_CONFIG; nothing bad is applied."""
    from client.protocol.api import ApiKey
    from tests.broker_process import BrokerProcess
    from tests.server.wire import Conn, create_topic

    def incremental(rtype: int, name: str, key: str, value: str) -> dict:
        return {"resources": [{"resource_type": rtype, "resource_name": name, "configs": [
            {"name": key, "config_operation": 0, "value": value}]}], "validate_only": False}

    with BrokerProcess(str(tmp_path / "d")) as b, Conn(b.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("t"))["topics"][0]["error_code"] == 0
        cases = [
            (4, "0", "log.retention.ms", "soon", 42, "Invalid value soon for configuration log.retention.ms"),
            (4, "", "log.segment.bytes", "12", 42, "Invalid value 12 for configuration log.segment.bytes"),
            (4, "0", "log.cleaner.backoff.ms", "0", 42, "Cannot update these configs dynamically"),
            (4, "0", "connections.max.idle.ms", "1", 42, "Cannot update these configs dynamically"),
            (4, "7", "log.retention.ms", "1000", 42, "expected 0, but received 7"),
            (2, "t", "retention.ms", "soon", 40, "Invalid value soon for configuration retention.ms"),
        ]
        for rtype, name, key, value, code, message in cases:
            for api, version, body in (
                    (ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, incremental(rtype, name, key, value)),
                    (ApiKey.ALTER_CONFIGS, 2, {"resources": [{"resource_type": rtype, "resource_name": name,
                                                              "configs": [{"name": key, "value": value}]}],
                                               "validate_only": False})):
                got = c.call(api, version, body)["responses"][0]
                assert (got["error_code"], key) == (code, key), got
                assert message in got["error_message"], got
        described = c.call(ApiKey.DESCRIBE_CONFIGS, 4, {"resources": [
            {"resource_type": 4, "resource_name": "0", "configuration_keys": ["log.retention.ms", "log.segment.bytes",
                                                                               "log.cleaner.backoff.ms"]}],
            "include_synonyms": False, "include_documentation": False})
        values = {e["name"]: e["value"] for e in described["results"][0]["configs"]}
        assert values == {"log.retention.ms": None, "log.segment.bytes": "1073741824",
                          "log.cleaner.backoff.ms": "15000"}
