"""Transactions V2 (KIP-890 part 2) on the wire, with raw requests: off until an operator
finalizes ``transaction.version`` 2 (UpdateFeatures), then for the V2 versions (Produce v12+,
EndTxn v5, TxnOffsetCommit v5): the partition added by the produce itself, the epoch bumped
at every transaction end (the markers carry it, a late batch of the ended transaction is
fenced), retries of EndTxn recognised by their epoch, the offsets partition added by
TxnOffsetCommit, a client of the older protocol served unchanged beside it, and the state
(``__transaction_state`` value v1) read back after a restart. Also AddPartitionsToTxn v4-5
(the brokers' batched form)."""

from __future__ import annotations

import time
from typing import Any

from broker.txn.records import TRANSACTION_STATE, decode_txn_key, decode_txn_value, partition_for
from client.protocol.api import SUPPORTED_VERSIONS, ApiKey, ErrorCode
from client.records.batch import iter_batch_headers
from client.records.record import iter_records
from tests.broker_process import BrokerProcess
from tests.server.wire import Conn, create_topic, fetch, partition_response, produce
from tests.txn.test_coordinator import add_partitions, end_txn, init_ok, init_pid, lso, read, send, txn_batch, wait_for

E = ErrorCode


def set_transaction_version(c: Conn, level: int) -> None:
    """UpdateFeatures v1, as ``kafka-features.sh upgrade --feature transaction.version=2`` sends it."""
    r = c.call(ApiKey.UPDATE_FEATURES, 1, {"timeout_ms": 60000, "validate_only": False, "feature_updates": [
        {"feature": "transaction.version", "max_version_level": level, "upgrade_type": 1 if level else 2}]})
    assert r["error_code"] == 0, r


def end_v5(c: Conn, txn_id: str, pid: int, epoch: int, commit: bool) -> tuple[int, int, int]:
    """EndTxn v5: (error, producer id, epoch); CONCURRENT_TRANSACTIONS retried."""
    deadline = time.monotonic() + 10
    while True:
        r = c.call(ApiKey.END_TXN, 5, {"transactional_id": txn_id, "producer_id": pid, "producer_epoch": epoch,
                                       "committed": commit})
        if r["error_code"] != E.CONCURRENT_TRANSACTIONS or time.monotonic() > deadline:
            return r["error_code"], r["producer_id"], r["producer_epoch"]
        time.sleep(0.02)


def send_v2(c: Conn, topic: str, records: bytes, txn_id: str, partition: int = 0, version: int = 12
            ) -> tuple[int, int]:
    body = produce(topic, partition, records, acks=-1)
    body["transactional_id"] = txn_id
    p = partition_response(c.call(ApiKey.PRODUCE, version, body))
    return p["error_code"], p["base_offset"]


def describe(c: Conn, txn_id: str) -> dict[str, Any]:
    return c.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [txn_id]})["transaction_states"][0]


def control_epochs(c: Conn, topic: str, partition: int = 0) -> list[int]:
    """The producer epoch of every control batch (marker) of the partition."""
    body = fetch(topic, partition, 0)
    p = partition_response(c.call(ApiKey.FETCH, 11, body), "partitions")
    return [h.producer_epoch for h in iter_batch_headers(bytes(p["records"] or b"")) if h.is_control]


def txn_offset_commit(c: Conn, version: int, txn_id: str, pid: int, epoch: int, offset: int) -> int:
    r = c.call(ApiKey.TXN_OFFSET_COMMIT, version, {
        "transactional_id": txn_id, "group_id": "g2", "producer_id": pid, "producer_epoch": epoch,
        "generation_id": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": "in2", "partitions": [{"partition_index": 0, "committed_offset": offset,
                                                   "committed_leader_epoch": -1, "committed_metadata": ""}]}]})
    return int(r["topics"][0]["partitions"][0]["error_code"])


def committed_offset(c: Conn) -> tuple[int, int]:
    r = c.call(ApiKey.OFFSET_FETCH, 7, {"group_id": "g2", "topics": [{"name": "in2", "partition_indexes": [0]}],
                                        "require_stable": True})
    p = r["topics"][0]["partitions"][0]
    return p["error_code"], p["committed_offset"]


def test_off_until_finalized(broker: BrokerProcess) -> None:
    """At ``transaction.version`` 0 (a new data dir) the V2 versions follow the older rules:
    Produce v12 needs AddPartitionsToTxn first, EndTxn v5 does not bump the epoch (and
    answers -1, -1, as Kafka's coordinator answers the older protocol), TxnOffsetCommit v5 needs
    AddOffsetsToTxn first."""
    with Conn(broker.port) as c:
        for t in ("off", "in2"):
            assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic(t))["topics"][0]["error_code"] == 0
        pid, epoch = init_ok(c, "o")
        assert send_v2(c, "off", txn_batch(pid, epoch, 0, [b"no"]), "o")[0] == E.TRANSACTION_ABORTABLE
        assert add_partitions(c, "o", pid, epoch, "off", [0]) == [0]
        assert send_v2(c, "off", txn_batch(pid, epoch, 0, [b"yes"]), "o") == (0, 0)
        assert txn_offset_commit(c, 5, "o", pid, epoch, 3) == E.INVALID_TXN_STATE
        assert end_v5(c, "o", pid, epoch, True) == (0, -1, -1)
        assert describe(c, "o")["producer_epoch"] == epoch
        wait_for(lambda: lso(c, "off") == 2)
        assert control_epochs(c, "off") == [epoch]


def test_commit_abort_and_the_epoch_bump(broker: BrokerProcess) -> None:
    with Conn(broker.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("v2", 2))["topics"][0]["error_code"] == 0
        set_transaction_version(c, 2)
        pid, epoch = init_ok(c, "a")
        assert epoch == 0
        # no AddPartitionsToTxn: the produce adds its partition
        assert send_v2(c, "v2", txn_batch(pid, 0, 0, [b"a", b"b"]), "a") == (0, 0)
        d = describe(c, "a")
        assert (d["transaction_state"], d["topics"]) == ("Ongoing", [{"topic": "v2", "partitions": [0]}])
        assert send_v2(c, "v2", txn_batch(pid, 0, 2, [b"c"]), "a", version=13 - 1) == (0, 2)
        assert lso(c, "v2") == 0
        assert end_v5(c, "a", pid, 0, True) == (0, pid, 1)  # the next epoch
        wait_for(lambda: lso(c, "v2") == 4)
        assert control_epochs(c, "v2") == [1]  # the marker carries the bumped epoch
        # a late batch of the committed transaction: fenced by the partition (its marker's
        # epoch) and, where the transaction never wrote, by the coordinator
        assert send_v2(c, "v2", txn_batch(pid, 0, 3, [b"late"]), "a")[0] == E.INVALID_PRODUCER_EPOCH
        assert send_v2(c, "v2", txn_batch(pid, 0, 0, [b"late"]), "a", partition=1)[0] == E.INVALID_PRODUCER_EPOCH
        # the next transaction at epoch 1 from sequence 0; aborted
        assert send_v2(c, "v2", txn_batch(pid, 1, 0, [b"x"]), "a") == (0, 4)
        assert send_v2(c, "v2", txn_batch(pid, 1, 0, [b"y"]), "a", partition=1) == (0, 0)
        assert end_v5(c, "a", pid, 1, False) == (0, pid, 2)
        wait_for(lambda: lso(c, "v2") == 6)
        assert control_epochs(c, "v2") == [1, 2] and control_epochs(c, "v2", 1) == [2]
        # a retry of that abort (the epoch before the bump) answers NONE with the current identity;
        # the opposite outcome is refused
        assert end_v5(c, "a", pid, 1, False) == (0, pid, 2)
        assert end_v5(c, "a", pid, 1, True)[0] == E.INVALID_TXN_STATE
        # an abort of a transaction that added nothing still bumps the epoch (no markers); a
        # commit of one is refused
        assert end_v5(c, "a", pid, 2, False) == (0, pid, 3)
        assert end_v5(c, "a", pid, 3, True)[0] == E.INVALID_TXN_STATE
        assert end_v5(c, "a", pid, 0, False)[0] == E.PRODUCER_FENCED
        assert end_v5(c, "a", pid + 1, 3, False)[0] == E.INVALID_PRODUCER_ID_MAPPING
        p, values = read(c, "v2", 1)
        assert values == [b"a", b"b", b"c", b"x"]  # the client drops "x": listed as aborted
        assert p["aborted_transactions"] == [{"producer_id": pid, "first_offset": 4}]
        # InitProducerId bumps from the current epoch, as for any producer
        assert init_ok(c, "a") == (pid, 4)


def test_offsets_and_an_older_client_side_by_side(broker: BrokerProcess) -> None:
    """TxnOffsetCommit v5 adds the group's offsets partition itself; a producer of the older
    protocol (AddPartitionsToTxn v3, Produce v7, EndTxn v3) on the same broker and topic keeps
    its epoch across transactions."""
    with Conn(broker.port) as c:
        for t in ("in2", "mix"):
            assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic(t))["topics"][0]["error_code"] == 0
        set_transaction_version(c, 2)
        new, _ = init_ok(c, "new")
        old, old_epoch = init_ok(c, "old")
        assert send_v2(c, "mix", txn_batch(new, 0, 0, [b"n1"]), "new") == (0, 0)
        assert add_partitions(c, "old", old, old_epoch, "mix", [0]) == [0]
        assert send(c, "mix", txn_batch(old, old_epoch, 0, [b"o1"]), "old") == (0, 1)
        assert txn_offset_commit(c, 5, "new", new, 0, 7) == 0  # no AddOffsetsToTxn
        assert committed_offset(c)[0] == E.UNSTABLE_OFFSET_COMMIT
        assert end_v5(c, "new", new, 0, True) == (0, new, 1)
        assert end_txn(c, "old", old, old_epoch, True) == 0
        wait_for(lambda: committed_offset(c) == (0, 7))
        wait_for(lambda: lso(c, "mix") == 4)
        assert describe(c, "old")["producer_epoch"] == old_epoch  # no bump for the older protocol
        # the next round: the V2 producer at its new epoch aborts (its offsets dropped), the old commits
        assert send_v2(c, "mix", txn_batch(new, 1, 0, [b"n2"]), "new") == (0, 4)
        assert txn_offset_commit(c, 5, "new", new, 1, 9) == 0
        assert add_partitions(c, "old", old, old_epoch, "mix", [0]) == [0]
        assert send(c, "mix", txn_batch(old, old_epoch, 1, [b"o2"]), "old") == (0, 5)
        assert end_v5(c, "new", new, 1, False) == (0, new, 2)
        assert end_txn(c, "old", old, old_epoch, True) == 0
        wait_for(lambda: lso(c, "mix") == 8)
        wait_for(lambda: committed_offset(c) == (0, 7))  # 9 was aborted
        # a late TxnOffsetCommit of the ended transaction is fenced
        assert txn_offset_commit(c, 5, "new", new, 1, 11) == E.PRODUCER_FENCED
        p, values = read(c, "mix", 1)
        assert values == [b"n1", b"o1", b"n2", b"o2"]
        assert p["aborted_transactions"] == [{"producer_id": new, "first_offset": 4}]


def _state_records(c: Conn, txn_id: str) -> list[tuple[int, Any]]:
    """(value version, TxnLogValue) of every ``__transaction_state`` record of ``txn_id``."""
    p = partition_response(c.call(ApiKey.FETCH, 11, fetch(TRANSACTION_STATE, partition_for(txn_id, 50), 0)),
                           "partitions")
    data = bytes(p["records"] or b"")
    out = []
    for h in iter_batch_headers(data):
        if h.is_control:
            continue
        for r in iter_records(data, h.pos):
            if r.key is not None and decode_txn_key(r.key) == txn_id and r.value is not None:
                out.append((int.from_bytes(r.value[:2], "big"), decode_txn_value(r.value)))
    return out


def test_state_records_and_a_restart(tmp_path) -> None:
    with BrokerProcess(str(tmp_path / "d")) as b:
        with Conn(b.port) as c:
            assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("r"))["topics"][0]["error_code"] == 0
            pid, _ = init_ok(c, "before")  # written at level 0: value v0
            set_transaction_version(c, 2)
            pid, _ = init_ok(c, "rs")
            assert send_v2(c, "r", txn_batch(pid, 0, 0, [b"one"]), "rs") == (0, 0)
            assert end_v5(c, "rs", pid, 0, True) == (0, pid, 1)
            wait_for(lambda: lso(c, "r") == 2)
            assert send_v2(c, "r", txn_batch(pid, 1, 0, [b"open"]), "rs") == (0, 2)
            recs = _state_records(c, "rs")
            assert {v for v, _ in recs} == {1}  # flexible, with the V2 fields
            assert [(r.state.kafka_name, r.producer_epoch, r.client_transaction_version) for _, r in recs][-3:] == [
                ("PrepareCommit", 1, 2), ("CompleteCommit", 1, 2), ("Ongoing", 1, 2)]
            assert [v for v, _ in _state_records(c, "before")] == [0]
        b.kill()
        b.start()
        with Conn(b.port) as c:
            wait_for(lambda: init_pid(c, "x")["error_code"] != E.COORDINATOR_LOAD_IN_PROGRESS)
            d = describe(c, "rs")
            assert (d["transaction_state"], d["producer_epoch"]) == ("Ongoing", 1)
            assert lso(c, "r") == 2  # still open after the restart
            assert end_v5(c, "rs", pid, 1, True) == (0, pid, 2)
            wait_for(lambda: lso(c, "r") == 4)
            _, values = read(c, "r", 1)
            assert values == [b"one", b"open"]
            assert end_v5(c, "rs", pid, 1, True) == (0, pid, 2)  # a retry, told by its epoch
            # the level is the data dir's: still 2 after the restart
            r = c.call(ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
            assert {"name": "transaction.version", "max_version_level": 2, "min_version_level": 2} in \
                r["finalized_features"]


def _apt(c: Conn, version: int, txns: list[dict[str, Any]]) -> dict[str, Any]:
    return c.call(ApiKey.ADD_PARTITIONS_TO_TXN, version, {"transactions": txns})


def _codes(r: dict[str, Any]) -> dict[str, list[int]]:
    return {t["transactional_id"]: [p["partition_error_code"] for tr in t["topic_results"]
                                    for p in tr["results_by_partition"]] for t in r["results_by_transaction"]}


def test_add_partitions_to_txn_v4_and_v5(broker: BrokerProcess) -> None:
    """The brokers' batched form: verify_only checks, otherwise the partitions are added."""
    with Conn(broker.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("b", 2))["topics"][0]["error_code"] == 0
        p1, e1 = init_ok(c, "t1")
        p2, e2 = init_ok(c, "t2")
        assert add_partitions(c, "t1", p1, e1, "b", [0]) == [0]

        def txn(tid: str, pid: int, epoch: int, parts: list[int], verify: bool, topic: str = "b") -> dict[str, Any]:
            return {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "verify_only": verify,
                    "topics": [{"name": topic, "partitions": parts}]}

        r = _apt(c, 5, [txn("t1", p1, e1, [0, 1], True), txn("t2", p2, e2, [0], True)])
        assert r["error_code"] == 0
        assert _codes(r) == {"t1": [0, E.TRANSACTION_ABORTABLE], "t2": [E.TRANSACTION_ABORTABLE]}
        assert _codes(_apt(c, 4, [txn("t1", p1, e1, [1], True)])) == {"t1": [E.INVALID_TXN_STATE]}
        assert _codes(_apt(c, 5, [txn("t1", p1, e1 + 1, [0], True)])) == {"t1": [E.PRODUCER_FENCED]}
        assert _codes(_apt(c, 5, [txn("t9", p1, e1, [0], True)])) == {"t9": [E.INVALID_PRODUCER_ID_MAPPING]}
        # added: then a Produce v11 of t2 to partition 1 is accepted
        r = _apt(c, 5, [txn("t2", p2, e2, [1], False), txn("t1", p1, e1, [0], False)])
        assert _codes(r) == {"t2": [0], "t1": [0]}
        assert _codes(_apt(c, 5, [txn("t2", p2, e2, [0, 7], False)])) == \
            {"t2": [E.OPERATION_NOT_ATTEMPTED, E.UNKNOWN_TOPIC_OR_PARTITION]}
        body = produce("b", 1, txn_batch(p2, e2, 0, [b"via-v5"]), acks=-1)
        body["transactional_id"] = "t2"
        assert partition_response(c.call(ApiKey.PRODUCE, 11, body))["error_code"] == 0
        assert end_txn(c, "t2", p2, e2, True) == 0
        assert end_txn(c, "t1", p1, e1, False) == 0


def test_init_producer_id_v6_is_not_advertised() -> None:
    """KIP-939's InitProducerId v6 (two-phase commit) is unstable in Kafka 4.2: its brokers
    advertise 0-5, and so does this one."""
    assert SUPPORTED_VERSIONS[ApiKey.INIT_PRODUCER_ID] == (0, 5)


def test_pipelined_produces_keep_their_order_while_one_adds(broker: BrokerProcess) -> None:
    """A producer pipelines its requests (up to 5 in flight): one that waits for an add (here
    for partition 1, with a batch for partition 0 too) is not overtaken by the next one, whose
    partition 0 is in the transaction already but whose batch follows in sequence."""
    with Conn(broker.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("pipe", 2))["topics"][0]["error_code"] == 0
        set_transaction_version(c, 2)
        pid, _ = init_ok(c, "p")
        for epoch in (0, 1):  # a first transaction, then one right after an EndTxn
            assert send_v2(c, "pipe", txn_batch(pid, epoch, 0, [b"%d-a" % epoch]), "p") == (0, 4 * epoch)
            both = produce("pipe", 0, txn_batch(pid, epoch, 1, [b"%d-b" % epoch]), acks=-1)
            both["topic_data"][0]["partition_data"].append(
                {"index": 1, "records": txn_batch(pid, epoch, 0, [b"%d-x" % epoch])})
            after = produce("pipe", 0, txn_batch(pid, epoch, 2, [b"%d-c" % epoch]), acks=-1)
            cids = []
            for body in (both, after):
                body["transactional_id"] = "p"
                cids.append(c.send(ApiKey.PRODUCE, 12, body))
            for cid, want in zip(cids, ([0, 0], [0])):
                got, r = c.recv(ApiKey.PRODUCE, 12)
                assert got == cid
                assert [p["error_code"] for t in r["responses"] for p in t["partition_responses"]] == want, r
            assert end_v5(c, "p", pid, epoch, True) == (0, pid, epoch + 1)
            wait_for(lambda end=4 * (epoch + 1): lso(c, "pipe") == end)
        _, values = read(c, "pipe", 1)
        assert values == [b"0-a", b"0-b", b"0-c", b"1-a", b"1-b", b"1-c"]
