"""The transaction coordinator's state machine (broker/txn/coordinator.py) without I/O or an
event loop: each request becomes a Transition, which these tests apply as the runtime would
once its record is written."""

from __future__ import annotations

import pytest

from broker.config import BrokerConfig
from broker.txn.coordinator import MAX_EPOCH, TV0, TV2, CoordinatorError, TransactionCoordinator, Transition, TxnConfig
from broker.txn.records import TxnLogValue, TxnState, decode_txn_value, encode_txn_value
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


# ------------------------------------------------------------------ transactions V2 (KIP-890 part 2)


def tv2_coordinator(level: int = 2) -> tuple[TransactionCoordinator, Clock]:
    ids = iter(range(1000, 2000))
    clock = Clock()
    return TransactionCoordinator(TxnConfig(BrokerConfig.load()), lambda: next(ids), clock, lambda: level), clock


def test_v2_end_bumps_the_epoch_and_switches_producer_id_when_it_runs_out() -> None:
    c, _ = tv2_coordinator()
    written(c.prepare_init("app", 60_000))
    m = c.txns["app"]
    m.producer_epoch = MAX_EPOCH - 1  # 32766: the last epoch a client may hold
    written(c.prepare_add_partitions("app", 1000, MAX_EPOCH - 1, [("t", 0)], TV2))
    t = written(c.prepare_end("app", 1000, MAX_EPOCH - 1, True, TV2))
    assert t is not None and t.record.producer_epoch == MAX_EPOCH and t.record.next_producer_id == 1001
    assert t.record.client_transaction_version == TV2
    assert c.next_identity(m) == (1001, 0)  # what EndTxn v5 answers
    # the markers are written under the old producer id at epoch 32767; then the switch
    assert (m.producer_id, m.producer_epoch) == (1000, MAX_EPOCH)
    with pytest.raises(CoordinatorError) as e:  # the new id is not in force before Complete*
        c.prepare_add_partitions("app", 1001, 0, [("t", 0)], TV2)
    assert e.value.error_code == E.INVALID_PRODUCER_ID_MAPPING
    done = written(c.prepare_complete(m, True))
    assert done is not None and (m.producer_id, m.producer_epoch, m.prev_producer_id, m.next_producer_id) == \
        (1001, 0, 1000, -1)
    # a retry of the EndTxn under the old identity: NONE (the answer is the current identity)
    assert c.prepare_end("app", 1000, MAX_EPOCH - 1, True, TV2) is None
    with pytest.raises(CoordinatorError) as e:
        c.prepare_end("app", 1000, MAX_EPOCH - 1, False, TV2)
    assert e.value.error_code == E.INVALID_TXN_STATE
    # the new id goes on at epoch 0: an abort with nothing added bumps it to 1, no markers
    t = written(c.prepare_end("app", 1001, 0, False, TV2))
    assert t is not None and t.complete is False and not m.partitions and m.producer_epoch == 1


def test_v2_retries_and_fences_by_epoch() -> None:
    c, _ = tv2_coordinator()
    written(c.prepare_init("app", 60_000))
    written(c.prepare_add_partitions("app", 1000, 0, [("t", 0)], TV2))
    t = written(c.prepare_end("app", 1000, 0, False, TV2))
    assert t is not None and c.txns["app"].state == TxnState.PREPARE_ABORT
    for commit, code in ((False, E.CONCURRENT_TRANSACTIONS), (True, E.INVALID_TXN_STATE)):
        with pytest.raises(CoordinatorError) as e:  # a retry while the markers are written
            c.prepare_end("app", 1000, 0, commit, TV2)
        assert e.value.error_code == code
    with pytest.raises(CoordinatorError) as e:  # the bumped epoch is not a retry while Prepare*
        c.prepare_end("app", 1000, 1, False, TV2)
    assert e.value.error_code == E.PRODUCER_FENCED
    written(c.prepare_complete(c.txns["app"], False))
    assert c.prepare_end("app", 1000, 0, False, TV2) is None  # the retry, now completed
    with pytest.raises(CoordinatorError) as e:  # the epoch before that one: a zombie
        c.prepare_add_partitions("app", 1000, 0, [("t", 1)], TV2)
    assert e.value.error_code == E.PRODUCER_FENCED


def test_fences_follow_the_finalized_level() -> None:
    """InitProducerId of an open transaction aborts it as Kafka's server-side abort does: at
    level 2 the abort bumps the epoch once more after the fence's bump."""
    for level, epoch in ((0, 1), (2, 2)):
        c, _ = tv2_coordinator(level)
        written(c.prepare_init("app", 60_000))
        written(c.prepare_add_partitions("app", 1000, 0, [("t", 0)], TV2 if level else TV0))
        fence = written(c.prepare_init("app", 60_000))
        assert fence is not None and fence.fence and fence.record.producer_epoch == epoch
        assert fence.record.client_transaction_version == level


def test_v2_state_is_replayed_and_a_prepared_switch_completes() -> None:
    """A PrepareCommit record of a V2 transaction whose epoch ran out (read at start-up) keeps
    the producer id to switch to: its completion switches."""
    c, _ = tv2_coordinator()
    value = TxnLogValue(1000, MAX_EPOCH, 60_000, TxnState.PREPARE_COMMIT, (("t", 0),), 5, 4, 1000, 1001, TV2)
    raw = encode_txn_value(value, 1)
    assert int.from_bytes(raw[:2], "big") == 1 and decode_txn_value(raw) == value
    assert decode_txn_value(encode_txn_value(value, 0)) == value._replace(previous_producer_id=-1,
                                                                         next_producer_id=-1,
                                                                         client_transaction_version=0)
    c.replay("app", decode_txn_value(raw))
    [(m, commit)] = c.left_prepared()
    assert commit and m.tv2 and m.next_producer_id == 1001
    written(c.prepare_complete(m, True))
    assert (m.producer_id, m.producer_epoch, m.state) == (1001, 0, TxnState.COMPLETE_COMMIT)


def test_v2_lost_markers_are_repaired_with_the_bumped_epoch() -> None:
    """The start-up repair of a V2 transaction: its data is at the epoch below its markers'."""
    from broker.storage.producer_state import ProducerStateEntry

    class Psm:
        def __init__(self, pid: int, epoch: int) -> None:
            self.ongoing_txns = {pid: 0}
            self.entry = ProducerStateEntry(pid, epoch)

        def last_entry(self, pid: int) -> ProducerStateEntry:
            return self.entry

    c, _ = tv2_coordinator()
    c.replay("app", TxnLogValue(1000, 3, 60_000, TxnState.COMPLETE_COMMIT, (), 5, 4, 1000, -1, TV2))
    c.replay("sw", TxnLogValue(1001, 0, 60_000, TxnState.COMPLETE_COMMIT, (), 5, 4, 1500, -1, TV2))
    found = c.dangling([(("t", 0), Psm(1000, 2)), (("t", 1), Psm(1500, MAX_EPOCH - 1)),  # type: ignore[list-item]
                        (("t", 2), Psm(1000, 1))])  # type: ignore[list-item]
    assert [(d.partition, d.producer_id, d.producer_epoch, d.commit) for d in found] == [
        (0, 1000, 3, True), (1, 1500, MAX_EPOCH, True), (2, 1000, 3, False)]
