"""The KIP-848 server-side assignors (broker/group/assignors.py): every subscribed partition
assigned once, balance, stickiness, determinism."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from broker.group.assignors import range_assign, uniform

T = [uuid.UUID(int=i + 1) for i in range(4)]


def flat(a: dict[str, dict[uuid.UUID, frozenset[int]]]) -> list[tuple[uuid.UUID, int]]:
    return [(t, p) for m in a.values() for t, ps in m.items() for p in ps]


@given(st.integers(1, 30), st.lists(st.integers(0, 40), min_size=1, max_size=4))
def test_uniform_homogeneous_is_balanced_and_sticky(members: int, counts: list[int]) -> None:
    topics = dict(zip(T, counts))
    subs = {f"m{i:02d}": (frozenset(topics), f"m{i:02d}") for i in range(members)}
    a = uniform(subs, topics, {})
    got = flat(a)
    assert sorted(got) == sorted((t, p) for t, n in topics.items() for p in range(n))  # each once
    sizes = [sum(len(ps) for ps in m.values()) for m in a.values()]
    assert max(sizes) - min(sizes) <= 1
    assert uniform(subs, topics, a) == a  # nothing moves when nothing changed
    subs["new"] = (frozenset(topics), "new")
    b = uniform(subs, topics, a)
    total = sum(topics.values())
    moved = sum(len(a[m].get(t, frozenset()) - b[m].get(t, frozenset())) for m in a for t in a[m])
    assert moved <= -(-total // (members + 1)) + 1  # only what the newcomer needs moves


@given(st.lists(st.sets(st.sampled_from(T), min_size=1), min_size=1, max_size=8),
       st.lists(st.integers(0, 12), min_size=4, max_size=4))
def test_uniform_heterogeneous_assigns_each_partition_to_a_subscriber(subscriptions: list[set[uuid.UUID]],
                                                                        counts: list[int]) -> None:
    topics = dict(zip(T, counts))
    subs = {f"m{i}": (frozenset(s), f"m{i}") for i, s in enumerate(subscriptions)}
    a = uniform(subs, topics, {})
    wanted = {(t, p) for t, n in topics.items() if any(t in s for s in subscriptions) for p in range(n)}
    assert sorted(flat(a)) == sorted(wanted)
    for m, parts in a.items():
        assert set(parts) <= subs[m][0]


def test_range_lines_up_co_partitioned_topics() -> None:
    topics = {T[0]: 6, T[1]: 6}
    subs = {m: (frozenset(topics), m) for m in ("b", "a", "c")}
    a = range_assign(subs, topics, {})
    assert a["a"] == {T[0]: frozenset({0, 1}), T[1]: frozenset({0, 1})}
    assert a["c"] == {T[0]: frozenset({4, 5}), T[1]: frozenset({4, 5})}


@given(st.integers(1, 12), st.integers(1, 60), st.integers(0, 12))
def test_uniform_join_only_takes_from_others_wherever_the_newcomer_sorts(members: int, partitions: int,
                                                                          slot: int) -> None:
    """A newcomer whose member id sorts before, between or after the others: the others only
    give partitions away, and exactly what the newcomer needs moves."""
    topics = {T[0]: partitions}
    ids = [f"m{2 * i + 1:03d}" for i in range(members)]
    subs = {m: (frozenset(topics), m) for m in ids}
    a = uniform(subs, topics, {})
    newcomer = f"m{2 * min(slot, members):03d}"  # m000 sorts first, m002 between m001 and m003...
    subs[newcomer] = (frozenset(topics), newcomer)
    b = uniform(subs, topics, a)
    for m in ids:
        assert b[m].get(T[0], frozenset()) <= a[m].get(T[0], frozenset())
    moved = sum(len(a[m].get(T[0], frozenset()) - b[m].get(T[0], frozenset())) for m in ids)
    assert moved == len(b[newcomer].get(T[0], frozenset())) == partitions // (members + 1)


def test_a_fourth_member_joining_three_on_six_partitions() -> None:
    """The case seen with librdkafka members: ``uniform`` moves one partition; ``range``, as
    Kafka's, is not sticky and shifts the ranges sorted after the newcomer (three move)."""
    topics = {T[0]: 6}
    subs = {m: (frozenset(topics), m) for m in ("b", "d", "f")}
    before = {name: assignor(subs, topics, {}) for name, assignor in (("uniform", uniform), ("range", range_assign))}
    subs["c"] = (frozenset(topics), "c")
    for name, assignor in (("uniform", uniform), ("range", range_assign)):
        after = assignor(subs, topics, before[name])
        moved = sum(len(before[name][m][T[0]] - after[m].get(T[0], frozenset())) for m in ("b", "d", "f"))
        assert moved == (1 if name == "uniform" else 3), (name, before[name], after)


def test_uniform_mixed_subscriptions_balance_through_chains() -> None:
    """Half the members subscribe to one topic, half to two: every member gets two partitions,
    from scratch and after a member joins with stale counts (a member holding only partitions
    of the second topic gives one up through a member of both)."""
    topics = {T[0]: 300, T[1]: 300}
    subs = {f"m{i:03d}": (frozenset({T[0]} if i % 2 else {T[0], T[1]}), f"m{i:03d}") for i in range(300)}
    a = uniform(subs, topics, {})
    assert {sum(len(ps) for ps in m.values()) for m in a.values()} == {2}
    # a lopsided current assignment: the two-topic members hold all of T[1] three at a time
    two = [m for m in subs if len(subs[m][0]) == 2]
    current = {m: {T[1]: frozenset(range(3 * i, min(3 * i + 3, 300)))} for i, m in enumerate(two[:100])}
    b = uniform(subs, topics, current)
    sizes = [sum(len(ps) for ps in m.values()) for m in b.values()]
    assert max(sizes) - min(sizes) <= 1
    assert sorted(flat(b)) == sorted((t, p) for t, n in topics.items() for p in range(n))


def test_uniform_a_member_without_topics_does_not_stop_the_others_balancing() -> None:
    topics = {T[0]: 4, T[1]: 4}
    subs = {"a": (frozenset({T[0]}), "a"), "b": (frozenset({T[0], T[1]}), "b"), "idle": (frozenset({T[2]}), "idle")}
    current = {"b": {T[0]: frozenset(range(4)), T[1]: frozenset(range(4))}}
    out = uniform(subs, topics, current)
    assert out["idle"] == {}
    assert sorted(sum(len(ps) for ps in out[m].values()) for m in ("a", "b")) == [4, 4]
