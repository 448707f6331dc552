"""ShareStateStore (broker/share/persister.py): which record a write makes, the fold of
snapshots and updates, fencing, deletion; property tests of ``combine`` against a per-offset
model and of replay: the records a random sequence of writes produced, replayed into a fresh
store, give the state the writer held."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.share.persister import ShareState, ShareStateError, ShareStateStore, combine
from broker.share.state_records import (
    SHARE_SNAPSHOT,
    SHARE_UPDATE,
    SharePartitionKey,
    ShareSnapshotValue,
    ShareUpdateValue,
    StateBatch,
    decode_key,
    decode_value,
)
from client.protocol.api import ErrorCode as E

K = SharePartitionKey("g", bytes(16), 0)
B = StateBatch


def kind_and_value(rec: tuple[bytes, bytes | None]) -> tuple[int, object]:
    decoded = decode_key(rec[0])
    assert decoded is not None
    kind, _ = decoded
    return kind, None if rec[1] is None else decode_value(kind, rec[1])


def write(store: ShareStateStore, key: SharePartitionKey, *args: object, **kw: object) -> tuple[int, object]:
    recs = store.write(key, *args, **kw)  # type: ignore[arg-type]
    assert len(recs) == 1
    for k, v in recs:
        store.replay(k, v)
    return kind_and_value(recs[0])


def test_first_write_is_a_snapshot_then_updates_then_a_snapshot_every_n() -> None:
    s = ShareStateStore(updates_per_snapshot=2, clock=lambda: 1000)
    kind, v = write(s, K, 0, 1, 10, [B(12, 14, 0, 1), B(10, 11, 2, 1)])
    assert kind == SHARE_SNAPSHOT
    assert v == ShareSnapshotValue(0, 0, 1, 10, 1000, 1000, [B(10, 11, 2, 1), B(12, 14, 0, 1)])
    kind, v = write(s, K, 0, 1, -1, [B(12, 12, 2, 1)])
    assert (kind, v) == (SHARE_UPDATE, ShareUpdateValue(0, 1, -1, [B(12, 12, 2, 1)]))
    assert s.read(K) == ShareState(0, 0, 1, 10, 1000, 1000, (B(10, 12, 2, 1), B(13, 14, 0, 1)))
    kind, _ = write(s, K, 0, 1, 11, [])
    assert kind == SHARE_UPDATE
    assert s.read(K).batches == (B(11, 12, 2, 1), B(13, 14, 0, 1))  # type: ignore[union-attr]
    s.clock = lambda: 2000
    kind, v = write(s, K, -1, 2, -1, [B(13, 13, 0, 2)])  # 2 updates since the snapshot: a snapshot
    assert kind == SHARE_SNAPSHOT
    assert v == ShareSnapshotValue(1, 0, 2, 11, 1000, 2000, [B(11, 12, 2, 1), B(13, 13, 0, 2), B(14, 14, 0, 1)])
    kind, _ = write(s, K, 0, 2, -1, [])
    assert kind == SHARE_UPDATE


def test_zero_updates_per_snapshot_writes_only_snapshots() -> None:
    s = ShareStateStore(updates_per_snapshot=0)
    for i in range(3):
        kind, v = write(s, K, 0, 0, i, [])
        assert kind == SHARE_SNAPSHOT and isinstance(v, ShareSnapshotValue) and v.snapshot_epoch == i


def test_a_new_state_epoch_is_a_fresh_snapshot() -> None:
    s = ShareStateStore(clock=lambda: 5)
    write(s, K, 0, 0, 0, [B(0, 9, 2, 1)])
    kind, v = write(s, K, 1, 0, 100, [B(100, 100, 0, 1)])
    assert kind == SHARE_SNAPSHOT
    assert v == ShareSnapshotValue(1, 1, 0, 100, 5, 5, [B(100, 100, 0, 1)])
    kind, v = write(s, K, 1, 0, 50, [B(50, 50, 0, 1)])  # start offset may go back in a new epoch only
    assert kind == SHARE_UPDATE


def test_fencing() -> None:
    s = ShareStateStore()
    write(s, K, 3, 5, 0, [])
    with pytest.raises(ShareStateError) as e:
        s.write(K, 3, 4, 0, [])
    assert e.value.error_code == E.FENCED_LEADER_EPOCH
    with pytest.raises(ShareStateError) as e:
        s.write(K, 2, 5, 0, [])
    assert e.value.error_code == E.FENCED_STATE_EPOCH
    s.write(K, -1, -1, 0, [])  # -1: unchanged, never fenced
    with pytest.raises(ShareStateError) as e:
        s.write(SharePartitionKey("", bytes(16), 0), 0, 0, 0, [])
    assert e.value.error_code == E.INVALID_REQUEST


def test_delete_answers_tombstones_for_both_keys_and_replay_forgets() -> None:
    s = ShareStateStore()
    other = SharePartitionKey("h", bytes(16), 0)
    write(s, K, 0, 0, 0, [])
    write(s, K._replace(partition=1), 0, 0, 0, [])
    write(s, other, 0, 0, 0, [])
    recs = s.delete("g")
    assert [kind_and_value(r) for r in recs] == [(SHARE_UPDATE, None), (SHARE_SNAPSHOT, None)] * 2
    for k, v in recs:
        s.replay(k, v)
    assert s.keys() == [other]
    assert s.read(K) is None


def test_combine_cases() -> None:
    # overlap: the greater (count, state) wins per offset, whatever the order
    assert combine([B(0, 9, 0, 1)], [B(3, 5, 2, 1)], -1) == (B(0, 2, 0, 1), B(3, 5, 2, 1), B(6, 9, 0, 1))
    assert combine([B(3, 5, 2, 1)], [B(0, 9, 0, 1)], -1) == (B(0, 2, 0, 1), B(3, 5, 2, 1), B(6, 9, 0, 1))
    assert combine([B(0, 9, 4, 1)], [B(0, 9, 0, 2)], -1) == (B(0, 9, 0, 2),)
    # contiguous equal batches coalesce, a gap stays
    assert combine([B(0, 4, 0, 1)], [B(5, 9, 0, 1), B(11, 12, 0, 1)], -1) == (B(0, 9, 0, 1), B(11, 12, 0, 1))
    # pruned below the start offset, a straddling batch cut
    assert combine([B(0, 4, 0, 1), B(5, 9, 2, 1)], [], 7) == (B(7, 9, 2, 1),)
    assert combine([B(0, 4, 0, 1)], [], 5) == ()


# -- property tests --


def model_combine(batches: Iterable[StateBatch], start: int) -> dict[int, tuple[int, int]]:
    """offset -> (count, state), the greatest of the batches covering it."""
    per: dict[int, tuple[int, int]] = {}
    for b in batches:
        for o in range(max(b.first_offset, start) if start != -1 else b.first_offset, b.last_offset + 1):
            per[o] = max(per.get(o, (-1 << 20, -1 << 20)), (b.delivery_count, b.delivery_state))
    return per


def expand(batches: Iterable[StateBatch]) -> dict[int, tuple[int, int]]:
    return {o: (b.delivery_count, b.delivery_state) for b in batches for o in range(b.first_offset, b.last_offset + 1)}


_batch = st.builds(lambda f, n, s, c: B(f, f + n, s, c), st.integers(0, 60), st.integers(0, 8),
                   st.sampled_from([0, 2, 4]), st.integers(0, 4))


@given(st.lists(_batch, max_size=8), st.lists(_batch, max_size=8), st.integers(-1, 50))
def test_combine_matches_the_per_offset_model(a: list[StateBatch], b: list[StateBatch], start: int) -> None:
    got = combine(a, b, start)
    assert expand(got) == model_combine([*a, *b], start)
    for x, y in zip(got, got[1:]):  # sorted, disjoint, maximal runs
        assert x.last_offset < y.first_offset
        assert not (x.last_offset + 1 == y.first_offset and (x.delivery_count, x.delivery_state)
                    == (y.delivery_count, y.delivery_state))


_write = st.tuples(st.integers(0, 2),                    # which key
                   st.integers(-1, 2),                   # state epoch step (-1: unchanged)
                   st.integers(-1, 1),                   # leader epoch step (-1: unchanged)
                   st.one_of(st.just(-1), st.integers(0, 40)),  # start offset
                   st.lists(_batch, max_size=4))


@settings(max_examples=200)
@given(st.lists(_write, max_size=40), st.integers(0, 4))
def test_replaying_the_records_gives_the_written_state(writes: list[tuple[int, int, int, int, list[StateBatch]]],
                                                       per_snapshot: int) -> None:
    keys = [SharePartitionKey("g", bytes(16), p) for p in range(2)] + [SharePartitionKey("h", bytes(range(16)), 0)]
    clock = iter(range(10**6))
    writer = ShareStateStore(per_snapshot, clock=lambda: next(clock))
    log: list[tuple[bytes, bytes | None]] = []
    leader = dict.fromkeys(keys, 0)
    # the model: key -> (state epoch, start offset, offset -> (count, state))
    model: dict[SharePartitionKey, tuple[int, int, dict[int, tuple[int, int]]]] = {}
    for ki, se, le, start, batches in writes:
        key = keys[ki]
        prev = model.get(key)
        state_epoch = -1 if se == -1 else (0 if prev is None else prev[0]) + se
        leader_epoch = -1 if le == -1 else leader[key] + le
        recs = writer.write(key, state_epoch, leader_epoch, start, batches)
        for k, v in recs:
            writer.replay(k, v)
        log += recs
        if leader_epoch != -1:
            leader[key] = leader_epoch
        if prev is None:
            model[key] = (state_epoch, start, model_combine(batches, start))
        else:
            cur_start = prev[1] if start == -1 else start
            if state_epoch not in (-1, prev[0]):  # a new state epoch starts afresh
                model[key] = (state_epoch, cur_start, model_combine(batches, cur_start))
            else:
                old = [B(o, o, s, c) for o, (c, s) in prev[2].items()]
                model[key] = (prev[0], cur_start, model_combine([*old, *batches], cur_start))
    reader = ShareStateStore(per_snapshot)
    for k, v in log:
        reader.replay(k, v)
    for key in keys:
        state = writer.read(key)
        assert reader.read(key) == state
        if state is not None:
            assert (state.state_epoch, state.start_offset, expand(state.batches)) == model[key]
            assert state.leader_epoch == leader[key] or state.leader_epoch == -1
