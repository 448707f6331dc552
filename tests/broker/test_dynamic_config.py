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
    # Kafka's read_only is "not one of its dynamic names": listeners is one (KRaft refuses a change)
    assert (broker["listeners"].source, broker["listeners"].read_only) == (STATIC, False)
    assert broker["num.partitions"].read_only
    assert (broker["advertised.listeners"].value, broker["advertised.listeners"].source) == (None, DEFAULT)
    assert (broker["broker.id"].value, broker["broker.id"].source) == ("0", DEFAULT)
    assert broker["advertised.listeners"].config_type == 2 and not broker["advertised.listeners"].synonyms
    assert broker["log.retention.ms"].value is None and broker["log.retention.ms"].source == DEFAULT
    assert broker["log.retention.hours"].synonyms == [("log.retention.hours", "2", STATIC),
                                                      ("log.retention.hours", "168", DEFAULT)]
    assert broker["log.retention.hours"].read_only and not broker["log.retention.ms"].read_only
    assert broker["log.retention.hours"].config_type == 3  # INT, as in Kafka


def test_advertised_listeners_is_read_only_as_in_kafka_4(tmp_path) -> None:
    """Kafka 4 (KRaft) describes advertised.listeners read-only, set or not (kafka-python's
    integration suite, test_describe_configs_broker_resource_returns_configs); Kafka 3's
    ZooKeeper brokers could change it, and described it writable."""
    for props in ({}, {"listeners": "PLAINTEXT://127.0.0.1:9999", "advertised.listeners": "PLAINTEXT://h:9999"}):
        d = make(tmp_path, **props)
        entry = by_name(d.describe_broker(True))["advertised.listeners"]
        assert entry.read_only and entry.value == (props.get("advertised.listeners"))
        assert entry.source == (STATIC if props else DEFAULT)


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


def test_security_configs_per_broker_stored_described_and_read_back(tmp_path) -> None:
    """Kafka's dynamic listener, TLS and SASL configs (KIP-226): accepted for this broker, kept
    in the file and described as DYNAMIC_BROKER_CONFIG; Kerberos ones (minibroker has no
    Kerberos) are stored and described only."""
    d = make(tmp_path)
    entry = by_name(d.describe_broker(True))["sasl.kerberos.min.time.before.relogin"]
    assert (entry.value, entry.source, entry.read_only, entry.config_type) == ("60000", DEFAULT, False, 5)
    d.apply(True, {"sasl.kerberos.min.time.before.relogin": "58000",
                   "listener.name.plaintext.sasl.kerberos.min.time.before.relogin": "1000",
                   "listener.name.plaintext.scram-sha-256.sasl.jaas.config": "x required;"})
    broker = by_name(d.describe_broker(True))
    entry = broker["sasl.kerberos.min.time.before.relogin"]
    assert (entry.value, entry.source) == ("58000", DYN_BROKER)
    assert entry.synonyms == [("sasl.kerberos.min.time.before.relogin", "58000", DYN_BROKER),
                              ("sasl.kerberos.min.time.before.relogin", "60000", DEFAULT)]
    # a listener's own value: its synonyms go on to the config it overrides (Kafka's brokerConfigSynonyms)
    prefixed = broker["listener.name.plaintext.sasl.kerberos.min.time.before.relogin"]
    assert prefixed.synonyms == [("listener.name.plaintext.sasl.kerberos.min.time.before.relogin", "1000", DYN_BROKER),
                                 ("sasl.kerberos.min.time.before.relogin", "58000", DYN_BROKER),
                                 ("sasl.kerberos.min.time.before.relogin", "60000", DEFAULT)]
    assert prefixed.config_type == 5 and prefixed.read_only  # Kafka: not one of its (unprefixed) dynamic names
    jaas = broker["listener.name.plaintext.scram-sha-256.sasl.jaas.config"]  # PASSWORD: never shown
    assert (jaas.value, jaas.source, jaas.config_type, jaas.synonyms) == (
        None, DYN_BROKER, 9, [("listener.name.plaintext.scram-sha-256.sasl.jaas.config", None, DYN_BROKER)])
    again = make(tmp_path)
    assert again.per_broker == d.per_broker
    assert by_name(again.describe_broker(True))["sasl.kerberos.min.time.before.relogin"].value == "58000"
    assert by_name(d.describe_broker(False)) == {}  # nothing at the cluster default


@pytest.mark.parametrize("per_broker,values,message", [
    (False, {"sasl.kerberos.min.time.before.relogin": "58000"}, "Cannot update these configs at default cluster"
     r" level, broker id must be specified: Set\(sasl.kerberos.min.time.before.relogin\)"),
    (False, {"listener.name.plaintext.ssl.keystore.location": "/k"}, "at default cluster level"),
    (True, {"ssl.keystore.location": "/k", "ssl.truststore.type": "PEM"}, "These security configs can be dynamically"
     r" updated only per-listener using the listener prefix: Set\(ssl.keystore.location, ssl.truststore.type\)"),
    (True, {"sasl.kerberos.min.time.before.relogin": "soon"},
     "Invalid value soon for configuration sasl.kerberos.min.time.before.relogin: Not a number of type LONG"),
    (True, {"listener.name.plaintext.sasl.login.refresh.buffer.seconds": "40000"},
     "Invalid value 40000 for configuration sasl.login.refresh.buffer.seconds: Not a number of type SHORT"),
    (True, {"listener.name.plaintext.num.partitions": "3"}, "Cannot update these configs dynamically"),
    (False, {"background.threads": "30"}, "Dynamic thread count update validation failed for background.threads=30,"
     " value should not be greater than double the current value 10"),
    (True, {"num.io.threads": "3"}, "value should be at least half the current value 8"),
    (False, {"max.connections": "-1"}, "Invalid value -1 for configuration max.connections: Value must be at least 0"),
    (True, {"advertised.listeners": "PLAINTEXT://h:1"},
     r"Cannot update these configs dynamically: Set\(advertised.listeners\)"),
    (True, {"listeners": "PLAINTEXT://127.0.0.1:9998"}, "Advertised listeners cannot be altered when using a"
     " Raft-based metadata quorum."),
    (True, {"listener.security.protocol.map": "PLAINTEXT:SSL"}, "Security protocol cannot be updated for existing"
     " listener PLAINTEXT"),
])
def test_dynamic_security_and_cluster_configs_are_validated_as_kafka(tmp_path, per_broker, values, message) -> None:
    d = make(tmp_path, listeners="PLAINTEXT://127.0.0.1:9999")
    with pytest.raises(DynamicConfigError, match=message) as e:
        d.apply(per_broker, values)
    assert e.value.error_code == 42
    assert (d.per_broker, d.cluster_default) == ({}, {})


def test_cluster_wide_configs_and_listener_checks(tmp_path) -> None:
    """Thread pools and connection limits may be set cluster-wide; a SASL change is checked by
    building the listeners from it (what the next start does), so GSSAPI is refused."""
    d = make(tmp_path, **{"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "SCRAM-SHA-256"})
    seen: list[dict] = []
    d.on_change = lambda props: seen.append(dict(props))
    d.apply(False, {"background.threads": "9", "max.connections": "50"})
    assert seen[-1]["max.connections"] == "50"
    assert by_name(d.describe_broker(False))["background.threads"].synonyms == [("background.threads", "9",
                                                                                   DYN_DEFAULT)]
    with pytest.raises(DynamicConfigError, match="SASL mechanism GSSAPI"):
        d.apply(True, {"sasl.enabled.mechanisms": "GSSAPI"})
    d.apply(True, {"sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256", "listeners": "SASL_PLAINTEXT://127.0.0.1:0"})
    assert d.effective_props()["sasl.enabled.mechanisms"] == "SCRAM-SHA-512,SCRAM-SHA-256"


def test_librdkafka_0081_broker_changes_over_the_wire(tmp_path) -> None:
    """What librdkafka's 0081 asks of the broker resource: AlterConfigs of
    sasl.kerberos.min.time.before.relogin, IncrementalAlterConfigs SET background.threads with
    APPEND to log.cleanup.policy, then DELETE and SUBTRACT; and a dynamic
    max.connections.per.ip limits new connections at once (Kafka's SocketServer reconfigures it)."""
    from client.protocol.api import ApiKey
    from tests.broker_process import BrokerProcess
    from tests.server.wire import Conn

    def incremental(*ops: tuple[str, int, str | None]) -> dict:
        return {"resources": [{"resource_type": 4, "resource_name": "0", "configs": [
            {"name": k, "config_operation": op, "value": v} for k, op, v in ops]}], "validate_only": False}

    def describe(c: Conn, *names: str) -> dict:
        got = c.call(ApiKey.DESCRIBE_CONFIGS, 4, {"resources": [
            {"resource_type": 4, "resource_name": "0", "configuration_keys": list(names)}],
            "include_synonyms": False, "include_documentation": False})
        return {e["name"]: (e["value"], e["config_source"]) for e in got["results"][0]["configs"]}

    with BrokerProcess(str(tmp_path / "d")) as b, Conn(b.port) as c:
        got = c.call(ApiKey.ALTER_CONFIGS, 2, {"resources": [{"resource_type": 4, "resource_name": "0", "configs": [
            {"name": "sasl.kerberos.min.time.before.relogin", "value": "58000"}]}], "validate_only": False})
        assert got["responses"][0]["error_code"] == 0, got
        assert describe(c, "sasl.kerberos.min.time.before.relogin") == {
            "sasl.kerberos.min.time.before.relogin": ("58000", DYN_BROKER)}
        got = c.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, incremental(("background.threads", 0, "9"),
                                                                      ("log.cleanup.policy", 2, "compact")))
        assert got["responses"][0]["error_code"] == 0, got
        assert describe(c, "background.threads", "log.cleanup.policy") == {
            "background.threads": ("9", DYN_BROKER), "log.cleanup.policy": ("delete,compact", DYN_BROKER)}
        got = c.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, incremental(("background.threads", 1, ""),
                                                                      ("log.cleanup.policy", 3, "compact")))
        assert got["responses"][0]["error_code"] == 0, got
        assert describe(c, "background.threads", "log.cleanup.policy") == {
            "background.threads": ("10", DEFAULT), "log.cleanup.policy": ("delete", DYN_BROKER)}
        got = c.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, incremental(("max.connections.per.ip", 0, "1")))
        assert got["responses"][0]["error_code"] == 0, got
        extra = Conn(b.port)
        assert extra.is_closed_by_peer(timeout=5)
        extra.close()
        got = c.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, incremental(("max.connections.per.ip", 1, None)))
        assert got["responses"][0]["error_code"] == 0, got
        with Conn(b.port) as again:
            assert describe(again, "max.connections.per.ip") == {"max.connections.per.ip": ("2147483647", DEFAULT)}


def test_stores_reload_alone_and_a_bad_file_entry_is_dropped_alone(tmp_path) -> None:
    """A running TLS listener takes the new key and trust stores but keeps its other TLS
    settings (Kafka's SslFactory); at start, an entry of the file that is no longer valid (an
    unprefixed keystore, accepted by older minibrokers) is dropped with the others kept."""
    from broker.dynamic_config import FILE, with_new_stores

    running = {"ssl.client.auth": "none", "listener.name.ssl.ssl.keystore.location": "/old",
               "listener.name.ssl.ssl.truststore.location": "/old-ca"}
    new = {"ssl.client.auth": "required", "listener.name.ssl.ssl.keystore.location": "/new",
           "listener.name.ssl.ssl.client.auth": "required"}
    assert with_new_stores(running, new) == {"ssl.client.auth": "none",
                                             "listener.name.ssl.ssl.keystore.location": "/new"}
    (tmp_path / FILE).write_text('{"version": 1, "broker": {"ssl.keystore.location": "/k", "log.retention.ms": "5",'
                                 ' "background.threads": "x"}, "default": {"sasl.kerberos.kinit.cmd": "k",'
                                 ' "num.io.threads": "4"}}')
    d = make(tmp_path)
    assert (d.per_broker, d.cluster_default) == ({"log.retention.ms": "5"}, {"num.io.threads": "4"})
