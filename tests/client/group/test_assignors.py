"""Tests for ``client/group/assignors.py``: Kafka's documented results, and the same answers
as kafka-python's RangePartitionAssignor / RoundRobinPartitionAssignor (the implementations a
mixed group runs beside ours) for random groups."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

from client.group.assignors import MemberSubscription, RangeAssignor, RoundRobinAssignor, member_order
from client.structs import TopicPartition as TP


def members(*specs: tuple[str, str | None, list[str]]) -> dict[str, MemberSubscription]:
    return {m: MemberSubscription(m, inst, topics) for m, inst, topics in specs}


def test_range_kafka_example():
    # Kafka's RangeAssignor javadoc: C0, C1; t0 and t1 with 3 partitions each
    got = RangeAssignor().assign({"t0": 3, "t1": 3}, members(("C0", None, ["t0", "t1"]), ("C1", None, ["t0", "t1"])))
    assert got == {"C0": [TP("t0", 0), TP("t0", 1), TP("t1", 0), TP("t1", 1)], "C1": [TP("t0", 2), TP("t1", 2)]}


def test_roundrobin_kafka_example_with_different_subscriptions():
    # RoundRobinAssignor javadoc: C0 [t0], C1 [t0, t1], C2 [t0, t1, t2]; t0 1, t1 2, t2 3 partitions
    got = RoundRobinAssignor().assign({"t0": 1, "t1": 2, "t2": 3}, members(
        ("C0", None, ["t0"]), ("C1", None, ["t0", "t1"]), ("C2", None, ["t0", "t1", "t2"])))
    assert got == {"C0": [TP("t0", 0)], "C1": [TP("t1", 0)],
                   "C2": [TP("t1", 1), TP("t2", 0), TP("t2", 1), TP("t2", 2)]}


def test_static_members_come_first_by_instance_id_and_missing_topics_are_skipped():
    ms = members(("a-dyn", None, ["t"]), ("z-1", "inst-b", ["t", "gone"]), ("y-2", "inst-a", ["t"]))
    assert member_order(ms) == ["y-2", "z-1", "a-dyn"]
    assert RangeAssignor().assign({"t": 4}, ms) == {"y-2": [TP("t", 0), TP("t", 1)], "z-1": [TP("t", 2)],
                                                    "a-dyn": [TP("t", 3)]}
    assert RoundRobinAssignor().assign({}, ms) == {"y-2": [], "z-1": [], "a-dyn": []}


def _kafka_python(assignor, counts, subs):
    cluster = SimpleNamespace(partitions_for_topic=lambda t: set(range(counts[t])) if t in counts else None)
    kp_members = [SimpleNamespace(member_id=s.member_id, group_instance_id=s.group_instance_id,
                                  metadata=SimpleNamespace(topics=s.topics)) for s in subs.values()]
    out = assignor.assign(cluster, kp_members)
    return {m: sorted(TP(t, p) for t, ps in a.assigned_partitions for p in ps) for m, a in out.items()}


topic_names = st.sampled_from(["a", "b", "c", "d"])


@given(counts=st.dictionaries(topic_names, st.integers(1, 12), min_size=1),
       subs=st.lists(st.tuples(st.text("0123456789abcdef-", min_size=1, max_size=6),
                               st.lists(topic_names, min_size=1, max_size=4, unique=True)),
                     min_size=1, max_size=6, unique_by=lambda x: x[0]))
def test_same_result_as_kafka_python(counts, subs):
    # only topics that exist: kafka-python's round robin assumes every subscribed topic exists
    ms = {m: MemberSubscription(m, None, [t for t in ts if t in counts] or [next(iter(counts))]) for m, ts in subs}
    assert {m: sorted(v) for m, v in RangeAssignor().assign(counts, ms).items()} \
        == _kafka_python(RangePartitionAssignor, counts, ms)
    # kafka-python 3.0's round robin fails (KeyError) when members subscribe to different
    # topics, so it is the reference only for equal subscriptions (the Kafka example above
    # covers different ones).
    same = {m: MemberSubscription(m, None, sorted(counts)) for m in ms}
    assert {m: sorted(v) for m, v in RoundRobinAssignor().assign(counts, same).items()} \
        == _kafka_python(RoundRobinPartitionAssignor, counts, same)


# ---------------------------------------------------------------- sticky

def test_sticky_user_data_layouts():
    from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData

    from client.group.assignors import decode_sticky_user_data, encode_sticky_user_data

    tps = [TP("a", 1), TP("a", 2), TP("b", 0)]
    ours = encode_sticky_user_data(tps, 5)
    # Java's layout: no version prefix (kafka-python 3 writes one: the same bytes after int16 1)
    theirs = bytes(StickyAssignorUserData([("a", [1, 2]), ("b", [0])], 5).encode(version=1))
    assert theirs == b"\x00\x01" + ours
    assert decode_sticky_user_data(ours) == (tps, 5)
    assert decode_sticky_user_data(theirs) == (tps, 5)
    assert decode_sticky_user_data(ours[:-4]) == (tps, -1)  # v0: no generation
    assert decode_sticky_user_data(None) == ([], -1)


def sticky_round(counts, topics_of, previous, generation=1):
    """One sticky assignment of ``topics_of`` (member -> topics) with ``previous`` (member ->
    partitions it owned in ``generation``)."""
    from client.group.assignors import StickyAssignor, encode_sticky_user_data

    ms = {m: MemberSubscription(m, None, ts, encode_sticky_user_data(previous[m], generation) if m in previous else None)
          for m, ts in topics_of.items()}
    return StickyAssignor().assign(counts, ms)


def check_complete(counts, topics_of, got):
    flat = [tp for ps in got.values() for tp in ps]
    assert len(flat) == len(set(flat))
    subscribed = {t for ts in topics_of.values() for t in ts}
    assert set(flat) == {TP(t, p) for t in subscribed if t in counts for p in range(counts[t])}
    for m, ps in got.items():
        assert all(tp.topic in topics_of[m] for tp in ps)


@given(counts=st.dictionaries(topic_names, st.integers(1, 12), min_size=1),
       n=st.integers(1, 7), leave=st.integers(0, 6), join=st.integers(0, 3))
def test_sticky_equal_subscriptions_balanced_and_moves_only_the_excess(counts, n, leave, join):
    topics = sorted(counts)
    members = [f"m{i}" for i in range(n)]
    first = sticky_round(counts, {m: topics for m in members}, {})
    check_complete(counts, {m: topics for m in members}, first)
    sizes = [len(v) for v in first.values()]
    assert max(sizes) - min(sizes) <= 1
    # a member leaves and others join: balanced again, and only partitions above a member's
    # new share (or the leaver's) moved
    stay = [m for i, m in enumerate(members) if i != leave % n] or members
    now = stay + [f"new{i}" for i in range(join)]
    second = sticky_round(counts, {m: topics for m in now}, {m: first[m] for m in stay})
    check_complete(counts, {m: topics for m in now}, second)
    sizes = [len(v) for v in second.values()]
    assert max(sizes) - min(sizes) <= 1
    for m in stay:
        kept = set(first[m]) & set(second[m])
        assert len(kept) == min(len(first[m]), len(second[m]))


@given(counts=st.dictionaries(topic_names, st.integers(1, 8), min_size=1),
       subs=st.lists(st.lists(topic_names, min_size=1, max_size=4, unique=True), min_size=1, max_size=5))
def test_sticky_different_subscriptions_complete_and_sticky_when_nothing_changes(counts, subs):
    topics_of = {f"m{i}": ts for i, ts in enumerate(subs)}
    first = sticky_round(counts, topics_of, {})
    check_complete(counts, topics_of, first)
    again = sticky_round(counts, topics_of, first)
    assert again == first  # nothing changed: nothing moves


def test_sticky_conflicting_claims_highest_generation_wins():
    from client.group.assignors import StickyAssignor, encode_sticky_user_data

    ms = {"a": MemberSubscription("a", None, ["t"], encode_sticky_user_data([TP("t", 0), TP("t", 1)], 3)),
          "b": MemberSubscription("b", None, ["t"], encode_sticky_user_data([TP("t", 1), TP("t", 2)], 4)),
          "c": MemberSubscription("c", None, ["t"], b"\xff\xff garbage")}
    got = StickyAssignor().assign({"t": 3}, ms)
    assert got == {"a": [TP("t", 0)], "b": [TP("t", 1)], "c": [TP("t", 2)]}


def test_cooperative_sticky_moves_in_two_rebalances():
    from client.group.assignors import CooperativeStickyAssignor

    def member(m, owned, gen=1):
        return MemberSubscription(m, None, ["t"], None, owned, gen)

    a_owned = [TP("t", 0), TP("t", 1), TP("t", 2)]
    b_owned = [TP("t", 3), TP("t", 4), TP("t", 5)]
    first = CooperativeStickyAssignor().assign({"t": 6}, {"a": member("a", a_owned), "b": member("b", b_owned),
                                                          "c": member("c", [], -1)})
    # a and b keep two each; what moves to c is not given yet: its owner revokes it first
    assert first["c"] == [] and len(first["a"]) == len(first["b"]) == 2
    assert set(first["a"]) <= set(a_owned) and set(first["b"]) <= set(b_owned)
    second = CooperativeStickyAssignor().assign({"t": 6}, {"a": member("a", first["a"], 2),
                                                           "b": member("b", first["b"], 2),
                                                           "c": member("c", [], 2)})
    assert second["a"] == first["a"] and second["b"] == first["b"]
    assert sorted(second["c"]) == sorted(set(a_owned + b_owned) - set(first["a"] + first["b"]))
