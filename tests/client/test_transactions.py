"""client/transactions.py (with the producer, sender and read_committed fetcher) against real
broker processes: what commits is visible to read_committed consumers exactly once and what
aborts never is (records and bulk columns), offsets sent with a transaction, fencing,
abortable errors and the coordinator retries, and a consume-transform-produce loop killed
with SIGKILL at random points that still produces each result exactly once."""

from __future__ import annotations

import asyncio
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator

import pytest

from client import Admin, Consumer, Producer
from client.conn import BrokerConnection
from client.errors import (  # type: ignore[attr-defined]
    IllegalStateError,
    ProducerFencedError,
    TransactionAbortableError,
    TransactionAbortedError,
)
from client.protocol.api import ApiKey, ErrorCode
from tests.broker_process import REPO, BrokerProcess


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def fault_broker(tmp_path_factory) -> Iterator[BrokerProcess]:
    """A broker with fault injection, for the retry and abortable-error paths (and timed-out
    transactions aborted every 100 ms, not 10 s)."""
    b = BrokerProcess(str(tmp_path_factory.mktemp("txn-faults") / "data"), faults=True,
                      overrides=["transaction.abort.timed.out.transaction.cleanup.interval.ms=100"]).start()
    try:
        yield b
    finally:
        assert b.stop() == 0, b.log_text()


async def _create(bs: str, topic: str, partitions: int = 2) -> None:
    async with Admin(bs) as admin:
        await admin.create_topic(topic, partitions)


async def _read_all(bs: str, topic: str, partitions: int, isolation: str, *,
                    bulk: bool = False) -> list[tuple[int, int, bytes | None]]:
    """Every record of ``topic`` as (partition, offset, value), in each partition's order,
    read until the positions reach the end offsets (under ``isolation``: the last stable
    offsets for read_committed) — past the markers and aborted records at the end too."""
    out: list[tuple[int, int, bytes | None]] = []
    async with Consumer(bs, isolation_level=isolation, auto_offset_reset="earliest", fetch_max_wait_ms=100) as c:
        tps = [(topic, p) for p in range(partitions)]
        c.assign(tps)
        ends = await c.end_offsets(tps)
        deadline = time.monotonic() + 10
        while not all([await c.position(tp) >= ends[tp] for tp in ends]):
            assert time.monotonic() < deadline, f"positions {[await c.position(tp) for tp in tps]}, ends {ends}"
            if bulk:
                out += [(cb.partition, o, v) for cb in await c.getbatches(timeout_ms=100)
                        for o, v in zip(cb.offsets, cb.values.to_pylist())]
            else:
                out += [(r.partition, r.offset, r.value) for rows in (await c.getmany(timeout_ms=100)).values()
                        for r in rows]
    return out


# ---------------------------------------------------------------- visibility


async def test_commit_visible_abort_invisible(module_broker) -> None:
    bs, topic = module_broker.bootstrap, _topic("vis")
    await _create(bs, topic)
    async with Producer(bs, transactional_id=_topic("tx"), linger_ms=1) as p:
        await p.init_transactions()
        sent: dict[str, list[bytes]] = {}
        for t, outcome in enumerate(["commit", "abort", "commit", "abort", "abort", "commit"]):
            p.begin_transaction()
            vals = [f"t{t}-{i}".encode() for i in range(7)]
            futs = [p.send_nowait(topic, v, partition=i % 2) for i, v in enumerate(vals)]
            await asyncio.gather(*futs)  # written to the log (acked), not yet committed
            if outcome == "commit":
                await p.commit_transaction()
            else:
                await p.abort_transaction()
            sent.setdefault(outcome, []).extend(vals)
    committed = sorted(sent["commit"])
    for bulk in (False, True):
        rc = await _read_all(bs, topic, 2, "read_committed", bulk=bulk)
        assert sorted(v for _, _, v in rc) == committed, bulk
        ru = await _read_all(bs, topic, 2, "read_uncommitted", bulk=bulk)
        assert sorted(v for _, _, v in ru) == sorted(committed + sent["abort"]), bulk
        # the committed records keep their order within each partition
        for part in (0, 1):
            offs = [o for p, o, _ in rc if p == part]
            assert offs == sorted(offs)


async def test_open_transaction_holds_read_committed_back(module_broker) -> None:
    """The last stable offset: a read_committed consumer neither reads nor counts the records
    of an open transaction, nor anything after them; its end offset is the LSO."""
    bs, topic = module_broker.bootstrap, _topic("lso")
    await _create(bs, topic, 1)
    async with Producer(bs, transactional_id=_topic("tx")) as p, Producer(bs) as plain:
        await p.init_transactions()
        p.begin_transaction()
        await p.send(topic, b"open-1", partition=0)                 # offset 0, in the open transaction
        await plain.send(topic, b"plain-after", partition=0)        # offset 1, not transactional
        async with Consumer(bs, isolation_level="read_committed", auto_offset_reset="earliest") as c:
            c.assign([(topic, 0)])
            assert await c.end_offsets([(topic, 0)]) == {(topic, 0): 0}
            assert await c.getmany(timeout_ms=300) == {}
            async with Consumer(bs, auto_offset_reset="earliest") as ru:
                assert await ru.end_offsets([(topic, 0)]) == {(topic, 0): 2}
            await p.commit_transaction()
            got: list[bytes | None] = []
            deadline = time.monotonic() + 5
            while len(got) < 2 and time.monotonic() < deadline:
                got += [r.value for rows in (await c.getmany(timeout_ms=200)).values() for r in rows]
            assert got == [b"open-1", b"plain-after"]
            assert await c.end_offsets([(topic, 0)]) == {(topic, 0): 3}  # + the COMMIT marker


# ---------------------------------------------------------------- offsets in a transaction


async def _offset_fetch(bs: str, group: str, topic: str, require_stable: bool) -> tuple[int, int]:
    """(error code, committed offset) of partition 0 from a raw OffsetFetch v7."""
    async with Admin(bs) as admin:  # FindCoordinator: this node
        await admin.list_groups()
    host, port = bs.split(":")
    conn = await BrokerConnection.connect(host, int(port))
    try:
        resp = await conn.request(ApiKey.OFFSET_FETCH, 7, {
            "group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}],
            "require_stable": require_stable})
    finally:
        await conn.close()
    p = resp["topics"][0]["partitions"][0]
    return p["error_code"], p["committed_offset"]


async def test_send_offsets_commit_only_with_the_transaction(module_broker) -> None:
    bs, topic, group = module_broker.bootstrap, _topic("offs"), _topic("g")
    await _create(bs, topic, 1)
    async with Consumer(bs, group_id=group, enable_auto_commit=False) as c, \
            Producer(bs, transactional_id=_topic("tx")) as p:
        c.assign([(topic, 0)])
        await c.commit({(topic, 0): 5})
        await p.init_transactions()

        # aborted: the offsets are dropped with the transaction
        p.begin_transaction()
        await p.send_offsets_to_transaction({(topic, 0): 11}, c.group_metadata())
        assert await _offset_fetch(bs, group, topic, True) == (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1)
        assert await _offset_fetch(bs, group, topic, False) == (0, 5)
        await p.abort_transaction()
        assert (await c.committed([(topic, 0)]))[(topic, 0)].offset == 5

        # committed: visible only once the transaction commits; the consumer's committed()
        # (require_stable, as Kafka's) waits for it rather than answer the old offset
        p.begin_transaction()
        await p.send_offsets_to_transaction({(topic, 0): 12}, group)  # a plain group id works too
        waiting = asyncio.ensure_future(c.committed([(topic, 0)]))
        await asyncio.sleep(0.3)
        assert not waiting.done()
        assert await _offset_fetch(bs, group, topic, False) == (0, 5)
        await p.commit_transaction()
        assert (await asyncio.wait_for(waiting, 10))[(topic, 0)].offset == 12
        assert await _offset_fetch(bs, group, topic, True) == (0, 12)


async def test_send_offsets_of_a_group_member_and_of_a_zombie(module_broker) -> None:
    """A subscribed member's metadata (generation, member id) commits; the same member id with
    a generation the group has moved past is refused (ILLEGAL_GENERATION): abortable."""
    bs, topic, group = module_broker.bootstrap, _topic("member"), _topic("g")
    await _create(bs, topic, 1)
    async with Producer(bs) as plain:
        await asyncio.gather(*[plain.send_nowait(topic, b"%d" % i, partition=0) for i in range(5)])
    async with Consumer(bs, group_id=group, enable_auto_commit=False, auto_offset_reset="earliest") as c, \
            Producer(bs, transactional_id=_topic("tx")) as p:
        await p.init_transactions()
        c.subscribe([topic])
        got = await c.getmany(timeout_ms=10000)
        meta = c.group_metadata()
        assert meta.generation_id >= 1 and meta.member_id and meta.group_id == group
        p.begin_transaction()
        await p.send_offsets_to_transaction({tp: rows[-1].offset + 1 for tp, rows in got.items()}, meta)
        await p.commit_transaction()
        assert (await c.committed([(topic, 0)]))[(topic, 0)].offset == 5
        p.begin_transaction()
        zombie = meta._replace(generation_id=meta.generation_id + 1)
        with pytest.raises(Exception) as refused:
            await p.send_offsets_to_transaction({(topic, 0): 1}, zombie)
        assert refused.value.code == ErrorCode.ILLEGAL_GENERATION
        with pytest.raises(TransactionAbortableError):
            await p.commit_transaction()
        await p.abort_transaction()
        assert (await c.committed([(topic, 0)]))[(topic, 0)].offset == 5


# ---------------------------------------------------------------- fencing and errors


async def test_a_second_producer_fences_the_first(module_broker) -> None:
    bs, topic, txid = module_broker.bootstrap, _topic("fence"), _topic("tx")
    await _create(bs, topic)
    async with Producer(bs, transactional_id=txid) as old:
        await old.init_transactions()
        old.begin_transaction()
        await old.send(topic, b"zombie-0", partition=0)
        async with Producer(bs, transactional_id=txid) as new:
            await new.init_transactions()  # bumps the epoch, aborts old's transaction
            with pytest.raises(ProducerFencedError):
                await old.send(topic, b"zombie-1", partition=0)  # a partition it had added
            for call in (old.commit_transaction, old.abort_transaction):  # fatal: every call
                with pytest.raises(ProducerFencedError):
                    await call()
            with pytest.raises(ProducerFencedError):
                old.begin_transaction()
            with pytest.raises(ProducerFencedError):
                old.send_nowait(topic, b"zombie-2")
            new.begin_transaction()
            await new.send(topic, b"new-0", partition=1)
            await new.commit_transaction()
    # a fenced producer that only commits: EndTxn answers the fence
    async with Producer(bs, transactional_id=txid) as p1:
        await p1.init_transactions()
        p1.begin_transaction()
        await p1.send(topic, b"zombie-3", partition=1)
        async with Producer(bs, transactional_id=txid) as p2:
            await p2.init_transactions()
            with pytest.raises(ProducerFencedError):
                await p1.commit_transaction()
    got = await _read_all(bs, topic, 2, "read_committed")
    assert [v for _, _, v in got] == [b"new-0"]


async def test_state_errors_and_config() -> None:
    with pytest.raises(ValueError, match="acks"):
        Producer(transactional_id="x", acks=1)
    with pytest.raises(ValueError, match="idempotent"):
        Producer(transactional_id="x", enable_idempotence=False)
    with pytest.raises(ValueError):
        Producer(transactional_id="x", max_in_flight_requests_per_connection=6)
    assert Producer(transactional_id="x").acks == -1


async def test_calls_out_of_order_raise_illegal_state(module_broker) -> None:
    bs, topic = module_broker.bootstrap, _topic("state")
    await _create(bs, topic, 1)
    async with Producer(bs) as plain:
        with pytest.raises(IllegalStateError, match="transactional_id"):
            plain.begin_transaction()
    async with Producer(bs, transactional_id=_topic("tx")) as p:
        with pytest.raises(IllegalStateError, match="init_transactions"):
            p.begin_transaction()
        with pytest.raises(IllegalStateError, match="init_transactions"):
            p.send_nowait(topic, b"x")
        await p.init_transactions()
        with pytest.raises(IllegalStateError):
            await p.init_transactions()
        with pytest.raises(IllegalStateError, match="begin_transaction"):
            await p.send(topic, b"outside")
        with pytest.raises(IllegalStateError):
            await p.commit_transaction()
        with pytest.raises(IllegalStateError):
            await p.abort_transaction()
        p.begin_transaction()
        with pytest.raises(IllegalStateError):
            p.begin_transaction()
        await p.commit_transaction()  # empty: no request needed, READY again
        p.begin_transaction()
        await p.send(topic, b"in", partition=0)
        await p.commit_transaction()
    assert [v for _, _, v in await _read_all(bs, topic, 1, "read_committed")] == [b"in"]


async def test_failed_send_makes_the_transaction_abortable(fault_broker) -> None:
    """A batch refused for good: commit is refused, abort works and drops what was not sent,
    and the next transaction (under a bumped epoch, since the sequences now have a gap) commits."""
    bs, topic = fault_broker.bootstrap, _topic("abortable")
    await _create(bs, topic)
    async with Producer(bs, transactional_id=_topic("tx"), linger_ms=1) as p:
        await p.init_transactions()
        p.begin_transaction()
        await p.send(topic, b"ok-0", partition=1)
        fault_broker.faults.fail(ApiKey.PRODUCE, ErrorCode.INVALID_RECORD, topic=topic, partition=0)
        with pytest.raises(Exception) as failed:
            await p.send(topic, b"refused", partition=0)
        assert failed.value.code == ErrorCode.INVALID_RECORD
        with pytest.raises(TransactionAbortableError) as e:
            p.send_nowait(topic, b"more", partition=1)
        # the batch's error (a record future raises an equal copy of it: client.record_future.fresh_error)
        cause = e.value.__cause__
        assert type(cause) is type(failed.value) and cause.args == failed.value.args
        with pytest.raises(TransactionAbortableError):
            await p.commit_transaction()
        epoch = p._txn.producer_epoch  # type: ignore[union-attr]
        await p.abort_transaction()
        assert p._txn.producer_epoch == epoch + 1  # type: ignore[union-attr]
        p.begin_transaction()
        await p.send(topic, b"next-0", partition=0)
        await p.send(topic, b"next-1", partition=1)
        await p.commit_transaction()
    assert sorted(v for _, _, v in await _read_all(bs, topic, 2, "read_committed")) == [b"next-0", b"next-1"]


async def test_abort_drops_unsent_records(module_broker) -> None:
    bs, topic = module_broker.bootstrap, _topic("drop")
    await _create(bs, topic, 1)
    async with Producer(bs, transactional_id=_topic("tx"), linger_ms=60000) as p:
        await p.init_transactions()
        p.begin_transaction()
        futs = [p.send_nowait(topic, b"never", partition=0) for _ in range(5)]  # lingering, unsent
        await p.abort_transaction()
        for f in futs:
            with pytest.raises(TransactionAbortedError):
                await f
        p.begin_transaction()
        p.send_nowait(topic, b"kept", partition=0)
        await p.commit_transaction()  # flushes despite the linger
    assert [v for _, _, v in await _read_all(bs, topic, 1, "read_uncommitted")] == [b"kept"]


async def test_coordinator_errors_are_retried(fault_broker) -> None:
    bs, topic, group = fault_broker.bootstrap, _topic("retry"), _topic("g")
    await _create(bs, topic)
    faults = fault_broker.faults
    txid = _topic("tx")
    faults.fail(ApiKey.FIND_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, 2)
    faults.fail(ApiKey.INIT_PRODUCER_ID, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, 2)
    async with Producer(bs, transactional_id=txid, retry_backoff_ms=10) as p:
        await p.init_transactions()
        p.begin_transaction()
        # the sender must hold the batch until AddPartitionsToTxn is answered: the broker
        # refuses a transactional batch for a partition not in the transaction
        faults.fail(ApiKey.ADD_PARTITIONS_TO_TXN, ErrorCode.CONCURRENT_TRANSACTIONS, 2)
        faults.delay(ApiKey.ADD_PARTITIONS_TO_TXN, 300)
        f0 = p.send_nowait(topic, b"a", partition=0)
        f1 = p.send_nowait(topic, b"b", partition=1)
        faults.fail(ApiKey.ADD_OFFSETS_TO_TXN, ErrorCode.NOT_COORDINATOR)
        faults.fail(ApiKey.TXN_OFFSET_COMMIT, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        await p.send_offsets_to_transaction({(topic, 0): 1}, group)
        faults.fail(ApiKey.END_TXN, ErrorCode.CONCURRENT_TRANSACTIONS, 2)
        faults.drop(ApiKey.END_TXN, after=True)  # committed, but the answer is lost: retried
        await p.commit_transaction()
        await asyncio.gather(f0, f1)
        assert faults.rules() == []
        p.begin_transaction()  # READY again: the next transaction works
        await p.send(topic, b"c", partition=0)
        await p.commit_transaction()
    assert sorted(v for _, _, v in await _read_all(bs, topic, 2, "read_committed")) == [b"a", b"b", b"c"]
    async with Admin(bs) as admin:
        assert (await admin.list_group_offsets(group))[(topic, 0)].committed == 1


async def test_a_timed_out_transaction_is_aborted_and_its_producer_fenced(fault_broker) -> None:
    bs, topic = fault_broker.bootstrap, _topic("timeout")
    await _create(bs, topic, 1)
    async with Producer(bs, transactional_id=_topic("tx"), transaction_timeout_ms=300) as p:
        await p.init_transactions()
        p.begin_transaction()
        await p.send(topic, b"too slow", partition=0)
        async with Consumer(bs, isolation_level="read_committed") as c:
            deadline = time.monotonic() + 10
            while (await c.end_offsets([(topic, 0)]))[(topic, 0)] < 2:  # the coordinator's ABORT marker
                assert time.monotonic() < deadline, "the transaction was not aborted at its timeout"
                await asyncio.sleep(0.05)
        with pytest.raises(ProducerFencedError):
            await p.commit_transaction()
    assert await _read_all(bs, topic, 1, "read_committed") == []


async def test_close_aborts_an_open_transaction(module_broker) -> None:
    bs, topic = module_broker.bootstrap, _topic("close")
    await _create(bs, topic, 1)
    async with Producer(bs, transactional_id=_topic("tx")) as p:
        await p.init_transactions()
        p.begin_transaction()
        await p.send(topic, b"left open", partition=0)
    # aborted at close, not at the 60 s transaction timeout: the LSO moves on at once
    async with Consumer(bs, isolation_level="read_committed") as c:
        assert await c.end_offsets([(topic, 0)]) == {(topic, 0): 2}
    assert await _read_all(bs, topic, 1, "read_committed") == []


# ---------------------------------------------------------------- exactly once across SIGKILL

N_INPUT = 2000  # ~50 transactions: a run that lives 0.2 s past its first commit rarely ends the input
KILLS = 4


_LINES: dict[int, queue.Queue[str | None]] = {}


def _start_loop(bs: str, src: str, dst: str, group: str, txid: str) -> subprocess.Popen[str]:
    """The loop in a child process; a thread queues its output lines (None at EOF), so that
    waiting for one can time out even while the child is silent."""
    env = dict(os.environ, PYTHONPATH=REPO)
    proc = subprocess.Popen([sys.executable, "-m", "tests.client.txn_loop", bs, src, dst, group, txid],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, text=True)
    lines: queue.Queue[str | None] = queue.Queue()
    _LINES[proc.pid] = lines

    def pump() -> None:
        assert proc.stdout is not None
        with proc.stdout:  # closed here, at EOF (the child exited or was killed)
            for line in proc.stdout:
                lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return proc


def _wait_line(proc: subprocess.Popen[str], prefix: str | tuple[str, ...], timeout: float) -> str:
    """The loop's first output line starting with ``prefix``; AssertionError after ``timeout``
    (checked while waiting for a line too: the loop may go quiet, e.g. once it has consumed
    everything)."""
    deadline = time.monotonic() + timeout
    lines = _LINES[proc.pid]
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(deadline - time.monotonic(), 0.001))
        except queue.Empty:
            break
        if not line:
            raise AssertionError(f"the loop exited ({proc.poll()}) before printing {prefix!r}")
        if line.startswith(prefix):
            return line
    raise AssertionError(f"no {prefix!r} from the loop within {timeout} s")


@pytest.mark.slow  # five child processes: ~5 s
async def test_consume_transform_produce_survives_sigkill(module_broker) -> None:
    """The loop (tests/client/txn_loop.py) reads the input with read_committed from the
    group's committed offsets, and per poll: begin, send one output per input, send the
    offsets, commit. SIGKILL at random points, restart: its init_transactions fences and
    aborts the dead loop's open transaction, and the output read with read_committed holds
    every input's result exactly once."""
    bs = module_broker.bootstrap
    src, dst, group, txid = _topic("in"), _topic("out"), _topic("g"), _topic("tx")
    await _create(bs, src)
    await _create(bs, dst)
    async with Producer(bs, linger_ms=5) as p:
        await asyncio.gather(*[p.send_nowait(src, b"%d" % i, partition=i % 2) for i in range(N_INPUT)])
    rng = random.Random(os.environ.get("TXN_KILL_SEED", "7"))
    for k in range(KILLS):
        proc = _start_loop(bs, src, dst, group, txid)
        try:
            # at least one transaction in this run, unless an earlier run (on a fast turn of the
            # machine) consumed everything: then this one only reports "done"
            _wait_line(proc, ("committed", "done"), 30)
            if k % 2:  # anywhere
                time.sleep(rng.uniform(0.0, 0.2))
            else:  # with output written and its transaction open (unless this run consumed all)
                _wait_line(proc, ("sent", "done"), 30)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
    proc = _start_loop(bs, src, dst, group, txid)
    try:
        _wait_line(proc, "done", 60)
    finally:
        proc.kill()
        proc.wait(10)
    out = Counter(v for _, _, v in await _read_all(bs, dst, 2, "read_committed"))
    assert out == Counter(b"out-%d" % i for i in range(N_INPUT))
    # the kills did cut transactions short: aborted output is in the log, hidden from read_committed
    everything = Counter(v for _, _, v in await _read_all(bs, dst, 2, "read_uncommitted"))
    assert sum(everything.values()) > N_INPUT and set(everything) == set(out)
