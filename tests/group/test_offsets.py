"""OffsetMetadataManager (broker/group/offsets.py), driven through the group coordinator with a
manual clock and an in-memory log (the harness of test_coordinator.py): commit rules, expiry,
and the offsets of deleted topics removed with tombstones."""

from __future__ import annotations

from broker.group.records import (
    OffsetAndMetadata,
    OffsetCommitKey,
    decode_key,
    decode_offset_commit_value,
)
from client.protocol.api import ErrorCode as E
from tests.group.test_coordinator import Harness, stable_group_of_two


def test_offset_commit_rules() -> None:
    h = Harness()
    # a simple commit (generation -1, no member) creates a group without members
    code, errors, durable = h.commit({("t", 0): 5})
    assert (code, errors, durable) == (0, {("t", 0): 0}, [0])
    k, v = h.records[-1]
    assert decode_key(k) == OffsetCommitKey("g", "t", 0) and v is not None
    om = decode_offset_commit_value(v)
    assert om.offset == 5 and om.metadata == "m" and v[:2] == b"\x00\x03"  # value version 3
    code, _, _ = h.commit({("t", 0): 6}, retention=60_000)
    assert code == 0 and h.records[-1][1][:2] == b"\x00\x01"  # version 1: explicit expiry
    # a member-less commit to a missing group with a generation: v8 ILLEGAL_GENERATION, v9 GROUP_ID_NOT_FOUND
    assert h.commit({("t", 0): 1}, group="nope", generation=3, member="m", version=8)[0] == E.ILLEGAL_GENERATION
    assert h.commit({("t", 0): 1}, group="nope", generation=3, member="m", version=9)[0] == E.GROUP_ID_NOT_FOUND
    h2 = Harness()
    leader, follower, gen = stable_group_of_two(h2)
    assert h2.commit({("t", 0): 1})[0] == E.UNKNOWN_MEMBER_ID  # simple commit into an active group
    assert h2.commit({("t", 0): 1}, generation=gen - 1, member=leader)[0] == E.ILLEGAL_GENERATION
    assert h2.commit({("t", 0): 1}, generation=gen, member=leader)[0] == 0
    h2.join(member=leader)
    h2.join(member=follower)  # CompletingRebalance
    assert h2.commit({("t", 0): 2}, generation=gen + 1, member=leader)[0] == E.REBALANCE_IN_PROGRESS


def test_offsets_expire_once_the_group_is_empty() -> None:
    h = Harness(offsets_retention_ms=1000)
    h.commit({("t", 0): 5})
    h.timer.advance(999)
    assert h.c.offsets.expire_offsets() == 0
    h.timer.advance(2)
    assert h.c.offsets.expire_offsets() == 1 and "g" not in h.c.groups
    assert h.records[-2][1] is None and h.records[-1][1] is None  # offset and group tombstones


def _fetch(h: Harness, group: str, tps: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    by: dict[str, list[int]] = {}
    for t, p in tps:
        by.setdefault(t, []).append(p)
    code, topics = h.c.offsets.fetch_offsets(group, list(by.items()))
    assert code == 0
    return {(t, p): -1 if om is None else om.offset for t, parts in topics for p, om in parts}


def test_deleted_topics_offsets_go_from_every_group_with_tombstones() -> None:
    """Kafka's onPartitionsDeleted: every group's offsets of the deleted topic's partitions are
    removed with a tombstone each (one batch per group), pending transactional ones too (their
    marker then commits nothing of them); other topics' offsets and the groups stay."""
    h = Harness()
    h.commit({("t", 0): 5, ("t", 1): 6, ("u", 0): 7}, group="g1")
    h.commit({("t", 1): 8}, group="g2")
    h.commit({("u", 0): 9}, group="g3")
    code, _ = h.c.offsets.commit_txn_offsets({"group_id": "g3", "producer_id": 42, "producer_epoch": 0,
                                             "topics": [{"name": "t", "partitions": [
                                                 {"partition_index": 2, "committed_offset": 10}]}]}, lambda c: None)
    assert code == 0 and h.c.offsets.has_pending_offset("g3", "t", 2)
    before = len(h.records)
    durable: list[int] = []
    assert h.c.on_topics_deleted(["t"], durable.append) == 4
    assert durable == [0]
    tombstones = [(decode_key(k), v) for k, v in h.records[before:]]
    assert sorted((k.group, k.topic, k.partition) for k, _ in tombstones) == [
        ("g1", "t", 0), ("g1", "t", 1), ("g2", "t", 1), ("g3", "t", 2)]
    assert all(v is None for _, v in tombstones)
    assert _fetch(h, "g1", [("t", 0), ("t", 1), ("u", 0)]) == {("t", 0): -1, ("t", 1): -1, ("u", 0): 7}
    assert _fetch(h, "g2", [("t", 1)]) == {("t", 1): -1}
    assert not h.c.offsets.has_pending_offset("g3", "t", 2)
    h.c.offsets.complete_txn(h.c.partition_for("g3"), 42, commit=True)
    assert _fetch(h, "g3", [("t", 2), ("u", 0)]) == {("t", 2): -1, ("u", 0): 9}
    assert {"g1", "g2", "g3"} <= set(h.c.groups)
    assert h.c.on_topics_deleted(["t"], durable.append) == 0 and durable == [0, 0]  # nothing left: at once


def test_a_replayed_tombstone_drops_the_pending_offset_too() -> None:
    """Kafka's replay: a tombstone removes the committed offset and the offsets of that
    partition pending in open transactions, so a restarted broker replaying a TxnOffsetCommit,
    the deleted topic's tombstone and then the transaction's COMMIT marker does not bring the
    offset back."""
    h = Harness()
    h.c.offsets.replay_offset("g", "t", 0, _om(3))
    h.c.offsets.replay_offset("g", "t", 0, _om(4), producer_id=7)
    h.c.offsets.replay_offset("g", "t", 0, None)
    h.c.offsets.complete_txn(h.c.partition_for("g"), 7, commit=True)
    assert _fetch(h, "g", [("t", 0)]) == {("t", 0): -1}


def test_topics_deleted_while_a_partition_loads_go_once_it_has_loaded() -> None:
    """A group whose __consumer_offsets partition is still loading gets its offsets of topics
    deleted meanwhile removed (with tombstones) once the partition has loaded."""
    h = Harness()
    p = h.c.partition_for("g")
    h.c.loading = {p}
    h.c.offsets.replay_offset("g", "t", 0, _om(3))
    h.c.offsets.replay_offset("g", "u", 0, _om(4))
    assert h.c.on_topics_deleted(["t"], lambda code: None) == 0  # not loaded yet: later
    h.c.on_loaded(p)
    assert decode_key(h.records[-1][0]) == OffsetCommitKey("g", "t", 0) and h.records[-1][1] is None
    assert _fetch(h, "g", [("t", 0), ("u", 0)]) == {("t", 0): -1, ("u", 0): 4}


def _om(offset: int) -> OffsetAndMetadata:
    return OffsetAndMetadata(offset, -1, "", 1, -1)
