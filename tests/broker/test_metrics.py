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


def test_build_info(tmp_path: Any) -> None:
    """minibroker_build_info: one series, value 1, labelled as ``minibroker --version`` reports
    (broker.build_info), the event loop being the one the broker serves on."""
    from broker.build_info import detect

    with bt.run("inprocess", data_dir=str(tmp_path / "data"), metrics=True) as b:
        text = b.scrape()
    assert "# TYPE minibroker_build_info gauge" in text
    s = bt.parse_metrics(text)
    [(labels, v)] = [(dict(ls), v) for (n, ls), v in s.items() if n == "minibroker_build_info"]
    assert v == 1 and labels == detect().labels()
    assert labels["codec"] in ("c", "python") and labels["record_future"] in ("c", "python")


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
            odd = 'a "quoted" \\ group\nid'  # a group id may hold what a label value must escape
            resp = c.call(ApiKey.OFFSET_COMMIT, 2, {
                "group_id": odd, "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
                "topics": [{"name": "g", "partitions": [{"partition_index": 0, "committed_offset": 4,
                                                          "committed_metadata": ""}]}]})
            assert resp["topics"][0]["partitions"][0]["error_code"] == 0
        s = bt.parse_metrics(b.scrape())
        assert value(s, "kafka_consumergroup_lag", consumergroup=odd, topic="g", partition="0") == 6
        assert value(s, "kafka_consumergroup_lag_sum", consumergroup=odd, topic="g") == 6
        assert value(s, "kafka_consumergroup_current_offset_sum", consumergroup=odd, topic="g") == 4
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


def test_group_partition_series_are_bounded_and_the_rest_aggregated(tmp_path: Any) -> None:
    """Past ``metrics.group.partition.series.max`` committed partitions, whole groups (in name
    order, each that still fits) keep their per-partition series and the others only the _sum
    series, which every group has and which add up what the per-partition ones would; the
    dropped gauge counts what was left out."""
    bound, parts, records = 1050, 100, 5
    b = bt.BrokerProcess(str(tmp_path / "data"), [f"metrics.group.partition.series.max={bound}"],
                         metrics=True).start()
    try:
        bt.create_topic(b.bootstrap_servers, "s", parts)
        batch = build_batch([(None, b"x")] * records)
        committed: dict[str, dict[int, int]] = {f"g-{i:02}": {p: (i + p) % 7 for p in range(parts)} for i in range(30)}
        committed["h-small"] = {p: 1 for p in range(40)}  # fits in the 50 left after g-00..g-09
        committed["i-small"] = {p: 2 for p in range(40)}  # does not: 10 left
        with Conn(b.port) as c:
            c.call(ApiKey.PRODUCE, 7, {"transactional_id": None, "acks": 1, "timeout_ms": 30000, "topic_data": [
                {"name": "s", "partition_data": [{"index": p, "records": batch} for p in range(parts)]}]})
            for group, offsets in committed.items():
                c.send(ApiKey.OFFSET_COMMIT, 2, {
                    "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
                    "topics": [{"name": "s", "partitions": [{"partition_index": p, "committed_offset": o,
                                                              "committed_metadata": ""} for p, o in offsets.items()]}]})
            for _ in committed:
                resp = c.recv(ApiKey.OFFSET_COMMIT, 2)[1]
                assert {p["error_code"] for t in resp["topics"] for p in t["partitions"]} == {0}
        s = bt.parse_metrics(b.scrape())
    finally:
        assert b.stop() == 0, b.log_text()

    each = [f"g-{i:02}" for i in range(10)] + ["h-small"]
    for family in ("kafka_consumergroup_current_offset", "kafka_consumergroup_lag"):
        got = {dict(ls)["consumergroup"] for (n, ls) in s if n == family}
        assert got == set(each), family
        assert sum(1 for (n, _) in s if n == family) == 10 * parts + 40 <= bound
    assert value(s, "minibroker_consumergroup_partition_series_dropped") == 20 * parts + 40
    for group, offsets in committed.items():
        assert value(s, "kafka_consumergroup_current_offset_sum", consumergroup=group, topic="s") == sum(offsets.values())
        lag = sum(max(0, records - o) for o in offsets.values())
        assert value(s, "kafka_consumergroup_lag_sum", consumergroup=group, topic="s") == lag, group
    assert value(s, "kafka_consumergroup_lag", consumergroup="g-03", topic="s", partition="99") == records - (3 + 99) % 7
    assert value(s, "kafka_consumergroup_current_offset", consumergroup="h-small", topic="s", partition="39") == 1
    assert value(s, "kafka_topic_partitions", topic="s") == parts  # the rest of the scrape is all there


def test_a_huge_scrape_does_not_hold_up_other_clients(tmp_path: Any) -> None:
    """The exposition is formatted off the event loop: while a scrape of 100,000 per-partition
    group series (the bound raised to allow them) is made, another client's requests are
    answered, each within a generous second."""
    b = bt.BrokerProcess(str(tmp_path / "data"), ["metrics.group.partition.series.max=1000000"], metrics=True).start()
    try:
        bt.create_topic(b.bootstrap, "gone", 1000)  # commits name partitions that exist
        with Conn(b.port) as c:
            for g in range(100):
                c.send(ApiKey.OFFSET_COMMIT, 2, {
                    "group_id": f"g{g}", "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
                    "topics": [{"name": "gone", "partitions": [{"partition_index": p, "committed_offset": p,
                                                                 "committed_metadata": ""} for p in range(1000)]}]})
            for _ in range(100):
                c.recv(ApiKey.OFFSET_COMMIT, 2)
        scraped: list[str] = []
        th = threading.Thread(target=lambda: scraped.append(b.scrape()))
        with Conn(b.port) as c:
            th.start()
            slowest = 0.0
            while th.is_alive():
                t0 = time.monotonic()
                c.call(ApiKey.API_VERSIONS, 0, {})
                slowest = max(slowest, time.monotonic() - t0)
                time.sleep(0.005)
            th.join()
        assert slowest < 1.0
        text = scraped[0]
        assert text.count("\nkafka_consumergroup_lag{") == 100_000
        assert '\nkafka_consumergroup_current_offset{consumergroup="g7",partition="5",topic="gone"} 5.0\n' in text
        assert "\nminibroker_consumergroup_partition_series_dropped 0.0\n" in text
    finally:
        assert b.stop() == 0, b.log_text()
