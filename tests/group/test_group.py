"""ClassicGroup's counts (broker/group/group.py): how many members await a join and which
protocols every member supports are kept as members come, go, rejoin and change protocols, so
that a JoinGroup costs O(1) in a group of 10,000. After any sequence of such changes they equal
what a walk over the members gives."""

from __future__ import annotations

import random

from broker.group.group import ClassicGroup, Member


def _walk(g: ClassicGroup) -> tuple[int, set[str]]:
    awaiting = sum(1 for m in g.members.values() if m.awaiting_join is not None)
    if not g.members:
        return awaiting, set()
    names = [set(m.protocol_names) for m in g.members.values()]
    return awaiting, set.intersection(*names)


def test_counts_match_a_walk_over_the_members_after_random_changes() -> None:
    rng = random.Random(5)
    protocols = ["range", "roundrobin", "sticky", "cooperative-sticky"]
    g = ClassicGroup("g", 0)
    ids = 0
    for step in range(5000):
        op = rng.random()
        members = list(g.members.values())
        if op < 0.35 or not members:
            ids += 1
            m = Member(f"m{ids}", None, "c", "h", 1000, 1000, "consumer",
                       [(p, b"") for p in rng.sample(protocols, rng.randint(1, 4))])
            g.add(m, (lambda _: None) if rng.random() < 0.5 else None)
        elif op < 0.55:
            g.remove(rng.choice(members).member_id)
        elif op < 0.75:
            m = rng.choice(members)
            m.awaiting_join = (lambda _: None) if m.awaiting_join is None else None
        elif op < 0.9:
            rng.choice(members).protocols = [(p, b"") for p in rng.sample(protocols, rng.randint(1, 4))]
        else:
            m = rng.choice(members)
            if m.awaiting_join is not None:
                assert m.complete_join({}) is True
            assert m.awaiting_join is None
        awaiting, common = _walk(g)
        assert g.num_awaiting_join == awaiting, step
        assert g._candidates() == common, step
        assert g.has_all_members_joined() == (awaiting == len(g.members) and not g.pending_members)
