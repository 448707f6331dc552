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
