"""The data source and the sink over SASL_SSL (SCRAM-SHA-512) and SSL (mutual TLS), configured
with Spark's Kafka-source options (``kafka.security.protocol``, ``kafka.sasl.mechanism``,
``kafka.sasl.jaas.config``, ``kafka.ssl.truststore.*``, ``kafka.ssl.keystore.*``): what the sink
writes, the source reads back exactly, on a local Spark."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from broker.testing.secure import SecureBroker, secure_broker

pytestmark = pytest.mark.slow  # a local Spark session (a JVM)

JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";'


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    broker, _ = secure_broker(str(tmp_path_factory.mktemp("spark-secure")))
    try:
        yield broker
    finally:
        assert broker.stop() == 0


def _options(broker: SecureBroker, listener: str) -> dict[str, str]:
    setup = broker.setup
    opts = {"kafka.bootstrap.servers": f"127.0.0.1:{broker.listener_ports[listener]}",
            "kafka.security.protocol": listener, "kafka.ssl.truststore.type": "PEM",
            "kafka.ssl.truststore.location": setup.ca_pem}
    if listener == "SASL_SSL":
        opts.update({"kafka.sasl.mechanism": "SCRAM-SHA-512", "kafka.sasl.jaas.config": JAAS})
    else:  # mutual TLS: the client's key and certificate in one PEM keystore
        keystore = f"{setup.directory}/client-keystore.pem"
        with open(keystore, "wb") as out:
            for path in (setup.client_key, setup.client_cert):
                with open(path, "rb") as f:
                    out.write(f.read())
        opts.update({"kafka.ssl.keystore.type": "PEM", "kafka.ssl.keystore.location": keystore})
    return opts


@pytest.mark.parametrize("listener", ["SASL_SSL", "SSL"])
def test_sink_then_source_over_tls(spark: Any, secure: SecureBroker, listener: str) -> None:
    opts = _options(secure, listener)
    topic = f"spark-{listener.lower()}"
    rows = [(f"k{i}".encode(), f"value-{i}".encode(), topic) for i in range(200)]
    w = spark.createDataFrame(rows, "key binary, value binary, topic string").repartition(3).write \
        .format("minibroker").mode("append")
    for k, v in opts.items():
        w = w.option(k, v)
    w.save()
    r = spark.read.format("minibroker").option("subscribe", topic)
    for k, v in opts.items():
        r = r.option(k, v)
    got = sorted((bytes(x.key), bytes(x.value)) for x in r.load().collect())
    assert got == sorted((k, v) for k, v, _ in rows)
