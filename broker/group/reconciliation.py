"""A member's next assignment on the way to its target (KIP-848's reconciliation, as Kafka's
group coordinator computes it on every heartbeat).

``next_assignment(member, target_epoch, target, owner_epoch, owned)`` returns the member as it
should be now, given

- ``target``: the member's target assignment at ``target_epoch``,
- ``owner_epoch(topic_id, partition)``: the epoch of the member owning a partition, -1 when
  it is free,
- ``owned``: the partitions the member says it owns in this heartbeat (None when it did not
  say; a member that did not say is assumed to still own what it was asked to revoke).

By state:

- STABLE: nothing to do at the target epoch; otherwise compute (below) from the current epoch.
- UNREVOKED_PARTITIONS: stays until the member no longer reports any partition pending
  revocation; then compute from the next epoch.
- UNRELEASED_PARTITIONS: compute again (partitions may have been released since).
- UNKNOWN: only a member reporting no partition may continue (FENCED_MEMBER_EPOCH otherwise).

Compute, per topic: *kept* = current ∩ target, *revoking* = current − kept, *gaining* =
target − kept, of which only the free partitions can be given now. Revoking partitions the
member still owns: UNREVOKED_PARTITIONS with the kept ones, member epoch unchanged. Otherwise
the member moves to the target epoch with kept + free gaining partitions, UNRELEASED_PARTITIONS
when some gaining ones are still held by others, STABLE when none.

A partition therefore changes hands only after its previous owner has acknowledged the
revocation (it is free in ``owner_epoch`` once the previous owner's new state is stored).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable

from client.protocol.api import ErrorCode

from .consumer_group import Assignment, ConsumerGroupMember, MemberState
from .group import GroupError

__all__ = ["next_assignment", "owns_any"]


def owns_any(owned: Iterable[tuple[uuid.UUID, Iterable[int]]] | None, partitions: Assignment) -> bool:
    """Whether the reported ``owned`` partitions include any of ``partitions`` (True when the
    member reported nothing: it is assumed to still own them)."""
    if owned is None:
        return True
    for topic_id, parts in owned:
        wanted = partitions.get(topic_id)
        if wanted and any(p in wanted for p in parts):
            return True
    return False


def next_assignment(member: ConsumerGroupMember, target_epoch: int, target: Assignment,
                    owner_epoch: Callable[[uuid.UUID, int], int],
                    owned: list[tuple[uuid.UUID, list[int]]] | None) -> ConsumerGroupMember:
    state = member.state
    if state == MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _compute(member, member.member_epoch, target_epoch, target, owner_epoch, owned)
    if state == MemberState.UNREVOKED_PARTITIONS:
        if owns_any(owned, member.pending_revocation):
            return member
        return _compute(member, member.member_epoch + 1, target_epoch, target, owner_epoch, owned)
    if state == MemberState.UNRELEASED_PARTITIONS:
        return _compute(member, member.member_epoch, target_epoch, target, owner_epoch, owned)
    if owned is None or owned:
        raise GroupError(ErrorCode.FENCED_MEMBER_EPOCH, "The consumer group member is in a unknown state. "
                                                        "The member must abandon all its partitions and rejoin.")
    return _compute(member, target_epoch, target_epoch, target, owner_epoch, owned)


def _compute(member: ConsumerGroupMember, member_epoch: int, target_epoch: int, target: Assignment,
             owner_epoch: Callable[[uuid.UUID, int], int],
             owned: list[tuple[uuid.UUID, list[int]]] | None) -> ConsumerGroupMember:
    kept: dict[uuid.UUID, frozenset[int]] = {}
    revoking: dict[uuid.UUID, frozenset[int]] = {}
    gaining: dict[uuid.UUID, frozenset[int]] = {}
    unreleased = False
    current = member.assigned
    for topic_id in target.keys() | current.keys():
        want = target.get(topic_id, frozenset())
        have = current.get(topic_id, frozenset())
        keep = have & want
        if keep:
            kept[topic_id] = keep
        if have - keep:
            revoking[topic_id] = have - keep
        free = frozenset(p for p in want - keep if owner_epoch(topic_id, p) == -1)
        if len(free) != len(want - keep):
            unreleased = True
        if free:
            gaining[topic_id] = free
    if revoking and owns_any(owned, revoking):
        return member.with_epoch(member_epoch).replace(
            state=MemberState.UNREVOKED_PARTITIONS, assigned=kept, pending_revocation=revoking)
    if gaining:
        for topic_id, parts in gaining.items():
            kept[topic_id] = kept.get(topic_id, frozenset()) | parts
    new_state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return member.with_epoch(target_epoch).replace(state=new_state, assigned=kept, pending_revocation={})
