"""client/spark/options.py: parsing and Spark's messages for what it refuses (no Spark needed)."""

from __future__ import annotations

import re

import pytest

from client.spark.options import (
    Earliest,
    GlobalTimestamp,
    Latest,
    PartitionOffsets,
    PartitionTimestamps,
    parse_options,
)

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def opts(**kw: str) -> dict[str, str]:
    return {**BASE, **kw}


def test_defaults_subscribe() -> None:
    o = parse_options(opts(subscribe="a, b,"))
    assert o.strategy == "subscribe" and o.topics == ("a", "b")
    assert isinstance(o.starting, Earliest) and isinstance(o.ending, Latest)
    assert o.fail_on_data_loss and not o.include_headers
    assert o.min_partitions is None and o.max_records_per_partition is None


def test_names_are_case_insensitive_and_kafka_params_kept() -> None:
    o = parse_options({"KAFKA.BOOTSTRAP.SERVERS": "h:1", "SubscribePattern": "ev.*", "includeheaders": "TRUE",
                       "kafka.client.id": "x", "minpartitions": "4", "MAXRECORDSPERPARTITION": "10"})
    assert o.bootstrap_servers == "h:1" and o.strategy == "subscribePattern" and o.pattern == "ev.*"
    assert o.include_headers and o.kafka_params["client.id"] == "x"
    assert o.min_partitions == 4 and o.max_records_per_partition == 10


def test_assign_and_offsets_json() -> None:
    o = parse_options(opts(assign='{"t":[0,1]}', startingOffsets='{"t":{"0":5,"1":-2}}',
                           endingOffsets='{"t":{"0":9,"1":-1}}'))
    assert o.assign == (("t", 0), ("t", 1))
    assert o.starting == PartitionOffsets({("t", 0): 5, ("t", 1): -2})
    assert o.ending == PartitionOffsets({("t", 0): 9, ("t", 1): -1})


def test_timestamp_precedence() -> None:
    o = parse_options(opts(subscribe="t", startingTimestamp="1000", startingOffsetsByTimestamp='{"t":{"0":5}}',
                           startingOffsets="earliest"))
    assert o.starting == GlobalTimestamp(1000)
    o = parse_options(opts(subscribe="t", startingOffsetsByTimestamp='{"t":{"0":5}}', startingOffsets="earliest",
                           endingOffsetsByTimestamp='{"t":{"0":7}}'))
    assert o.starting == PartitionTimestamps({("t", 0): 5})
    assert o.ending == PartitionTimestamps({("t", 0): 7})
    assert parse_options(opts(subscribe="t", startingOffsetsByTimestampStrategy="LATEST")).timestamp_strategy_latest


@pytest.mark.parametrize("given,message", [
    ({"subscribe": "t"}, "Option 'kafka.bootstrap.servers' must be specified"),
    (opts(), "One of the following options must be specified for Kafka source: assign, subscribe, subscribePattern"),
    (opts(subscribe="t", assign='{"t":[0]}'), "Only one of the following options can be specified"),
    (opts(subscribe="t", subscribePattern="t.*"), "Only one of the following options can be specified"),
    (opts(subscribe=" , "), "No topics to subscribe to as specified value for option 'subscribe' is ' , '"),
    (opts(subscribePattern=" "), "Pattern to subscribe is empty"),
    (opts(assign="t:0"), "No topicpartitions to assign as specified value for option 'assign' is 't:0'"),
    (opts(assign='{"t":"x"}'), "Expected e.g."),
    (opts(subscribe="t", startingOffsets="latest"), "starting offset can't be latest for batch queries on Kafka"),
    (opts(subscribe="t", startingOffsets='{"t":{"0":-1}}'),
     "startingOffsets for t-0 can't be latest for batch queries on Kafka"),
    (opts(subscribe="t", endingOffsets="earliest"), "ending offset can't be earliest for batch queries on Kafka"),
    (opts(subscribe="t", endingOffsets='{"t":{"0":-2}}'),
     "endingOffsets for t-0 can't be earliest for batch queries on Kafka"),
    (opts(subscribe="t", startingOffsets="{bad"), "Expected e.g."),
    (opts(subscribe="t", minPartitions="0"), "Invalid value '0' for option 'minPartitions', must be a positive"),
    (opts(subscribe="t", maxRecordsPerPartition="x"), "Invalid value 'x' for option 'maxRecordsPerPartition'"),
    (opts(subscribe="t", failOnDataLoss="maybe"), "Invalid value 'maybe' for option 'failOnDataLoss'"),
    (opts(subscribe="t", startingTimestamp="soon"), "Invalid value 'soon' for option 'startingTimestamp'"),
    (opts(subscribe="t", **{"kafka.auto.offset.reset": "earliest"}),
     "Kafka option 'auto.offset.reset' is not supported"),
    (opts(subscribe="t", **{"kafka.value.deserializer": "x"}), "Kafka option 'value.deserializer' is not supported"),
])
def test_refused(given: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError) as e:
        parse_options(given)
    assert message in str(e.value)


def test_kafka_options_reach_the_client(caplog: pytest.LogCaptureFixture) -> None:
    o = parse_options(opts(subscribe="t", **{"kafka.client.id": "job-7", "kafka.fetch.max.bytes": "1048576",
                                             "kafka.check.crcs": "false", "kafka.isolation.level": "read_committed",
                                             "kafka.request.timeout.ms": "5000", "kafka.group.id": "ignored",
                                             "kafka.security.protocol": "plaintext", "kafka.no.such.thing": "1"}))
    assert dict(o.consumer_config) == {"client_id": "job-7", "fetch_max_bytes": 1048576, "check_crcs": False,
                                       "isolation_level": "read_committed", "request_timeout_ms": 5000}
    assert dict(o.admin_config) == {"client_id": "job-7", "request_timeout_ms": 5000}
    assert "The configuration 'no.such.thing' was supplied but isn't a known config." in caplog.text
    # every mapped name is a keyword the client accepts
    import inspect

    from client import Admin, Consumer
    from client.spark.options import CLIENT_CONFIGS, CONSUMER_CONFIGS

    assert {kw for kw, _ in CONSUMER_CONFIGS.values()} <= set(inspect.signature(Consumer).parameters)
    assert {kw for kw, _ in CLIENT_CONFIGS.values()} <= set(inspect.signature(Admin).parameters)


@pytest.mark.parametrize("name,value,message", [
    ("kafka.fetch.max.bytes", "lots", "Invalid value lots for configuration fetch.max.bytes: Not a number of type INT"),
    ("kafka.fetch.min.bytes", "-1", "Invalid value -1 for configuration fetch.min.bytes: Value must be at least 0"),
    ("kafka.check.crcs", "maybe", "Invalid value maybe for configuration check.crcs: Expected value to be either"),
    ("kafka.isolation.level", "dirty", "String must be one of: read_committed, read_uncommitted"),
    ("kafka.security.protocol", "TLS", "String must be one of: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
    ("kafka.security.protocol", "SASL_SSL", "sasl.mechanism GSSAPI is not supported"),
    ("kafka.ssl.cipher.suites", "x", "not supported by this client: ssl.cipher.suites"),
])
def test_bad_kafka_options(name: str, value: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_options(opts(subscribe="t", **{name: value}))


def test_streaming_options() -> None:
    o = parse_options(opts(subscribe="t", maxOffsetsPerTrigger="100", minOffsetsPerTrigger="10",
                           maxTriggerDelay="30s"), streaming=True)
    assert isinstance(o.starting, Latest) and o.streaming
    assert (o.max_offsets_per_trigger, o.min_offsets_per_trigger, o.max_trigger_delay_ms) == (100, 10, 30000)
    assert parse_options(opts(subscribe="t", startingOffsets='{"t":{"0":-1}}'), streaming=True).starting == \
        PartitionOffsets({("t", 0): -1})
    assert parse_options(opts(subscribe="t"), streaming=True).max_trigger_delay_ms == 15 * 60 * 1000
    for bad, message in (({"endingOffsets": "latest"}, "ending offset not valid in streaming queries"),
                         ({"endingOffsetsByTimestamp": '{"t":{"0":1}}'}, "ending timestamp not valid in streaming"),
                         ({"maxTriggerDelay": "soon"}, "Invalid value 'soon' for option 'maxTriggerDelay'"),
                         ({"maxOffsetsPerTrigger": "0"}, "'maxOffsetsPerTrigger', must be a positive integer")):
        with pytest.raises(ValueError, match=re.escape(message)):
            parse_options(opts(subscribe="t", **bad), streaming=True)
    # batch: the trigger options are ignored with Spark's warning
    assert parse_options(opts(subscribe="t", maxOffsetsPerTrigger="5")).max_offsets_per_trigger is None


def test_security_options_travel_as_strings(tmp_path) -> None:
    """Kafka's security properties are checked on the driver, carried as strings (an SSLContext
    cannot be pickled) and made into the clients' options where a client is made."""
    import pickle
    import ssl

    import trustme

    ca = trustme.CA()
    trust = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(trust))
    jaas = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="s3cret";'
    o = parse_options(opts(subscribe="t", **{"kafka.security.protocol": "SASL_SSL",
                                             "kafka.sasl.mechanism": "SCRAM-SHA-512", "kafka.sasl.jaas.config": jaas,
                                             "kafka.ssl.truststore.location": str(trust),
                                             "kafka.ssl.truststore.type": "PEM",
                                             "kafka.ssl.endpoint.identification.algorithm": ""}))
    assert dict(o.security)["sasl.mechanism"] == "SCRAM-SHA-512"
    assert "security_protocol" not in dict(o.consumer_config) and "s3cret" not in str(o.consumer_config)
    o = pickle.loads(pickle.dumps(o))
    kw = o.security_options()
    assert kw["security_protocol"] == "SASL_SSL" and kw["sasl_plain_username"] == "alice"
    assert isinstance(kw["ssl_context"], ssl.SSLContext) and not kw["ssl_context"].check_hostname
    assert parse_options(opts(subscribe="t")).security_options() == {}
