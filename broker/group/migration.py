"""Online migration between the classic and the consumer (KIP-848) group protocols, as Kafka 4
does it under ``group.consumer.migration.policy`` (``bidirectional`` by default; ``upgrade``,
``downgrade``, ``disabled``).

**Upgrade**: a ConsumerGroupHeartbeat joining a Stable classic group of protocol type
``consumer`` turns it into a consumer group. Each classic member becomes a consumer-group
member that keeps its classic metadata (session timeout, supported protocols): its
subscription is decoded from its JoinGroup metadata, its current assignment from the
SyncGroup assignment it holds, its member epoch is the classic generation. The group epoch and
the assignment epoch start at that generation, the target assignment is what the members own,
so the new member's join is what bumps the epoch and moves partitions. The classic group's
record is deleted and the consumer group's records are written.

**Downgrade**: when the last member using the consumer protocol leaves (or is fenced) and
every remaining member uses the classic protocol, the group becomes a classic group again:
generation = the group epoch, each member with its first supported protocol's metadata and
its current assignment encoded as a ConsumerProtocolAssignment, the protocol chosen by vote;
its consumer-group records are deleted, its classic record written, and a rebalance starts
so that the members rejoin under the classic protocol.

Both need the embedded consumer protocol (client/group/protocol.py) to parse; a member whose
metadata does not is a reason not to migrate (the request is refused, nothing changes).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from client.group.protocol import Assignment as ProtocolAssignment
from client.group.protocol import decode_assignment, decode_subscription, encode_assignment
from client.protocol.primitives import DecodeError
from client.structs import TopicPartition

from . import consumer_records as cr
from .consumer_group import Assignment, ConsumerGroup, ConsumerGroupMember, MemberState, assignment_of
from .group import ClassicGroup
from .records import GroupMetadata, MemberMetadata

__all__ = ["MigrationError", "consumer_group_from_classic", "classic_record_from_consumer", "by_topic_id",
           "protocol_assignment"]


class MigrationError(ValueError):
    """The group cannot be converted (a member's embedded protocol does not parse)."""


def by_topic_id(tps: list[TopicPartition] | list[tuple[str, int]], ids: Mapping[str, uuid.UUID]
                ) -> dict[uuid.UUID, frozenset[int]]:
    """(topic, partition) pairs as an Assignment; topics without an id (gone) left out."""
    pairs: dict[uuid.UUID, set[int]] = {}
    for topic, partition in tps:
        topic_id = ids.get(topic)
        if topic_id is not None:
            pairs.setdefault(topic_id, set()).add(partition)
    return assignment_of(pairs.items())


def protocol_assignment(assigned: Assignment, names: Mapping[uuid.UUID, str]) -> bytes:
    """A member's partitions as the ConsumerProtocolAssignment a classic member reads."""
    tps = sorted(TopicPartition(names[t], p) for t, ps in assigned.items() if t in names for p in ps)
    return encode_assignment(ProtocolAssignment(tps))


def consumer_group_from_classic(entry: ClassicGroup, ids: Mapping[str, uuid.UUID]) -> ConsumerGroup:
    """The consumer group a Stable classic group becomes (see the module docstring)."""
    g = ConsumerGroup(entry.group_id)
    epoch = entry.generation_id
    g.group_epoch = g.assignment_epoch = epoch
    for m in entry.members.values():
        try:
            sub = decode_subscription(m.metadata(entry.protocol_name))
            owned = decode_assignment(m.assignment).partitions if m.assignment else []
        except DecodeError as e:
            raise MigrationError(f"member {m.member_id}'s embedded consumer protocol does not parse: {e}") from None
        assigned = by_topic_id(list(owned), ids)
        member = ConsumerGroupMember(
            m.member_id, instance_id=m.group_instance_id, client_id=m.client_id, client_host=m.client_host,
            subscribed_topic_names=tuple(sorted(sub.topics)), rebalance_timeout_ms=m.rebalance_timeout_ms,
            member_epoch=epoch, previous_member_epoch=epoch, state=MemberState.STABLE, assigned=assigned,
            classic=cr.ClassicMemberMetadata(m.session_timeout_ms,
                                             [cr.ClassicProtocol(n, bytes(d)) for n, d in m.protocols]))
        g.update_member(member)
        g.target[m.member_id] = assigned
    return g


def classic_record_from_consumer(g: ConsumerGroup, names: Mapping[uuid.UUID, str], now_ms: int) -> GroupMetadata:
    """The classic group record of a consumer group whose members all use the classic protocol."""
    votes: dict[str, int] = {}
    for m in g.members.values():
        assert m.classic is not None
        for p in m.classic.supported_protocols:
            votes[p.name] = votes.get(p.name, 0) + 1
    common = [n for n, count in votes.items() if count == len(g.members)]
    if not common:
        raise MigrationError("the members share no classic protocol")
    protocol = common[0]
    members = []
    for m in g.members.values():
        assert m.classic is not None
        metadata = next(p.metadata for p in m.classic.supported_protocols if p.name == protocol)
        members.append(MemberMetadata(m.member_id, m.instance_id, m.client_id, m.client_host,
                                      m.rebalance_timeout_ms, m.classic.session_timeout_ms, metadata,
                                      protocol_assignment(m.assigned, names)))
    leader = members[0].member_id if members else None
    return GroupMetadata("consumer", g.group_epoch, protocol, leader, now_ms, members)
