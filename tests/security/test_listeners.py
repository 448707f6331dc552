"""broker/security/listeners.py: ``listeners`` / ``listener.security.protocol.map`` /
``advertised.listeners`` parsing, and the start-up errors ``BrokerConfig.load`` gives for
listener and per-listener security properties that cannot be used (each names the property)."""

from __future__ import annotations

import pytest

from broker.config import BrokerConfig, ConfigError
from broker.security.listeners import (
    DEFAULT_PROTOCOL_MAP,
    EndPoint,
    ListenerError,
    listener_property,
    parse_endpoints,
    parse_protocol_map,
)

DEFAULT_MAP = parse_protocol_map(DEFAULT_PROTOCOL_MAP)


def test_default_protocol_map_maps_each_protocol_to_itself() -> None:
    assert DEFAULT_MAP == {p: p for p in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")}


def test_parse_endpoints_names_hosts_ports_and_protocols() -> None:
    eps = parse_endpoints("PLAINTEXT://127.0.0.1:9092, sasl_ssl://:9094,SSL://[::1]:9093", "listeners",
                          DEFAULT_MAP, "0.0.0.0")
    assert eps == [EndPoint("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT"),
                   EndPoint("SASL_SSL", "0.0.0.0", 9094, "SASL_SSL"),
                   EndPoint("SSL", "::1", 9093, "SSL")]
    assert [(e.tls, e.sasl) for e in eps] == [(False, False), (True, True), (True, False)]
    assert str(eps[2]) == "SSL://[::1]:9093"


def test_bare_host_port_is_plaintext_and_custom_names_use_the_map() -> None:
    assert parse_endpoints("localhost:1234", "listeners", DEFAULT_MAP) == [
        EndPoint("PLAINTEXT", "localhost", 1234, "PLAINTEXT")]
    protocols = parse_protocol_map("internal:SASL_PLAINTEXT, EXTERNAL:ssl")
    assert protocols == {"INTERNAL": "SASL_PLAINTEXT", "EXTERNAL": "SSL"}
    eps = parse_endpoints("INTERNAL://h:1,external://h:2", "listeners", protocols)
    assert [(e.name, e.security_protocol) for e in eps] == [("INTERNAL", "SASL_PLAINTEXT"), ("EXTERNAL", "SSL")]


@pytest.mark.parametrize("value, message", [
    ("PLAINTEXT://127.0.0.1", "missing port"),
    ("PLAINTEXT://127.0.0.1:99999", "invalid listener"),
    ("PLAINTEXT://[::1:9092", "invalid listener"),
    ("CLIENT://127.0.0.1:9092", "no security protocol defined for listener CLIENT"),
    ("PLAINTEXT://a:1,plaintext://b:2", "PLAINTEXT is used twice"),
    ("BAD$NAME://a:1", "invalid listener name"),
    ("", "no listener given"),
])
def test_parse_endpoints_errors_name_the_property(value: str, message: str) -> None:
    with pytest.raises(ListenerError, match="^listeners: .*" + message.replace("$", r"\$")):
        parse_endpoints(value, "listeners", {**DEFAULT_MAP, "BAD$NAME": "PLAINTEXT"})


@pytest.mark.parametrize("value, message", [
    ("PLAINTEXT", "expected NAME:PROTOCOL"),
    (":SSL", "expected NAME:PROTOCOL"),
    ("CLIENT:KERBEROS", "unknown security protocol 'KERBEROS' for listener CLIENT"),
])
def test_protocol_map_errors(value: str, message: str) -> None:
    with pytest.raises(ListenerError, match="listener.security.protocol.map: " + message):
        parse_protocol_map(value)


def test_listener_property_prefers_the_listener_prefixed_value() -> None:
    props = {"ssl.client.auth": "none", "listener.name.internal.ssl.client.auth": "required"}
    assert listener_property(props, "INTERNAL", "ssl.client.auth") == "required"
    assert listener_property(props, "EXTERNAL", "ssl.client.auth") == "none"
    assert listener_property(props, "EXTERNAL", "ssl.keystore.type", "PEM") == "PEM"


# ------------------------------------------------------------------ BrokerConfig.load


def load(tmp_path, *overrides: str) -> BrokerConfig:
    return BrokerConfig.load(overrides=[f"log.dirs={tmp_path}", *overrides])


PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a";'


def test_config_with_several_listeners_loads(tmp_path) -> None:
    cfg = load(tmp_path, "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:9095",
               "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
               f"listener.name.sasl_plaintext.plain.sasl.jaas.config={PLAIN_JAAS}",
               "advertised.listeners=SASL_PLAINTEXT://broker.example:19095")
    assert [e.name for e in cfg.endpoints] == ["PLAINTEXT", "SASL_PLAINTEXT"]
    adv = cfg.advertised_endpoints
    assert adv["SASL_PLAINTEXT"] == EndPoint("SASL_PLAINTEXT", "broker.example", 19095, "SASL_PLAINTEXT")
    assert adv["PLAINTEXT"].host == "127.0.0.1"  # its own address


@pytest.mark.parametrize("overrides, message", [
    (["listeners=PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9092"], "each listener must have a different port"),
    (["listeners=PLAINTEXT://127.0.0.1:9092,PLAINTEXT://127.0.0.1:9093"], "PLAINTEXT is used twice"),
    (["listeners=CLIENT://127.0.0.1:9092"], "no security protocol defined for listener CLIENT"),
    (["listeners=CLIENT://127.0.0.1:9092", "listener.security.protocol.map=CLIENT:TLS"],
     "unknown security protocol 'TLS'"),
    (["listeners=PLAINTEXT://127.0.0.1:9092", "advertised.listeners=SSL://h:9093"],
     "every advertised listener must be one of listeners"),
    (["listeners=PLAINTEXT://127.0.0.1:nope"], "listeners: invalid listener"),
])
def test_bad_listeners_are_refused(tmp_path, overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load(tmp_path, *overrides)


def test_ssl_listener_without_keystore_is_refused(tmp_path) -> None:
    with pytest.raises(ConfigError, match="listener SSL: .*needs ssl.keystore.location"):
        load(tmp_path, "listeners=SSL://127.0.0.1:0")


def test_gssapi_default_is_refused_with_how_to_choose(tmp_path) -> None:
    with pytest.raises(ConfigError) as e:
        load(tmp_path, "listeners=SASL_PLAINTEXT://127.0.0.1:0")
    msg = str(e.value)
    assert "GSSAPI" in msg and "Kerberos is not available" in msg
    assert "sasl.enabled.mechanisms" in msg and "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER" in msg


def test_unknown_mechanism_and_empty_mechanisms_are_refused(tmp_path) -> None:
    with pytest.raises(ConfigError, match="SASL mechanism DIGEST-MD5 is not supported"):
        load(tmp_path, "listeners=SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms=DIGEST-MD5")
    with pytest.raises(ConfigError, match="sasl.enabled.mechanisms is empty"):
        load(tmp_path, "listeners=SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms= ")


def test_plain_without_jaas_is_refused_naming_the_property(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"PLAIN needs its users: set listener\.name\.sasl_plaintext\.plain\."
                                          r"sasl\.jaas\.config="):
        load(tmp_path, "listeners=SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms=PLAIN")


def test_bad_jaas_is_refused_without_repeating_its_values(tmp_path) -> None:
    bad = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="s3cret"'  # no ;
    with pytest.raises(ConfigError, match="must end with ';'") as e:
        load(tmp_path, "listeners=SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms=PLAIN",
             f"listener.name.sasl_plaintext.plain.sasl.jaas.config={bad}")
    assert "s3cret" not in str(e.value)


def test_scram_and_unsecured_oauthbearer_need_no_jaas(tmp_path) -> None:
    load(tmp_path, "listeners=SASL_PLAINTEXT://127.0.0.1:0",
         "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER")
