"""``minibroker transactions`` (client/cli/transactions.py) run as a subprocess against a broker
process: a hanging transaction — open in its partitions while no coordinator knows it, as a
broker that lost ``__transaction_state`` (or an older broker that took a transactional Produce
v2 batch) leaves it — is found by ``find-hanging`` and ended by ``abort``, after which the last
stable offset moves on and read_committed consumers read what follows it."""

from __future__ import annotations

import glob
import os
import shutil
import time

from client.consumer import Consumer
from client.protocol.api import ApiKey
from tests.broker_process import BrokerProcess
from tests.client.cli.test_cli import mb, ok
from tests.server.wire import Conn, batch, create_topic, partition_response, produce
from tests.txn.test_coordinator import add_partitions, init_ok, lso, send, txn_batch


def _rows(out: str) -> list[list[str]]:
    """The cells of a table printed as Kafka's tool prints it (header line first)."""
    return [[c.strip() for c in line.split("\t")[:-1]] for line in out.splitlines()]


def _plain(c: Conn, topic: str, partition: int, n: int) -> None:
    body = produce(topic, partition, batch(n, tag=b"p"), acks=-1)
    assert partition_response(c.call(ApiKey.PRODUCE, 7, body))["error_code"] == 0


async def _read_committed(bs: str, topic: str, partition: int) -> list[int]:
    """Offsets a read_committed consumer returns from the start up to the last stable offset."""
    out: list[int] = []
    async with Consumer(bs, isolation_level="read_committed", auto_offset_reset="earliest",
                        fetch_max_wait_ms=100) as c:
        tp = (topic, partition)
        c.assign([tp])
        end = (await c.end_offsets([tp]))[tp]
        deadline = time.monotonic() + 10
        while await c.position(tp) < end:
            assert time.monotonic() < deadline
            out += [r.offset for rows in (await c.getmany(timeout_ms=100)).values() for r in rows]
    return out


async def test_find_hanging_and_abort_a_transaction_nobody_knows(tmp_path) -> None:
    data = str(tmp_path / "d")
    with BrokerProcess(data) as b:
        with Conn(b.port) as c:
            assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("stuck", 2))["topics"][0]["error_code"] == 0
            assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("fine"))["topics"][0]["error_code"] == 0
            _plain(c, "stuck", 0, 1)                                             # offset 0
            pid, epoch = init_ok(c, "lost")
            assert add_partitions(c, "lost", pid, epoch, "stuck", [0, 1]) == [0, 0]
            assert send(c, "stuck", txn_batch(pid, epoch, 0, [b"hung"]), "lost") == (0, 1)  # offset 1
            body = produce("stuck", 1, txn_batch(pid, epoch, 1, [b"hung"]), acks=-1)
            body["transactional_id"] = "lost"
            assert partition_response(c.call(ApiKey.PRODUCE, 7, body))["error_code"] == 0  # stuck-1 offset 0
            _plain(c, "stuck", 0, 2)                                             # offsets 2, 3
            _plain(c, "stuck", 1, 1)                                             # offset 1
        b.kill()
        # the coordinator's memory of the transaction goes; the partitions keep it open
        dirs = glob.glob(os.path.join(data, "__transaction_state-*"))
        assert dirs
        for d in dirs:
            shutil.rmtree(d)
        b.start()
        bs = ["--bootstrap-server", b.bootstrap]
        with Conn(b.port) as c:
            assert lso(c, "stuck") == 1  # held back for ever: nothing will end it
            assert await _read_committed(b.bootstrap, "stuck", 0) == [0]
            # a live transaction its coordinator knows is not hanging, however old
            live, live_epoch = init_ok(c, "live")
            assert add_partitions(c, "live", live, live_epoch, "fine", [0]) == [0]
            assert send(c, "fine", txn_batch(live, live_epoch, 0, [b"open"]), "live") == (0, 0)
        time.sleep(0.01)

        rows = _rows(ok("transactions", *bs, "find-hanging", "--broker-id", "0", "--max-transaction-timeout", "0"))
        assert rows[0] == ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                           "LastTimestamp", "Duration(min)"]
        assert sorted(r[:6] for r in rows[1:]) == [["stuck", "0", str(pid), str(epoch), "-1", "1"],
                                                   ["stuck", "1", str(pid), str(epoch), "-1", "0"]]
        # younger than the default 15 minutes: not yet reported
        assert len(_rows(ok("transactions", "find-hanging", "--topic", "stuck", *bs))) == 1
        assert mb("transactions", "find-hanging", *bs).returncode == 1  # needs --broker-id or --topic

        rows = _rows(ok("transactions", "describe-producers", "--topic", "stuck", "--partition", "0", *bs))
        assert rows[1][0] == str(pid) and rows[1][-1] == "1"
        rows = _rows(ok("transactions", "list", *bs))
        assert rows[1:] == [["live", "0", str(live), "Ongoing"]]
        rows = _rows(ok("transactions", "describe", "--transactional-id", "live", *bs))
        assert rows[1][4] == "Ongoing" and rows[1][-1] == "fine-0"

        # abort by start offset (the producer looked up), and by producer id and epochs
        assert ok("transactions", *bs, "abort", "--topic", "stuck", "--partition", "0", "--start-offset", "1") == ""
        r = mb("transactions", *bs, "abort", "--topic", "stuck", "--partition", "0", "--start-offset", "1")
        assert r.returncode == 1 and b"could not find any open transactions starting at offset 1" in r.stderr
        assert ok("transactions", *bs, "abort", "--topic", "stuck", "--partition", "1", "--producer-id", str(pid),
                  "--producer-epoch", str(epoch), "--coordinator-epoch", "-1") == ""
        with Conn(b.port) as c:
            assert lso(c, "stuck") == 5  # a, hung (aborted), b, c, the ABORT marker
        assert await _read_committed(b.bootstrap, "stuck", 0) == [0, 2, 3]
        assert await _read_committed(b.bootstrap, "stuck", 1) == [1]
        assert len(_rows(ok("transactions", "find-hanging", "--broker-id", "0", "--max-transaction-timeout", "0",
                            *bs))) == 1
        # an older producer epoch than the partition has seen is refused
        r = mb("transactions", *bs, "abort", "--topic", "stuck", "--partition", "1", "--producer-id", str(pid),
               "--producer-epoch", str(epoch - 1), "--coordinator-epoch", "0")
        assert r.returncode == 1 and b"INVALID_PRODUCER_EPOCH" in r.stderr
