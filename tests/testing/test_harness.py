"""broker/testing's brokers and run(): both kinds start listening, stop cleanly, report a
failed start with the broker's log; the admin helpers create and delete topics."""

from __future__ import annotations

import socket
from typing import Any

import pytest

import broker.testing as bt
from client.protocol.api import ApiKey
from tests.server.wire import Conn, metadata


@pytest.mark.parametrize("kind", ["process", "inprocess"])
def test_run_both_kinds(tmp_path: Any, kind: str) -> None:
    with bt.run(kind, {"num.partitions": 2}) as b:
        with Conn(b.port) as c:
            r = c.call(ApiKey.METADATA, 4, metadata(["auto"]))
        assert [len(t["partitions"]) for t in r["topics"]] == [2]
        bt.create_topic(b.bootstrap_servers, "made", 3, {"retention.ms": 1000})
        with pytest.raises(bt.AdminError) as e:
            bt.create_topic(b.bootstrap_servers, "made", 3)
        assert e.value.error_code == 36  # TOPIC_ALREADY_EXISTS
        bt.delete_topic(b.bootstrap_servers, "made")
        data_dir = b.data_dir
    # run() made a temporary data directory and removed it
    import os
    assert not os.path.exists(data_dir)


@pytest.mark.parametrize("kind", ["process", "inprocess"])
def test_failed_start_reports_the_log(tmp_path: Any, kind: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        b: Any = (bt.BrokerProcess(str(tmp_path / "d"), port=port) if kind == "process"
                  else bt.InProcessBroker(str(tmp_path / "d"), port=port))
        with pytest.raises(bt.BrokerStartError, match="(?s)did not start.*(in use|Errno 98)"):
            b.start(timeout=20)


def test_inprocess_call_runs_on_the_broker_loop(tmp_path: Any) -> None:
    import threading
    with bt.run("inprocess", data_dir=str(tmp_path / "d")) as b:
        assert isinstance(b, bt.InProcessBroker)
        name = b.call(lambda: threading.current_thread().name)
        assert name.startswith("minibroker-") and name != threading.current_thread().name
        assert b.call(lambda: len(b.broker.logs.logs)) == 0


def test_with_on_a_started_process_starts_no_second_one(tmp_path: Any) -> None:
    """``with BrokerProcess(...).start() as b`` (start, then the with statement): one process,
    stopped at the end of the block. __enter__ used to start a second one and stop only that,
    leaving the first running after the test."""
    b = bt.BrokerProcess(str(tmp_path / "data")).start()
    first = b.proc
    assert first is not None
    with b as same:
        assert same is b and b.proc is first
    assert first.poll() is not None  # stopped
