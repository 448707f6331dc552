"""The server-side assignors of KIP-848 consumer groups: ``uniform`` (the default) and
``range``, chosen per group by ``group.consumer.assignors`` (first is the default) or by the
members' ``ServerAssignor``.

``assign(members, topics, current)`` takes each member's subscribed topic ids, the topics'
partition counts and the current target assignment, and returns each member's new target.
Both are deterministic (same input, same output); only ``uniform`` is sticky across epochs:

- **uniform** spreads every subscribed partition so that any two members subscribed to a
  topic differ by at most one partition in count where the subscriptions allow it. A member
  keeps the partitions it had (up to its fair share); what is left over or new goes to the
  eligible member with the fewest (the topics with the fewest subscribers first), ties broken
  by member id; then, while a member can reach a member with two partitions more through a
  chain of members each able to take a partition of the next, one partition moves along each
  link of the shortest such chain. With identical subscriptions this is the balanced
  assignment that moves the fewest partitions.
- **range** assigns each topic on its own: its subscribers sorted by member id (instance id
  for static members, so a restarted static member gets its range back), partitions split into
  contiguous ranges, the first ``partitions % members`` ranges one larger. Members with the same
  subscriptions therefore get the same partition numbers of co-partitioned topics. As Kafka's
  range assignor, it ignores the current assignment: a member joining shifts the ranges of
  the members sorted after it (static members keep theirs across restarts).

Cost: with identical subscriptions (the usual case) O(P + M log M) for P partitions and M
members (1,000 members and 10,000 partitions: about 15 ms here); otherwise a greedy fill, then
O(P + M * T) per chain for T topics (large groups run their assignor off the request path:
``assignment_offload.py``).
"""

from __future__ import annotations

import heapq
import uuid
from collections.abc import Mapping

from .consumer_group import Assignment

__all__ = ["ASSIGNORS", "MemberSubscription", "uniform", "range_assign", "assign"]

#: member id -> (subscribed topic ids, sort key: instance id or member id)
MemberSubscription = tuple[frozenset[uuid.UUID], str]


def uniform(members: Mapping[str, MemberSubscription], topics: Mapping[uuid.UUID, int],
            current: Mapping[str, Assignment]) -> dict[str, dict[uuid.UUID, frozenset[int]]]:
    subscriptions = {sub for sub, _ in members.values()}
    if len(subscriptions) == 1:
        return _uniform_homogeneous(members, topics, current)
    owner: dict[tuple[uuid.UUID, int], str] = {}
    counts = dict.fromkeys(members, 0)
    subscribers: dict[uuid.UUID, list[str]] = {}
    for member_id, (subscribed, _) in sorted(members.items()):
        for t in subscribed:
            if t in topics:
                subscribers.setdefault(t, []).append(member_id)
    total = sum(topics[t] for t in subscribers)
    # fair share: with identical subscriptions, ceil(total / members); otherwise an upper bound
    # that the balancing pass below refines
    share = -(-total // len(members)) if members else 0
    # 1. stickiness: keep current partitions still valid, up to the fair share
    for member_id in sorted(members):
        subscribed = members[member_id][0]
        for t, parts in sorted(current.get(member_id, {}).items()):
            if t not in subscribed or t not in topics:
                continue
            for p in sorted(parts):
                if p < topics[t] and (t, p) not in owner and counts[member_id] < share:
                    owner[(t, p)] = member_id
                    counts[member_id] += 1
    # 2. the rest to the eligible member with the fewest, the topics with the fewest subscribers
    # first (their partitions have the fewest places to go)
    for t in sorted(subscribers, key=lambda t: (len(subscribers[t]), t)):
        heap = [(counts[m], m) for m in subscribers[t]]
        heapq.heapify(heap)
        for p in range(topics[t]):
            if (t, p) in owner:
                continue
            while True:  # pop until an entry is current (counts moved since it was pushed)
                n, m = heapq.heappop(heap)
                if n == counts[m]:
                    break
            owner[(t, p)] = m
            counts[m] += 1
            heapq.heappush(heap, (counts[m], m))
    # 3. balance
    _balance(owner, counts, {m: sub & subscribers.keys() for m, (sub, _) in members.items()})
    out: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in members}
    for (t, p), m in owner.items():
        out[m].setdefault(t, set()).add(p)
    return {m: {t: frozenset(ps) for t, ps in a.items()} for m, a in out.items()}


def _balance(owner: dict[tuple[uuid.UUID, int], str], counts: dict[str, int],
             subscribed: Mapping[str, frozenset[uuid.UUID]]) -> None:
    """Even out ``owner`` (partition -> member) in place, so that no member has two partitions
    fewer than another unless the subscriptions forbid it: while a member ``u`` with the fewest
    partitions can reach, through a chain "u can take a partition x owns, x can take one y
    owns, ...", a member ``v`` with at least two more, each takes one partition along the chain
    (``u`` gains one, ``v`` loses one, the members between keep their counts). Chains are
    found breadth-first (shortest first: the fewest partitions move), each topic expanded once
    per search: O(P + M * T) per chain for P partitions, M members, T topics."""
    held: dict[uuid.UUID, dict[str, set[int]]] = {}  # topic -> member -> its partitions of the topic
    for (t, p), m in owner.items():
        held.setdefault(t, {}).setdefault(m, set()).add(p)
    while True:
        top = max(counts.values())
        for u in sorted(counts, key=lambda m: (counts[m], m)):
            if counts[u] + 2 > top:
                return  # every member left is within one of the most loaded
            chain = _chain(u, counts[u] + 2, counts, subscribed, held)
            if chain:
                break
        else:
            return  # no chain from anyone: as balanced as the subscriptions allow
        counts[u] += 1
        counts[chain[-1][1]] -= 1
        for taker, giver, (t, p) in chain:
            owner[(t, p)] = taker
            held[t][giver].discard(p)
            held[t].setdefault(taker, set()).add(p)


def _chain(start: str, at_least: int, counts: Mapping[str, int], subscribed: Mapping[str, frozenset[uuid.UUID]],
           held: Mapping[uuid.UUID, Mapping[str, set[int]]]) -> list[tuple[str, str, tuple[uuid.UUID, int]]]:
    """The shortest chain from ``start`` to a member holding ``at_least`` partitions: a list of
    (taker, giver, partition the giver hands over) from ``start``'s step on; [] if none."""
    parent: dict[str, tuple[str, tuple[uuid.UUID, int]]] = {}
    seen: set[str] = {start}
    expanded: set[uuid.UUID] = set()
    frontier = [start]
    while frontier:
        nxt = []
        for a in frontier:
            for t in sorted(subscribed[a] - expanded):
                expanded.add(t)
                for b, ps in sorted(held.get(t, {}).items()):
                    if b in seen or not ps:
                        continue
                    seen.add(b)
                    parent[b] = (a, (t, min(ps)))
                    if counts[b] >= at_least:
                        steps = []
                        while b != start:
                            a2, tp = parent[b]
                            steps.append((a2, b, tp))
                            b = a2
                        return steps[::-1]
                    nxt.append(b)
        frontier = nxt
    return []


def _uniform_homogeneous(members: Mapping[str, MemberSubscription], topics: Mapping[uuid.UUID, int],
                         current: Mapping[str, Assignment]) -> dict[str, dict[uuid.UUID, frozenset[int]]]:
    """``uniform`` when every member subscribes to the same topics, in O(P + M log M): each
    member's quota is P // M, the first P % M members by current ownership (then id) one more;
    a member keeps its current partitions up to its quota, the rest go to members below theirs."""
    (subscribed,) = {sub for sub, _ in members.values()}
    valid = {t: n for t, n in topics.items() if t in subscribed}
    total = sum(valid.values())
    order = sorted(members)
    base, extra = divmod(total, len(order))
    kept: dict[str, list[tuple[uuid.UUID, int]]] = {}
    for m in order:
        kept[m] = sorted((t, p) for t, ps in current.get(m, {}).items() if t in valid for p in ps if p < valid[t])
    # the members keeping the most get the extra slots: the fewest partitions move
    by_kept = sorted(order, key=lambda m: (-len(kept[m]), m))
    quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(by_kept)}
    owner: dict[tuple[uuid.UUID, int], str] = {}
    out: dict[str, list[tuple[uuid.UUID, int]]] = {m: [] for m in order}
    for m in order:
        for tp in kept[m]:
            if len(out[m]) >= quota[m]:
                break
            if tp not in owner:
                owner[tp] = m
                out[m].append(tp)
    hungry = iter([m for m in order for _ in range(quota[m] - len(out[m]))])
    for t in sorted(valid):
        for p in range(valid[t]):
            if (t, p) not in owner:
                m = next(hungry)
                owner[(t, p)] = m
                out[m].append((t, p))
    result: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in order}
    for m, tps in out.items():
        for t, p in tps:
            result[m].setdefault(t, set()).add(p)
    return {m: {t: frozenset(ps) for t, ps in a.items()} for m, a in result.items()}


def range_assign(members: Mapping[str, MemberSubscription], topics: Mapping[uuid.UUID, int],
                 current: Mapping[str, Assignment]) -> dict[str, dict[uuid.UUID, frozenset[int]]]:
    out: dict[str, dict[uuid.UUID, frozenset[int]]] = {m: {} for m in members}
    order = sorted(members, key=lambda m: (members[m][1], m))
    for t, n in sorted(topics.items()):
        subs = [m for m in order if t in members[m][0]]
        if not subs:
            continue
        base, extra = divmod(n, len(subs))
        start = 0
        for i, m in enumerate(subs):
            size = base + (1 if i < extra else 0)
            if size:
                out[m][t] = frozenset(range(start, start + size))
            start += size
    return out


ASSIGNORS = {"uniform": uniform, "range": range_assign}


def assign(name: str, members: Mapping[str, MemberSubscription], topics: Mapping[uuid.UUID, int],
           current: Mapping[str, Assignment]) -> dict[str, dict[uuid.UUID, frozenset[int]]]:
    return ASSIGNORS[name](members, topics, current)
