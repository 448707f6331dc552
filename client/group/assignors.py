"""Partition assignors: what the group leader runs to split the subscribed partitions among the
members. The names go in JoinGroup as the protocol names, and the broker picks the one every
member supports; members of other client libraries then run *their* implementation of the
same name, so each assignor here computes exactly what Kafka's does for the same input.

``range`` (Kafka's RangeAssignor, without racks): per topic, the members subscribed to it in
*member order* each take a contiguous run of the partitions in id order; with ``n`` partitions
and ``m`` members the first ``n % m`` members get ``n // m + 1``, the others ``n // m``.

``roundrobin`` (RoundRobinAssignor): every partition of every subscribed topic, topics sorted
by name and partitions by id, dealt in turn to the members in member order, skipping members
not subscribed to the partition's topic.

*Member order* is Kafka's: static members (with a ``group_instance_id``) first, sorted by
instance id, then dynamic members sorted by member id; strings compare as Java's do, by UTF-16
code unit.

Not here: ``sticky`` and ``cooperative-sticky`` (the latter needs the incremental rebalance
protocol in the consumer too).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple, Protocol

from client.structs import TopicPartition

__all__ = ["MemberSubscription", "PartitionAssignor", "RangeAssignor", "RoundRobinAssignor", "ASSIGNORS",
           "member_order"]


class MemberSubscription(NamedTuple):
    member_id: str
    group_instance_id: str | None
    topics: list[str]


class PartitionAssignor(Protocol):
    name: str

    def assign(self, partitions_per_topic: Mapping[str, int],
               members: Mapping[str, MemberSubscription]) -> dict[str, list[TopicPartition]]:
        """member id -> partitions; ``partitions_per_topic`` has the topics that exist."""


def _java(s: str) -> bytes:
    return s.encode("utf-16-be", "surrogatepass")  # byte order = Java's String.compareTo order


def member_order(members: Mapping[str, MemberSubscription]) -> list[str]:
    """Member ids in Kafka's order (static by instance id, then dynamic by member id)."""
    def key(m: MemberSubscription) -> tuple[int, bytes]:
        if m.group_instance_id is not None:
            return (0, _java(m.group_instance_id))
        return (1, _java(m.member_id))
    return [m.member_id for m in sorted(members.values(), key=key)]


class RangeAssignor:
    name = "range"

    def assign(self, partitions_per_topic: Mapping[str, int],
               members: Mapping[str, MemberSubscription]) -> dict[str, list[TopicPartition]]:
        out: dict[str, list[TopicPartition]] = {m: [] for m in members}
        order = member_order(members)
        for topic, n in partitions_per_topic.items():
            subscribed = [m for m in order if topic in members[m].topics]
            if not subscribed or n <= 0:
                continue
            per, extra = divmod(n, len(subscribed))
            start = 0
            for i, m in enumerate(subscribed):
                count = per + (1 if i < extra else 0)
                out[m].extend(TopicPartition(topic, p) for p in range(start, start + count))
                start += count
        return out


class RoundRobinAssignor:
    name = "roundrobin"

    def assign(self, partitions_per_topic: Mapping[str, int],
               members: Mapping[str, MemberSubscription]) -> dict[str, list[TopicPartition]]:
        out: dict[str, list[TopicPartition]] = {m: [] for m in members}
        order = member_order(members)
        if not order:
            return out
        topics = sorted({t for m in members.values() for t in m.topics}, key=_java)
        i = 0
        for topic in topics:
            n = partitions_per_topic.get(topic)
            if n is None:
                continue
            for p in range(n):
                while topic not in members[order[i % len(order)]].topics:
                    i += 1
                out[order[i % len(order)]].append(TopicPartition(topic, p))
                i += 1
        return out


ASSIGNORS: dict[str, type[RangeAssignor] | type[RoundRobinAssignor]] = {
    "range": RangeAssignor, "roundrobin": RoundRobinAssignor}
