"""OffsetCommit and TxnOffsetCommit against a real broker process: partitions that do not exist
get UNKNOWN_TOPIC_OR_PARTITION (as Kafka's broker answers before its group coordinator sees
them; a simple commit, a classic group member's and a transaction's alike) and are never written; a commit too large for one batch of ``__consumer_offsets`` gets
INVALID_COMMIT_OFFSET_SIZE for every partition with nothing written. v10 of OffsetCommit and
OffsetFetch by topic id."""

from __future__ import annotations

import uuid
from typing import Any

from client.protocol.api import ApiKey, ErrorCode
from tests.broker_process import BrokerProcess
from tests.server.wire import Conn, create_topic, wait_until

UNKNOWN = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
ZERO = uuid.UUID(int=0)


def _partitions(offsets: dict[tuple[str, int], int]) -> list[dict[str, Any]]:
    by: dict[str, list[dict[str, Any]]] = {}
    for (t, p), o in offsets.items():
        by.setdefault(t, []).append({"partition_index": p, "committed_offset": o, "committed_leader_epoch": -1,
                                     "committed_metadata": ""})
    return [{"name": t, "partitions": ps} for t, ps in by.items()]


def commit(c: Conn, group: str, offsets: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
    """OffsetCommit v8 with generation -1 (a simple group): error per partition."""
    r = c.call(ApiKey.OFFSET_COMMIT, 8, {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                                         "group_instance_id": None, "topics": _partitions(offsets)})
    return {(t["name"], p["partition_index"]): p["error_code"] for t in r["topics"] for p in t["partitions"]}


def fetch(c: Conn, group: str, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    by: dict[str, list[int]] = {}
    for t, p in partitions:
        by.setdefault(t, []).append(p)
    r = c.call(ApiKey.OFFSET_FETCH, 7, {"group_id": group, "require_stable": True, "topics": [
        {"name": t, "partition_indexes": ps} for t, ps in by.items()]})
    assert r["error_code"] == 0, r
    return {(t["name"], p["partition_index"]): p["committed_offset"] for t in r["topics"] for p in t["partitions"]}


def test_commit_of_unknown_topics_and_partitions(broker: BrokerProcess) -> None:
    """A commit naming only a missing topic, and one mixing a real partition with a missing
    topic and a partition past the topic's count: the missing ones UNKNOWN_TOPIC_OR_PARTITION
    (librdkafka's test 0030 expects it) and not stored; the real one committed."""
    with Conn(broker.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("real", 2))["topics"][0]["error_code"] == 0
        assert commit(c, "g1", {("nope", 0): 5, ("nope", 1): 6}) == {("nope", 0): UNKNOWN, ("nope", 1): UNKNOWN}
        mixed = {("real", 1): 7, ("nope", 0): 8, ("real", 2): 9}
        assert commit(c, "g1", mixed) == {("real", 1): 0, ("nope", 0): UNKNOWN, ("real", 2): UNKNOWN}
        assert fetch(c, "g1", list(mixed)) == {("real", 1): 7, ("nope", 0): -1, ("real", 2): -1}


def _classic_member(c: Conn, group: str) -> tuple[str, int]:
    """Join ``group`` alone (JoinGroup v3: no KIP-394 round trip) and sync: (member id, generation)."""
    assert c.call(ApiKey.FIND_COORDINATOR, 3, {"key": group, "key_type": 0})["error_code"] == 0
    joined = c.call(ApiKey.JOIN_GROUP, 3, {"group_id": group, "session_timeout_ms": 10000,
                                           "rebalance_timeout_ms": 10000, "member_id": "", "group_instance_id": None,
                                           "protocol_type": "consumer",
                                           "protocols": [{"name": "range", "metadata": b""}]})
    assert joined["error_code"] == 0, joined
    member, generation = joined["member_id"], joined["generation_id"]
    synced = c.call(ApiKey.SYNC_GROUP, 3, {"group_id": group, "generation_id": generation, "member_id": member,
                                           "group_instance_id": None,
                                           "assignments": [{"member_id": member, "assignment": b""}]})
    assert synced["error_code"] == 0, synced
    return member, generation


def test_classic_group_commit_of_unknown_topics(broker: BrokerProcess) -> None:
    """A member of a classic group (its generation and member id) committing a real partition
    with a missing topic: the missing one UNKNOWN_TOPIC_OR_PARTITION, the real one stored. With
    a stale generation the real one gets ILLEGAL_GENERATION from the coordinator, the missing
    one still UNKNOWN_TOPIC_OR_PARTITION (Kafka's broker answers it before the coordinator)."""
    with Conn(broker.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("real", 1))["topics"][0]["error_code"] == 0
        member, generation = _classic_member(c, "classic")

        def commit_as(gen: int, offsets: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
            r = c.call(ApiKey.OFFSET_COMMIT, 8, {"group_id": "classic", "generation_id_or_member_epoch": gen,
                                                 "member_id": member, "group_instance_id": None,
                                                 "topics": _partitions(offsets)})
            return {(t["name"], p["partition_index"]): p["error_code"] for t in r["topics"] for p in t["partitions"]}

        assert commit_as(generation, {("real", 0): 11, ("nope", 0): 12}) == {("real", 0): 0, ("nope", 0): UNKNOWN}
        assert commit_as(generation + 1, {("real", 0): 13, ("nope", 1): 14}) == {
            ("real", 0): ErrorCode.ILLEGAL_GENERATION, ("nope", 1): UNKNOWN}
        assert commit_as(generation, {("nope", 0): 15}) == {("nope", 0): UNKNOWN}
        assert fetch(c, "classic", [("real", 0), ("nope", 0), ("nope", 1)]) == {
            ("real", 0): 11, ("nope", 0): -1, ("nope", 1): -1}


def test_txn_offset_commit_of_an_unknown_topic(broker: BrokerProcess) -> None:
    """TxnOffsetCommit follows the same rule: the missing topic's partitions
    UNKNOWN_TOPIC_OR_PARTITION, the real one committed with the transaction."""
    tid, group = "txn-1", "tg"
    with Conn(broker.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("real", 1))["topics"][0]["error_code"] == 0
        assert c.call(ApiKey.FIND_COORDINATOR, 3, {"key": tid, "key_type": 1})["error_code"] == 0
        assert c.call(ApiKey.FIND_COORDINATOR, 3, {"key": group, "key_type": 0})["error_code"] == 0
        init = c.call(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": tid, "transaction_timeout_ms": 60000})
        assert init["error_code"] == 0, init
        pid, epoch = init["producer_id"], init["producer_epoch"]
        added = c.call(ApiKey.ADD_OFFSETS_TO_TXN, 1, {"transactional_id": tid, "producer_id": pid,
                                                      "producer_epoch": epoch, "group_id": group})
        assert added["error_code"] == 0, added
        only_unknown = c.call(ApiKey.TXN_OFFSET_COMMIT, 2, {
            "transactional_id": tid, "group_id": group, "producer_id": pid, "producer_epoch": epoch,
            "topics": _partitions({("nope", 0): 3})})
        assert [p["error_code"] for t in only_unknown["topics"] for p in t["partitions"]] == [UNKNOWN]
        mixed = c.call(ApiKey.TXN_OFFSET_COMMIT, 2, {
            "transactional_id": tid, "group_id": group, "producer_id": pid, "producer_epoch": epoch,
            "topics": _partitions({("real", 0): 4, ("nope", 0): 3})})
        assert {(t["name"], p["partition_index"]): p["error_code"] for t in mixed["topics"]
                for p in t["partitions"]} == {("real", 0): 0, ("nope", 0): UNKNOWN}
        ended = c.call(ApiKey.END_TXN, 1, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                                           "committed": True})
        assert ended["error_code"] == 0, ended
        # the markers follow EndTxn's answer: the offset is stable once they are written
        assert wait_until(lambda: fetch(c, group, [("real", 0), ("nope", 0)]) == {("real", 0): 4, ("nope", 0): -1})


def test_commit_larger_than_the_offsets_topics_max_message_bytes(broker: BrokerProcess) -> None:
    """300 partitions with 4,000 bytes of metadata each (within offset.metadata.max.bytes): one
    batch of ~1.2 MB, above ``__consumer_offsets``'s max.message.bytes (1048588), so every
    partition gets INVALID_COMMIT_OFFSET_SIZE and nothing is stored (before: UNKNOWN_SERVER_ERROR;
    and the 1.2 MB request closed the connection). Once the topic's max.message.bytes is raised
    the same commit is stored."""
    n, meta = 300, "m" * 4000
    offsets = {("wide", p): 1000 + p for p in range(n)}
    body = {"group_id": "big", "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
            "topics": [{"name": "wide", "partitions": [
                {"partition_index": p, "committed_offset": o, "committed_leader_epoch": -1,
                 "committed_metadata": meta} for (_, p), o in offsets.items()]}]}
    with Conn(broker.port, timeout=60) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("wide", n))["topics"][0]["error_code"] == 0
        assert c.call(ApiKey.FIND_COORDINATOR, 3, {"key": "big", "key_type": 0})["error_code"] == 0
        r = c.call(ApiKey.OFFSET_COMMIT, 8, body)
        codes = [p["error_code"] for t in r["topics"] for p in t["partitions"]]
        assert codes == [ErrorCode.INVALID_COMMIT_OFFSET_SIZE] * n
        assert set(fetch(c, "big", list(offsets)).values()) == {-1}
        altered = c.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [
            {"resource_type": 2, "resource_name": "__consumer_offsets", "configs": [
                {"name": "max.message.bytes", "config_operation": 0, "value": str(4 << 20)}]}],
            "validate_only": False})
        assert altered["responses"][0]["error_code"] == 0, altered
        r = c.call(ApiKey.OFFSET_COMMIT, 8, body)
        assert [p["error_code"] for t in r["topics"] for p in t["partitions"]] == [0] * n
        assert fetch(c, "big", list(offsets)) == offsets


def _topic_id(c: Conn, name: str) -> uuid.UUID:
    (t,) = c.call(ApiKey.METADATA, 12, {"topics": [{"name": name}], "allow_auto_topic_creation": False})["topics"]
    assert t["error_code"] == 0
    return t["topic_id"]  # type: ignore[no-any-return]


def commit_by_id(c: Conn, group: str, offsets: dict[tuple[uuid.UUID, int], int], generation: int = -1,
                 member: str = "") -> dict[tuple[uuid.UUID, int], int]:
    """OffsetCommit v10 (topics by id): error per (topic id, partition), from the answer's ids."""
    by: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for (t, p), o in offsets.items():
        by.setdefault(t, []).append({"partition_index": p, "committed_offset": o, "committed_leader_epoch": -1,
                                     "committed_metadata": ""})
    r = c.call(ApiKey.OFFSET_COMMIT, 10, {"group_id": group, "generation_id_or_member_epoch": generation,
                                          "member_id": member, "group_instance_id": None,
                                          "topics": [{"topic_id": t, "partitions": ps} for t, ps in by.items()]})
    assert all(t["name"] == "" for t in r["topics"])  # not on the wire at v10
    return {(t["topic_id"], p["partition_index"]): p["error_code"] for t in r["topics"] for p in t["partitions"]}


def fetch_by_id(c: Conn, group: str, partitions: list[tuple[uuid.UUID, int]] | None
                ) -> list[tuple[uuid.UUID, int, int, int]]:
    """OffsetFetch v10: [(topic id, partition, committed offset, error)] in the answer's order."""
    topics = None
    if partitions is not None:
        by: dict[uuid.UUID, list[int]] = {}
        for t, p in partitions:
            by.setdefault(t, []).append(p)
        topics = [{"topic_id": t, "partition_indexes": ps} for t, ps in by.items()]
    r = c.call(ApiKey.OFFSET_FETCH, 10, {"groups": [{"group_id": group, "member_id": None, "member_epoch": -1,
                                                     "topics": topics}], "require_stable": True})
    (g,) = r["groups"]
    assert g["error_code"] == 0, g
    return [(t["topic_id"], p["partition_index"], p["committed_offset"], p["error_code"])
            for t in g["topics"] for p in t["partitions"]]


def test_offset_commit_and_fetch_v10_name_topics_by_id(tmp_path) -> None:
    """v10 (KIP-848's topic ids): OffsetCommit and OffsetFetch by topic id, answered by id. An
    id that names no topic (or the zero id) is UNKNOWN_TOPIC_ID for its partitions and is
    never stored; a partition past the topic's count is UNKNOWN_TOPIC_OR_PARTITION as by name.
    What v10 stores is keyed by name: v9 and v7 read it by name, and after a restart v10 by id.
    OffsetFetch v10 of every topic answers by id; an unknown id is listed after the others."""
    b = BrokerProcess(str(tmp_path / "data")).start()
    try:
        unknown = uuid.uuid4()
        with Conn(b.port) as c:
            assert c.call(ApiKey.CREATE_TOPICS, 7, create_topic("ids", 2))["topics"][0]["error_code"] == 0
            assert c.call(ApiKey.CREATE_TOPICS, 7, create_topic("other", 1))["topics"][0]["error_code"] == 0
            tid, other = _topic_id(c, "ids"), _topic_id(c, "other")
            assert c.call(ApiKey.FIND_COORDINATOR, 3, {"key": "g10", "key_type": 0})["error_code"] == 0
            assert commit_by_id(c, "g10", {(tid, 0): 5, (tid, 1): 6, (tid, 2): 9, (unknown, 0): 1, (ZERO, 0): 2}) == {
                (tid, 0): 0, (tid, 1): 0, (tid, 2): UNKNOWN, (unknown, 0): ErrorCode.UNKNOWN_TOPIC_ID,
                (ZERO, 0): ErrorCode.UNKNOWN_TOPIC_ID}
            assert commit_by_id(c, "g10", {(unknown, 0): 1}) == {(unknown, 0): ErrorCode.UNKNOWN_TOPIC_ID}
            assert commit_by_id(c, "g10", {(other, 0): 3}) == {(other, 0): 0}
            # stored by name: read back by name (v7, and v9's groups)
            assert fetch(c, "g10", [("ids", 0), ("ids", 1), ("ids", 2)]) == {("ids", 0): 5, ("ids", 1): 6, ("ids", 2): -1}
            r = c.call(ApiKey.OFFSET_FETCH, 9, {"groups": [{"group_id": "g10", "member_id": None, "member_epoch": -1,
                                                            "topics": None}], "require_stable": False})
            assert {(t["name"], p["partition_index"]): p["committed_offset"] for t in r["groups"][0]["topics"]
                    for p in t["partitions"]} == {("ids", 0): 5, ("ids", 1): 6, ("other", 0): 3}
            # by id; the unknown id after the known topics, offset -1
            assert fetch_by_id(c, "g10", [(unknown, 0), (tid, 0), (tid, 1), (tid, 2), (ZERO, 3)]) == [
                (tid, 0, 5, 0), (tid, 1, 6, 0), (tid, 2, -1, 0),
                (unknown, 0, -1, ErrorCode.UNKNOWN_TOPIC_ID), (ZERO, 3, -1, ErrorCode.UNKNOWN_TOPIC_ID)]
            assert sorted(fetch_by_id(c, "g10", None)) == sorted([(tid, 0, 5, 0), (tid, 1, 6, 0), (other, 0, 3, 0)])
            assert fetch_by_id(c, "nobody", [(tid, 0)]) == [(tid, 0, -1, 0)]
        b.stop()
        b.start()
        with Conn(b.port) as c:
            assert wait_until(lambda: c.call(ApiKey.OFFSET_FETCH, 10, {"groups": [
                {"group_id": "g10", "member_id": None, "member_epoch": -1, "topics": None}],
                "require_stable": False})["groups"][0]["error_code"] == 0, timeout=10)
            assert fetch_by_id(c, "g10", [(tid, 0), (tid, 1)]) == [(tid, 0, 5, 0), (tid, 1, 6, 0)]
            # a deleted topic's offsets go with it; its id is then unknown
            (d,) = c.call(ApiKey.DELETE_TOPICS, 6, {"topics": [{"name": None, "topic_id": tid}],
                                                    "timeout_ms": 1000})["responses"]
            assert d["error_code"] == 0
            assert wait_until(lambda: fetch_by_id(c, "g10", None) == [(other, 0, 3, 0)])
            assert fetch_by_id(c, "g10", [(tid, 0)]) == [(tid, 0, -1, ErrorCode.UNKNOWN_TOPIC_ID)]
    finally:
        assert b.stop() == 0


def test_classic_group_commit_v10_checks_the_generation_as_before(broker: BrokerProcess) -> None:
    """v10 with the classic protocol: the generation and member checks are unchanged
    (ILLEGAL_GENERATION for a stale generation, UNKNOWN_MEMBER_ID for another member, as in
    Kafka 4.x); a generation for a group that does not exist is GROUP_ID_NOT_FOUND (v9+)."""
    with Conn(broker.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 7, create_topic("real", 1))["topics"][0]["error_code"] == 0
        tid = _topic_id(c, "real")
        member, generation = _classic_member(c, "classic10")
        assert commit_by_id(c, "classic10", {(tid, 0): 11}, generation, member) == {(tid, 0): 0}
        assert commit_by_id(c, "classic10", {(tid, 0): 12}, generation + 1, member) == {
            (tid, 0): ErrorCode.ILLEGAL_GENERATION}
        assert commit_by_id(c, "classic10", {(tid, 0): 13}, generation, "someone-else") == {
            (tid, 0): ErrorCode.UNKNOWN_MEMBER_ID}
        assert commit_by_id(c, "classic10", {(tid, 0): 14, (uuid.uuid4(), 0): 1}, generation + 1, member)[
            (tid, 0)] == ErrorCode.ILLEGAL_GENERATION
        assert commit_by_id(c, "never-made", {(tid, 0): 1}, 3, "m") == {(tid, 0): ErrorCode.GROUP_ID_NOT_FOUND}
        assert fetch_by_id(c, "classic10", [(tid, 0)]) == [(tid, 0, 11, 0)]
