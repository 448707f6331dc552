"""The transaction coordinator on the wire (raw requests): InitProducerId with a transactional
id, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and TxnOffsetCommit, their errors, fencing,
the produce-side check, read_committed Fetch/ListOffsets, OffsetFetch ``require_stable``,
timeouts, and the Prepare* state completed after a SIGKILL."""

from __future__ import annotations

import time
from typing import Any

from client.protocol.api import ApiKey, ErrorCode, error_name
from client.records import RecordBatchBuilder
from client.records.batch import iter_batch_headers
from client.records.record import iter_records
from tests.broker_process import BrokerProcess
from tests.server.wire import Conn, batch, create_topic, fetch, list_offsets, partition_response, produce

E = ErrorCode


def init_pid(c: Conn, txn_id: str, timeout_ms: int = 60000, *, version: int = 3, pid: int = -1,
             epoch: int = -1) -> dict[str, Any]:
    return c.call(ApiKey.INIT_PRODUCER_ID, version, {"transactional_id": txn_id, "transaction_timeout_ms": timeout_ms,
                                                     "producer_id": pid, "producer_epoch": epoch})


def init_ok(c: Conn, txn_id: str, timeout_ms: int = 60000) -> tuple[int, int]:
    deadline = time.monotonic() + 10
    while True:
        r = init_pid(c, txn_id, timeout_ms)
        if r["error_code"] != E.CONCURRENT_TRANSACTIONS or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert r["error_code"] == 0, error_name(r["error_code"])
    return r["producer_id"], r["producer_epoch"]


def add_partitions(c: Conn, txn_id: str, pid: int, epoch: int, topic: str, parts: list[int],
                   version: int = 3) -> list[int]:
    """The partitions' errors; CONCURRENT_TRANSACTIONS (the previous transaction's markers are
    still being written) is retried, as clients do."""
    deadline = time.monotonic() + 10
    while True:
        r = c.call(ApiKey.ADD_PARTITIONS_TO_TXN, version, {
            "v3_and_below_transactional_id": txn_id, "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": epoch, "v3_and_below_topics": [{"name": topic, "partitions": parts}]})
        codes = [p["partition_error_code"] for t in r["results_by_topic_v3_and_below"] for p in t["results_by_partition"]]
        if E.CONCURRENT_TRANSACTIONS not in codes or time.monotonic() > deadline:
            return codes
        time.sleep(0.02)


def end_txn(c: Conn, txn_id: str, pid: int, epoch: int, commit: bool, version: int = 3) -> int:
    return c.call(ApiKey.END_TXN, version, {"transactional_id": txn_id, "producer_id": pid, "producer_epoch": epoch,
                                            "committed": commit})["error_code"]


def txn_batch(pid: int, epoch: int, seq: int, values: list[bytes]) -> bytes:
    b = RecordBatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=True)
    for v in values:
        b.append(v, b"k")
    return bytes(b.build())


def send(c: Conn, topic: str, records: bytes, txn_id: str | None, version: int = 7) -> tuple[int, int]:
    body = produce(topic, 0, records, acks=-1)
    body["transactional_id"] = txn_id
    p = partition_response(c.call(ApiKey.PRODUCE, version, body))
    return p["error_code"], p["base_offset"]


def read(c: Conn, topic: str, isolation: int) -> tuple[dict[str, Any], list[bytes]]:
    body = fetch(topic, 0, 0)
    body["isolation_level"] = isolation
    p = partition_response(c.call(ApiKey.FETCH, 11, body), "partitions")
    values = []
    data = bytes(p["records"] or b"")
    for h in iter_batch_headers(data):
        if not h.is_control:
            values += [r.value for r in iter_records(data, h.pos)]
    return p, values


def lso(c: Conn, topic: str) -> int:
    body = list_offsets(topic, 0, -1)
    body["isolation_level"] = 1
    return int(partition_response(c.call(ApiKey.LIST_OFFSETS, 5, body), "partitions")["offset"])


def wait_for(pred: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_commit_abort_lso_and_aborted_transactions(broker: BrokerProcess) -> None:
    with Conn(broker.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("t"))["topics"][0]["error_code"] == 0
        pid, epoch = init_ok(c, "app")
        assert epoch == 0
        assert add_partitions(c, "app", pid, epoch, "t", [0]) == [0]
        assert send(c, "t", txn_batch(pid, epoch, 0, [b"a", b"b"]), "app") == (0, 0)
        assert lso(c, "t") == 0  # the open transaction holds the LSO at its first offset
        p, values = read(c, "t", 1)
        assert (p["high_watermark"], p["last_stable_offset"], values) == (2, 0, [])
        assert end_txn(c, "app", pid, epoch, True) == 0
        wait_for(lambda: lso(c, "t") == 3)  # 2 records and the COMMIT marker
        assert add_partitions(c, "app", pid, epoch, "t", [0]) == [0]
        assert send(c, "t", txn_batch(pid, epoch, 2, [b"x"]), "app") == (0, 3)
        assert end_txn(c, "app", pid, epoch, False) == 0
        wait_for(lambda: lso(c, "t") == 5)
        p, values = read(c, "t", 1)
        assert values == [b"a", b"b", b"x"]  # the client drops "x": its transaction is listed as aborted
        assert p["aborted_transactions"] == [{"producer_id": pid, "first_offset": 3}]
        p, _ = read(c, "t", 0)
        assert p["aborted_transactions"] is None
        wait_for(lambda: end_txn(c, "app", pid, epoch, False) != E.CONCURRENT_TRANSACTIONS)  # markers written
        assert end_txn(c, "app", pid, epoch, False) == 0  # a retry of the completed abort
        assert end_txn(c, "app", pid, epoch, True) == E.INVALID_TXN_STATE


def test_errors_fencing_and_the_produce_check(broker: BrokerProcess) -> None:
    with Conn(broker.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("f"))["topics"][0]["error_code"] == 0
        assert init_pid(c, "big", 15 * 60_000 + 1)["error_code"] == E.INVALID_TRANSACTION_TIMEOUT
        assert init_pid(c, "")["error_code"] == E.INVALID_REQUEST
        pid, epoch = init_ok(c, "z")
        assert add_partitions(c, "z", pid + 1, epoch, "f", [0]) == [E.INVALID_PRODUCER_ID_MAPPING]
        assert add_partitions(c, "nobody", pid, epoch, "f", [0]) == [E.INVALID_PRODUCER_ID_MAPPING]
        assert add_partitions(c, "z", pid, epoch, "missing", [0]) == [E.UNKNOWN_TOPIC_OR_PARTITION]
        assert end_txn(c, "z", pid, epoch, True) == E.INVALID_TXN_STATE  # nothing begun
        # a transactional batch to a partition its transaction did not add
        assert send(c, "f", txn_batch(pid, epoch, 0, [b"no"]), "z")[0] == E.INVALID_TXN_STATE
        assert send(c, "f", txn_batch(pid, epoch, 0, [b"no"]), "z", version=11)[0] == E.TRANSACTION_ABORTABLE
        # v12 is v11 here: transaction.version is 0, so a produce never adds its partition (KIP-890 part 2)
        assert send(c, "f", txn_batch(pid, epoch, 0, [b"no"]), "z", version=12)[0] == E.TRANSACTION_ABORTABLE
        assert add_partitions(c, "z", pid, epoch, "f", [0]) == [0]
        assert send(c, "f", txn_batch(pid, epoch, 0, [b"zombie"]), "z") == (0, 0)
        # a second producer with the same id: the open transaction is aborted under a bumped epoch
        r = init_pid(c, "z")
        assert r["error_code"] == E.CONCURRENT_TRANSACTIONS
        pid2, epoch2 = init_ok(c, "z")
        assert (pid2, epoch2) == (pid, epoch + 2)
        assert send(c, "f", txn_batch(pid, epoch, 1, [b"late"]), "z")[0] == E.INVALID_PRODUCER_EPOCH
        assert add_partitions(c, "z", pid, epoch, "f", [0]) == [E.PRODUCER_FENCED]
        assert add_partitions(c, "z", pid, epoch, "f", [0], version=1) == [E.INVALID_PRODUCER_EPOCH]
        assert end_txn(c, "z", pid, epoch, True) == E.PRODUCER_FENCED
        p, values = read(c, "f", 1)
        assert values == [b"zombie"] and p["aborted_transactions"] == [{"producer_id": pid, "first_offset": 0}]
        # InitProducerId v3 with the current id and epoch bumps once; its retry gets the same epoch
        r = init_pid(c, "z", pid=pid2, epoch=epoch2)
        assert (r["error_code"], r["producer_epoch"]) == (0, epoch2 + 1)
        r = init_pid(c, "z", pid=pid2, epoch=epoch2)
        assert (r["error_code"], r["producer_epoch"]) == (0, epoch2 + 1)
        assert init_pid(c, "z", pid=pid2, epoch=epoch2 - 1)["error_code"] == E.PRODUCER_FENCED
        assert init_pid(c, "z", pid=pid2 + 100, epoch=0)["error_code"] == E.PRODUCER_FENCED


def test_offsets_in_a_transaction_are_pending_until_commit(broker: BrokerProcess) -> None:
    def offset_fetch(c: Conn, stable: bool) -> dict[str, Any]:
        r = c.call(ApiKey.OFFSET_FETCH, 7, {"group_id": "g", "topics": [{"name": "in", "partition_indexes": [0]}],
                                            "require_stable": stable})
        return r["topics"][0]["partitions"][0]

    with Conn(broker.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("in"))["topics"][0]["error_code"] == 0
        pid, epoch = init_ok(c, "cp")
        for commit, offset in ((False, 7), (True, 9)):
            def add_offsets() -> int:
                return int(c.call(ApiKey.ADD_OFFSETS_TO_TXN, 0, {"transactional_id": "cp", "producer_id": pid,
                                                                 "producer_epoch": epoch, "group_id": "g"})["error_code"])
            # right after an EndTxn its markers are still being written: CONCURRENT_TRANSACTIONS, retried
            wait_for(lambda: add_offsets() != E.CONCURRENT_TRANSACTIONS)
            assert add_offsets() == 0
            r = c.call(ApiKey.TXN_OFFSET_COMMIT, 3, {
                "transactional_id": "cp", "group_id": "g", "producer_id": pid, "producer_epoch": epoch,
                "generation_id": -1, "member_id": "", "group_instance_id": None,
                "topics": [{"name": "in", "partitions": [{"partition_index": 0, "committed_offset": offset,
                                                          "committed_leader_epoch": -1, "committed_metadata": ""}]}]})
            assert r["topics"][0]["partitions"][0]["error_code"] == 0
            assert offset_fetch(c, True)["error_code"] == E.UNSTABLE_OFFSET_COMMIT
            assert offset_fetch(c, False)["committed_offset"] == -1  # the aborted 7 never became visible
            assert end_txn(c, "cp", pid, epoch, commit) == 0
            wait_for(lambda: offset_fetch(c, True)["error_code"] == 0)
            assert offset_fetch(c, True)["committed_offset"] == (9 if commit else -1)


def test_a_hanging_transaction_is_aborted_at_its_timeout(tmp_path) -> None:
    with BrokerProcess(str(tmp_path / "d"), ["transaction.abort.timed.out.transaction.cleanup.interval.ms=100"]) as b:
        with Conn(b.port) as c:
            assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("h"))["topics"][0]["error_code"] == 0
            pid, epoch = init_ok(c, "hang", timeout_ms=300)
            assert add_partitions(c, "hang", pid, epoch, "h", [0]) == [0]
            assert send(c, "h", txn_batch(pid, epoch, 0, [b"lost"]), "hang") == (0, 0)
            assert lso(c, "h") == 0
            wait_for(lambda: lso(c, "h") == 2)  # the data and the ABORT marker
            p, _ = read(c, "h", 1)
            assert p["aborted_transactions"] == [{"producer_id": pid, "first_offset": 0}]
            assert end_txn(c, "hang", pid, epoch, True) == E.PRODUCER_FENCED  # its epoch was bumped


def test_state_survives_a_sigkill_and_prepared_commits_complete(tmp_path) -> None:
    with BrokerProcess(str(tmp_path / "d")) as b:
        with Conn(b.port) as c:
            assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("k"))["topics"][0]["error_code"] == 0
            pid, epoch = init_ok(c, "crash")
            assert add_partitions(c, "crash", pid, epoch, "k", [0]) == [0]
            assert send(c, "k", txn_batch(pid, epoch, 0, [b"open"]), "crash") == (0, 0)
        b.kill()
        b.start()
        with Conn(b.port) as c:
            wait_for(lambda: init_pid(c, "x")["error_code"] != E.COORDINATOR_LOAD_IN_PROGRESS)
            assert lso(c, "k") == 0  # still open after the restart
            assert end_txn(c, "crash", pid, epoch, True) == 0
            wait_for(lambda: lso(c, "k") == 2)
            _, values = read(c, "k", 1)
            assert values == [b"open"]
            pid2, epoch2 = init_ok(c, "crash")
            assert (pid2, epoch2) == (pid, epoch + 1)


def test_a_lost_marker_is_written_again_by_the_start_up_repair(tmp_path) -> None:
    """A power loss can keep CompleteCommit (made durable by another id's write to the same
    ``__transaction_state`` partition) and lose a marker written but not yet fsync'd. The log is
    cut before the marker here, as that loss would leave it; the repair run at start-up writes a
    COMMIT marker again, and the committed records become visible to read_committed."""
    from broker.testing.inprocess import InProcessBroker

    b = InProcessBroker(str(tmp_path / "d")).start()
    try:
        with Conn(b.port) as c:
            assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("lost"))["topics"][0]["error_code"] == 0
            pid, epoch = init_ok(c, "power")
            assert add_partitions(c, "power", pid, epoch, "lost", [0]) == [0]
            assert send(c, "lost", txn_batch(pid, epoch, 0, [b"kept"]), "power") == (0, 0)
            assert end_txn(c, "power", pid, epoch, True) == 0
            wait_for(lambda: lso(c, "lost") == 2)

            def lose_the_marker() -> int:
                log = b.broker.logs.get_log("lost", 0)
                log.truncate_to(1)  # the record stays, its COMMIT marker at offset 1 goes
                return int(log.last_stable_offset)

            assert b.call(lose_the_marker) == 0  # the transaction is open again in the partition
            assert b.call(lambda: b.broker.state.txn.repair_dangling()) == 1
            assert lso(c, "lost") == 2
            p, values = read(c, "lost", 1)
            assert values == [b"kept"] and p["aborted_transactions"] == []
            assert b.call(lambda: b.broker.state.txn.repair_dangling()) == 0  # nothing left open
    finally:
        b.stop()


def test_list_and_describe_transactions(broker: BrokerProcess) -> None:
    with Conn(broker.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("lt", 2))["topics"][0]["error_code"] == 0
        pid, epoch = init_ok(c, "listed")
        other, _ = init_ok(c, "idle")
        assert add_partitions(c, "listed", pid, epoch, "lt", [1, 0]) == [0, 0]
        r = c.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": ["listed", "nope"]})
        listed, nope = r["transaction_states"]
        assert (listed["error_code"], listed["transaction_state"], listed["producer_id"], listed["producer_epoch"],
                listed["transaction_timeout_ms"], listed["topics"]) == \
            (0, "Ongoing", pid, epoch, 60000, [{"topic": "lt", "partitions": [0, 1]}])
        assert listed["transaction_start_time_ms"] > 0
        assert nope["error_code"] == E.TRANSACTIONAL_ID_NOT_FOUND

        def listing(version: int = 1, **filters: Any) -> dict[str, Any]:
            return c.call(ApiKey.LIST_TRANSACTIONS, version, {"state_filters": [], "producer_id_filters": [],
                                                              "duration_filter": -1, **filters})

        assert [(t["transactional_id"], t["transaction_state"]) for t in listing()["transaction_states"]] == \
            [("idle", "Empty"), ("listed", "Ongoing")]
        r = listing(state_filters=["Ongoing", "Hanging"])
        assert r["unknown_state_filters"] == ["Hanging"]
        assert [t["producer_id"] for t in r["transaction_states"]] == [pid]
        assert [t["transactional_id"] for t in listing(0, producer_id_filters=[other])["transaction_states"]] == ["idle"]
        # none Ongoing for an hour (an Empty id has no start time, -1: Kafka lists it for any duration)
        assert listing(state_filters=["Ongoing"], duration_filter=3_600_000)["transaction_states"] == []
        assert len(listing(state_filters=["Ongoing"], duration_filter=0)["transaction_states"]) == 1
        # v2 (KIP-1152): an RE2 pattern the whole transactional id must match; a bad one is refused
        assert [t["transactional_id"] for t in listing(2, transactional_id_pattern="l.st.*")["transaction_states"]] == \
            ["listed"]
        assert listing(2, transactional_id_pattern="ist")["transaction_states"] == []  # not a search
        assert len(listing(2, transactional_id_pattern="")["transaction_states"]) == 2
        bad = listing(2, transactional_id_pattern="(unclosed")
        assert (bad["error_code"], bad["transaction_states"]) == (E.INVALID_REGULAR_EXPRESSION, [])


def _leo_and_lso(c: Conn, topic: str) -> tuple[int, int, int]:
    """(log end offset, high watermark, last stable offset) of ``topic``-0, from a read_committed Fetch."""
    p, _ = read(c, topic, 1)
    body = list_offsets(topic, 0, -1)
    leo = int(partition_response(c.call(ApiKey.LIST_OFFSETS, 5, body), "partitions")["offset"])
    return leo, p["high_watermark"], p["last_stable_offset"]


def test_a_transactional_batch_without_a_verified_transaction_is_refused(broker: BrokerProcess) -> None:
    """Issue 29 item 6: a transactional batch with a made-up producer id used to be accepted by
    Produce v2 (no transactional_id field), leaving a transaction no coordinator knows, so the
    last stable offset never moved again. Without a transactional id every partition of the
    request is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED (Kafka's handleProduceRequest);
    with one, the coordinator's verification refuses a producer with no Ongoing transaction
    holding the partition. Nothing is written either way."""
    with Conn(broker.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("hang", 2))["topics"][0]["error_code"] == 0
        assert partition_response(c.call(ApiKey.PRODUCE, 7, produce("hang", 0, batch(2))))["error_code"] == 0
        before = _leo_and_lso(c, "hang")
        assert before == (2, 2, 2)
        made_up = txn_batch(424242, 0, 0, [b"hang"])
        for version in (0, 1, 2):
            body = produce("hang", 0, made_up, acks=-1)
            body["topic_data"][0]["partition_data"].append({"index": 1, "records": batch(1)})
            r = c.call(ApiKey.PRODUCE, version, body)
            codes = [p["error_code"] for p in r["responses"][0]["partition_responses"]]
            assert codes == [E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED] * 2, (version, codes)
        # v3+ without a transactional id: the same
        assert send(c, "hang", made_up, None)[0] == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert send(c, "hang", made_up, None, version=11)[0] == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        # acks=0: no answer can carry the error, so the connection is closed (as Kafka does)
        with Conn(broker.port) as c0:
            c0.send(ApiKey.PRODUCE, 2, produce("hang", 0, made_up, acks=0))
            assert c0.is_closed_by_peer()
        # v3+ with a transactional id: a made-up producer id, then the id's own producer with no
        # transaction holding the partition (none begun; then one that added partition 1 only)
        assert send(c, "hang", made_up, "ghost")[0] == E.INVALID_PRODUCER_ID_MAPPING
        pid, epoch = init_ok(c, "real")
        assert send(c, "hang", made_up, "real")[0] == E.INVALID_PRODUCER_ID_MAPPING
        assert send(c, "hang", txn_batch(pid, epoch, 0, [b"x"]), "real")[0] == E.INVALID_TXN_STATE
        assert add_partitions(c, "real", pid, epoch, "hang", [1]) == [0]
        assert send(c, "hang", txn_batch(pid, epoch, 0, [b"x"]), "real", version=3)[0] == E.INVALID_TXN_STATE
        assert _leo_and_lso(c, "hang") == before  # nothing written, nothing left open
        # a batch that is not transactional still goes in through Produce v2
        assert partition_response(c.call(ApiKey.PRODUCE, 2, produce("hang", 0, batch(1))))["error_code"] == 0
        assert _leo_and_lso(c, "hang") == (3, 3, 3)
