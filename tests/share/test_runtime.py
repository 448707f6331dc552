"""ShareStateRuntime (broker/share/runtime.py) in a real broker: states written through it
survive a SIGKILL of the broker's process (each ``write_state`` returned after its fsync) and
load back identical, from the partitions Kafka's placement rule names; the topic is created as
Kafka creates it; a loading partition answers COORDINATOR_LOAD_IN_PROGRESS."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from broker.share.persister import ShareState, ShareStateError
from broker.share.state_records import SHARE_GROUP_STATE, SharePartitionKey, StateBatch, partition_for
from broker.testing import InProcessBroker
from client.protocol.api import ErrorCode as E

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[2]

# The child: an in-process broker whose share-state runtime takes writes; it prints each state
# once write_state returned (fsync'd), then waits to be killed.
CHILD = r"""
import asyncio, json, sys
from broker.testing import InProcessBroker
from broker.share.state_records import SharePartitionKey, StateBatch
b = InProcessBroker(sys.argv[1], {"share.coordinator.state.topic.num.partitions": "7",
                                  "share.coordinator.snapshot.update.records.per.snapshot": "3"}).start()
rt = b.broker.state.share_state
def run(coro):
    return asyncio.run_coroutine_threadsafe(coro, b._loop).result(30)
for i in range(60):
    key = SharePartitionKey(f"g{i % 4}", bytes([i % 5]) * 16, i % 3)
    start = 10 * (i // 12)
    batches = [StateBatch(start + i % 7, start + i % 7 + 2, (0, 2, 4)[i % 3], 1 + i % 4)]
    st = run(rt.write_state(key, -1 if i % 11 else i // 11, i // 20, start, batches))
    print(json.dumps([key.group_id, key.topic_id.hex(), key.partition, list(st[:6]),
                      [list(x) for x in st.batches]]), flush=True)
run(rt.delete_group("g3"))
print("DELETED", flush=True)
print("DONE", flush=True)
import time; time.sleep(600)
"""


def run_on(b: InProcessBroker, coro: Coroutine[Any, Any, T]) -> T:
    assert b._loop is not None
    return asyncio.run_coroutine_threadsafe(coro, b._loop).result(30)


def test_written_states_survive_sigkill(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    child = subprocess.Popen([sys.executable, "-c", CHILD, data], stdout=subprocess.PIPE, cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True)
    acked: dict[SharePartitionKey, tuple[list[int], list[list[int]]]] = {}
    try:
        assert child.stdout is not None
        for line in child.stdout:
            if line.startswith("DONE"):
                break
            if line.startswith("DELETED"):
                acked = {k: v for k, v in acked.items() if k.group_id != "g3"}
                continue
            g, tid, p, head, batches = json.loads(line)
            acked[SharePartitionKey(g, bytes.fromhex(tid), p)] = (head, batches)
        else:
            pytest.fail("the child broker ended early")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    assert len(acked) > 10
    with InProcessBroker(data, {"share.coordinator.state.topic.num.partitions": "50"}) as b:
        rt = b.broker.state.share_state
        deadline = time.monotonic() + 30
        while b.call(lambda: bool(rt.loading)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert rt.topic.num_partitions == 7  # the existing topic's count wins over the config
        got = {}
        for key in acked:
            st = b.call(lambda key=key: rt.read_state(key))
            assert st is not None, key
            got[key] = (list(st[:6]), [list(x) for x in st.batches])
        assert got == acked
        assert b.call(lambda: sorted({k.group_id for k in rt.store.keys()})) == ["g0", "g1", "g2"]
        # each state's records are in the partition Kafka's rule names
        for key in acked:
            part_dir = Path(data) / f"{SHARE_GROUP_STATE}-{partition_for(key, 7)}"
            assert key.group_id.encode() in b"".join(p.read_bytes() for p in part_dir.glob("*.log"))
        topic = b.broker.state.logs.topic(SHARE_GROUP_STATE)
        assert topic.partitions == 7
        # and a write after the restart carries on from the loaded state
        key = next(iter(acked))
        st = run_on(b, rt.write_state(key, -1, -1, -1, []))
        assert (list(st[:6])[1:4], [list(x) for x in st.batches]) == (acked[key][0][1:4], acked[key][1])


def test_topic_configs_and_loading_answers_retriable(tmp_path: Path) -> None:
    with InProcessBroker(str(tmp_path / "data")) as b:
        rt = b.broker.state.share_state
        key = SharePartitionKey("g", bytes(16), 0)
        st = run_on(b, rt.write_state(key, 0, 0, 5, [StateBatch(5, 6, 2, 1)]))
        assert st == ShareState(0, 0, 0, 5, st.create_timestamp, st.create_timestamp, (StateBatch(5, 6, 2, 1),))
        cfg = b.broker.state.logs.topic_config(SHARE_GROUP_STATE)
        assert (cfg.cleanup_policy, cfg.retention_ms) == ("delete", -1)
        assert b.broker.state.logs.topic(SHARE_GROUP_STATE).partitions == 50

        def loading_read() -> None:
            rt.loading.add(rt.partition_for(key))
            try:
                rt.read_state(key)
            finally:
                rt.loading.clear()
        with pytest.raises(ShareStateError) as e:
            b.call(loading_read)
        assert e.value.error_code == E.COORDINATOR_LOAD_IN_PROGRESS
        assert run_on(b, rt.delete_group("g")) == 1
        assert b.call(lambda: rt.read_state(key)) is None
