"""The group coordinator as a state machine: requests and a manual clock in, responses and
records out. No broker, no sockets, no sleeping (the rules are in broker/group/coordinator.py)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import pytest

from broker.group.config import GroupConfig
from broker.group.coordinator import GroupCoordinator
from broker.group.records import (
    GroupMetadataKey,
    decode_group_metadata_value,
    decode_key,
)
from client.protocol.api import ErrorCode as E


class ManualTimer:
    def __init__(self) -> None:
        self.now = 1_000_000
        self.timers: dict[Hashable, tuple[int, Callable[[], None]]] = {}

    def schedule(self, key: Hashable, delay_ms: int, fn: Callable[[], None]) -> None:
        self.timers[key] = (self.now + delay_ms, fn)

    def cancel(self, key: Hashable) -> None:
        self.timers.pop(key, None)

    def advance(self, ms: int) -> None:
        end = self.now + ms
        while True:
            due = sorted((t, k) for k, (t, _) in self.timers.items() if t <= end)
            if not due:
                break
            t, k = due[0]
            self.now = max(self.now, t)
            _, fn = self.timers.pop(k)
            fn()
        self.now = end


class Harness:
    """A coordinator whose writes are durable when ``flush()`` says so (or at once)."""

    def __init__(self, auto_durable: bool = True, **config: Any) -> None:
        config.setdefault("initial_rebalance_delay_ms", 0)  # as the test brokers (broker/testing)
        self.timer = ManualTimer()
        self.records: list[tuple[bytes, bytes | None]] = []
        self.pending: list[Callable[[int], None]] = []
        self.auto_durable = auto_durable
        self.fail_writes = 0
        self.c = GroupCoordinator(GroupConfig(**config), self.timer, self._write, lambda: self.timer.now)

    def _write(self, group_id: str, records: list[tuple[bytes, bytes | None]], on_durable: Callable[[int], None],
               producer: tuple[int, int] | None = None) -> int:
        if self.fail_writes:
            return self.fail_writes
        self.records += records
        if self.auto_durable:
            on_durable(0)
        else:
            self.pending.append(on_durable)
        return 0

    def flush(self) -> None:
        pending, self.pending = self.pending, []
        for cb in pending:
            cb(0)

    def join(self, group: str = "g", member: str = "", *, version: int = 5, session: int = 10_000,
             rebalance: int = 30_000, instance: str | None = None, protocols: list[tuple[str, bytes]] | None = None,
             client_id: str = "cli") -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        req = {"group_id": group, "session_timeout_ms": session, "rebalance_timeout_ms": rebalance,
               "member_id": member, "group_instance_id": instance, "protocol_type": "consumer",
               "protocols": [{"name": n, "metadata": m} for n, m in (protocols or [("range", b"r")])]}
        self.c.join_group(req, version, client_id, "/127.0.0.1", out.append)
        self.timer.advance(0)  # timers due now (the harness's initial rebalance delay is 0)
        return out

    def join_new(self, group: str = "g", **kw: Any) -> list[dict[str, Any]]:
        """KIP-394: first join gets MEMBER_ID_REQUIRED, the second parks (or answers)."""
        first = self.join(group, **kw)
        assert first[0]["error_code"] == E.MEMBER_ID_REQUIRED
        return self.join(group, first[0]["member_id"], **kw)

    def sync(self, member: str, generation: int, assignments: dict[str, bytes] | None = None,
             group: str = "g", instance: str | None = None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        self.c.sync_group({"group_id": group, "generation_id": generation, "member_id": member,
                           "group_instance_id": instance, "protocol_type": None, "protocol_name": None,
                           "assignments": [{"member_id": k, "assignment": v} for k, v in (assignments or {}).items()]},
                          out.append)
        return out

    def heartbeat(self, member: str, generation: int, group: str = "g", instance: str | None = None) -> int:
        return self.c.heartbeat({"group_id": group, "generation_id": generation, "member_id": member,
                                 "group_instance_id": instance})

    def commit(self, offsets: dict[tuple[str, int], int], group: str = "g", generation: int = -1,
               member: str = "", version: int = 2, retention: int = -1) -> tuple[int, dict[Any, int], list[int]]:
        durable: list[int] = []
        topics: dict[str, list[dict[str, Any]]] = {}
        for (t, p), o in offsets.items():
            topics.setdefault(t, []).append({"partition_index": p, "committed_offset": o, "committed_metadata": "m"})
        code, errors = self.c.offsets.commit_offsets(
            {"group_id": group, "generation_id_or_member_epoch": generation, "member_id": member,
             "retention_time_ms": retention, "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]},
            version, durable.append)
        return code, errors, durable


def stable_group_of_two(h: Harness) -> tuple[str, str, int]:
    a = h.join_new()
    assert a[-1]["error_code"] == 0  # alone: the join completes at once (delay 0)
    leader = a[-1]["member_id"]
    h.sync(leader, a[-1]["generation_id"], {leader: b"A"})
    first = h.join()
    follower = first[0]["member_id"]
    b = h.join(member=follower)
    assert b == []  # parked: the group rebalances, waiting for the leader to rejoin
    assert h.heartbeat(leader, 1) == E.REBALANCE_IN_PROGRESS
    a2 = h.join(member=leader)
    assert a2[0]["error_code"] == 0 and a2[0]["generation_id"] == 2
    assert {m["member_id"] for m in a2[0]["members"]} == {leader, follower}  # the leader sees everyone
    assert b[0]["members"] == [] and b[0]["leader"] == leader
    s_b = h.sync(follower, 2)
    assert s_b == []  # parked until the leader's assignment is stored
    s_a = h.sync(leader, 2, {leader: b"A", follower: b"B"})
    assert s_a[0]["assignment"] == b"A" and s_b[0]["assignment"] == b"B"
    assert h.c.groups["g"].state.value == "Stable"
    return leader, follower, 2


def test_first_join_needs_a_member_id_and_a_lone_member_leads() -> None:
    h = Harness()
    first = h.join()
    assert first[0]["error_code"] == E.MEMBER_ID_REQUIRED
    assert first[0]["member_id"].startswith("cli-")
    second = h.join(member=first[0]["member_id"])
    r = second[0]
    assert r["error_code"] == 0 and r["generation_id"] == 1 and r["leader"] == r["member_id"]
    assert r["protocol_name"] == "range"
    assert r["members"] == [{"member_id": r["member_id"], "group_instance_id": None, "metadata": b"r"}]


def test_join_v3_adds_the_member_at_once() -> None:
    h = Harness()
    r = h.join(version=3)
    assert r[0]["error_code"] == 0 and r[0]["generation_id"] == 1


def test_rebalance_with_two_members_and_the_group_record() -> None:
    h = Harness()
    leader, follower, gen = stable_group_of_two(h)
    key, value = h.records[-1]
    assert decode_key(key) == GroupMetadataKey("g")
    assert value is not None
    gm = decode_group_metadata_value(value)
    assert gm.generation == gen and gm.protocol == "range" and gm.leader == leader
    assert {m.member_id: m.assignment for m in gm.members} == {leader: b"A", follower: b"B"}


def test_sync_waits_for_the_record_to_be_durable() -> None:
    h = Harness(auto_durable=False)
    a = h.join_new()
    h.flush()
    leader = a[-1]["member_id"]
    s = h.sync(leader, 1, {leader: b"x"})
    assert s == [] and h.c.groups["g"].state.value == "CompletingRebalance"
    h.flush()
    assert s[0]["assignment"] == b"x" and h.c.groups["g"].state.value == "Stable"


def test_session_timeout_removes_a_silent_member_and_rebalances() -> None:
    h = Harness()
    leader, follower, gen = stable_group_of_two(h)
    for _ in range(2):
        h.timer.advance(4_000)
        assert h.heartbeat(leader, gen) == 0
    assert follower in h.c.groups["g"].members
    h.timer.advance(2_001)
    # the follower never heartbeat: gone after 10 s; the leader is told to rejoin
    assert follower not in h.c.groups["g"].members
    assert h.heartbeat(leader, gen) == E.REBALANCE_IN_PROGRESS
    r = h.join(member=leader)
    assert r[0]["generation_id"] == gen + 1 and [m["member_id"] for m in r[0]["members"]] == [leader]
    assert h.heartbeat(follower, gen) == E.UNKNOWN_MEMBER_ID


def test_member_that_does_not_rejoin_is_dropped_at_the_rebalance_timeout() -> None:
    h = Harness()
    leader, follower, gen = stable_group_of_two(h)
    r = h.join(member=leader)  # the leader rejoining starts a rebalance
    assert r == []
    h.timer.advance(9_000)
    assert h.heartbeat(follower, gen) == E.REBALANCE_IN_PROGRESS  # alive, but does not rejoin
    h.timer.advance(21_001)  # rebalance timeout 30 s
    assert r[0]["error_code"] == 0 and r[0]["generation_id"] == gen + 1
    assert [m["member_id"] for m in r[0]["members"]] == [leader]


def test_pending_member_id_expires_after_the_session_timeout() -> None:
    h = Harness()
    first = h.join()
    h.timer.advance(10_001)
    late = h.join(member=first[0]["member_id"])
    assert late[0]["error_code"] == E.UNKNOWN_MEMBER_ID


def test_missing_sync_removes_the_member() -> None:
    h = Harness()
    leader, follower, gen = stable_group_of_two(h)
    r = h.join(member=leader)
    rf = h.join(member=follower)
    assert r[0]["generation_id"] == rf[0]["generation_id"] == gen + 1
    h.sync(leader, gen + 1, {leader: b"a"})  # the follower never syncs
    for _ in range(6):
        h.timer.advance(5_000)
        h.heartbeat(leader, gen + 1)
    h.timer.advance(1)
    assert follower not in h.c.groups["g"].members
    assert h.c.groups["g"].state.value == "PreparingRebalance"


def test_static_member_restart_gets_its_assignment_back_without_a_rebalance() -> None:
    h = Harness()
    a = h.join(instance="i-1")
    leader = a[0]["member_id"]
    assert leader.startswith("i-1-") and a[0]["error_code"] == 0  # static: no MEMBER_ID_REQUIRED
    h.sync(leader, 1, {leader: b"mine"}, instance="i-1")
    again = h.join(instance="i-1")  # restarted: a new member id, same instance
    r = again[0]
    assert r["error_code"] == 0 and r["generation_id"] == 1 and r["member_id"] != leader
    assert r["leader"] == leader  # the old id: the restarted member does not reassign
    s = h.sync(r["member_id"], 1, instance="i-1")
    assert s[0]["assignment"] == b"mine"
    assert h.heartbeat(leader, 1, instance="i-1") == E.FENCED_INSTANCE_ID
    assert h.c.groups["g"].generation_id == 1


def test_offset_fetch_describe_list_delete() -> None:
    h = Harness()
    assert h.c.offsets.fetch_offsets("unknown", [("t", [0])]) == (0, [("t", [(0, None)])])
    assert h.c.describe_group("unknown")["group_state"] == "Dead"
    h.commit({("t", 0): 5, ("t", 1): 7, ("u", 0): 1})
    code, found = h.c.offsets.fetch_offsets("g", None)
    assert code == 0 and [(t, [(p, om.offset if om else None) for p, om in ps]) for t, ps in found] == \
        [("t", [(0, 5), (1, 7)]), ("u", [(0, 1)])]
    assert h.c.list_groups() == [{"group_id": "g", "protocol_type": "", "group_state": "Empty", "group_type": "classic"}]
    assert h.c.list_groups(states=["stable"]) == []
    code, result = h.c.offsets.delete_offsets("g", [("u", [0])])
    assert code == 0 and result == [("u", [(0, 0)])] and ("u", 0) not in h.c.groups["g"].offsets
    done: list[int] = []
    assert h.c.delete_group("g", done.append) == 0 and done == [0]
    assert "g" not in h.c.groups and h.records[-1] == (h.records[-1][0], None)
    assert h.c.delete_group("g", done.append) == E.GROUP_ID_NOT_FOUND
    h2 = Harness()
    stable_group_of_two(h2)
    assert h2.c.delete_group("g", done.append) == E.NON_EMPTY_GROUP


def test_leave_group_batch_and_by_instance_id() -> None:
    h = Harness()
    a = h.join(instance="s1")
    leader = a[0]["member_id"]
    h.sync(leader, 1, {leader: b""}, instance="s1")
    code, results = h.c.leave_group("g", [{"member_id": "", "group_instance_id": "s1"},
                                          {"member_id": "ghost", "group_instance_id": None}])
    assert code == 0 and [r["error_code"] for r in results] == [0, E.UNKNOWN_MEMBER_ID]
    assert h.c.groups["g"].state.value == "Empty" and h.c.groups["g"].generation_id == 2


@pytest.mark.parametrize("session", [5_999, 1_800_001])
def test_session_timeout_bounds(session: int) -> None:
    assert Harness().join(session=session)[0]["error_code"] == E.INVALID_SESSION_TIMEOUT


def test_group_max_size() -> None:
    h = Harness(max_size=1)
    h.join_new()
    assert h.join()[0]["error_code"] == E.GROUP_MAX_SIZE_REACHED


def test_protocol_vote_and_inconsistent_protocols() -> None:
    h = Harness()
    a = h.join(version=3, protocols=[("roundrobin", b""), ("range", b"")])
    h.sync(a[0]["member_id"], 1, {})
    b = h.join(version=3, protocols=[("range", b""), ("roundrobin", b"")])
    c = h.join(version=3, protocols=[("range", b"")])
    assert b == [] and c == []
    r = h.join(member=a[0]["member_id"], version=3, protocols=[("roundrobin", b""), ("range", b"")])
    assert r[0]["protocol_name"] == "range"  # only range is supported by all three
    bad = h.join(version=3, protocols=[("sticky", b"")])
    assert bad[0]["error_code"] == E.INCONSISTENT_GROUP_PROTOCOL


def test_initial_rebalance_delay_waits_for_more_members() -> None:
    h = Harness(initial_rebalance_delay_ms=3000)
    a = h.join(version=3)
    h.timer.advance(2000)
    b = h.join(version=3)
    assert a == [] and b == []
    h.timer.advance(1001)  # the delay restarts once when a member arrived
    assert a == []
    h.timer.advance(3000)
    assert a[0]["generation_id"] == b[0]["generation_id"] == 1 and len(a[0]["members"] or b[0]["members"]) == 2


def test_failed_write_answers_the_mapped_error() -> None:
    """A commit whose write fails is answered at once (``on_durable`` already called), each
    partition with the write's error as Kafka maps it; nothing is stored."""
    h = Harness()
    h.fail_writes = E.KAFKA_STORAGE_ERROR
    assert h.commit({("t", 0): 1}) == (0, {("t", 0): E.NOT_COORDINATOR}, [0])
    h.fail_writes = E.MESSAGE_TOO_LARGE  # the batch is above the offsets topic's max.message.bytes
    assert h.commit({("t", 0): 1, ("t", 1): 2}) == (
        0, {("t", 0): E.INVALID_COMMIT_OFFSET_SIZE, ("t", 1): E.INVALID_COMMIT_OFFSET_SIZE}, [0])
    assert h.c.groups["g"].offsets == {}


def test_a_loaded_group_takes_its_members_rejoining() -> None:
    """A group replayed from its record (a broker restart) counts its members' protocol, so a
    member rejoining with it is not refused INCONSISTENT_GROUP_PROTOCOL."""
    h = Harness()
    leader, follower, gen = stable_group_of_two(h)
    fresh = Harness()
    for key_bytes, value_bytes in h.records:
        key = decode_key(key_bytes)
        if isinstance(key, GroupMetadataKey):
            fresh.c.replay_group(key.group, None if value_bytes is None else decode_group_metadata_value(value_bytes))
    g = fresh.c.groups["g"]
    assert g.state.value == "Stable" and set(g.members) == {leader, follower} and g.leader_id == leader
    joined = fresh.join(member=leader)  # the leader asks for a rebalance
    assert joined == []  # parked until the follower rejoins (not refused)
    follower_joined = fresh.join(member=follower)
    assert follower_joined[0]["error_code"] == 0 and follower_joined[0]["generation_id"] == gen + 1
    assert joined[0]["error_code"] == 0 and joined[0]["leader"] == leader
