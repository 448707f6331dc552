"""One consumer group of the KIP-848 protocol (group type ``consumer``): its members, epochs,
target assignment and the partition ownership that reconciliation reads.

The data and the small rules that only read or update it live here; the decisions that
involve requests, time and records are in ``consumer_coordinator.py``, the computation of a
member's next assignment in ``reconciliation.py``, the assignors in ``assignors.py``.

Epochs, as Kafka 4 keeps them:

- ``group_epoch`` is bumped whenever what the assignment depends on changes: a member joins or
  leaves, a subscription or assignor changes, a subscribed topic is created, deleted or grows.
- ``assignment_epoch`` is the group epoch the target assignment was computed for; the group
  is *Assigning* while ``group_epoch > assignment_epoch`` (only ever for the length of one
  heartbeat here: the assignment is computed by the heartbeat that bumps the epoch).
- each member's ``member_epoch`` reaches ``assignment_epoch`` through reconciliation: a member
  first revokes what its target no longer holds (state UNREVOKED_PARTITIONS, epoch unchanged),
  then receives what it gains once the previous owners have released it (UNRELEASED_PARTITIONS
  while some are still held); STABLE when its assignment is its target at the group's epoch.

Group states (DescribeGroups, ListGroups, ConsumerGroupDescribe): Empty (no member),
Assigning, Reconciling (some member not yet Stable at the assignment epoch), Stable, Dead.

Invariant: a partition is owned (assigned or pending revocation) by at most one member;
``partition_epochs`` maps each owned partition to its owner's member epoch, and
``update_member`` keeps it in step with the members.

Topics are named by id (``uuid.UUID``) in assignments, as on the wire and in the records;
``subscription_metadata`` maps each subscribed topic's name to (id, partition count) as last
resolved against the broker's topics.
"""

from __future__ import annotations

import dataclasses
import enum
import uuid
from collections.abc import Iterable, Mapping

from . import consumer_records as cr

__all__ = ["Assignment", "MemberState", "ConsumerGroupState", "ConsumerGroupMember", "ConsumerGroup",
           "LEAVE_GROUP_MEMBER_EPOCH", "LEAVE_GROUP_STATIC_MEMBER_EPOCH", "assignment_of", "partitions_of"]

#: topic id -> partitions of it
Assignment = Mapping[uuid.UUID, frozenset[int]]

#: ConsumerGroupHeartbeat's member epochs with a meaning of their own
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class MemberState(enum.IntEnum):
    """A member's reconciliation state, with the byte Kafka stores in the member's current
    assignment record."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127

    @property
    def label(self) -> str:
        return self.name.lower()


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


def assignment_of(pairs: Iterable[tuple[uuid.UUID, Iterable[int]]]) -> dict[uuid.UUID, frozenset[int]]:
    """An Assignment from (topic id, partitions) pairs, without empty topics."""
    out: dict[uuid.UUID, frozenset[int]] = {}
    for topic_id, partitions in pairs:
        merged = out.get(topic_id, frozenset()) | frozenset(partitions)
        if merged:
            out[topic_id] = merged
    return out


def partitions_of(assignment: Assignment) -> set[tuple[uuid.UUID, int]]:
    return {(t, p) for t, parts in assignment.items() for p in parts}


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    """A member as the coordinator knows it (immutable: updates build a new one, so that the
    old and the new can be compared for what changed and must be written)."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    rebalance_timeout_ms: int = -1
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Assignment = dataclasses.field(default_factory=dict)
    pending_revocation: Assignment = dataclasses.field(default_factory=dict)
    #: a member that joined with the classic protocol (JoinGroup) while the group is a consumer
    #: group: its session timeout and supported protocols (migration.py); None otherwise
    classic: cr.ClassicMemberMetadata | None = None

    def replace(self, **changes: object) -> ConsumerGroupMember:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def with_epoch(self, epoch: int) -> ConsumerGroupMember:
        """``epoch`` as the member epoch, the current one becoming the previous one."""
        return self.replace(previous_member_epoch=self.member_epoch, member_epoch=epoch)

    def metadata(self) -> tuple[object, ...]:
        """What the member's metadata record holds (a change is written and, for the
        subscription fields, bumps the group epoch)."""
        return (self.instance_id, self.rack_id, self.client_id, self.client_host, self.subscribed_topic_names,
                self.subscribed_topic_regex, self.server_assignor, self.rebalance_timeout_ms, self.classic)

    def subscription(self) -> tuple[object, ...]:
        return (self.subscribed_topic_names, self.subscribed_topic_regex, self.server_assignor, self.rack_id)

    def assignment_state(self) -> tuple[object, ...]:
        """What the member's current-assignment record holds."""
        return (self.member_epoch, self.previous_member_epoch, self.state, self.assigned, self.pending_revocation)


class ConsumerGroup:
    """The KIP-848 state of one group (see the module docstring)."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        #: member id -> its target assignment at ``assignment_epoch``
        self.target: dict[str, Assignment] = {}
        #: (topic id, partition) -> epoch of the member owning it (see the invariant)
        self.partition_epochs: dict[tuple[uuid.UUID, int], int] = {}
        #: subscribed topic name -> (topic id, partitions), as last resolved
        self.subscription_metadata: dict[str, tuple[uuid.UUID, int]] = {}
        #: regular expression -> the topic names it matched, as last resolved
        self.resolved_regexes: dict[str, frozenset[str]] = {}
        #: regular expressions a member brought that the group had not resolved: as Kafka
        #: resolves them asynchronously, the heartbeat that brought one is answered without its
        #: topics and the group's next heartbeat resolves it (not stored: a loaded group
        #: resolves every expression at its first heartbeat)
        self.pending_regexes: frozenset[str] = frozenset()
        #: the broker's topic-metadata epoch ``subscription_metadata`` was resolved at
        self.metadata_epoch = -1
        #: when the group last left Empty (clock ms; not stored: a loaded group is not settling)
        self.active_since_ms = -2**62

    # -- state --

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        for m in self.members.values():
            if m.member_epoch != self.assignment_epoch or m.state != MemberState.STABLE:
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def subscribed_topic_names(self) -> set[str]:
        """Every topic a member subscribes to by name or through a resolved expression."""
        names: set[str] = set()
        for m in self.members.values():
            names.update(m.subscribed_topic_names)
            if m.subscribed_topic_regex is not None:
                names.update(self.resolved_regexes.get(m.subscribed_topic_regex, ()))
        return names

    def regexes(self) -> set[str]:
        return {m.subscribed_topic_regex for m in self.members.values() if m.subscribed_topic_regex is not None}

    def member_topics(self, m: ConsumerGroupMember) -> set[str]:
        names = set(m.subscribed_topic_names)
        if m.subscribed_topic_regex is not None:
            names.update(self.resolved_regexes.get(m.subscribed_topic_regex, ()))
        return names

    # -- members --

    def all_classic_except(self, member_id: str) -> bool:
        """Whether every member but ``member_id`` joined with the classic protocol."""
        return all(m.classic is not None for mid, m in self.members.items() if mid != member_id)

    def static_member(self, instance_id: str) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def update_member(self, new: ConsumerGroupMember) -> None:
        """Store ``new`` (replacing the member with its id, if any), keeping the partition
        epochs and static-member index in step."""
        old = self.members.get(new.member_id)
        if old is not None:
            self._release(old)
        self.members[new.member_id] = new
        if new.instance_id is not None:
            self.static_members[new.instance_id] = new.member_id
        for tp in partitions_of(new.assigned) | partitions_of(new.pending_revocation):
            self.partition_epochs[tp] = new.member_epoch

    def remove_member(self, member_id: str) -> ConsumerGroupMember | None:
        old = self.members.pop(member_id, None)
        if old is not None:
            self._release(old)
            if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
                del self.static_members[old.instance_id]
        self.target.pop(member_id, None)
        return old

    def _release(self, m: ConsumerGroupMember) -> None:
        for tp in partitions_of(m.assigned) | partitions_of(m.pending_revocation):
            if self.partition_epochs.get(tp) == m.member_epoch:
                del self.partition_epochs[tp]

    def current_partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        """The epoch of the member owning the partition, -1 when it is free."""
        return self.partition_epochs.get((topic_id, partition), -1)
