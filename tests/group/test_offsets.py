"""OffsetMetadataManager (broker/group/offsets.py), driven through the group coordinator with a
manual clock and an in-memory log (the harness of test_coordinator.py)."""

from __future__ import annotations

from broker.group.records import OffsetCommitKey, decode_key, decode_offset_commit_value
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
