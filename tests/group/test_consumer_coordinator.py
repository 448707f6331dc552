"""KIP-848 consumer groups as a state machine: heartbeats and a manual clock in, responses and
``__consumer_offsets`` records out (broker/group/consumer_coordinator.py). No broker, no sockets."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from broker.group import consumer_records as cr
from broker.group.config import GroupConfig
from broker.group.consumer_group import MemberState
from broker.group.coordinator import GroupCoordinator
from broker.group.records import decode_key
from client.protocol.api import ErrorCode as E

from .test_coordinator import ManualTimer

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)


class Topics:
    def __init__(self, **topics: int) -> None:
        self.metadata_epoch = 1
        self.counts: dict[str, int] = {}
        self.ids: dict[str, uuid.UUID] = {}
        for name, n in topics.items():
            self.create(name, n)

    def create(self, name: str, partitions: int) -> None:
        self.counts[name] = partitions
        self.ids.setdefault(name, uuid.UUID(int=len(self.ids) + 1))
        self.metadata_epoch += 1

    def delete(self, name: str) -> None:
        del self.counts[name]
        del self.ids[name]
        self.metadata_epoch += 1

    def partition_counts(self) -> dict[str, int]:
        return self.counts

    def topic_id(self, topic: str) -> uuid.UUID | None:
        return self.ids.get(topic)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return next((n for n, i in self.ids.items() if i == topic_id), None)


class Harness:
    def __init__(self, topics: Topics | None = None, **config: Any) -> None:
        config.setdefault("initial_rebalance_delay_ms", 0)  # as the test brokers (broker/testing)
        self.timer = ManualTimer()
        self.topics = topics or Topics(t=6)
        self.records: list[tuple[bytes, bytes | None]] = []
        self.c = GroupCoordinator(GroupConfig(**config), self.timer, self._write, lambda: self.timer.now,
                                  self.topics)

    def _write(self, group_id: str, records: list[tuple[bytes, bytes | None]], on_durable: Callable[[int], None],
               producer: tuple[int, int] | None = None) -> int:
        self.records += records
        on_durable(0)
        return 0

    def hb(self, member: str, epoch: int, *, group: str = "g", topics: list[str] | None = None,
           regex: str | None = None, owned: list[tuple[uuid.UUID, list[int]]] | None = None,
           instance: str | None = None, rebalance: int = -1, version: int = 1,
           assignor: str | None = None) -> dict[str, Any]:
        out: list[dict[str, Any]] = []
        if epoch == 0:
            rebalance = 30_000 if rebalance == -1 else rebalance
            owned = [] if owned is None else owned
        req = {"group_id": group, "member_id": member, "member_epoch": epoch, "instance_id": instance,
               "rack_id": None, "rebalance_timeout_ms": rebalance,
               "subscribed_topic_names": topics if topics is not None else (["t"] if epoch == 0 and regex is None
                                                                           else None),
               "subscribed_topic_regex": regex, "server_assignor": assignor,
               "topic_partitions": None if owned is None else [{"topic_id": t, "partitions": p} for t, p in owned]}
        self.c.consumer.heartbeat(req, version, "cli", "/127.0.0.1", out.append)
        assert len(out) == 1
        return out[0]


def parts(resp: dict[str, Any]) -> set[tuple[uuid.UUID, int]]:
    a = resp["assignment"]
    assert a is not None
    return {(tp["topic_id"], p) for tp in a["topic_partitions"] for p in tp["partitions"]}


def owned_of(ps: set[tuple[uuid.UUID, int]]) -> list[tuple[uuid.UUID, list[int]]]:
    by: dict[uuid.UUID, list[int]] = {}
    for t, p in sorted(ps):
        by.setdefault(t, []).append(p)
    return list(by.items())


def test_first_member_gets_every_partition_at_once() -> None:
    h = Harness()
    r = h.hb("m1", 0)
    assert r["error_code"] == 0 and r["member_id"] == "m1" and r["member_epoch"] == 1
    assert parts(r) == {(T1, p) for p in range(6)}
    assert r["heartbeat_interval_ms"] == 5000
    g = h.c.consumer.group("g")
    assert g is not None and g.state.value == "Stable" and g.group_epoch == 1 and g.assignment_epoch == 1


def test_a_joining_member_gets_partitions_only_after_the_owner_revoked_them() -> None:
    h = Harness()
    a = parts(h.hb("m1", 0))
    r2 = h.hb("m2", 0)
    assert r2["member_epoch"] == 2 and parts(r2) == set()  # everything is still m1's
    g = h.c.consumer.group("g")
    assert g is not None and g.state.value == "Reconciling"
    # m1's next heartbeat: it must give up three partitions, keeping its epoch
    r1 = h.hb("m1", 1, owned=owned_of(a))
    kept = parts(r1)
    assert r1["member_epoch"] == 1 and len(kept) == 3 and kept < a
    assert g.members["m1"].state == MemberState.UNREVOKED_PARTITIONS
    # m2 asks again before m1 acknowledged: still nothing
    assert h.hb("m2", 2, owned=[])["assignment"] is None
    # m1 acknowledges (reports only what it kept): its epoch moves to 2
    r1 = h.hb("m1", 1, owned=owned_of(kept))
    assert r1["member_epoch"] == 2 and g.members["m1"].state == MemberState.STABLE
    r2 = h.hb("m2", 2, owned=[])
    assert parts(r2) == a - kept
    assert g.state.value == "Stable"


def test_partitions_that_do_not_move_are_never_revoked() -> None:
    h = Harness(Topics(t=60))
    owned: dict[str, set[tuple[uuid.UUID, int]]] = {}
    epochs: dict[str, int] = {}
    for m in ("m1", "m2", "m3", "m4"):
        r = h.hb(m, 0)
        epochs[m], owned[m] = r["member_epoch"], parts(r)
    for _ in range(4):  # converge
        for m in owned:
            r = h.hb(m, epochs[m], owned=owned_of(owned[m]))
            epochs[m] = r["member_epoch"]
            if r["assignment"] is not None:
                owned[m] = parts(r)
    before = {m: set(ps) for m, ps in owned.items()}
    assert sorted(len(p) for p in before.values()) == [15, 15, 15, 15]
    r = h.hb("m5", 0)
    epochs["m5"], owned["m5"] = r["member_epoch"], parts(r)
    for _ in range(4):
        for m in owned:
            r = h.hb(m, epochs[m], owned=owned_of(owned[m]))
            epochs[m] = r["member_epoch"]
            if r["assignment"] is not None:
                # a member never loses a partition it keeps: what it is told is a superset of
                # its kept partitions
                owned[m] = parts(r)
    assert sorted(len(p) for p in owned.values()) == [12, 12, 12, 12, 12]
    for m, ps in before.items():
        assert len(ps & owned[m]) == 12  # 3 moved from each, 12 never paused
    assert set().union(*owned.values()) == {(T1, p) for p in range(60)}


def test_member_epoch_checks() -> None:
    h = Harness()
    h.hb("m1", 0)
    assert h.hb("m1", 5)["error_code"] == E.FENCED_MEMBER_EPOCH
    assert h.hb("nobody", 1)["error_code"] == E.UNKNOWN_MEMBER_ID
    assert h.hb("m1", 1)["error_code"] == 0


def test_request_validation() -> None:
    h = Harness()
    assert h.hb("", 0, version=1)["error_code"] == E.INVALID_REQUEST
    assert h.hb("m1", 0, topics=[])["error_code"] == E.INVALID_REQUEST
    assert h.hb("m1", 0, owned=[(T1, [0])])["error_code"] == E.INVALID_REQUEST
    assert h.hb("m1", 7 - 10)["error_code"] == E.INVALID_REQUEST
    assert h.hb("m1", 0, assignor="sticky")["error_code"] == E.UNSUPPORTED_ASSIGNOR
    bad = h.hb("m1", 0, regex="(unclosed", topics=[])
    assert bad["error_code"] == E.INVALID_REGULAR_EXPRESSION and "unclosed" in bad["error_message"]
    # v0: the coordinator generates the member id
    r = h.hb("", 0, version=0)
    assert r["error_code"] == 0 and uuid.UUID(r["member_id"])


def test_session_timeout_fences_and_the_others_take_over() -> None:
    h = Harness()
    a1 = parts(h.hb("m1", 0))
    h.hb("m2", 0)
    r1 = h.hb("m1", 1, owned=owned_of(a1))
    h.hb("m1", 1, owned=owned_of(parts(r1)))
    g = h.c.consumer.group("g")
    assert g is not None
    h.timer.advance(44_000)
    h.hb("m2", g.members["m2"].member_epoch, owned=[])
    h.timer.advance(2_000)  # m1's 45 s session is over; m2 heartbeated 2 s ago
    assert "m1" not in g.members
    r2 = h.hb("m2", g.members["m2"].member_epoch, owned=[])
    assert parts(r2) == {(T1, p) for p in range(6)}


def test_leave_moves_partitions_and_bumps_the_epoch() -> None:
    h = Harness()
    h.hb("m1", 0)
    g = h.c.consumer.group("g")
    assert g is not None
    r = h.hb("m1", -1)
    assert r["error_code"] == 0 and r["member_epoch"] == -1
    assert not g.members and g.state.value == "Empty" and g.group_epoch == 2


def test_revocation_timeout_fences_a_member_that_keeps_its_partitions() -> None:
    h = Harness()
    a = parts(h.hb("m1", 0, rebalance=10_000))
    h.hb("m2", 0)
    h.hb("m1", 1, owned=owned_of(a))  # told to revoke, never acknowledges
    g = h.c.consumer.group("g")
    assert g is not None and g.members["m1"].state == MemberState.UNREVOKED_PARTITIONS
    h.timer.advance(10_001)
    assert "m1" not in g.members


def test_static_member_restart_keeps_its_assignment() -> None:
    h = Harness()
    a = parts(h.hb("m1", 0, instance="i1"))
    h.hb("m2", 0)
    assert h.hb("m3", 0, instance="i1")["error_code"] == E.UNRELEASED_INSTANCE_ID
    r = h.hb("m1", -2, instance="i1")
    assert r["member_epoch"] == -2
    r = h.hb("m1b", 0, instance="i1")
    assert r["error_code"] == 0 and parts(r) <= a
    g = h.c.consumer.group("g")
    assert g is not None and "m1" not in g.members and g.static_members["i1"] == "m1b"


def test_regex_subscription_picks_up_a_topic_created_later() -> None:
    topics = Topics(orders_eu=2, payments=1)
    h = Harness(topics)
    r = h.hb("m1", 0, topics=[], regex="orders_.*")
    assert parts(r) == set()  # a new expression: resolved at the next heartbeat
    r = h.hb("m1", r["member_epoch"], owned=[])
    assert parts(r) == {(topics.ids["orders_eu"], 0), (topics.ids["orders_eu"], 1)}
    topics.create("orders_us", 3)
    r = h.hb("m1", r["member_epoch"], owned=owned_of(parts(r)))
    assert len(parts(r)) == 5 and r["member_epoch"] == 3


def test_a_new_regex_is_resolved_a_heartbeat_after_the_topic_names() -> None:
    """As Kafka's asynchronous resolution (librdkafka's 0045 resubscribe_with_regex): a member
    subscribing to a regular expression new to the group and a topic name gets the named topic
    first, with a short heartbeat interval, and the matched topics at its next heartbeat; an
    expression the group has already resolved counts at once."""
    topics = Topics(rx_1=4, rx_2=4, a=2)
    h = Harness(topics)
    r = h.hb("m1", 0, topics=["a"], regex="rx_.*")
    assert parts(r) == {(topics.ids["a"], 0), (topics.ids["a"], 1)}
    assert r["heartbeat_interval_ms"] == 20
    g = h.c.consumer.group("g")
    assert g is not None and g.pending_regexes == {"rx_.*"} and not g.resolved_regexes
    r = h.hb("m1", r["member_epoch"], owned=owned_of(parts(r)))
    assert len(parts(r)) == 10 and r["member_epoch"] == 2 and r["heartbeat_interval_ms"] == 5000
    assert g.resolved_regexes == {"rx_.*": frozenset({"rx_1", "rx_2"})} and not g.pending_regexes
    # another member with the same expression: already resolved, so its topics come at once
    r2 = h.hb("m2", 0, topics=[], regex="rx_.*")
    assert r2["member_epoch"] == 3 and not g.pending_regexes
    assert g.target["m2"] and all(t != topics.ids["a"] for t in g.target["m2"])


def test_a_new_partition_of_a_subscribed_topic_is_assigned() -> None:
    topics = Topics(t=2)
    h = Harness(topics)
    r = h.hb("m1", 0)
    topics.create("t", 3)
    r = h.hb("m1", r["member_epoch"], owned=owned_of(parts(r)))
    assert parts(r) == {(T1, p) for p in range(3)}


def test_group_full() -> None:
    h = Harness(consumer_max_size=1)
    h.hb("m1", 0)
    assert h.hb("m2", 0)["error_code"] == E.GROUP_MAX_SIZE_REACHED


def test_offset_commit_checks_the_member_epoch() -> None:
    h = Harness()
    h.hb("m1", 0)
    g = h.c.groups["g"]
    assert g.consumer is not None
    consumer = h.c.consumer
    consumer.validate_offset_commit(g.consumer, "m1", 1)
    with pytest.raises(Exception) as e:
        consumer.validate_offset_commit(g.consumer, "m1", 0)
    assert getattr(e.value, "error_code", None) == E.STALE_MEMBER_EPOCH
    with pytest.raises(Exception) as e:
        consumer.validate_offset_commit(g.consumer, "x", 1)
    assert getattr(e.value, "error_code", None) == E.UNKNOWN_MEMBER_ID


def test_replaying_the_records_rebuilds_the_group() -> None:
    h = Harness(Topics(t=6))
    a = parts(h.hb("m1", 0, instance="i1"))
    h.hb("m2", 0, regex="t|u", topics=[])
    r1 = h.hb("m1", 1, owned=owned_of(a))
    h.hb("m1", 1, owned=owned_of(parts(r1)))
    h.hb("m2", 2, owned=[])
    h.hb("m3", 0)
    h.hb("m3", -1)
    before = h.c.consumer.group("g")
    assert before is not None
    fresh = Harness(h.topics)
    for key_bytes, value_bytes in h.records:
        key = decode_key(key_bytes)
        value = None if value_bytes is None else cr.decode_value(key, value_bytes)
        fresh.c.consumer.replay(key, value)
    after = fresh.c.consumer.group("g")
    assert after is not None
    assert (after.group_epoch, after.assignment_epoch) == (before.group_epoch, before.assignment_epoch)
    assert after.members == before.members
    assert after.target == before.target
    assert after.static_members == before.static_members
    assert after.resolved_regexes == before.resolved_regexes
    assert after.partition_epochs == before.partition_epochs
    # and it goes on where it stopped
    m2 = after.members["m2"]
    assert fresh.hb("m2", m2.member_epoch, owned=owned_of({(t, p) for t, ps in m2.assigned.items()
                                                           for p in ps}))["error_code"] == 0


def test_list_and_describe() -> None:
    h = Harness()
    h.hb("m1", 0)
    listed = h.c.list_groups()
    assert listed == [{"group_id": "g", "protocol_type": "consumer", "group_state": "Stable",
                       "group_type": "consumer"}]
    assert h.c.list_groups(types=["classic"]) == []
    d = h.c.consumer.describe("g")
    assert d["group_state"] == "Stable" and d["assignor_name"] == "uniform"
    (m,) = d["members"]
    assert m["member_epoch"] == 1 and m["assignment"]["topic_partitions"][0]["topic_name"] == "t"
    assert h.c.describe_group("g")["error_code"] == E.GROUP_ID_NOT_FOUND
    assert h.c.consumer.describe("nope")["error_code"] == E.GROUP_ID_NOT_FOUND


def test_classic_join_to_a_consumer_group_with_migration_disabled() -> None:
    h = Harness(migration_policy="disabled")
    h.hb("m1", 0)
    out: list[dict[str, Any]] = []
    req = {"group_id": "g", "session_timeout_ms": 10_000, "rebalance_timeout_ms": 10_000, "member_id": "",
           "group_instance_id": None, "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b""}]}
    h.c.join_group(req, 5, "cli", "/h", out.append)
    assert out[0]["error_code"] == E.INCONSISTENT_GROUP_PROTOCOL
    h.hb("m1", -1)
    h.c.join_group(req, 5, "cli", "/h", out.append)  # empty now: it becomes a classic group
    assert out[1]["error_code"] == E.MEMBER_ID_REQUIRED
    assert h.c.groups["g"].consumer is None


# -- online migration between the classic and the consumer protocols ----------------------------

def subscription(topics: list[str], owned: list[tuple[str, int]] = ()) -> bytes:  # type: ignore[assignment]
    from client.group.protocol import Subscription, encode_subscription
    from client.structs import TopicPartition
    return encode_subscription(Subscription(topics, None, [TopicPartition(t, p) for t, p in owned], -1, None, 1))


def assignment_bytes(parts: list[int], topic: str = "t") -> bytes:
    from client.group.protocol import Assignment, encode_assignment
    from client.structs import TopicPartition
    return encode_assignment(Assignment([TopicPartition(topic, p) for p in parts]))


def decoded(raw: bytes) -> set[int]:
    from client.group.protocol import decode_assignment
    return {tp.partition for tp in decode_assignment(raw).partitions}


class Classic:
    """JoinGroup/SyncGroup/Heartbeat/LeaveGroup of a classic consumer on the harness."""

    def __init__(self, h: Harness) -> None:
        self.h = h

    def join(self, member: str = "", owned: list[tuple[str, int]] = ()) -> dict[str, Any]:  # type: ignore[assignment]
        out: list[dict[str, Any]] = []
        req = {"group_id": "g", "session_timeout_ms": 10_000, "rebalance_timeout_ms": 10_000, "member_id": member,
               "group_instance_id": None, "protocol_type": "consumer",
               "protocols": [{"name": "range", "metadata": subscription(["t"], owned)}]}
        self.h.c.join_group(req, 5, "cli", "/h", out.append)
        self.h.timer.advance(0)
        if out and out[0]["error_code"] == E.MEMBER_ID_REQUIRED:
            return self.join(out[0]["member_id"], owned)
        return out[0] if out else {}

    def sync(self, member: str, generation: int, assignments: dict[str, bytes] | None = None) -> dict[str, Any]:
        out: list[dict[str, Any]] = []
        self.h.c.sync_group({"group_id": "g", "generation_id": generation, "member_id": member,
                             "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
                             "assignments": [{"member_id": k, "assignment": v}
                                             for k, v in (assignments or {}).items()]}, out.append)
        return out[0] if out else {}

    def heartbeat(self, member: str, generation: int) -> int:
        return self.h.c.heartbeat({"group_id": "g", "generation_id": generation, "member_id": member,
                                   "group_instance_id": None})

    def leave(self, member: str) -> list[dict[str, Any]]:
        return self.h.c.leave_group("g", [{"member_id": member, "group_instance_id": None}])[1]


def classic_group_of_two(h: Harness) -> tuple[Classic, str, str, int]:
    """Two classic members, 0-2 and 3-5 of t, Stable."""
    cl = Classic(h)
    a = cl.join()
    cl.sync(a["member_id"], a["generation_id"], {a["member_id"]: assignment_bytes(list(range(6)))})
    joined: list[dict[str, Any]] = []
    req = {"group_id": "g", "session_timeout_ms": 10_000, "rebalance_timeout_ms": 10_000, "member_id": "",
           "group_instance_id": None, "protocol_type": "consumer",
           "protocols": [{"name": "range", "metadata": subscription(["t"])}]}
    h.c.join_group(req, 5, "cli", "/h", joined.append)
    b_id = joined[0]["member_id"]
    h.c.join_group({**req, "member_id": b_id}, 5, "cli", "/h", joined.append)
    a2 = cl.join(a["member_id"])
    gen = a2["generation_id"]
    la, lb = a["member_id"], b_id
    cl.sync(lb, gen)
    s = cl.sync(la, gen, {la: assignment_bytes([0, 1, 2]), lb: assignment_bytes([3, 4, 5])})
    assert decoded(s["assignment"]) == {0, 1, 2}
    assert h.c.groups["g"].state.value == "Stable"
    return cl, la, lb, gen


def test_a_consumer_member_upgrades_a_classic_group_and_everyone_reconciles() -> None:
    h = Harness()
    cl, a, b, gen = classic_group_of_two(h)
    r = h.hb("c", 0)  # a consumer-protocol member joins: the group is upgraded
    assert r["error_code"] == 0 and parts(r) == set()  # every partition is still a classic member's
    g = h.c.consumer.group("g")
    assert g is not None and set(g.members) == {a, b, "c"} and g.group_epoch == gen + 1
    assert g.members[a].classic is not None and g.members[a].member_epoch == gen
    assert h.c.list_groups()[0]["group_type"] == "consumer"
    # the classic members are told to rejoin; their old generation still commits nothing stale
    assert cl.heartbeat(a, gen) == E.REBALANCE_IN_PROGRESS
    assert cl.heartbeat(a, gen - 1) == E.ILLEGAL_GENERATION
    kept: dict[str, set[int]] = {}
    for m in (a, b):  # eager: they rejoin owning nothing
        j = cl.join(m)
        assert j["error_code"] == 0 and j["leader"] == "" and j["generation_id"] == gen + 1
        kept[m] = decoded(cl.sync(m, j["generation_id"])["assignment"])
        assert cl.heartbeat(m, j["generation_id"]) == 0
    assert sorted(len(k) for k in kept.values()) == [2, 2] and not kept[a] & kept[b]
    r = h.hb("c", r["member_epoch"], owned=[])
    assert {p for _, p in parts(r)} == set(range(6)) - kept[a] - kept[b]
    assert g.state.value == "Stable"
    # commits: a classic member's generation is its member epoch
    assert h.c.consumer.validate_offset_commit(g, a, gen + 1) is None
    # the classic members leave; the consumer member gets everything; then it leaves too
    cl.leave(a)
    cl.leave(b)
    r = h.hb("c", g.members["c"].member_epoch, owned=owned_of(parts(r)))
    assert {p for _, p in parts(r)} == set(range(6))
    h.hb("c", -1)
    assert g.state.value == "Empty"


def test_the_last_consumer_member_leaving_downgrades_the_group() -> None:
    h = Harness()
    cl, a, b, gen = classic_group_of_two(h)
    r = h.hb("c", 0)
    for m in (a, b):
        j = cl.join(m)
        cl.sync(m, j["generation_id"])
    r = h.hb("c", r["member_epoch"], owned=[])
    assert r["error_code"] == 0
    h.hb("c", -1)  # only classic members left: a classic group again, rebalancing
    entry = h.c.groups["g"]
    assert entry.consumer is None and set(entry.members) == {a, b}
    assert entry.state.value == "PreparingRebalance" and entry.protocol_name == "range"
    epoch = entry.generation_id
    assert cl.heartbeat(a, epoch) == E.REBALANCE_IN_PROGRESS
    # both rejoin under the classic protocol: a new generation, a leader assigns
    out: list[dict[str, Any]] = []
    for m in (a, b):
        h.c.join_group({"group_id": "g", "session_timeout_ms": 10_000, "rebalance_timeout_ms": 10_000,
                        "member_id": m, "group_instance_id": None, "protocol_type": "consumer",
                        "protocols": [{"name": "range", "metadata": subscription(["t"])}]}, 5, "cli", "/h",
                       out.append)
    h.timer.advance(0)
    assert len(out) == 2 and {o["generation_id"] for o in out} == {epoch + 1}
    assert [o["leader"] for o in out][0] in (a, b)
    # and the records tell a restarted broker the same
    fresh = Harness(h.topics)
    from broker.group.records import GroupMetadataKey, decode_group_metadata_value
    for key_bytes, value_bytes in h.records:
        key = decode_key(key_bytes)
        if isinstance(key, GroupMetadataKey):
            fresh.c.replay_group(key.group, None if value_bytes is None else decode_group_metadata_value(value_bytes))
        elif key is not None and not hasattr(key, "topic"):
            fresh.c.consumer.replay(key, None if value_bytes is None else cr.decode_value(key, value_bytes))
    assert fresh.c.groups["g"].consumer is None and set(fresh.c.groups["g"].members) == {a, b}


def test_migration_policy_disabled_keeps_the_protocols_apart() -> None:
    h = Harness(migration_policy="disabled")
    cl, a, b, gen = classic_group_of_two(h)
    assert h.hb("c", 0)["error_code"] == E.GROUP_ID_NOT_FOUND
    assert h.c.groups["g"].consumer is None
