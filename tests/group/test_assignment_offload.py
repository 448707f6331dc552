"""Large KIP-848 groups compute their target assignment off the request path
(broker/group/assignment_offload.py, ``ConsumerGroupCoordinator._assign``): the state machine
with an offload whose runs the test completes when it chooses, then the real ThreadOffload on
an event loop."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable
from typing import Any

from broker.group import consumer_records as cr
from broker.group.assignment_offload import ThreadOffload
from broker.group.records import decode_key

from .test_consumer_coordinator import T1, Harness, Topics, owned_of, parts


class HeldOffload:
    """Runs submitted assignors only when ``run_next`` is called (in submission order)."""

    def __init__(self) -> None:
        self.pending: list[tuple[Callable[[], Any], Callable[[Any], None]]] = []

    def submit(self, fn: Callable[[], Any], done: Callable[[Any], None]) -> None:
        self.pending.append((fn, done))

    def run_next(self) -> None:
        fn, done = self.pending.pop(0)
        try:
            outcome = fn()
        except Exception as e:  # noqa: BLE001 - handed to done, as ThreadOffload does
            outcome = e
        done(outcome)

    def close(self) -> None:
        self.pending.clear()


def offloading(threshold: int = 3, topics: Topics | None = None) -> tuple[Harness, HeldOffload]:
    h = Harness(topics or Topics(t=6), consumer_assignment_offload_min_members=threshold)
    off = HeldOffload()
    h.c.consumer.offload = off
    return h, off


def target_epochs(h: Harness) -> list[int]:
    """The assignment epochs of the ConsumerGroupTargetAssignmentMetadata records written."""
    return [cr.decode_value(key, v).assignment_epoch for k, v in h.records  # type: ignore[union-attr]
            if v is not None and isinstance(key := decode_key(k), cr.ConsumerGroupTargetAssignmentMetadataKey)]


def converge(h: Harness, epochs: dict[str, int], owned: dict[str, set[tuple[uuid.UUID, int]]], rounds: int = 4) -> None:
    for _ in range(rounds):
        for m in owned:
            r = h.hb(m, epochs[m], owned=owned_of(owned[m]))
            assert r["error_code"] == 0, r
            epochs[m] = r["member_epoch"]
            if r["assignment"] is not None:
                owned[m] = parts(r)


def test_small_groups_assign_in_the_heartbeat_large_ones_off_the_request_path() -> None:
    h, off = offloading(threshold=3)
    epochs: dict[str, int] = {}
    owned: dict[str, set[tuple[uuid.UUID, int]]] = {}
    for m in ("m1", "m2"):  # below the threshold: computed inline
        r = h.hb(m, 0)
        epochs[m], owned[m] = r["member_epoch"], parts(r)
    assert not off.pending
    converge(h, epochs, owned)
    assert sorted(len(p) for p in owned.values()) == [3, 3]
    before = {m: set(p) for m, p in owned.items()}

    r = h.hb("m3", 0)  # the third member: the group reaches the threshold, the run is offloaded
    g = h.c.consumer.group("g")
    assert g is not None and len(off.pending) == 1
    assert g.state.value == "Assigning" and g.group_epoch == 3 and g.assignment_epoch == 2
    assert r["error_code"] == 0 and parts(r) == set() and r["heartbeat_interval_ms"] == 20
    epochs["m3"], owned["m3"] = r["member_epoch"], set()
    r = h.hb("m4", 0)  # joins during the run: batched into the next one
    epochs["m4"], owned["m4"] = r["member_epoch"], set()
    assert len(off.pending) == 1 and g.group_epoch == 4
    # meanwhile the others keep what they own
    r1 = h.hb("m1", epochs["m1"], owned=owned_of(owned["m1"]))
    assert r1["error_code"] == 0 and r1["assignment"] is None

    off.run_next()  # epoch 3's target is installed, and epoch 4's run starts
    assert g.assignment_epoch == 3 and len(off.pending) == 1 and g.state.value == "Assigning"
    off.run_next()
    assert g.assignment_epoch == 4 and not off.pending
    assert target_epochs(h)[-2:] == [3, 4]
    converge(h, epochs, owned)
    assert g.state.value == "Stable"
    assert sorted(len(p) for p in owned.values()) == [1, 1, 2, 2]
    assert set().union(*owned.values()) == {(T1, p) for p in range(6)}
    for m, ps in before.items():  # the two first members only gave partitions away
        assert owned[m] <= ps


def test_a_result_is_fitted_to_the_group_as_it_is_when_it_arrives() -> None:
    h, off = offloading(threshold=2)
    a1 = parts(h.hb("m1", 0, instance="i1"))
    h.hb("m2", 0)  # group of two: offloaded
    h.hb("m3", 0)
    g = h.c.consumer.group("g")
    assert g is not None and len(off.pending) == 1
    # during the run: m1 (static) restarts as m1b, m3 leaves
    h.hb("m1", 1, owned=owned_of(a1), instance="i1")
    assert h.hb("m1", -2, instance="i1")["member_epoch"] == -2
    assert h.hb("m1b", 0, instance="i1")["error_code"] == 0
    assert h.hb("m3", -1)["error_code"] == 0
    off.run_next()
    assert "m1" not in g.target and "m3" not in g.target
    assert g.target["m1b"]  # took i1's share over
    while off.pending:  # the leave bumped the epoch: one more run
        off.run_next()
    assert g.assignment_epoch == g.group_epoch
    got = [p for a in g.target.values() for ps in a.values() for p in ps]
    assert sorted(got) == list(range(6)) and set(g.target) == {"m1b", "m2"}


def test_a_failing_assignor_leaves_the_group_assigning_until_the_next_bump() -> None:
    h, off = offloading(threshold=2)
    h.hb("m1", 0)
    h.hb("m2", 0)
    g = h.c.consumer.group("g")
    assert g is not None and len(off.pending) == 1
    fn, done = off.pending.pop()
    done(RuntimeError("assignor bug"))
    assert g.state.value == "Assigning" and g.assignment_epoch == 1
    h.hb("m3", 0)  # the next bump runs the assignor again
    off.run_next()
    assert g.assignment_epoch == g.group_epoch == 3


def test_a_result_for_a_deleted_group_is_dropped() -> None:
    h, off = offloading(threshold=2)
    h.hb("m1", 0)
    h.hb("m2", 0)
    g = h.c.consumer.group("g")
    assert g is not None
    h.hb("m1", -1)
    h.hb("m2", -1)
    del h.c.groups["g"]
    written = len(h.records)
    while off.pending:
        off.run_next()
    assert len(h.records) == written


def test_thread_offload_runs_off_the_loop_and_answers_on_it() -> None:
    async def main() -> None:
        off = ThreadOffload()
        loop_thread = threading.get_ident()
        seen: list[tuple[Any, int]] = []
        ran_on: list[int] = []
        finished = asyncio.Event()

        def work() -> int:
            ran_on.append(threading.get_ident())
            return 42

        def boom() -> int:
            raise ValueError("bad")

        def done(outcome: Any) -> None:
            seen.append((outcome, threading.get_ident()))
            if len(seen) == 2:
                finished.set()

        off.submit(work, done)
        off.submit(boom, done)
        await asyncio.wait_for(finished.wait(), 10)
        off.close()
        assert ran_on and ran_on[0] != loop_thread
        assert seen[0] == (42, loop_thread)
        assert isinstance(seen[1][0], ValueError) and seen[1][1] == loop_thread

    asyncio.run(main())
