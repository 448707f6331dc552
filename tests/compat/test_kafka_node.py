"""kafka-node 5 (Node.js; tests/compat/node/old_client.cjs), a client of the Kafka 0.9-0.10 era,
produces then reads back with a ConsumerGroup and commits.

kafka-node asks ApiVersions and uses the highest version it implements in our range: Produce v2
(magic 1 messages), Fetch v2 (magic 1, down-converted by the broker), Metadata v1, ListOffsets
v0, the group APIs at v0, OffsetCommit v2 / OffsetFetch v1 (the broker's metrics record what it
sent). Codecs: none, gzip, and snappy (xerial framing) when its optional native ``snappy``
module was built by ``npm ci``.

Before Fetch v0-3 were served, kafka-node's ConsumerGroup joined and then hung: its fetch closed
the connection. A consumer that fails now (``message.downconversion.enable=false``: Kafka's
UNSUPPORTED_VERSION for the partition) reports the error at once, after one fetch."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from client.protocol.api import ApiKey
from tests.broker_process import BrokerProcess
from tests.server.wire import Conn

from ._clients import NODE_DIR, assert_codec, create_topic, stored_batches, stored_records

if not shutil.which("node") or not os.path.isdir(os.path.join(NODE_DIR, "node_modules", "kafka-node")):
    pytest.skip("node or tests/compat/node/node_modules/kafka-node is missing (scripts/test runs `npm ci` there"
                " when node and npm are installed)", allow_module_level=True)

N = 25


def value(i: int) -> bytes:
    return b"value-%d" % i * 20


def request_counts(broker: BrokerProcess) -> dict[tuple[str, int], int]:
    return {(api, int(v)): int(float(n)) for api, v, n in re.findall(
        r'^minibroker_requests_total\{api="(\w+)",version="(\d+)"\} (\S+)$', broker.scrape(), re.M)}


def connections_accepted(broker: BrokerProcess) -> int:
    m = re.search(r"^minibroker_connections_accepted_total (\S+)$", broker.scrape(), re.M)
    assert m is not None
    return int(float(m.group(1)))


def old_client(broker: BrokerProcess, topic: str, group: str, codec: int) -> tuple[int, dict[str, Any]]:
    out = subprocess.run(["node", os.path.join(NODE_DIR, "old_client.cjs"), broker.bootstrap, topic, group, str(N),
                          str(codec)], capture_output=True, text=True, timeout=90, cwd=NODE_DIR)
    return out.returncode, json.loads(out.stdout or json.dumps({"error": out.stderr[-2000:]}))


def snappy_built() -> bool:
    return subprocess.run(["node", "-e", "require('snappy')"], cwd=NODE_DIR, capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    b = BrokerProcess(str(tmp_path_factory.mktemp("kafka-node") / "data"), metrics=True).start()
    try:
        yield b
    finally:
        assert b.stop() == 0, b.log_text()


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy"])
def test_consumer_group_reads_back_and_commits(broker: BrokerProcess, codec: str) -> None:
    if codec == "snappy" and not snappy_built():
        pytest.skip("kafka-node's optional native snappy module was not built")
    topic, group = f"kafka-node-{codec}", f"kafka-node-group-{codec}"
    create_topic(broker.bootstrap, topic)
    before = request_counts(broker)
    rc, out = old_client(broker, topic, group, ["none", "gzip", "snappy"].index(codec))
    assert rc == 0, out
    assert out["produced"] == {"0": 0}
    assert out["consumed"] == [[i, f"k{i}", value(i).decode()] for i in range(N)]
    assert out["committed"] == N
    assert_codec(stored_batches(broker.data_dir, topic, 0), codec)
    assert [(r.key, r.value) for r in stored_records(broker.data_dir, topic, 0)] == [
        (b"k%d" % i, value(i)) for i in range(N)]
    with Conn(broker.port) as conn:
        r = conn.call(ApiKey.OFFSET_FETCH, 1, {"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}]})
    assert r["topics"][0]["partitions"][0]["committed_offset"] == N
    sent = {k: n - before.get(k, 0) for k, n in request_counts(broker).items() if n != before.get(k, 0)}
    assert {v for (api, v) in sent if api == "FETCH"} == {2}  # magic 1, down-converted
    assert {v for (api, v) in sent if api == "PRODUCE"} == {2}
    assert {api for api, _ in sent} >= {"API_VERSIONS", "JOIN_GROUP", "SYNC_GROUP", "OFFSET_COMMIT"}


def test_a_failing_consumer_reports_the_error_without_spinning(broker: BrokerProcess) -> None:
    topic = "kafka-node-no-downconversion"
    create_topic(broker.bootstrap, topic, config={"message.downconversion.enable": "false"})
    before, accepted = request_counts(broker), connections_accepted(broker)
    rc, out = old_client(broker, topic, "kafka-node-failing", 0)
    assert rc == 1 and out["error"].startswith("consumer group:"), out
    fetches = sum(n - before.get(k, 0) for k, n in request_counts(broker).items() if k[0] == "FETCH")
    assert 1 <= fetches <= 3
    assert connections_accepted(broker) - accepted <= 4  # its producer, client and group connections
