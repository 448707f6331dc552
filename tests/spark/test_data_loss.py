"""failOnDataLoss: retention deletes the start of a partition between planning-time intent
(explicit startingOffsets) and the read. A dedicated broker checks retention every 100 ms."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from client.sync import SyncAdmin, SyncProducer
from tests.broker_process import BrokerProcess

pytestmark = pytest.mark.slow  # a local Spark session (a JVM) per module

TOPIC = "aging"


@pytest.fixture(scope="module")
def aged(tmp_path_factory: Any) -> Iterator[tuple[str, int]]:
    """(bootstrap, log start offset) of a 20-record partition whose first records are deleted."""
    b = BrokerProcess(str(tmp_path_factory.mktemp("aging") / "data"),
                      overrides=["log.retention.check.interval.ms=100"]).start()
    try:
        with SyncAdmin(b.bootstrap) as admin:
            # one batch per segment; retention keeps only the active segment
            admin.create_topic(TOPIC, 1, configs={"segment.bytes": "100", "retention.bytes": "1"})
            with SyncProducer(b.bootstrap) as prod:
                for i in range(20):
                    prod.send(TOPIC, f"r{i}".encode(), partition=0)
            deadline = time.monotonic() + 10
            start = 0
            while start == 0 and time.monotonic() < deadline:
                time.sleep(0.1)
                start = admin.topic_offsets(TOPIC, -2)[0]
        assert 0 < start < 20, f"retention did not run (log start {start})"
        yield b.bootstrap, start
    finally:
        b.stop()


def read(spark: Any, servers: str, **options: str) -> Any:
    r = spark.read.format("minibroker").option("kafka.bootstrap.servers", servers).option("assign", f'{{"{TOPIC}":[0]}}')
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def test_fail_on_data_loss(spark: Any, aged: tuple[str, int]) -> None:
    servers, _ = aged
    with pytest.raises(Exception, match="Some data may have been lost"):
        read(spark, servers, startingOffsets=f'{{"{TOPIC}":{{"0":0}}}}').collect()


def test_skip_lost_data(spark: Any, aged: tuple[str, int]) -> None:
    servers, start = aged
    got = read(spark, servers, startingOffsets=f'{{"{TOPIC}":{{"0":0}}}}', failOnDataLoss="false").select("offset").collect()
    assert [r.offset for r in got] == list(range(start, 20))
    # earliest resolves to the log start: nothing lost, nothing to report
    assert read(spark, servers).count() == 20 - start
