"""DescribeShareGroupOffsets (v0-1), AlterShareGroupOffsets and DeleteShareGroupOffsets, and
DeleteGroups/DescribeGroups of share groups, against a real broker process over a socket:
start offsets set before any consumer, moved by acknowledgements, refused while the group has
members, deleted per topic, durable across a restart; lag (v1) as KIP-1226 counts it."""

from __future__ import annotations

import time
import uuid
from typing import Any

from broker.share.partition import AckType
from client.protocol.api import ApiKey, ErrorCode
from tests.broker_process import BrokerProcess
from tests.server.wire import Conn, batch, create_topic, produce

E = ErrorCode


def describe(c: Conn, group: str, topics: dict[str, list[int]] | None, version: int = 1) -> dict[str, Any]:
    """The group's result, once ``__share_group_state`` is loaded (COORDINATOR_LOAD_IN_PROGRESS
    until then, retried)."""
    body = {"groups": [{"group_id": group, "topics": None if topics is None else [
        {"topic_name": t, "partitions": ps} for t, ps in topics.items()]}]}
    deadline = time.monotonic() + 10
    while True:
        g: dict[str, Any] = c.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, version, body)["groups"][0]
        if g["error_code"] != E.COORDINATOR_LOAD_IN_PROGRESS or time.monotonic() > deadline:
            return g
        time.sleep(0.02)


def offsets(group_result: dict[str, Any]) -> dict[tuple[str, int], tuple[int, int, int]]:
    """(topic, partition) -> (start offset, lag, error code)."""
    return {(t["topic_name"], p["partition_index"]): (p["start_offset"], p["lag"], p["error_code"])
            for t in group_result["topics"] for p in t["partitions"]}


def alter(c: Conn, group: str, offsets: dict[tuple[str, int], int]) -> dict[str, Any]:
    by: dict[str, list[dict[str, int]]] = {}
    for (t, p), o in offsets.items():
        by.setdefault(t, []).append({"partition_index": p, "start_offset": o})
    return c.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0,
                  {"group_id": group, "topics": [{"topic_name": t, "partitions": ps} for t, ps in by.items()]})


def delete(c: Conn, group: str, topics: list[str]) -> dict[str, Any]:
    return c.call(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0,
                  {"group_id": group, "topics": [{"topic_name": t} for t in topics]})


def join(c: Conn, group: str, member: str, topics: list[str]) -> int:
    r = c.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, {"group_id": group, "member_id": member, "member_epoch": 0,
                                                 "subscribed_topic_names": topics})
    assert r["error_code"] == 0, r
    return int(r["member_epoch"])


def leave(c: Conn, group: str, member: str) -> None:
    r = c.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, {"group_id": group, "member_id": member, "member_epoch": -1})
    assert r["error_code"] == 0, r


def share_fetch(c: Conn, group: str, member: str, epoch: int, topic_id: uuid.UUID,
                acks: list[tuple[int, int, int]] = ()) -> list[tuple[int, int, int]]:
    r = c.call(ApiKey.SHARE_FETCH, 1, {
        "group_id": group, "member_id": member, "share_session_epoch": epoch, "max_wait_ms": 500, "min_bytes": 1,
        "max_records": 100, "batch_size": 100, "forgotten_topics_data": [],
        "topics": [{"topic_id": topic_id, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
            {"first_offset": f, "last_offset": la, "acknowledge_types": [t]} for f, la, t in acks]}]}]})
    assert r["error_code"] == 0, r
    return [(a["first_offset"], a["last_offset"], a["delivery_count"])
            for t in r["responses"] for p in t["partitions"] for a in p["acquired_records"]]


def topic_id(c: Conn, topic: str) -> uuid.UUID:
    r = c.call(ApiKey.METADATA, 12, {"topics": [{"name": topic, "topic_id": None}], "allow_auto_topic_creation": False,
                                    "include_topic_authorized_operations": False})
    return r["topics"][0]["topic_id"]


def test_offsets_lifecycle(broker: BrokerProcess) -> None:
    with Conn(broker.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("t", 2))["topics"][0]["error_code"] == 0
        assert c.call(ApiKey.PRODUCE, 8, produce("t", 0, batch(5)))["responses"][0]
        tid = topic_id(c, "t")
        # unknown group
        g = describe(c, "g", None)
        assert (g["error_code"], g["error_message"]) == (E.GROUP_ID_NOT_FOUND, "Group g not found.")
        assert delete(c, "g", ["t"])["error_code"] == E.GROUP_ID_NOT_FOUND
        # alter creates the group's state, before any consumer
        r = alter(c, "g", {("t", 0): 2, ("t", 5): 0, ("nope", 0): 1})
        assert r["error_code"] == 0
        codes = {(t["topic_name"], p["partition_index"]): p["error_code"] for t in r["responses"] for p in t["partitions"]}
        assert codes == {("t", 0): 0, ("t", 5): E.UNKNOWN_TOPIC_OR_PARTITION, ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
        assert offsets(describe(c, "g", None)) == {("t", 0): (2, 3, 0)}
        v0 = describe(c, "g", {"t": [0, 1], "nope": [0]}, version=0)
        assert offsets(v0) == {("t", 0): (2, -1, 0), ("t", 1): (-1, -1, 0),
                               ("nope", 0): (-1, -1, E.UNKNOWN_TOPIC_OR_PARTITION)}
        # a member: the group is not empty
        join(c, "g", "m1", ["t"])
        assert alter(c, "g", {("t", 0): 0})["error_code"] == E.NON_EMPTY_GROUP
        assert delete(c, "g", ["t"])["error_code"] == E.NON_EMPTY_GROUP
        dg = c.call(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["g"]})["results"][0]
        assert dg["error_code"] == E.NON_EMPTY_GROUP
        # it consumes from the altered start offset; accepting 2..3 moves it to 4
        assert share_fetch(c, "g", "m1", 0, tid) == [(2, 4, 1)]
        assert share_fetch(c, "g", "m1", 1, tid, [(2, 3, AckType.ACCEPT), (4, 4, AckType.RELEASE)]) == [(4, 4, 2)]
        assert offsets(describe(c, "g", {"t": [0]})) == {("t", 0): (4, 1, 0)}
        # DescribeGroups: not a classic group
        d = c.call(ApiKey.DESCRIBE_GROUPS, 6, {"groups": ["g"], "include_authorized_operations": False})["groups"][0]
        assert (d["error_code"], d["error_message"]) == (E.GROUP_ID_NOT_FOUND, "Group g is not a classic group.")
        leave(c, "g", "m1")
        share_fetch(c, "g", "m1", -1, tid)
        # empty again: alter back to 0 (everything in flight forgotten), then delete the topic's state
        assert alter(c, "g", {("t", 0): 0})["error_code"] == 0
        assert offsets(describe(c, "g", None)) == {("t", 0): (0, 5, 0)}
        join(c, "g", "m2", ["t"])
        assert share_fetch(c, "g", "m2", 0, tid) == [(0, 4, 1)]
        leave(c, "g", "m2")
        share_fetch(c, "g", "m2", -1, tid)
        r = delete(c, "g", ["t", "nope"])
        assert r["error_code"] == 0
        assert {t["topic_name"]: t["error_code"] for t in r["responses"]} == {
            "t": 0, "nope": E.UNKNOWN_TOPIC_OR_PARTITION}
        assert offsets(describe(c, "g", {"t": [0]})) == {("t", 0): (-1, -1, 0)}
        assert {t["topic_name"]: t["error_code"] for t in delete(c, "g", ["t"])["responses"]} == {
            "t": E.UNKNOWN_TOPIC_OR_PARTITION}


def test_alter_is_durable_and_delete_groups(broker: BrokerProcess) -> None:
    with Conn(broker.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("t", 1))["topics"][0]["error_code"] == 0
        assert c.call(ApiKey.PRODUCE, 8, produce("t", 0, batch(4)))["responses"][0]
        assert alter(c, "sg", {("t", 0): 3})["error_code"] == 0
    broker.stop()
    broker.start()
    with Conn(broker.port) as c:
        # known by its state alone after the restart (share-group membership is not persisted)
        assert offsets(describe(c, "sg", None)) == {("t", 0): (3, 1, 0)}
        dg = c.call(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["sg", "nothing"]})["results"]
        assert {r["group_id"]: r["error_code"] for r in dg} == {"sg": 0, "nothing": E.GROUP_ID_NOT_FOUND}
        assert describe(c, "sg", None)["error_code"] == E.GROUP_ID_NOT_FOUND
    broker.stop()
    broker.start()
    with Conn(broker.port) as c:
        assert describe(c, "sg", None)["error_code"] == E.GROUP_ID_NOT_FOUND


def test_share_group_ids_of_other_groups(broker: BrokerProcess) -> None:
    """A classic group's id: AlterShareGroupOffsets answers GROUP_ID_NOT_FOUND."""
    with Conn(broker.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("t", 1))["topics"][0]["error_code"] == 0
        c.call(ApiKey.FIND_COORDINATOR, 3, {"key": "classic", "key_type": 0})
        j = c.call(ApiKey.JOIN_GROUP, 3, {"group_id": "classic", "session_timeout_ms": 10000,
                                          "rebalance_timeout_ms": 10000, "member_id": "", "protocol_type": "consumer",
                                          "protocols": [{"name": "range", "metadata": b""}]})
        assert j["error_code"] == 0
        r = alter(c, "classic", {("t", 0): 0})
        assert (r["error_code"], r["error_message"]) == (E.GROUP_ID_NOT_FOUND, "Group classic is not a share group.")
