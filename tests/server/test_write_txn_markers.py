"""WriteTxnMarkers (broker/handlers/write_txn_markers.py) on the wire: a marker ends its
producer's open transaction in the partition (the last stable offset moves past it, an ABORT
is listed in read_committed fetches), and what Kafka refuses is refused with its error and
writes nothing: an older producer epoch, an older coordinator epoch, an unknown partition."""

from __future__ import annotations

from client.protocol.api import ApiKey, ErrorCode
from tests.broker_process import BrokerProcess
from tests.server.wire import Conn, create_topic, list_offsets, partition_response
from tests.txn.test_coordinator import add_partitions, init_ok, lso, read, send, txn_batch

E = ErrorCode


def markers(c: Conn, pid: int, epoch: int, coordinator_epoch: int, parts: dict[str, list[int]],
            commit: bool = False, version: int = 1, tv: int = 0) -> dict[tuple[str, int], int]:
    body = {"markers": [{"producer_id": pid, "producer_epoch": epoch, "transaction_result": commit,
                         "coordinator_epoch": coordinator_epoch, "transaction_version": tv,
                         "topics": [{"name": t, "partition_indexes": ps} for t, ps in parts.items()]}]}
    r = c.call(ApiKey.WRITE_TXN_MARKERS, version, body)
    (m,) = r["markers"]
    assert m["producer_id"] == pid
    return {(t["name"], p["partition_index"]): p["error_code"] for t in m["topics"] for p in t["partitions"]}


def leo(c: Conn, topic: str) -> int:
    return int(partition_response(c.call(ApiKey.LIST_OFFSETS, 5, list_offsets(topic, 0, -1)), "partitions")["offset"])


def test_markers_end_transactions_and_stale_ones_are_refused(broker: BrokerProcess) -> None:
    with Conn(broker.port) as c:
        for t in ("w", "v"):
            assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic(t))["topics"][0]["error_code"] == 0
        pid, epoch = init_ok(c, "w-app")
        assert add_partitions(c, "w-app", pid, epoch, "w", [0]) == [0]
        assert send(c, "w", txn_batch(pid, epoch, 0, [b"x", b"y"]), "w-app") == (0, 0)
        assert lso(c, "w") == 0
        # an unknown partition and a stale producer epoch: refused, nothing written
        assert markers(c, pid, epoch, 0, {"w": [0, 7], "nope": [0]}, version=0) == {
            ("w", 0): 0, ("w", 7): E.UNKNOWN_TOPIC_OR_PARTITION, ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
        assert (leo(c, "w"), lso(c, "w")) == (3, 3)  # the ABORT marker at offset 2 ended it
        p, _ = read(c, "w", 1)
        assert p["aborted_transactions"] == [{"producer_id": pid, "first_offset": 0}]
        assert markers(c, pid, epoch - 1, 0, {"w": [0]}) == {("w", 0): E.INVALID_PRODUCER_EPOCH}
        # a coordinator epoch below the last marker's is a zombie coordinator
        assert markers(c, pid, epoch, 5, {"v": [0]}, commit=True) == {("v", 0): 0}  # no transaction open: written
        assert leo(c, "v") == 1
        assert markers(c, pid, epoch, 4, {"v": [0]}) == {("v", 0): E.TRANSACTION_COORDINATOR_FENCED}
        assert (leo(c, "w"), leo(c, "v")) == (3, 1)


def test_v2_markers_of_transactions_v2_need_a_higher_epoch(broker: BrokerProcess) -> None:
    """KIP-1228: a transactions V2 marker carries the epoch its coordinator bumped, so one at
    the partition's epoch for the producer is a stale marker while a transaction is open there,
    and a retry of a written one when none is (written again, KAFKA-19999). A marker of the
    older protocol at that epoch ends the transaction, as before."""
    with Conn(broker.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("m2"))["topics"][0]["error_code"] == 0
        pid, epoch = init_ok(c, "m2-app")
        assert add_partitions(c, "m2-app", pid, epoch, "m2", [0]) == [0]
        assert send(c, "m2", txn_batch(pid, epoch, 0, [b"x"]), "m2-app") == (0, 0)
        assert markers(c, pid, epoch, 0, {"m2": [0]}, version=2, tv=2) == {("m2", 0): E.INVALID_PRODUCER_EPOCH}
        assert (leo(c, "m2"), lso(c, "m2")) == (1, 0)  # nothing written
        assert markers(c, pid, epoch + 1, 0, {"m2": [0]}, version=2, tv=2) == {("m2", 0): 0}
        assert (leo(c, "m2"), lso(c, "m2")) == (2, 2)
        assert markers(c, pid, epoch + 1, 0, {"m2": [0]}, version=2, tv=2) == {("m2", 0): 0}  # a retry
        assert markers(c, pid, epoch, 0, {"m2": [0]}, version=2, tv=2) == {("m2", 0): E.INVALID_PRODUCER_EPOCH}
        assert leo(c, "m2") == 3
        # the older protocol's marker at the current epoch, with a transaction open: written
        assert send(c, "m2", txn_batch(pid, epoch + 1, 0, [b"y"]), "m2-app") == (0, 3)
        assert lso(c, "m2") == 3
        assert markers(c, pid, epoch + 1, 0, {"m2": [0]}, version=2, tv=1) == {("m2", 0): 0}
        assert (leo(c, "m2"), lso(c, "m2")) == (5, 5)
