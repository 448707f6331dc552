"""The share-partition state machine (broker/share/partition.py): acquisition, acknowledgements,
locks, the delivery-count limit, the in-flight bound, and its persisted form."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.share.partition import AckError, AckType, RecordState, SharePartition
from client.protocol.api import ErrorCode as E

A, REL, REJ, GAP, RENEW = AckType.ACCEPT, AckType.RELEASE, AckType.REJECT, AckType.GAP, AckType.RENEW


def test_records_are_acquired_once_and_accepted_records_move_the_start_offset() -> None:
    sp = SharePartition(0)
    assert sp.acquire("a", 3, 10, 0) == [(0, 2, 1)]
    assert sp.acquire("b", 3, 10, 0) == [(3, 5, 1)]  # nobody gets what another holds
    sp.acknowledge("a", 0, 2, [A], 0)
    assert sp.start_offset == 3
    sp.acknowledge("b", 3, 5, [A, REJ, A], 0)
    assert sp.start_offset == 6 and sp.records == {}


def test_only_the_holder_may_acknowledge() -> None:
    sp = SharePartition(0)
    sp.acquire("a", 2, 10, 0)
    with pytest.raises(AckError) as e:
        sp.acknowledge("b", 0, 1, [A], 0)
    assert e.value.error_code == E.INVALID_RECORD_STATE
    with pytest.raises(AckError):
        sp.acknowledge("a", 0, 5, [A], 0)  # 2-5 were never acquired
    assert sp.records[0].state == RecordState.ACQUIRED  # nothing applied
    with pytest.raises(AckError) as e:
        sp.acknowledge("a", 0, 1, [A, A, A], 0)
    assert e.value.error_code == E.INVALID_REQUEST


def test_release_redelivers_with_a_higher_count_and_the_limit_archives() -> None:
    sp = SharePartition(0, delivery_count_limit=3)
    for count in (1, 2, 3):
        assert sp.acquire("a", 1, 1, 0) == [(0, 0, count)]
        sp.acknowledge("a", 0, 0, [REL], 0)
    assert sp.records == {} and sp.start_offset == 1  # archived at the limit: gone from the window
    assert sp.acquire("a", 1, 1, 0) == []


def test_lock_expiry_and_member_release() -> None:
    sp = SharePartition(0, lock_duration_ms=1000)
    sp.acquire("a", 2, 10, 0)
    sp.acquire("b", 2, 10, 500)
    assert sp.next_lock_deadline() == 1000
    assert sp.expire_locks(1000) == 2  # a's two records
    assert sp.acquire("c", 10, 4, 1000) == [(0, 1, 2)]  # redelivered, counted
    assert sp.release_member("b") == 2
    assert sp.acquire("c", 10, 4, 1000) == [(2, 3, 2)]


def test_renew_extends_the_lock_and_gap_archives() -> None:
    sp = SharePartition(0, lock_duration_ms=1000)
    sp.acquire("a", 2, 10, 0)
    sp.acknowledge("a", 0, 1, [RENEW], 900)
    assert sp.expire_locks(1000) == 0 and sp.next_lock_deadline() == 1900
    sp.acknowledge("a", 0, 1, [GAP, A], 1000)
    assert sp.start_offset == 2


def test_the_in_flight_window_is_bounded() -> None:
    sp = SharePartition(0, max_in_flight=100)
    assert sp.acquire("a", 500, 1000, 0) == [(0, 99, 1)]
    assert not sp.has_available(1000)
    sp.acknowledge("a", 0, 9, [A], 0)
    assert sp.acquire("a", 500, 1000, 0) == [(100, 109, 1)]


def test_persisted_state_round_trip() -> None:
    sp = SharePartition(5)
    sp.acquire("a", 6, 20, 0)
    sp.acknowledge("a", 6, 7, [A, REJ], 0)  # 5 and 8-10 stay acquired
    batches = sp.state_batches()
    assert batches == [(5, 5, RecordState.AVAILABLE, 1), (6, 6, RecordState.ACKNOWLEDGED, 1),
                       (7, 7, RecordState.ARCHIVED, 1), (8, 10, RecordState.AVAILABLE, 1)]
    loaded = SharePartition.load(sp.start_offset, batches)
    assert loaded.start_offset == 5 and loaded.end_offset == 11
    assert loaded.acquire("b", 10, 20, 0) == [(5, 5, 2), (8, 10, 2), (11, 16, 1)]


@given(st.lists(st.tuples(st.sampled_from("acq ack rel rej exp".split()), st.integers(0, 3),
                          st.integers(1, 5)), max_size=60))
def test_the_window_invariants_hold(ops: list[tuple[str, int, int]]) -> None:
    """Whatever happens: the start offset never goes back, every offset below it is done with,
    no record is held by two members, and the persisted form rebuilds the same window."""
    sp = SharePartition(0, lock_duration_ms=10, delivery_count_limit=3)
    now = 0
    held: dict[int, str] = {}
    for op, m, n in ops:
        member = f"m{m}"
        start = sp.start_offset
        if op == "acq":
            for first, last, _ in sp.acquire(member, n, 40, now):
                for o in range(first, last + 1):
                    assert o not in held or sp.records[o].member == member
                    held[o] = member
        elif op == "exp":
            now += 10
            sp.expire_locks(now)
        else:
            mine = sorted(o for o, r in sp.records.items() if r.state == RecordState.ACQUIRED and r.member == member)
            if mine:
                t = {"ack": A, "rel": REL, "rej": REJ}[op]
                sp.acknowledge(member, mine[0], mine[0], [t], now)
        assert sp.start_offset >= start
        assert all(o >= sp.start_offset for o in sp.records)
        assert sp.end_offset <= 40
        held = {o: r.member for o, r in sp.records.items() if r.state == RecordState.ACQUIRED}
    loaded = SharePartition.load(sp.start_offset, sp.state_batches())
    assert loaded.start_offset == sp.start_offset and loaded.end_offset in (sp.end_offset, sp.start_offset)
    for o, r in sp.records.items():
        want = RecordState.AVAILABLE if r.state == RecordState.ACQUIRED else r.state
        assert loaded.records[o].state == want and loaded.records[o].delivery_count == r.delivery_count
