"""Burrow (LinkedIn's consumer lag monitor; Debian's ``burrow`` 1.2.1, built with sarama 1.22)
reports each consumer group's lag exactly as minibroker's committed offsets and log end offsets
give it.

Burrow reads every commit from ``__consumer_offsets`` (a sarama consumer from the oldest offset
of each partition, decoding Kafka's offset commit records) and the partitions' log end offsets
with ListOffsets every ``offset-refresh`` seconds; its HTTP API answers
``/v3/kafka/<cluster>/consumer/<group>/lag`` with each partition's ``current_lag`` (latest log
end offset seen minus the last commit) and their sum, ``totallag``.

Burrow pins its protocol versions with ``kafka-version`` (Burrow 1.2 knows up to 2.1.0; no 3.x):
2.1.0 reads with Fetch v4 (RecordBatch v2 as stored) and ListOffsets v1; 0.10.1 with Fetch v3,
magic 1 messages down-converted by the broker; 0.9.0.1 with Fetch v1, magic 0, and ListOffsets
v0 (the broker's metrics record what it sent). Burrow 1.2 will not start without a ZooKeeper,
which it uses only for its own coordination: tests/compat/_zookeeper.py is one in a thread.

The offsets topic has 3 partitions here: sarama's consumer adds one partition to its fetches per
long poll (250 ms), so Burrow needs ~13 s to reach the 50th partition of a default one. Each
kafka-version takes ~2 s.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from client.protocol.api import ApiKey
from tests.broker_process import BrokerProcess
from tests.server.wire import Conn, batch, create_topic, partition_response, produce

from ._zookeeper import ZooKeeper

BURROW = shutil.which("Burrow") or shutil.which("burrow")
if BURROW is None:
    pytest.skip("Burrow is not installed (Debian package `burrow`; scripts/test installs it with apt-get when apt"
                " is available)", allow_module_level=True)

TOPIC = "burrow-lag"
#: group -> {partition: committed offset}, first and after more records and commits
COMMITS = {"burrow-a": {0: 4, 1: 7, 2: 0}, "burrow-b": {0: 10}}
MORE_COMMITS = {"burrow-a": {0: 9, 2: 3}}
RECORDS = {0: 10, 1: 7, 2: 5}
#: kafka-version -> (Fetch version, ListOffsets version) sarama 1.22 sends
VERSIONS = {"2.1.0": (4, 1), "0.10.1": (3, 1), "0.9.0.1": (1, 0)}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    b = BrokerProcess(str(tmp_path_factory.mktemp("burrow") / "data"), ["offsets.topic.num.partitions=3"],
                      metrics=True).start()
    try:
        yield b
    finally:
        assert b.stop() == 0, b.log_text()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _commit(c: Conn, topic: str, group: str, offsets: dict[int, int]) -> None:
    r = c.call(ApiKey.OFFSET_COMMIT, 2, {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
        "topics": [{"name": topic, "partitions": [{"partition_index": p, "committed_offset": o, "committed_metadata": ""}
                                                  for p, o in offsets.items()]}]})
    assert all(p["error_code"] == 0 for p in r["topics"][0]["partitions"]), r


def expected_lag(c: Conn, topic: str, group: str) -> dict[int, int]:
    """Log end offset minus committed offset of each partition the group committed, from
    minibroker itself (ListOffsets latest, OffsetFetch)."""
    r = c.call(ApiKey.OFFSET_FETCH, 1, {"group_id": group, "topics": [{"name": topic, "partition_indexes": [0, 1, 2]}]})
    committed = {p["partition_index"]: p["committed_offset"] for p in r["topics"][0]["partitions"]
                 if p["committed_offset"] >= 0}
    body = {"replica_id": -1, "topics": [{"name": topic, "partitions": [
        {"partition_index": p, "timestamp": -1} for p in committed]}]}
    ends = {p["partition_index"]: p["offset"] for p in c.call(ApiKey.LIST_OFFSETS, 1, body)["topics"][0]["partitions"]}
    return {p: ends[p] - o for p, o in committed.items()}


class Burrow:
    def __init__(self, tmp: Path, broker: BrokerProcess, zk_port: int, kafka_version: str) -> None:
        self.http = _free_port()
        (tmp / "burrow.toml").write_text(f"""
[general]
pidfile="{tmp}/burrow.pid"
[logging]
level="info"
[zookeeper]
servers=["127.0.0.1:{zk_port}"]
timeout=6
root-path="/burrow"
[client-profile.test]
client-id="burrow-test"
kafka-version="{kafka_version}"
[cluster.local]
class-name="kafka"
servers=["{broker.bootstrap}"]
client-profile="test"
topic-refresh=1
offset-refresh=1
[consumer.local]
class-name="kafka"
cluster="local"
servers=["{broker.bootstrap}"]
client-profile="test"
[httpserver.default]
address="127.0.0.1:{self.http}"
[evaluator.default]
class-name="caching"
expire-cache=1
[storage.default]
class-name="inmemory"
workers=2
intervals=10
expire-group=604800
min-distance=1
""")
        self.log_path = tmp / "burrow.log"
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([BURROW, "-config-dir", str(tmp)], cwd=tmp, stdout=self.log,
                                     stderr=subprocess.STDOUT)

    def lag(self, group: str) -> dict[str, Any] | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http}/v3/kafka/local/consumer/{group}/lag",
                                        timeout=2) as r:
                body = json.load(r)
        except (OSError, ValueError):  # not listening yet, or 404 (group not seen yet)
            return None
        return body.get("status") if not body.get("error") else None

    def wait_for(self, group: str, want: dict[int, int], timeout: float = 30.0) -> dict[str, Any]:
        """Burrow's lag answer for ``group`` once its current lags are ``want``."""
        deadline = time.monotonic() + timeout
        got: dict[str, Any] | None = None
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log_path.read_text()[-3000:]
            got = self.lag(group)
            if got is not None and current_lags(got) == want:
                return got
            time.sleep(0.2)
        raise AssertionError(f"Burrow's lag for {group}: {got}, want {want}\n{self.log_path.read_text()[-3000:]}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def current_lags(status: dict[str, Any]) -> dict[int, int]:
    """The partitions Burrow has a commit for (``end`` set) and their current lag."""
    return {p["partition"]: p["current_lag"] for p in status.get("partitions") or []
            if p.get("end") and p["end"].get("timestamp", 0) > 0}


def request_counts(broker: BrokerProcess) -> dict[tuple[str, int], int]:
    return {(api, int(v)): int(float(n)) for api, v, n in re.findall(
        r'^minibroker_requests_total\{api="(\w+)",version="(\d+)"\} (\S+)$', broker.scrape(), re.M)}


@pytest.mark.parametrize("kafka_version", list(VERSIONS))
def test_burrow_lag_is_minibrokers(broker: BrokerProcess, tmp_path: Path, kafka_version: str) -> None:
    topic = f"{TOPIC}-{kafka_version}"
    groups = {f"{g}-{kafka_version}": offsets for g, offsets in COMMITS.items()}
    with Conn(broker.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 4, create_topic(topic, 3))["topics"][0]["error_code"] == 0
        for p, n in RECORDS.items():
            assert partition_response(c.call(ApiKey.PRODUCE, 7, produce(topic, p, batch(n))))["error_code"] == 0
        for group, offsets in groups.items():
            _commit(c, topic, group, offsets)
        want = {g: expected_lag(c, topic, g) for g in groups}
    assert want[f"burrow-a-{kafka_version}"] == {0: 6, 1: 0, 2: 5}  # (what minibroker says, checked by hand)
    before = request_counts(broker)
    with ZooKeeper() as zk:
        burrow = Burrow(tmp_path, broker, zk.port, kafka_version)
        try:
            for group in groups:
                status = burrow.wait_for(group, want[group])
                assert status["totallag"] == sum(want[group].values())
            # more records (ListOffsets refresh) and new commits (read from __consumer_offsets by
            # the consumer's next fetches) move the lag
            group = f"burrow-a-{kafka_version}"
            with Conn(broker.port) as c:
                assert partition_response(c.call(ApiKey.PRODUCE, 7, produce(topic, 1, batch(4))))["error_code"] == 0
                _commit(c, topic, group, MORE_COMMITS["burrow-a"])
                now = expected_lag(c, topic, group)
            assert now == {0: 1, 1: 4, 2: 2}
            assert burrow.wait_for(group, now)["totallag"] == 7
        finally:
            burrow.stop()
    sent = {k: n - before.get(k, 0) for k, n in request_counts(broker).items() if n != before.get(k, 0)}
    fetch, list_offsets = VERSIONS[kafka_version]
    assert {v for (api, v) in sent if api == "FETCH"} == {fetch}, sent
    assert list_offsets in {v for (api, v) in sent if api == "LIST_OFFSETS"}, sent
