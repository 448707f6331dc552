"""broker/metrics.py through the metrics listener of real brokers: scraped during a load run by
real clients, the counters match exactly what was produced and consumed; errors, latency
histograms, log gauges under kafka_exporter's names, the consumer-group hook, /healthz."""

from __future__ import annotations

import asyncio
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

import broker.testing as bt
from client import Consumer
from client.protocol.api import ApiKey
from client.records import build_batch
from tests.server.wire import Conn, produce

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples: Samples, name: str, **labels: str) -> float:
    """Sum over the samples of ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)


@pytest.fixture
def mb(tmp_path: Any) -> Iterator[bt.BrokerProcess]:
    b = bt.BrokerProcess(str(tmp_path / "data"), metrics=True).start()
    try:
        yield b
    finally:
        assert b.stop() == 0, b.log_text()


def test_off_by_default(broker: bt.BrokerProcess) -> None:
    assert broker.http_ports == {}
    assert "metrics listening" not in broker.log_text()


@pytest.mark.slow
def test_counters_match_a_load_run_exactly(mb: bt.BrokerProcess) -> None:
    from confluent_kafka import Consumer as CConsumer
    from confluent_kafka import Producer as CProducer
    from confluent_kafka import TopicPartition
    counts = {"load-a": 30_000, "load-b": 10_000}
    partitions = {"load-a": 3, "load-b": 1}
    for t, n in partitions.items():
        bt.create_topic(mb.bootstrap_servers, t, n)
    scrapes: list[Samples] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def scraper() -> None:  # Prometheus-style, during the run (every 50 ms rather than 15 s)
        while not done.is_set():
            try:
                scrapes.append(bt.parse_metrics(mb.scrape()))
            except BaseException as e:  # noqa: BLE001
                errors.append(e)
                return
            time.sleep(0.05)

    th = threading.Thread(target=scraper)
    th.start()
    try:
        p = CProducer({"bootstrap.servers": mb.bootstrap_servers, "linger.ms": 5})
        for t, n in counts.items():
            for i in range(n):
                p.produce(t, b"%08d" % i, partition=i % partitions[t])
                if i % 10_000 == 0:
                    p.poll(0)
        assert p.flush(60) == 0

        # load-a with our consumer, load-b with librdkafka, each read once from offset 0
        async def read_a() -> int:
            async with Consumer(mb.bootstrap_servers) as c:
                tps = [("load-a", q) for q in range(3)]
                c.assign(tps)
                for tp in tps:
                    c.seek(tp, 0)
                got = 0
                deadline = time.monotonic() + 60
                while got < counts["load-a"] and time.monotonic() < deadline:
                    got += sum(len(r) for r in (await c.getmany(timeout_ms=500)).values())
                return got
        assert asyncio.run(read_a()) == counts["load-a"]
        c = CConsumer({"bootstrap.servers": mb.bootstrap_servers, "group.id": "unused", "enable.auto.commit": False})
        c.assign([TopicPartition("load-b", 0, 0)])
        got = 0
        deadline = time.monotonic() + 60
        while got < counts["load-b"] and time.monotonic() < deadline:
            got += sum(1 for m in c.consume(10_000, 1.0) if m.error() is None)
        c.close()
        assert got == counts["load-b"]
        # a fast run can finish between two scrapes: take at least three in all
        deadline = time.monotonic() + 10
        while len(scrapes) < 3 and not errors and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        done.set()
        th.join(30)
    assert not errors, errors
    assert len(scrapes) >= 3
    for earlier, later in zip(scrapes, scrapes[1:]):  # counters never go down
        for t in counts:
            assert value(later, "minibroker_messages_in_total", topic=t) >= value(earlier, "minibroker_messages_in_total", topic=t)

    s = bt.parse_metrics(mb.scrape())
    for t, n in counts.items():
        assert value(s, "minibroker_messages_in_total", topic=t) == n
        assert value(s, "minibroker_messages_out_total", topic=t) == n
        size = total(s, "minibroker_log_size_bytes", topic=t)
        assert value(s, "minibroker_bytes_in_total", topic=t) == size > n * 8
        assert value(s, "minibroker_bytes_out_total", topic=t) >= size  # + partial batches sent again
        assert total(s, "kafka_topic_partition_current_offset", topic=t) == n
        assert total(s, "kafka_topic_partition_oldest_offset", topic=t) == 0
        assert value(s, "kafka_topic_partitions", topic=t) == partitions[t]
        assert total(s, "minibroker_log_segments", topic=t) == partitions[t]
    produce_requests = total(s, "minibroker_requests_total", api="PRODUCE")
    assert produce_requests > 0
    assert value(s, "minibroker_request_duration_seconds_count", api="PRODUCE") == produce_requests
    assert value(s, "minibroker_request_duration_seconds_count", api="FETCH") == total(s, "minibroker_requests_total", api="FETCH")
    assert total(s, "minibroker_request_errors_total") == 0
    assert value(s, "kafka_brokers") == 1
    assert value(s, "minibroker_connections_accepted_total") >= 3
    assert value(s, "process_resident_memory_bytes") > 0


def test_errors_latency_connections_and_health(tmp_path: Any) -> None:
    with bt.run("inprocess", data_dir=str(tmp_path / "data"), metrics=True) as b:
        bt.create_topic(b.bootstrap_servers, "e", 1)
        b.faults.fail("PRODUCE", "NOT_LEADER_OR_FOLLOWER", count=2)
        with Conn(b.port) as c:
            for _ in range(3):
                c.call(ApiKey.PRODUCE, 7, produce("e", 0, build_batch([(None, b"x")])))
            c.call(ApiKey.PRODUCE, 5, produce("nope", 0, build_batch([(None, b"x")])))
            s = bt.parse_metrics(b.scrape())
            assert value(s, "minibroker_connections") == 1
        assert value(s, "minibroker_request_errors_total", api="PRODUCE", version="7",
                     error="NOT_LEADER_OR_FOLLOWER") == 2
        assert value(s, "minibroker_request_errors_total", api="PRODUCE", version="5",
                     error="UNKNOWN_TOPIC_OR_PARTITION") == 1
        assert value(s, "minibroker_requests_total", api="PRODUCE", version="7") == 3
        assert value(s, "minibroker_messages_in_total", topic="e") == 1
        assert value(s, "minibroker_request_duration_seconds_bucket", api="PRODUCE", le="+Inf") == 4
        with urllib.request.urlopen(b.metrics_url, timeout=10) as r:  # over HTTP too
            assert r.headers["Content-Type"].startswith("text/plain")
            assert b"minibroker_messages_in_total" in r.read()
        health = b.metrics_url.replace("/metrics", "/healthz")
        with urllib.request.urlopen(health, timeout=10) as r:
            assert r.status == 200 and r.read() == b"ok\n"
        b.call(lambda: b.broker.pending.add("groups"))  # what a loader still running looks like
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(health, timeout=10)
        assert e.value.code == 503 and e.value.read() == b"loading: groups\n"


def test_consumer_group_families(tmp_path: Any) -> None:
    """The group coordinator fills kafka_consumergroup_*: lag = high watermark - committed
    offset, for each committed partition; members per group."""
    with bt.run("inprocess", data_dir=str(tmp_path / "data"), metrics=True) as b:
        bt.create_topic(b.bootstrap_servers, "g", 2)
        with Conn(b.port) as c:
            c.call(ApiKey.PRODUCE, 7, produce("g", 0, build_batch([(None, b"x")] * 10)))
            assert "kafka_consumergroup_lag{" not in b.scrape()  # no groups, no samples
            resp = c.call(ApiKey.OFFSET_COMMIT, 2, {
                "group_id": "grp", "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
                "topics": [{"name": "g", "partitions": [{"partition_index": 0, "committed_offset": 3,
                                                          "committed_metadata": ""}]}]})
            assert resp["topics"][0]["partitions"][0]["error_code"] == 0
        s = bt.parse_metrics(b.scrape())
        assert value(s, "kafka_consumergroup_current_offset", consumergroup="grp", topic="g", partition="0") == 3
        assert value(s, "kafka_consumergroup_lag", consumergroup="grp", topic="g", partition="0") == 7
        assert value(s, "kafka_consumergroup_lag_sum", consumergroup="grp", topic="g") == 7
        assert value(s, "kafka_consumergroup_members", consumergroup="grp") == 0


def test_metrics_port_flag_and_bad_listener(tmp_path: Any) -> None:
    b = bt.BrokerProcess(str(tmp_path / "a"), extra_args=["--metrics-port", "0"]).start()
    try:
        assert "metrics" in b.http_ports
        assert "# TYPE minibroker_requests_total counter" in b.scrape()
    finally:
        assert b.stop() == 0
    with pytest.raises(bt.BrokerStartError, match="metrics.listeners"):
        bt.BrokerProcess(str(tmp_path / "b"), ["metrics.listeners=https://127.0.0.1:0"]).start()
