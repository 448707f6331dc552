"""Our transactional producer speaking transactions V2 (KIP-890 part 2) against a broker
whose ``transaction.version`` 2 an operator finalized (UpdateFeatures): no AddPartitionsToTxn
or AddOffsetsToTxn (a fault armed on both never fires), Produce v12+, EndTxn v5 whose new epoch
the producer takes; commit and abort seen by read_committed consumers exactly, offsets
committed with the transaction only, a zombie fenced, and the same producer on a broker at
level 0 staying on the older protocol."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator

import pytest

from client import Admin, Consumer, Producer
from client.errors import ProducerFencedError
from client.protocol.api import ApiKey, ErrorCode
from client.structs import ConsumerGroupMetadata
from tests.broker_process import BrokerProcess
from tests.server.wire import Conn
from tests.txn.test_tv2 import set_transaction_version


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def v2_broker(tmp_path_factory) -> Iterator[BrokerProcess]:
    """A broker with fault injection, ``transaction.version`` 2 finalized as an operator does."""
    b = BrokerProcess(str(tmp_path_factory.mktemp("txn-v2") / "data"), faults=True).start()
    try:
        with Conn(b.port) as c:
            set_transaction_version(c, 2)
        yield b
    finally:
        assert b.stop() == 0, b.log_text()


async def _read(bs: str, topic: str, partitions: int, isolation: str) -> list[bytes | None]:
    out: list[bytes | None] = []
    async with Consumer(bs, isolation_level=isolation, auto_offset_reset="earliest", fetch_max_wait_ms=100) as c:
        tps = [(topic, p) for p in range(partitions)]
        c.assign(tps)
        ends = await c.end_offsets(tps)
        deadline = time.monotonic() + 10
        while not all([await c.position(tp) >= ends[tp] for tp in ends]):
            assert time.monotonic() < deadline
            out += [r.value for rows in (await c.getmany(timeout_ms=100)).values() for r in rows]
    return out


def _epoch(p: Producer) -> tuple[int, int]:
    tm = p._txn
    assert tm is not None
    return tm.producer_id, tm.producer_epoch


async def test_commit_and_abort_bump_the_epoch(v2_broker) -> None:
    bs, topic, txid = v2_broker.bootstrap, _name("v2"), _name("tx")
    async with Admin(bs) as admin:
        await admin.create_topic(topic, 2)
    faults = v2_broker.faults
    # a V2 producer sends neither: these never fire
    faults.fail(ApiKey.ADD_PARTITIONS_TO_TXN, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    faults.fail(ApiKey.ADD_OFFSETS_TO_TXN, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    try:
        async with Producer(bs, transactional_id=txid, linger_ms=1) as p:
            await p.init_transactions()
            pid, epoch = _epoch(p)
            assert epoch == 0
            sent: dict[str, list[bytes]] = {"commit": [], "abort": []}
            for t, outcome in enumerate(["commit", "abort", "commit", "abort", "commit"]):
                p.begin_transaction()
                assert p._transactions().v2
                vals = [f"t{t}-{i}".encode() for i in range(6)]
                await asyncio.gather(*[p.send_nowait(topic, v, partition=i % 2) for i, v in enumerate(vals)])
                await (p.commit_transaction() if outcome == "commit" else p.abort_transaction())
                sent[outcome] += vals
                assert _epoch(p) == (pid, t + 1)  # EndTxn v5 bumped it; sequences start again at 0
            async with Admin(bs) as admin:
                d = (await admin.describe_transactions([txid]))[txid]
            assert (d.producer_id, d.producer_epoch) == (pid, 5)
        assert sorted(v for v in await _read(bs, topic, 2, "read_committed") if v) == sorted(sent["commit"])
        assert sorted(v for v in await _read(bs, topic, 2, "read_uncommitted") if v) == \
            sorted(sent["commit"] + sent["abort"])
        assert len(faults.rules()) == 2  # neither fired
    finally:
        faults.clear()


async def test_offsets_go_with_the_transaction(v2_broker) -> None:
    bs, topic, group, txid = v2_broker.bootstrap, _name("off"), _name("g"), _name("tx")
    async with Admin(bs) as admin:
        await admin.create_topic(topic, 1)
    meta = ConsumerGroupMetadata(group)
    async with Producer(bs, transactional_id=txid) as p:
        await p.init_transactions()
        for offset, commit in ((5, True), (9, False), (12, True)):
            p.begin_transaction()
            await p.send(topic, b"x", partition=0)
            await p.send_offsets_to_transaction({(topic, 0): offset}, meta)  # TxnOffsetCommit v5 only
            await (p.commit_transaction() if commit else p.abort_transaction())
            async with Admin(bs) as admin:
                deadline = time.monotonic() + 10
                want = offset if commit else 5
                while (await admin.list_group_offsets(group))[(topic, 0)].committed != want:
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.05)
    assert _epoch(p)[1] == 3


async def test_a_zombie_is_fenced(v2_broker) -> None:
    bs, topic, txid = v2_broker.bootstrap, _name("zombie"), _name("tx")
    async with Admin(bs) as admin:
        await admin.create_topic(topic, 2)
    async with Producer(bs, transactional_id=txid) as old:
        await old.init_transactions()
        old.begin_transaction()
        await old.send(topic, b"zombie-0", partition=0)
        async with Producer(bs, transactional_id=txid) as new:
            await new.init_transactions()  # aborts old's transaction under a bumped epoch
            for partition in (0, 1):  # one it wrote to, one it did not
                with pytest.raises(ProducerFencedError):
                    await old.send(topic, b"zombie-1", partition=partition)
            with pytest.raises(ProducerFencedError):
                await old.commit_transaction()
            new.begin_transaction()
            await new.send(topic, b"new-0", partition=1)
            await new.commit_transaction()
    assert await _read(bs, topic, 2, "read_committed") == [b"new-0"]


async def test_at_level_0_the_older_protocol(module_broker) -> None:
    """The same producer against a broker that did not finalize transaction.version 2."""
    bs, topic, txid = module_broker.bootstrap, _name("v1"), _name("tx")
    async with Admin(bs) as admin:
        await admin.create_topic(topic, 1)
    async with Producer(bs, transactional_id=txid) as p:
        await p.init_transactions()
        for _ in range(2):
            p.begin_transaction()
            assert not p._transactions().v2
            await p.send(topic, b"v1", partition=0)
            await p.commit_transaction()
            assert _epoch(p)[1] == 0  # no bump at the end of a transaction
    assert await _read(bs, topic, 1, "read_committed") == [b"v1", b"v1"]
