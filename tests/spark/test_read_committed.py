"""The ``minibroker`` data source with ``kafka.isolation.level=read_committed``: transactions
written by our transactional producer (committed, aborted after their records were written,
and one still open at read time) read back by Spark as exactly the committed rows — also when
the ranges are split so that some tasks hold only aborted records and markers, and when the
readable range ends in an aborted transaction."""

from __future__ import annotations

from typing import Any

import pytest

from client.sync import SyncAdmin, SyncProducer

pytestmark = pytest.mark.slow  # a local Spark session (a JVM)

TOPIC = "txn-events"
OUTCOMES = ["commit", "abort", "commit", "commit", "abort", "abort"]  # the last one ended aborts


def _values(spark: Any, servers: str, **options: str) -> list[bytes]:
    r = spark.read.format("minibroker").option("kafka.bootstrap.servers", servers).option("subscribe", TOPIC)
    r = r.option("kafkaConsumer.pollTimeoutMs", "10000")  # a task waiting for rows that never come fails fast
    for k, v in options.items():
        r = r.option(k, v)
    return sorted(bytes(row.value) for row in r.load().select("value").collect())


def test_read_committed_yields_only_committed_rows(spark: Any, module_broker: Any) -> None:
    bs = module_broker.bootstrap
    with SyncAdmin(bs) as admin:
        admin.create_topic(TOPIC, num_partitions=2)
    sent: dict[str, list[bytes]] = {"commit": [], "abort": [], "open": []}
    with SyncProducer(bs, transactional_id="spark-read-committed", linger_ms=1) as p:
        p.init_transactions()
        for t, outcome in enumerate(OUTCOMES):
            p.begin_transaction()
            vals = [f"t{t}-{i}".encode() for i in range(5)]
            for i, v in enumerate(vals):
                p.send_nowait(TOPIC, v, partition=i % 2)
            p.flush()  # written to the log before the transaction ends
            if outcome == "commit":
                p.commit_transaction()
            else:
                p.abort_transaction()
            sent[outcome] += vals
        p.begin_transaction()  # open while Spark reads: beyond the last stable offset
        sent["open"] = [f"open-{i}".encode() for i in range(4)]
        for i, v in enumerate(sent["open"]):
            p.send_nowait(TOPIC, v, partition=i % 2)
        p.flush()

        committed = sorted(sent["commit"])
        rc = {"kafka.isolation.level": "read_committed"}
        assert _values(spark, bs, **rc) == committed
        assert _values(spark, bs, minPartitions="12", **rc) == committed  # ranges of aborted data only
        assert _values(spark, bs) == sorted(sent["commit"] + sent["abort"] + sent["open"])

        p.commit_transaction()
    assert _values(spark, bs, **rc) == sorted(committed + sent["open"])
