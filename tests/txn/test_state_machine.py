"""The transaction coordinator's state machine (broker/txn/coordinator.py) without I/O or an
event loop: each request becomes a Transition, which these tests apply as the runtime would
once its record is written."""

from __future__ import annotations

import pytest

from broker.config import BrokerConfig
from broker.txn.coordinator import CoordinatorError, TransactionCoordinator, Transition, TxnConfig
from broker.txn.records import TxnState
from client.protocol.api import ErrorCode as E


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def coordinator() -> tuple[TransactionCoordinator, Clock]:
    ids = iter(range(1000, 2000))
    clock = Clock()
    return TransactionCoordinator(TxnConfig(BrokerConfig.load()), lambda: next(ids), clock), clock


def written(t: Transition | None) -> Transition | None:
    """What the runtime does once the record is written: begin, apply, end."""
    if t is not None:
        t.begin()
        t.apply()
        t.end()
    return t


def test_init_then_a_transaction_commits_and_completes() -> None:
    c, _ = coordinator()
    t = written(c.prepare_init("app", 60_000))
    assert t is not None and t.state == TxnState.EMPTY and t.record.producer_epoch == 0
    m = c.txns["app"]
    assert (m.producer_id, m.producer_epoch) == (1000, 0)
    t = written(c.prepare_add_partitions("app", 1000, 0, [("orders", 0)]))
    assert t is not None and m.state == TxnState.ONGOING and t.record.partitions == (("orders", 0),)
    assert c.prepare_add_partitions("app", 1000, 0, [("orders", 0)]) is None  # already in
    assert c.verify_produce("app", 1000, 0, "orders", 0, 9) == 0
    assert c.verify_produce("app", 1000, 0, "orders", 1, 9) == E.INVALID_TXN_STATE
    assert c.verify_produce("app", 1000, 0, "orders", 1, 11) == E.TRANSACTION_ABORTABLE
    t = written(c.prepare_end("app", 1000, 0, commit=True))
    assert t is not None and t.complete is True and m.state == TxnState.PREPARE_COMMIT
    done = written(c.prepare_complete(m, True))
    assert done is not None and not done.durable and m.state == TxnState.COMPLETE_COMMIT and not m.partitions
    assert c.prepare_end("app", 1000, 0, commit=True) is None  # a retried EndTxn after completion
    with pytest.raises(CoordinatorError) as e:
        c.prepare_end("app", 1000, 0, commit=False)
    assert e.value.error_code == E.INVALID_TXN_STATE


def test_memory_follows_the_log_until_the_transition_is_applied() -> None:
    c, _ = coordinator()
    written(c.prepare_init("app", 60_000))
    t = c.prepare_add_partitions("app", 1000, 0, [("orders", 0)])
    assert t is not None
    t.begin()
    m = c.txns["app"]
    assert m.state == TxnState.EMPTY and not m.partitions  # the record is not written yet
    with pytest.raises(CoordinatorError) as e:  # nothing else while a write is in flight
        c.prepare_end("app", 1000, 0, commit=True)
    assert e.value.error_code == E.CONCURRENT_TRANSACTIONS
    t.end()  # the write failed: nothing applied, the id free again
    assert m.pending is None and m.state == TxnState.EMPTY


def test_init_of_an_id_with_an_open_transaction_fences_it() -> None:
    c, _ = coordinator()
    written(c.prepare_init("app", 60_000))
    written(c.prepare_add_partitions("app", 1000, 0, [("orders", 0)]))
    fence = written(c.prepare_init("app", 60_000))
    assert fence is not None and fence.fence and fence.error == E.CONCURRENT_TRANSACTIONS
    assert fence.complete is False and c.txns["app"].state == TxnState.PREPARE_ABORT
    assert c.txns["app"].producer_epoch == 1  # bumped, never handed out
    with pytest.raises(CoordinatorError) as e:  # the old producer is fenced
        c.prepare_add_partitions("app", 1000, 0, [("orders", 1)])
    assert e.value.error_code == E.PRODUCER_FENCED


def test_timed_out_transactions_and_idle_ids() -> None:
    c, clock = coordinator()
    written(c.prepare_init("slow", 1_000))
    written(c.prepare_add_partitions("slow", 1000, 0, [("orders", 0)]))
    written(c.prepare_init("idle", 1_000))
    assert c.timed_out() == []
    clock.now += 1_001
    [fence] = c.timed_out()
    assert fence.metadata.transactional_id == "slow" and fence.fence and fence.complete is False
    clock.now += c.config.id_expiration_ms
    assert [m.transactional_id for m in c.expirable()] == ["idle"]  # "slow" is still open


def test_loading_answers_load_in_progress() -> None:
    c, _ = coordinator()
    c.loading = True
    with pytest.raises(CoordinatorError) as e:
        c.prepare_init("app", 60_000)
    assert e.value.error_code == E.COORDINATOR_LOAD_IN_PROGRESS
    assert c.verify_produce("app", 1, 0, "t", 0, 9) == E.NOT_ENOUGH_REPLICAS  # retriable until loaded
    assert c.describe("app")["error_code"] == E.COORDINATOR_LOAD_IN_PROGRESS
