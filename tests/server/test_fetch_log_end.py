"""Fetch of partitions with nothing new: the handler answers a partition fetched at its log end
without reading the log (broker/handlers/fetch.py). The answer must be what a read gives:
error 0, high watermark = log end, the partition's log start and last stable offset, no
records, and aborted transactions null (read_uncommitted) or empty (read_committed); a
partition whose LSO is below its high watermark (an open transaction) takes the read path."""

from __future__ import annotations

from typing import Any

import pytest

from client.protocol.api import ApiKey
from client.sync import SyncAdmin, SyncProducer
from tests.broker_process import BrokerProcess

from .wire import Conn, batch, create_topic, produce

TOPIC = "log-end"


def _fetch_all(offsets: dict[int, int], isolation: int) -> dict[str, Any]:
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 50 << 20,
            "isolation_level": isolation, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": TOPIC, "partitions": [
                {"partition": p, "current_leader_epoch": -1, "fetch_offset": o, "log_start_offset": -1,
                 "partition_max_bytes": 1 << 20} for p, o in offsets.items()]}],
            "forgotten_topics_data": [], "rack_id": ""}


@pytest.mark.parametrize("version", [4, 11, 12])
def test_partitions_at_their_log_end_answer_as_a_read_would(broker: BrokerProcess, version: int) -> None:
    with Conn(broker.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 4, create_topic(TOPIC, 4))["topics"][0]["error_code"] == 0
        for p, n in ((0, 3), (1, 5)):  # partition 2: empty; 3: an open transaction (below)
            resp = c.call(ApiKey.PRODUCE, 7, produce(TOPIC, p, batch(n)))
            assert resp["responses"][0]["partition_responses"][0]["error_code"] == 0
    with SyncAdmin(broker.bootstrap) as admin:
        assert admin.delete_records({(TOPIC, 1): 2})  # partition 1: log start 2
    with SyncProducer(broker.bootstrap, transactional_id="log-end-txn") as txn:
        txn.init_transactions()
        txn.begin_transaction()
        txn.send(TOPIC, b"open", partition=3)  # written, not committed: LSO 0, high watermark 1
        expected = {  # partition: (fetch offset, high watermark, log start, last stable offset)
            0: (3, 3, 0, 3), 1: (5, 5, 2, 5), 2: (0, 0, 0, 0), 3: (1, 1, 0, 0)}
        for isolation in (0, 1):
            with Conn(broker.port) as c:
                resp = c.call(ApiKey.FETCH, version, _fetch_all({p: e[0] for p, e in expected.items()}, isolation))
            parts = {r["partition_index"]: r for r in resp["responses"][0]["partitions"]}
            assert sorted(parts) == [0, 1, 2, 3]
            for p, (_, hw, start, lso) in expected.items():
                r = parts[p]
                assert r["error_code"] == 0, (p, isolation, r)
                assert r["high_watermark"] == hw
                if version >= 5:
                    assert r["log_start_offset"] == start
                assert r["last_stable_offset"] == lso
                assert not r["records"]
                # read_committed answers a list (empty here: nothing aborted); read_uncommitted null
                assert r["aborted_transactions"] == ([] if isolation else None), (p, isolation, r)
        txn.abort_transaction()
