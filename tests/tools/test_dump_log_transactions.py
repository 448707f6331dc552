"""dump-log on the files transactions leave: control records and transactional batches in a
partition's ``.log``, its ``.txnindex``, and ``__transaction_state`` with
``--transaction-log-decoder``. The files come from a real broker driven by librdkafka's
transactional producer, and from Log.append with markers for exact expected values."""

from __future__ import annotations

import glob
import io
import os
import re
import struct
from pathlib import Path

import pytest
from confluent_kafka import Producer

from broker.__main__ import main
from broker.storage.config import LogConfig
from broker.storage.log import Log
from broker.testing import BrokerProcess, create_topic
from broker.tools.dump_log import dump_files
from broker.tools.transaction_log_decoder import describe_transaction_log_record
from broker.txn.records import TRANSACTION_STATE, TxnLogValue, TxnState, encode_txn_key, encode_txn_value, partition_for
from client.records import RecordBatchBuilder
from client.records.control import build_control_batch


def dump(*paths: Path | str, **kwargs) -> tuple[int, list[str], list[str]]:
    out, err = io.StringIO(), io.StringIO()
    rc = dump_files([str(p) for p in paths], out=out, err=err, **kwargs)
    return rc, out.getvalue().splitlines(), err.getvalue().splitlines()


@pytest.fixture(scope="module")
def txn_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A broker's data directory after one committed and one aborted transaction of
    transactional id ``dump-tx`` on ``t-0`` (records flushed before the abort, so they are in
    the log), then a clean shutdown."""
    data = tmp_path_factory.mktemp("dump-txn") / "data"
    with BrokerProcess(str(data)) as b:
        create_topic(b.bootstrap_servers, "t", 1)
        p = Producer({"bootstrap.servers": b.bootstrap_servers, "transactional.id": "dump-tx",
                      "transaction.timeout.ms": 45_000})
        p.init_transactions(30)
        p.begin_transaction()
        p.produce("t", b"committed-1", key=b"k1")
        p.produce("t", b"committed-2", key=b"k2")
        p.commit_transaction(30)
        p.begin_transaction()
        p.produce("t", b"aborted", key=b"k1")
        p.flush(30)
        p.abort_transaction(30)
    return data


def test_markers_and_transactional_batches_of_a_real_transaction(txn_data: Path) -> None:
    rc, out, err = dump(txn_data / "t-0" / "00000000000000000000.log", print_data_log=True)
    assert rc == 0 and err == []
    batches = [line for line in out if line.startswith("baseOffset: ")]
    records = [line for line in out if line.startswith("| ")]
    pid = int(re.search(r" producerId: (\d+) ", batches[0]).group(1))  # type: ignore[union-attr]
    assert pid >= 0
    # Data batches: transactional, not control; markers: both flags, no sequence.
    flags = [re.search(r"isTransactional: (\w+) isControl: (\w+)", b).groups() for b in batches]  # type: ignore[union-attr]
    assert flags[0] == ("true", "false") and flags[-1] == ("true", "true")
    assert all(f" producerId: {pid} producerEpoch: 0 " in b for b in batches)
    markers = [r for r in records if "endTxnMarker" in r]
    assert [m.split(" headerKeys: [] ")[1] for m in markers] == [
        "endTxnMarker: COMMIT coordinatorEpoch: 0", "endTxnMarker: ABORT coordinatorEpoch: 0"]
    assert all(" keySize: 4 valueSize: 6 sequence: -1 " in m and " payload:" not in m for m in markers)
    data = [r for r in records if "endTxnMarker" not in r]
    assert [r.split(" key: ")[1] for r in data] == ["k1 payload: committed-1", "k2 payload: committed-2",
                                                    "k1 payload: aborted"]
    # Offsets: 0-1 committed data, 2 COMMIT, 3 aborted data, 4 ABORT.
    assert [int(r.split()[2]) for r in records] == [0, 1, 2, 3, 4]


def test_txnindex_of_a_real_abort(txn_data: Path) -> None:
    path = txn_data / "t-0" / "00000000000000000000.txnindex"
    rc, out, err = dump(path)
    assert rc == 0 and err == []
    _, log_out, _ = dump(txn_data / "t-0" / "00000000000000000000.log")
    pid = int(re.search(r" producerId: (\d+) ", log_out[2]).group(1))  # type: ignore[union-attr]
    # The aborted transaction's data at 3, its marker at 4; nothing else open: LSO 5.
    assert out == [f"Dumping {path}", f"version: 0 producerId: {pid} firstOffset: 3 lastOffset: 4 lastStableOffset: 5"]


def test_transaction_state_log_decoded_as_kafka_prints_it(txn_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = sorted(glob.glob(os.path.join(txn_data, f"{TRANSACTION_STATE}-{partition_for('dump-tx', 50)}", "*.log")))
    assert files
    assert main(["dump-log", "--transaction-log-decoder", *files]) == 0
    text = capsys.readouterr().out
    found = re.findall(r" key: transaction_metadata::transactionalId=dump-tx payload: producerId:(\d+),"
                       r"producerEpoch:(\d+),state=(\w+),partitions=\[(.*?)\],txnLastUpdateTimestamp=(\d+),"
                       r"txnTimeoutMs=(\d+)$", text, re.M)
    assert [f[2] for f in found] == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit", "Ongoing",
                                     "PrepareAbort", "CompleteAbort"]
    assert {f[5] for f in found} == {"45000"}
    assert {(f[0], f[1]) for f in found} == {(found[0][0], "0")}
    assert [f[3] for f in found] == ["", "t-0", "t-0", "", "t-0", "t-0", ""]
    stamps = [int(f[4]) for f in found]
    assert stamps == sorted(stamps)
    # The records' own lines carry no raw payload: every data record was decoded.
    records = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(records) == len(found)


def test_txnindex_and_markers_written_by_log_append(tmp_path: Path) -> None:
    """Exact values: two producers, the first's transaction aborted while the second's is open
    (so its entry's last stable offset is the open transaction's first offset)."""
    log = Log.load(str(tmp_path / "t-0"), "t", 0, LogConfig())

    def txn_batch(pid: int, seq: int, key: bytes) -> bytearray:
        b = RecordBatchBuilder(producer_id=pid, producer_epoch=1, base_sequence=seq, is_transactional=True)
        b.append(b"v", key=key, timestamp=1_700_000_000_000)
        return b.build()

    log.append(txn_batch(7, 0, b"a"))                                             # 0: pid 7 opens
    log.append(txn_batch(8, 0, b"b"))                                             # 1: pid 8 opens
    log.append(build_control_batch(7, 1, commit=False, coordinator_epoch=3, timestamp_ms=1), from_coordinator=True)
    log.append(txn_batch(7, 1, b"c"))                                             # 3: pid 7 again
    log.append(build_control_batch(8, 1, commit=True, coordinator_epoch=3, timestamp_ms=2), from_coordinator=True)
    log.append(build_control_batch(7, 1, commit=False, coordinator_epoch=4, timestamp_ms=3), from_coordinator=True)
    log.close()
    d = tmp_path / "t-0"
    rc, out, err = dump(d / "00000000000000000000.txnindex")
    assert rc == 0 and err == []
    assert out[1:] == ["version: 0 producerId: 7 firstOffset: 0 lastOffset: 2 lastStableOffset: 1",
                       "version: 0 producerId: 7 firstOffset: 3 lastOffset: 5 lastStableOffset: 6"]
    rc, out, err = dump(d / "00000000000000000000.log", deep_iteration=True)
    assert rc == 0
    assert [line.split(" headerKeys: [] ")[1] for line in out if "endTxnMarker" in line] == [
        "endTxnMarker: ABORT coordinatorEpoch: 3", "endTxnMarker: COMMIT coordinatorEpoch: 3",
        "endTxnMarker: ABORT coordinatorEpoch: 4"]


def test_a_damaged_txnindex_is_reported(tmp_path: Path) -> None:
    good = struct.pack(">hqqqq", 0, 5, 10, 12, 13)
    torn = tmp_path / "00000000000000000010.txnindex"
    torn.write_bytes(good + good[:20])
    rc, out, err = dump(torn)
    assert rc == 1
    assert out[1:] == ["version: 0 producerId: 5 firstOffset: 10 lastOffset: 12 lastStableOffset: 13"]
    assert err == ["Found 20 invalid bytes at the end of 00000000000000000010.txnindex"]
    future = tmp_path / "00000000000000000020.txnindex"
    future.write_bytes(good + struct.pack(">hqqqq", 1, 5, 20, 22, 23) + good)
    rc, out, err = dump(future)
    assert rc == 1 and len(out) == 2
    assert err == [f"Unexpected aborted transaction version 1 in transaction index {future}, current version is 0"]
    empty = tmp_path / "00000000000000000030.txnindex"
    empty.write_bytes(b"")
    assert dump(empty)[:2] == (0, [f"Dumping {empty}"])
    rc, _, err = dump(tmp_path / "00000000000000000040.txnindex")
    assert rc == 1 and "No such file or directory" in err[0]


def test_transaction_log_records_of_every_kind() -> None:
    key = encode_txn_key("tx")
    ongoing = TxnLogValue(1000, 3, 60_000, TxnState.ONGOING, (("a", 1), ("a", 0), ("b", 2)), 1_700_000_000_000, 5)
    assert describe_transaction_log_record(key, encode_txn_value(ongoing), 0) == (
        " key: transaction_metadata::transactionalId=tx payload: producerId:1000,producerEpoch:3,state=Ongoing,"
        "partitions=[a-0,a-1,b-2],txnLastUpdateTimestamp=1700000000000,txnTimeoutMs=60000")
    # Kafka reads no partitions for the Empty state, whatever the record holds.
    empty = ongoing._replace(state=TxnState.EMPTY)
    assert ",state=Empty,partitions=[]," in describe_transaction_log_record(key, encode_txn_value(empty), 0)
    fence = ongoing._replace(state=TxnState.PREPARE_EPOCH_FENCE)
    assert ",state=PrepareEpochFence," in describe_transaction_log_record(key, encode_txn_value(fence), 0)
    assert describe_transaction_log_record(key, None, 4) == (
        " key: transaction_metadata::transactionalId=tx payload: <DELETE>")
    assert describe_transaction_log_record(b"\x00\x07junk", b"x", 5) == " key: unknown::version=7"
    assert describe_transaction_log_record(None, b"x", 6) == (
        " key: Failed to decode message at offset 6 using transaction log decoder (message had a missing key)")
    bad_value = describe_transaction_log_record(key, b"\x00\x09" + b"\x00" * 30, 7)
    assert bad_value.startswith(" key: Error at offset 7, skipping. ") and "version 9" in bad_value
    assert describe_transaction_log_record(key, b"\x00\x00\x00", 8).startswith(" key: Error at offset 8, skipping. ")
    assert describe_transaction_log_record(b"\x00", None, 9).startswith(" key: Error at offset 9, skipping. ")
