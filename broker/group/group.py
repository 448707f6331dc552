"""One classic consumer group: its members, generation, chosen protocol and committed offsets.

This module holds the group's *data* and the small rules that only read or update it (member
validation, the protocol vote, leader election, state transitions). The decisions that involve
time, responses and records (join, sync, heartbeat, leave, commit) are in ``coordinator.py``.

States, with the only transitions allowed (anything else is a bug and raises)::

    Empty ----------------> PreparingRebalance <---------------+
      ^                       |        ^   ^                   |
      |   (no member left)    v        |   |                   |
      +--------------- CompletingRebalance  +------ Stable <---+
                              |                       ^
                              +--(leader's SyncGroup)-+
    Dead <- any state (the group was deleted)

- Empty: no members (a group that only stores offsets, or whose members all left).
- PreparingRebalance: members are (re)joining; JoinGroups wait until every known member has
  rejoined or the rebalance timeout (the largest member's) passes.
- CompletingRebalance: the generation is chosen; waiting for the leader's SyncGroup with the
  assignment.
- Stable: the assignment is stored; members heartbeat.
- Dead: deleted; never seen by clients except as the state of an unknown group.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable
from typing import Any

from client.protocol.api import ErrorCode

from ..errors import ApiError
from .consumer_group import ConsumerGroup
from .records import GroupMetadata, MemberMetadata, OffsetAndMetadata

__all__ = ["GroupState", "Member", "ClassicGroup", "GroupError"]


class GroupError(ApiError):
    """A request's answer is this error code (raised by validation, caught by the coordinator)."""

    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message, error_code=code)


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset({GroupState.STABLE, GroupState.COMPLETING_REBALANCE,
                                               GroupState.EMPTY}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}

#: called with the response body of a parked JoinGroup or SyncGroup
Responder = Callable[[dict[str, Any]], None]


class Member:
    """A group member. ``protocols`` keeps the member's order of preference (the vote takes
    the first one every member supports). ``awaiting_join``/``awaiting_sync`` hold the
    responders of a parked JoinGroup/SyncGroup."""

    __slots__ = ("member_id", "group_instance_id", "client_id", "client_host", "rebalance_timeout_ms",
                 "session_timeout_ms", "protocol_type", "_protocols", "assignment", "_awaiting_join",
                 "awaiting_sync", "is_new", "_group")

    def __init__(self, member_id: str, group_instance_id: str | None, client_id: str, client_host: str,
                 rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                 protocols: list[tuple[str, bytes]]) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        #: the group holding this member (``ClassicGroup.add``): it keeps counts of what its
        #: members await and support, updated by the two setters below, so that a join costs
        #: O(1) however large the group is
        self._group: ClassicGroup | None = None
        self._protocols = protocols
        self.assignment = b""
        self._awaiting_join: Responder | None = None
        self.awaiting_sync: Responder | None = None
        #: joined but not yet through a completed join phase: may expire while awaiting join
        self.is_new = False

    @property
    def protocols(self) -> list[tuple[str, bytes]]:
        return self._protocols

    @protocols.setter
    def protocols(self, protocols: list[tuple[str, bytes]]) -> None:
        g = self._group
        if g is not None:
            g._count_protocols(self._protocols, -1)
            g._count_protocols(protocols, 1)
        self._protocols = protocols

    @property
    def awaiting_join(self) -> Responder | None:
        return self._awaiting_join

    @awaiting_join.setter
    def awaiting_join(self, responder: Responder | None) -> None:
        g = self._group
        if g is not None and (self._awaiting_join is None) != (responder is None):
            g._awaiting_join_count += 1 if responder is not None else -1
        self._awaiting_join = responder

    @property
    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str | None) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        return b""

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        """Same protocols, same order, same metadata: a rejoin that changes nothing."""
        return [(n, bytes(m)) for n, m in protocols] == [(n, bytes(m)) for n, m in self.protocols]

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def has_satisfied_heartbeat(self) -> bool:
        """Whether a session timeout passing now should *not* remove the member: members
        parked in a JoinGroup or SyncGroup are alive by definition, except new ones."""
        if self.is_new:
            return False
        return self.awaiting_join is not None or self.awaiting_sync is not None

    def complete_join(self, response: dict[str, Any]) -> bool:
        r = self._awaiting_join
        if r is None:
            return False
        self.awaiting_join = None
        r(response)
        return True

    def complete_sync(self, response: dict[str, Any]) -> bool:
        r, self.awaiting_sync = self.awaiting_sync, None
        if r is None:
            return False
        r(response)
        return True

    def to_record(self, assignment: bytes, protocol: str | None) -> MemberMetadata:
        return MemberMetadata(self.member_id, self.group_instance_id, self.client_id, self.client_host,
                              self.rebalance_timeout_ms, self.session_timeout_ms, self.metadata(protocol),
                              assignment)


class ClassicGroup:
    """The state of one group (see the module docstring for the states)."""

    def __init__(self, group_id: str, now_ms: int) -> None:
        self.group_id = group_id
        self.state = GroupState.EMPTY
        self.previous_state = GroupState.EMPTY
        self.state_timestamp = now_ms
        self.generation_id = 0
        #: None until a member joins: a group that only ever stored offsets has none
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self._awaiting_join_count = 0  # members whose awaiting_join is set
        self._protocol_counts: dict[str, int] = {}  # protocol name -> members naming it
        #: member ids handed out by MEMBER_ID_REQUIRED, not yet joined with them
        self.pending_members: set[str] = set()
        #: members of the current generation that have not sent their SyncGroup yet
        self.pending_sync: set[str] = set()
        self.static_members: dict[str, str] = {}  # group.instance.id -> member id
        #: the initial-rebalance delay is extended while new members keep arriving
        self.new_member_added = False
        self.offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
        #: a group of type ``consumer`` (KIP-848): its state (consumer_group.py), None for a
        #: classic group; such a group's classic state stays Empty
        self.consumer: ConsumerGroup | None = None
        #: TxnOffsetCommit's offsets by producer id, visible only once its transaction commits
        self.pending_txn_offsets: dict[int, dict[tuple[str, int], OffsetAndMetadata]] = {}

    # -- state --

    def transition_to(self, state: GroupState, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise AssertionError(f"group {self.group_id}: invalid transition {self.state.value} -> {state.value}")
        self.previous_state, self.state = self.state, state
        self.state_timestamp = now_ms

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def can_rebalance(self) -> bool:
        return self.state in _VALID_PREVIOUS[GroupState.PREPARING_REBALANCE]

    # -- members --

    def generate_member_id(self, client_id: str, group_instance_id: str | None) -> str:
        return f"{group_instance_id if group_instance_id is not None else client_id}-{uuid.uuid4()}"

    def add(self, member: Member, responder: Responder | None = None) -> None:
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        member._group = self
        self._count_protocols(member.protocols, 1)
        if member.awaiting_join is not None:
            self._awaiting_join_count += 1
        member.awaiting_join = responder
        self.pending_members.discard(member.member_id)

    def _count_protocols(self, protocols: list[tuple[str, bytes]], delta: int) -> None:
        counts = self._protocol_counts
        for name in {name for name, _ in protocols}:
            n = counts.get(name, 0) + delta
            if n:
                counts[name] = n
            else:
                counts.pop(name, None)

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self._count_protocols(member.protocols, -1)
            if member.awaiting_join is not None:
                self._awaiting_join_count -= 1
            member._group = None
        if member is not None and member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync.discard(member_id)

    def become_consumer_group(self, consumer: ConsumerGroup, now_ms: int) -> None:
        """The group is converted to a KIP-848 consumer group (migration.py): no classic member
        is left, the classic state is Empty, ``consumer`` holds the group from now on."""
        for member_id in list(self.members):
            self.remove(member_id)
        self.pending_members.clear()
        self.pending_sync.clear()
        self.previous_state, self.state, self.state_timestamp = self.state, GroupState.EMPTY, now_ms
        self.protocol_name = self.leader_id = None
        self.protocol_type = "consumer"
        self.consumer = consumer

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> Member:
        """The member with ``instance_id`` comes back with a new member id: the old id is fenced
        (its parked requests answered FENCED_INSTANCE_ID), everything else carries over."""
        member = self.members.pop(old_id)
        member.complete_join({"error_code": ErrorCode.FENCED_INSTANCE_ID, "member_id": old_id,
                              "generation_id": -1, "protocol_name": None, "leader": "", "members": []})
        member.complete_sync({"error_code": ErrorCode.FENCED_INSTANCE_ID, "assignment": b""})
        member.member_id = new_id
        self.members[new_id] = member
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.static_members[instance_id] = new_id
        return member

    def validate_member(self, member_id: str, group_instance_id: str | None) -> Member:
        if group_instance_id is not None:
            existing = self.static_members.get(group_instance_id)
            if existing is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)
            if existing != member_id:
                raise GroupError(ErrorCode.FENCED_INSTANCE_ID,
                                 f"instance {group_instance_id} is now member {existing}, not {member_id}")
        member = self.members.get(member_id)
        if member is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)
        return member

    @property
    def num_awaiting_join(self) -> int:
        return self._awaiting_join_count

    def has_all_members_joined(self) -> bool:
        return self.num_awaiting_join == len(self.members) and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else make the first rejoined member the leader;
        False when nobody rejoined."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.awaiting_join is not None:
            return True
        for m in self.members.values():
            if m.awaiting_join is not None:
                self.leader_id = m.member_id
                return True
        return False

    # -- protocols --

    def _candidates(self) -> set[str]:
        n = len(self.members)
        return {name for name, c in self._protocol_counts.items() if c == n}

    def supports_protocols(self, protocol_type: str, names: list[str]) -> bool:
        """Whether a member with these protocols may join: any type and protocol into an empty
        group, else the group's type and at least one protocol every member supports."""
        if self.state is GroupState.EMPTY or not self.members:
            return protocol_type != "" and bool(names)
        return protocol_type == self.protocol_type and any(n in self._candidates() for n in names)

    def select_protocol(self) -> str:
        """The protocol the most members name first among those all of them support (Kafka's
        vote; ties go to the protocol first counted)."""
        candidates = self._candidates()
        votes: dict[str, int] = {}
        for m in self.members.values():
            name = m.vote(candidates)
            votes[name] = votes.get(name, 0) + 1
        best = max(votes.values())
        return next(name for name, n in votes.items() if n == best)

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY, now_ms)
        self.pending_sync.clear()

    def join_members(self) -> list[dict[str, Any]]:
        """The member list a leader's JoinGroup response carries: each member's metadata for
        the chosen protocol."""
        return [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                 "metadata": m.metadata(self.protocol_name)} for m in self.members.values()]

    # -- records --

    def to_record(self, assignment: dict[str, bytes] | None = None) -> GroupMetadata:
        members = [m.to_record(assignment.get(m.member_id, b"") if assignment is not None else m.assignment,
                               self.protocol_name)
                   for m in self.members.values()]
        return GroupMetadata(self.protocol_type or "", self.generation_id, self.protocol_name, self.leader_id,
                             self.state_timestamp, members)

    def replay(self, record: GroupMetadata, now_ms: int) -> None:
        """Load the group from its stored record (start-up): Stable with its members if it had
        any, else Empty. Members keep only the chosen protocol."""
        self.protocol_type = record.protocol_type or None
        self.generation_id = record.generation
        self.protocol_name = record.protocol
        self.leader_id = record.leader
        self.state_timestamp = record.current_state_timestamp if record.current_state_timestamp >= 0 else now_ms
        for member_id in list(self.members):
            self.remove(member_id)
        self.static_members.clear()
        self.leader_id = record.leader
        for mm in record.members:
            m = Member(mm.member_id, mm.group_instance_id, mm.client_id, mm.client_host,
                       mm.rebalance_timeout if mm.rebalance_timeout >= 0 else mm.session_timeout,
                       mm.session_timeout, record.protocol_type, [(record.protocol or "", mm.subscription)])
            m.assignment = mm.assignment
            self.add(m)  # counts its protocol: a loaded group's members can rejoin with it
        self.protocol_type = record.protocol_type or None
        self.previous_state = self.state
        self.state = GroupState.STABLE if self.members else GroupState.EMPTY
