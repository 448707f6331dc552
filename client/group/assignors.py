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

``sticky`` (Kafka's StickyAssignor, eager protocol): a balanced assignment that keeps as many
partitions as balance allows with their previous owner. Each member tells its previous
assignment and generation in its subscription's user data, in Kafka's StickyAssignorUserData
v1 layout (``[string topic, [int32] partitions] previous_assignment | int32 generation``; v0
lacks the generation), as Java's StickyAssignor reads and writes it (kafka-python 3 puts an int16 version before
it; both are read).
Where two members claim a partition, the higher generation wins (the same generation: nobody
keeps it). Then the unowned partitions go, those with the fewest eligible members first, to the
eligible member with the fewest partitions; then, while a partition can move from a member to
an eligible one with at least two fewer partitions, the most loaded member gives one away. With
equal subscriptions this ends with every member holding floor or ceil(P/M) partitions, and
moves only partitions above a member's share. It is our own algorithm: it meets the
StickyAssignor's contract (balance first, then stickiness) but is not guaranteed to choose the
same balanced assignment as Kafka's implementation, so in a group mixing libraries the result
can depend on which member leads (every member accepts any assignment). Cost: O(P x M) per
partition moved; fine for the thousands of partitions a group has.

``cooperative-sticky`` (Kafka's CooperativeStickyAssignor, KIP-429's incremental protocol):
the same sticky assignment, from the partitions each member owns now, less the partitions that
change owner, which are assigned one rebalance later, once their owner has revoked them (see
``CooperativeStickyAssignor``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from client.protocol.primitives import DecodeError, Reader, Writer
from client.structs import TopicPartition

__all__ = ["MemberSubscription", "PartitionAssignor", "RangeAssignor", "RoundRobinAssignor", "StickyAssignor",
           "CooperativeStickyAssignor", "sticky_assign", "ASSIGNORS", "member_order", "encode_sticky_user_data", "decode_sticky_user_data"]

logger = logging.getLogger("client.consumer")


class MemberSubscription(NamedTuple):
    member_id: str
    group_instance_id: str | None
    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: list[TopicPartition] = []  # subscription v1+
    generation: int = -1  # subscription v2+


class PartitionAssignor:
    """Base of the assignors: ``name`` is the protocol name sent in JoinGroup."""

    name: str = ""
    cooperative = False  # supports KIP-429's incremental protocol (a consumer uses it when all its assignors do)

    def assign(self, partitions_per_topic: Mapping[str, int],
               members: Mapping[str, MemberSubscription]) -> dict[str, list[TopicPartition]]:
        """member id -> partitions; ``partitions_per_topic`` has the topics that exist."""
        raise NotImplementedError

    def user_data(self) -> bytes | None:
        """What this member adds to its subscription for this assignor (None: nothing)."""
        return None

    def on_assignment(self, partitions: list[TopicPartition], generation: int) -> None:
        """This member got ``partitions`` in ``generation`` from a leader running this assignor."""


def _java(s: str) -> bytes:
    return s.encode("utf-16-be", "surrogatepass")  # byte order = Java's String.compareTo order


def member_order(members: Mapping[str, MemberSubscription]) -> list[str]:
    """Member ids in Kafka's order (static by instance id, then dynamic by member id)."""
    def key(m: MemberSubscription) -> tuple[int, bytes]:
        if m.group_instance_id is not None:
            return (0, _java(m.group_instance_id))
        return (1, _java(m.member_id))
    return [m.member_id for m in sorted(members.values(), key=key)]


class RangeAssignor(PartitionAssignor):
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


class RoundRobinAssignor(PartitionAssignor):
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


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation: int) -> bytes:
    """StickyAssignorUserData v1 (no version prefix: the layout is told apart by its length)."""
    by_topic: dict[str, list[int]] = {}
    for t, p in partitions:
        by_topic.setdefault(t, []).append(p)
    w = Writer()
    w.int32(len(by_topic))
    for t in sorted(by_topic):
        w.string(t)
        w.int32(len(by_topic[t]))
        for p in sorted(by_topic[t]):
            w.int32(p)
    w.int32(generation)
    return bytes(w.buf)


def decode_sticky_user_data(data: bytes | None) -> tuple[list[TopicPartition], int]:
    """(previous partitions, generation); v0 data has no generation (-1). kafka-python 3
    writes the same fields behind an int16 version, which is accepted when the plain layout
    does not fit the bytes exactly. DecodeError if neither does."""
    if not data:
        return [], -1
    try:
        return _decode_sticky(Reader(data))
    except DecodeError:
        if len(data) < 2 or data[0] != 0 or data[1] > 1:
            raise
        return _decode_sticky(Reader(data, 2))


def _decode_sticky(r: Reader) -> tuple[list[TopicPartition], int]:
    out = []
    for _ in range(max(r.array_length(), 0)):
        topic = r.string()
        for _ in range(max(r.array_length(), 0)):
            out.append(TopicPartition(topic, r.int32()))
    generation = -1
    if r.remaining:
        generation = r.int32()
    if r.remaining:
        raise DecodeError(f"{r.remaining} bytes after the sticky assignor's user data")
    return out, generation


class StickyAssignor(PartitionAssignor):
    name = "sticky"

    def __init__(self) -> None:
        self._owned: list[TopicPartition] | None = None
        self._generation = -1

    def user_data(self) -> bytes | None:
        return None if self._owned is None else encode_sticky_user_data(self._owned, self._generation)

    def on_assignment(self, partitions: list[TopicPartition], generation: int) -> None:
        self._owned = list(partitions)
        self._generation = generation

    def assign(self, partitions_per_topic: Mapping[str, int],
               members: Mapping[str, MemberSubscription]) -> dict[str, list[TopicPartition]]:
        previous = {}
        for m, sub in members.items():
            try:
                previous[m] = decode_sticky_user_data(sub.user_data)
            except DecodeError as e:
                logger.warning("member %s sent sticky user data that does not decode (%s); ignored", m, e)
        return sticky_assign(partitions_per_topic, members, previous)


class CooperativeStickyAssignor(PartitionAssignor):
    """``cooperative-sticky`` (KIP-429): the sticky assignment, minus every partition that would
    move from one member to another: its owner gives it up first (the consumer revokes what it
    lost and rejoins at once) and the next rebalance assigns it. Members tell what they own in
    the subscription's ``owned_partitions`` and ``generation_id`` (v2+), and the generation again
    in the user data (an int32, Kafka's layout, for readers of older subscription versions)."""

    name = "cooperative-sticky"
    cooperative = True

    def __init__(self) -> None:
        self._generation = -1

    def user_data(self) -> bytes | None:
        w = Writer()
        w.int32(self._generation)
        return bytes(w.buf)

    def on_assignment(self, partitions: list[TopicPartition], generation: int) -> None:
        self._generation = generation

    def assign(self, partitions_per_topic: Mapping[str, int],
               members: Mapping[str, MemberSubscription]) -> dict[str, list[TopicPartition]]:
        previous = {}
        for m, sub in members.items():
            generation = sub.generation
            if generation < 0 and sub.user_data is not None and len(sub.user_data) >= 4:
                generation = Reader(sub.user_data).int32()
            previous[m] = (list(sub.owned_partitions), generation)
        out = sticky_assign(partitions_per_topic, members, previous)
        revoked = {tp for m, sub in members.items() for tp in sub.owned_partitions if tp not in set(out[m])}
        for m, sub in members.items():
            owned = set(sub.owned_partitions)
            out[m] = [tp for tp in out[m] if tp in owned or tp not in revoked]
        return out


def sticky_assign(partitions_per_topic: Mapping[str, int], members: Mapping[str, MemberSubscription],
                  previous: Mapping[str, tuple[list[TopicPartition], int]]) -> dict[str, list[TopicPartition]]:
    """The sticky assignment (module docstring) given each member's previous partitions and
    the generation they are from."""
    order = member_order(members)
    rank = {m: i for i, m in enumerate(order)}
    subscribed = {m: set(members[m].topics) for m in order}
    eligible: dict[str, list[str]] = {t: [m for m in order if t in subscribed[m]] for t in partitions_per_topic}
    # previous owners: the highest generation's claim wins; a tie leaves the partition unowned
    claims: dict[TopicPartition, tuple[int, str | None]] = {}
    for m in order:
        prev, gen = previous.get(m, ([], -1))
        for tp in prev:
            n = partitions_per_topic.get(tp.topic)
            if n is None or not 0 <= tp.partition < n or tp.topic not in subscribed[m]:
                continue
            cur = claims.get(tp)
            if cur is None or gen > cur[0]:
                claims[tp] = (gen, m)
            elif gen == cur[0] and cur[1] != m:
                claims[tp] = (gen, None)
    out: dict[str, list[TopicPartition]] = {m: [] for m in order}
    for tp, (_, owner) in sorted(claims.items()):
        if owner is not None:
            out[owner].append(tp)
    unowned = [TopicPartition(t, p) for t in sorted(partitions_per_topic) if eligible[t]
               for p in range(partitions_per_topic[t])
               if claims.get(TopicPartition(t, p), (0, None))[1] is None]
    unowned.sort(key=lambda tp: len(eligible[tp.topic]))  # stable: then by topic, partition
    for tp in unowned:
        m = min(eligible[tp.topic], key=lambda m: (len(out[m]), rank[m]))
        out[m].append(tp)
    # Balance: the most loaded member that has a partition some eligible member with at
    # least two fewer partitions could take gives its last such partition to the least
    # loaded of those. Each move lowers the sum of squared sizes, so this ends.
    while True:
        move = None
        for a in sorted(order, key=lambda m: (-len(out[m]), rank[m])):
            size = len(out[a])
            for tp in reversed(out[a]):
                takers = [b for b in eligible[tp.topic] if len(out[b]) <= size - 2]
                if takers:
                    move = (a, tp, min(takers, key=lambda b: (len(out[b]), rank[b])))
                    break
            if move is not None:
                break
        if move is None:
            break
        a, tp, b = move
        out[a].remove(tp)
        out[b].append(tp)
    return {m: sorted(ps) for m, ps in out.items()}


ASSIGNORS: dict[str, type[PartitionAssignor]] = {
    "range": RangeAssignor, "roundrobin": RoundRobinAssignor, "sticky": StickyAssignor,
    "cooperative-sticky": CooperativeStickyAssignor}
