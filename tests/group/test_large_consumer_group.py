"""A KIP-848 group large enough to compute its assignments off the request path
(``group.consumer.assignment.offload.min.members``, default 100), against a broker process:
300 members over the raw wire, half subscribed to one topic and half to two (the uniform
assignor's slower heterogeneous path), join at once and reconcile as clients do (report what
they own, give up what they are told to). Every partition ends assigned exactly once, the group
Stable at one epoch, and the broker says the assignments were computed off the request path."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from broker.testing import BrokerProcess, create_topic
from broker.testing.wire import Conn
from client.protocol.api import ApiKey

pytestmark = pytest.mark.slow

MEMBERS, PARTITIONS = 300, 300


def heartbeat(member: str, epoch: int, topics: list[str] | None, owned: dict[uuid.UUID, list[int]] | None) -> dict[str, Any]:
    return {"group_id": "big", "member_id": member, "member_epoch": epoch, "instance_id": None, "rack_id": None,
            "rebalance_timeout_ms": 60_000 if epoch == 0 else -1, "subscribed_topic_names": topics,
            "subscribed_topic_regex": None, "server_assignor": None,
            "topic_partitions": None if owned is None else
            [{"topic_id": t, "partitions": ps} for t, ps in sorted(owned.items())]}


def test_three_hundred_members_with_mixed_subscriptions_converge(tmp_path: Path) -> None:
    with BrokerProcess(str(tmp_path / "data"), ["group.consumer.heartbeat.interval.ms=5000"]) as b:
        create_topic(b.bootstrap_servers, "a", PARTITIONS)
        create_topic(b.bootstrap_servers, "b", PARTITIONS)
        members = {str(uuid.uuid4()): (["a"] if i % 2 else ["a", "b"]) for i in range(MEMBERS)}
        epochs = dict.fromkeys(members, 0)
        owned: dict[str, dict[uuid.UUID, list[int]]] = {m: {} for m in members}
        with Conn(b.port, timeout=30) as conn:
            deadline = time.monotonic() + 120
            while True:
                # one round: every member heartbeats (pipelined), a full request when joining
                for m, topics in members.items():
                    conn.send(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1,
                              heartbeat(m, epochs[m], topics if epochs[m] == 0 else None, owned[m]))
                for m in members:
                    _, r = conn.recv(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1)
                    assert r["error_code"] == 0, r
                    epochs[m] = r["member_epoch"]
                    if r["assignment"] is not None:
                        owned[m] = {tp["topic_id"]: list(tp["partitions"]) for tp in r["assignment"]["topic_partitions"]}
                d = conn.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": ["big"],
                                                                 "include_authorized_operations": False})
                group = d["groups"][0]
                if group["group_state"] == "Stable" and set(epochs.values()) == {group["group_epoch"]}:
                    break
                assert time.monotonic() < deadline, (group["group_state"], group["group_epoch"], group["assignment_epoch"])
                time.sleep(0.05)
        assert group["group_epoch"] == group["assignment_epoch"]
        got = sorted((t, p) for o in owned.values() for t, ps in o.items() for p in ps)
        assert len(got) == 2 * PARTITIONS and len(set(got)) == len(got)  # each partition once
        one_topic = {t for m, o in owned.items() if len(members[m]) == 1 for t in o}
        assert len(one_topic) == 1 and len({t for t, _ in got}) == 2  # "a" only, for those subscribed to it only
        one = [sum(len(ps) for ps in owned[m].values()) for m in members if len(members[m]) == 1]
        two = [sum(len(ps) for ps in owned[m].values()) for m in members if len(members[m]) == 2]
        assert max(one + two) - min(one + two) <= 1  # 600 partitions over 300 members: 2 each
        assert "computed off the request path" in b.log_text()
