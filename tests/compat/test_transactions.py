"""Kafka transactions with third-party clients, and what survives a crash.

- confluent-kafka consume-transform-produce (tests/compat/txn_worker.py) SIGKILLed again and
  again and restarted with the same ``transactional.id``: the output read with read_committed
  holds each input record's result exactly once.
- the broker SIGKILLed while a producer commits transactions spanning several partitions: after
  every restart each transaction is wholly visible or wholly absent to read_committed, every
  acknowledged commit is visible, and no partition's last stable offset (LSO) moves back.
- a power loss just after a PrepareCommit reached the disk (simulated by cutting the files back
  to that point): the coordinator writes the markers at start-up and the transaction appears.
- a hanging transaction (its producer SIGKILLed) is aborted at its timeout; the LSO moves past
  it and read_committed consumers go on.
- kafka-python and aiokafka transactional producers (aiokafka with
  ``send_offsets_to_transaction``) and their read_committed consumers, and kcat.
- transactions V2 (KIP-890 part 2) at ``transaction.version`` 2 (finalized with kafka-python's
  ``update_features``): our producer, the one client here that speaks them (librdkafka 2.16
  sends EndTxn v0-1, kafka-python 3 caps it at v3, KafkaJS and @platformatic/kafka at v1 and
  v4), beside confluent-kafka and kafka-python on the older protocol at the same time; and
  @platformatic/kafka, which adds partitions with AddPartitionsToTxn v5 (the brokers' form).
- the partitions' files read by a decoder written here from Kafka's formats (no broker code):
  the ``.txnindex`` holds one entry per aborted transaction with data in the partition, and the
  COMMIT/ABORT control batches sit where the transactions ended.
"""

from __future__ import annotations

import asyncio
import glob
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import crc32c
import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from broker.testing import create_topic
from client.protocol.api import ApiKey
from tests.broker_process import BrokerProcess
from tests.server.wire import Conn

from ._clients import KCAT, KCAT_MISSING, KP_TIMEOUTS, NODE_DIR, PK_MISSING, aio_consume, kcat, kp_consume

ROOT = Path(__file__).resolve().parents[2]
#: the coordinator looks for timed-out transactions this often (Kafka's default: 10 s)
FAST_TXN_CHECKS = ["transaction.abort.timed.out.transaction.cleanup.interval.ms=100"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def txn_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for the tests that do not kill it, checking for timed-out transactions often."""
    b = BrokerProcess(str(tmp_path_factory.mktemp("txn") / "data"), FAST_TXN_CHECKS).start()
    try:
        yield b
    finally:
        rc = b.stop()
        assert rc == 0, f"broker exited with {rc}:\n{b.log_text()}"


def wait_for(cond: Callable[[], Any], timeout: float, what: str, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


# ---------------------------------------------------------------- reading back


def last_stable_offsets(port: int, topic: str, partitions: int) -> dict[int, int]:
    """ListOffsets (v5, timestamp -1 = latest) with isolation_level=1 (read_committed): the LSO."""
    with Conn(port) as c:
        resp = c.call(ApiKey.LIST_OFFSETS, 5, {"replica_id": -1, "isolation_level": 1, "topics": [
            {"name": topic, "partitions": [{"partition_index": p, "timestamp": -1} for p in range(partitions)]}]})
    out = {}
    for p in resp["topics"][0]["partitions"]:
        assert p["error_code"] == 0, p
        out[p["partition_index"]] = p["offset"]
    return out


def high_watermarks(port: int, topic: str, partitions: int) -> dict[int, int]:
    with Conn(port) as c:
        resp = c.call(ApiKey.LIST_OFFSETS, 5, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": p, "timestamp": -1} for p in range(partitions)]}]})
    return {p["partition_index"]: p["offset"] for p in resp["topics"][0]["partitions"]}


class Got(NamedTuple):
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def ck_read_all(bootstrap: str, topic: str, partitions: int, committed: bool = True,
                timeout: float = 20.0) -> list[Got]:
    """Every record of ``topic`` a confluent-kafka consumer sees from offset 0 to the end (with
    read_committed: the LSO), which librdkafka reports with a partition EOF event."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "txn-reader", "enable.auto.commit": False,
                  "isolation.level": "read_committed" if committed else "read_uncommitted",
                  "enable.partition.eof": True, "fetch.wait.max.ms": 50, "socket.timeout.ms": 5000})
    out: list[Got] = []
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        at_end: set[int] = set()
        deadline = time.monotonic() + timeout
        while len(at_end) < partitions:
            assert time.monotonic() < deadline, f"read {len(out)} records, no end of partitions {at_end}"
            for m in c.consume(10000, timeout=0.2):
                err = m.error()
                if err is not None:
                    assert err.code() == KafkaError._PARTITION_EOF, err
                    at_end.add(m.partition())
                    continue
                at_end.discard(m.partition())
                out.append(Got(m.partition() or 0, m.offset() or 0, m.key(), m.value()))
    finally:
        c.close()
    return out


# ---------------------------------------------------------------- worker SIGKILLed


class TxnWorker:
    """tests/compat/txn_worker.py in a child process."""

    def __init__(self, tmp: Path, n: int, bootstrap: str, *args: str) -> None:
        self.progress = tmp / f"worker-{n}.progress"
        self.stop_file = tmp / "stop"
        self.log = open(tmp / f"worker-{n}.log", "w")  # closed in kill()/wait()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.compat.txn_worker", bootstrap, *args, "--progress", str(self.progress),
             "--stop", str(self.stop_file)], cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT)

    def events(self) -> list[str]:
        try:
            return self.progress.read_text().splitlines()
        except FileNotFoundError:
            return []

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self.log.close()

    def output(self) -> str:
        return Path(self.log.name).read_text()


@pytest.mark.slow
def test_confluent_consume_transform_produce_exactly_once_across_sigkills(tmp_path: Path) -> None:
    """The worker is SIGKILLed 8-12 times, at random moments or as a commit starts; twice the
    broker is SIGKILLed first, under the running worker, which reconnects and commits again
    before it is killed in turn (its open transaction and pending transactional offsets come
    back from ``__transaction_state``, ``__consumer_offsets`` and the producer state)."""
    b = BrokerProcess(str(tmp_path / "data"), FAST_TXN_CHECKS, port=_free_port()).start()
    bs, parts, n = b.bootstrap, 3, 900
    create_topic(bs, "ctp-in", parts)
    create_topic(bs, "ctp-out", parts)
    p = Producer({"bootstrap.servers": bs, "linger.ms": 5})
    for i in range(n):
        p.produce("ctp-in", b"r%04d" % i, partition=i % parts)
    assert p.flush(10) == 0
    del p
    args = ("ctp-in", "ctp-out", "ctp-group", "ctp-worker", "--every", "30", "--delay-ms", "3")
    rng = random.Random(16)
    kills = rng.randint(8, 12)
    lives: list[list[str]] = []
    workers: list[TxnWorker] = []
    try:
        for life in range(kills):
            w = TxnWorker(tmp_path, life, bs, *args)
            workers.append(w)
            wait_for(lambda w=w: "ready" in w.events() or w.proc.poll() is not None, 30, f"worker {life} to be ready")
            assert w.proc.poll() is None, w.output()
            if life % 4 == 3:  # the broker dies under the worker
                time.sleep(rng.uniform(0.05, 0.4))
                b.kill()
                b.start()
                # ...and carries on: it commits twice more (the first may be the one it was in)
                done = sum(e.startswith("commit ") for e in w.events())
                wait_for(lambda w=w, done=done: sum(e.startswith("commit ") for e in w.events()) > done + 1
                         or w.proc.poll() is not None, 30, f"worker {life} to commit after the broker's restart")
                assert w.proc.poll() is None, w.output()
            elif life % 2:  # at a random moment, most likely while records are being produced
                time.sleep(rng.uniform(0.05, 0.6))
            else:  # as soon as the k-th commit starts: during send_offsets or commit_transaction
                k = rng.randint(1, 4)
                wait_for(lambda w=w, k=k: w.events().count("committing") >= k or w.proc.poll() is not None, 30,
                         f"worker {life} to commit", interval=0.001)
            w.kill()
            lives.append(w.events())
        (tmp_path / "stop").touch()
        last = TxnWorker(tmp_path, kills, bs, *args)
        workers.append(last)
        assert last.proc.wait(60) == 0, last.output()
        lives.append(last.events())
    finally:
        for w in workers:
            if w.proc.poll() is None:
                w.kill()
        rc = b.stop()
    assert rc == 0, b.log_text()
    b.start()  # read back after a clean restart: what was committed stays committed
    try:
        check_transformed_once(b.bootstrap, parts, n, lives)
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "ctp-group"})
        try:  # the group's offsets, committed with the transactions, are at the input's end
            assert [tp.offset for tp in c.committed([TopicPartition("ctp-in", q) for q in range(parts)], 10)] == [
                n // parts] * parts
        finally:
            c.close()
    finally:
        rc = b.stop()
    assert rc == 0, b.log_text()


def check_transformed_once(bs: str, parts: int, n: int, lives: list[list[str]]) -> None:
    """ctp-out read with read_committed holds one result per input record, and the kills did
    leave aborted results behind (read_uncommitted sees more)."""
    got = ck_read_all(bs, "ctp-out", parts)
    keys = sorted(g.key or b"" for g in got)
    want = sorted(f"{i % parts}:{i // parts}".encode() for i in range(n))
    dups = len(keys) - len(set(keys))
    assert keys == want, (f"{len(keys)} records ({dups} duplicates), {len(set(want) - set(keys))} missing;"
                          f" lives: {[ev[-3:] for ev in lives]}")
    for g in got:  # each result went to its input's partition, transformed
        src_p, src_o = map(int, (g.key or b"").split(b":"))
        assert g.partition == src_p and g.value == b"r%04d:out" % (src_o * parts + src_p)
    # The kills did interrupt transactions: some lives ended inside one, and the records those
    # wrote are in the log (read_uncommitted sees them) but were never delivered above.
    interrupted = sum(1 for ev in lives[:-1] if ev and ev[-1] in ("begin", "committing"))
    raw = ck_read_all(bs, "ctp-out", parts, committed=False)
    assert interrupted >= 1 and len(raw) > n, (interrupted, len(raw), [ev[-3:] for ev in lives])
    assert lives[-1][-1] == "closed"


# ---------------------------------------------------------------- broker SIGKILLed


class CommitLoop(threading.Thread):
    """A confluent-kafka transactional producer committing transaction after transaction, each
    writing ``per_partition`` records ``b"<txn>:<partition>:<k>"`` to every partition. A commit
    that fails is retried while retriable, else the transaction is aborted (or the producer
    replaced, whose InitProducerId fences and aborts what its predecessor left open); either
    way its outcome is unknown to the test. ``acked``: the transactions whose commit returned."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.partitions, self.per_partition = bootstrap, topic, partitions, per_partition
        self.acked: list[int] = []
        self.started = 0  # transactions begun
        self.replaced = 0  # producers replaced after a fatal error
        self.committed = threading.Event()  # set at every successful commit
        self.pause = threading.Event()
        self.paused = threading.Event()
        self.stop = threading.Event()
        self.failure: BaseException | None = None

    def _producer(self) -> Producer:
        p = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": "sigkill-committer",
                      "transaction.timeout.ms": 10000, "linger.ms": 1, "socket.timeout.ms": 3000,
                      "retry.backoff.ms": 50, "reconnect.backoff.max.ms": 200,
                      "metadata.recovery.strategy": "none"})  # see txn_worker.py
        p.init_transactions(30)
        return p

    def _commit(self, p: Producer) -> bool:
        while True:
            try:
                p.commit_transaction(10)
                return True
            except KafkaException as e:
                err = e.args[0]
                if err.retriable():
                    continue
                if err.txn_requires_abort():
                    p.abort_transaction(10)
                    return False
                raise

    def run(self) -> None:
        try:
            p = self._producer()
            while not self.stop.is_set():
                if self.pause.is_set():
                    self.paused.set()
                    time.sleep(0.01)
                    continue
                self.paused.clear()
                i = self.started
                self.started += 1
                try:
                    p.begin_transaction()
                    for part in range(self.partitions):
                        for k in range(self.per_partition):
                            p.produce(self.topic, b"%d:%d:%d" % (i, part, k), partition=part)
                    if self._commit(p):
                        self.acked.append(i)
                        self.committed.set()
                except KafkaException:
                    self.replaced += 1
                    p = self._producer()
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.failure = e
            self.paused.set()


def check_whole_transactions(got: list[Got], partitions: int, per_partition: int, acked: list[int]) -> set[int]:
    """Every transaction in ``got`` is there whole (all its records in every partition, once
    each, in order) and every acknowledged one is there; the transactions seen."""
    by_txn: dict[int, list[tuple[int, int]]] = {}
    for g in got:
        txn, part, k = map(int, (g.value or b"").split(b":"))
        assert g.partition == part, g
        by_txn.setdefault(txn, []).append((part, k))
    whole = sorted((part, k) for part in range(partitions) for k in range(per_partition))
    partial = {t: sorted(v) for t, v in by_txn.items() if sorted(v) != whole}
    assert not partial, f"transactions seen in part or twice: {partial}"
    missing = set(acked) - set(by_txn)
    assert not missing, f"acknowledged commits not visible: {sorted(missing)}"
    offsets: dict[int, list[int]] = {}
    for g in got:
        offsets.setdefault(g.partition, []).append(g.offset)
    assert all(o == sorted(set(o)) for o in offsets.values()), "offsets out of order or repeated"
    return set(by_txn)


@pytest.mark.slow
def test_broker_sigkilled_while_committing_keeps_transactions_whole(tmp_path: Path) -> None:
    parts, per_part, kills = 4, 5, 5
    b = BrokerProcess(str(tmp_path / "data"), FAST_TXN_CHECKS, port=_free_port()).start()
    create_topic(b.bootstrap, "sigkill-txn", parts)
    loop = CommitLoop(b.bootstrap, "sigkill-txn", parts, per_part)
    samples: list[dict[int, int]] = []  # LSOs, in the order they were read
    broker_up = threading.Lock()  # held by the sampler while it asks, by the test while the broker is down

    sampler_failure: list[BaseException] = []

    def sample() -> None:
        try:
            while not loop.stop.is_set():
                with broker_up:
                    samples.append(last_stable_offsets(b.port, "sigkill-txn", parts))
                time.sleep(0.02)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            sampler_failure.append(e)

    sampler = threading.Thread(target=sample, daemon=True)
    rng = random.Random(1616)
    completed_at_start = 0
    seen: set[int] = set()
    loop.start()
    sampler.start()
    try:
        for kill in range(kills):
            loop.committed.clear()
            if kill % 2:
                time.sleep(rng.uniform(0.2, 0.6))  # anywhere in a transaction's life
            else:  # just after a commit was acknowledged: its markers may not all be written yet
                assert loop.committed.wait(30), f"no commit before kill {kill}"
            with broker_up:
                b.kill()
                before = samples[-1] if samples else None
                b.start()
            completed_at_start += sum("left by the last run" in line for line in b.output)
            loop.committed.clear()
            assert loop.committed.wait(30), f"no commit after restart {kill}; {loop.failure!r}"
            # Quiesce: no transaction open, so every partition is read at the same cut.
            loop.pause.set()
            assert loop.paused.wait(30) and loop.failure is None, loop.failure
            hw = high_watermarks(b.port, "sigkill-txn", parts)
            wait_for(lambda hw=hw: last_stable_offsets(b.port, "sigkill-txn", parts) == hw, 15,
                     f"the LSO to reach the high watermark {hw}")
            got = ck_read_all(b.bootstrap, "sigkill-txn", parts)
            now_seen = check_whole_transactions(got, parts, per_part, loop.acked)
            assert seen <= now_seen, f"transactions that disappeared: {sorted(seen - now_seen)}"
            seen = now_seen
            assert before is None or all(samples[-1][p] >= before[p] for p in range(parts))
            loop.pause.clear()
            loop.paused.clear()
        loop.stop.set()
        loop.join(30)
        sampler.join(5)
        assert loop.failure is None, loop.failure
        assert not sampler.is_alive() and not sampler_failure, sampler_failure
        for p in range(parts):  # the LSO never moved back, across all the restarts
            seq = [s[p] for s in samples]
            assert seq == sorted(seq), f"partition {p}: LSO went back: {[x for x in zip(seq, seq[1:]) if x[1] < x[0]]}"
        assert len(loop.acked) >= kills and len(seen) >= len(loop.acked)
        print(f"{loop.started} transactions begun, {len(loop.acked)} acknowledged, {len(seen)} visible,"
              f" {loop.replaced} producers replaced, {completed_at_start} Prepare* completed at start-up,"
              f" {len(samples)} LSO samples")
        assert b.stop() == 0, b.log_text()
    finally:
        loop.stop.set()
        b.kill()  # after a failure: the broker must not outlive the test


# ---------------------------------------------------------------- the files, decoded here
#
# Written from Kafka's formats, importing nothing of the broker's:
#
#   RecordBatch v2 (61-byte header, big-endian): int64 base_offset | int32 batch_length |
#   int32 partition_leader_epoch | int8 magic (2) | uint32 crc (CRC-32C of the bytes after
#   it) | int16 attributes (bits 0-2 codec, 0x10 transactional, 0x20 control) |
#   int32 last_offset_delta | int64 base_timestamp | int64 max_timestamp | int64 producer_id |
#   int16 producer_epoch | int32 base_sequence | int32 records_count, then the records:
#   varint length | int8 attributes | varlong timestamp_delta | varint offset_delta |
#   varint key_length | key | varint value_length | value | varint header_count | headers
#   (varints zigzag-encoded; -1 length = null).
#
#   A control batch holds one record: key int16 version (0) | int16 type (0 ABORT, 1 COMMIT),
#   value int16 version (0) | int32 coordinator_epoch.
#
#   .txnindex: 34-byte entries int16 version (0) | int64 producer_id | int64 first_offset |
#   int64 last_offset | int64 last_stable_offset.

_BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")
_TXN_ENTRY = struct.Struct(">hqqqq")
ABORT, COMMIT = 0, 1


class Batch(NamedTuple):
    path: str
    position: int
    base_offset: int
    last_offset: int
    attributes: int
    producer_id: int
    producer_epoch: int
    records: list[tuple[int, bytes | None, bytes | None]]  # (offset, key, value)

    @property
    def transactional(self) -> bool:
        return bool(self.attributes & 0x10)

    @property
    def control(self) -> tuple[int, int] | None:
        """(type, coordinator epoch) of a control batch, None for a data batch."""
        if not self.attributes & 0x20:
            return None
        assert len(self.records) == 1, self
        _, key, value = self.records[0]
        assert key is not None and value is not None and len(key) == 4 and len(value) == 6, self
        kv, kind = struct.unpack(">hh", key)
        vv, coordinator_epoch = struct.unpack(">hi", value)
        assert kv == 0 and vv == 0, (kv, vv)
        return kind, coordinator_epoch


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def _bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    n, pos = _varint(buf, pos)
    return (None, pos) if n < 0 else (buf[pos:pos + n], pos + n)


def decode_log_file(path: str) -> list[Batch]:
    """Every batch of a ``.log`` file, CRC-checked; only uncompressed batches (the tests here
    produce without compression). Stops at a zero-length tail (a preallocated file)."""
    with open(path, "rb") as f:
        buf = f.read()
    out, pos = [], 0
    while pos + 12 <= len(buf):
        (base, length, _, magic, crc, attrs, last_delta, _, _, pid, epoch, _, count) = \
            _BATCH_HEADER.unpack_from(buf, pos)
        if length == 0:
            break
        end = pos + 12 + length
        assert magic == 2 and end <= len(buf), f"{path}: bad batch at byte {pos}"
        assert crc32c.crc32c(buf[pos + 21:end]) == crc, f"{path}: CRC mismatch at byte {pos}"
        assert attrs & 0x07 == 0, f"{path}: compressed batch at byte {pos}"
        records, rpos = [], pos + _BATCH_HEADER.size
        for _ in range(count):
            size, rpos = _varint(buf, rpos)
            rec_end = rpos + size
            rpos += 1  # attributes
            _, rpos = _varint(buf, rpos)  # timestamp delta
            delta, rpos = _varint(buf, rpos)
            key, rpos = _bytes(buf, rpos)
            value, rpos = _bytes(buf, rpos)
            records.append((base + delta, key, value))
            rpos = rec_end
        assert rpos == end, f"{path}: records do not fill the batch at byte {pos}"
        out.append(Batch(path, pos, base, base + last_delta, attrs, pid, epoch, records))
        pos = end
    return out


def partition_dir(data_dir: str, topic: str, partition: int) -> str:
    return os.path.join(data_dir, f"{topic}-{partition}")


def decode_partition(data_dir: str, topic: str, partition: int) -> list[Batch]:
    return [b for path in sorted(glob.glob(os.path.join(partition_dir(data_dir, topic, partition), "*.log")))
            for b in decode_log_file(path)]


def decode_txn_index(data_dir: str, topic: str, partition: int) -> list[tuple[int, int, int, int]]:
    """(producer_id, first_offset, last_offset, last_stable_offset) of every ``.txnindex`` entry."""
    out = []
    for path in sorted(glob.glob(os.path.join(partition_dir(data_dir, topic, partition), "*.txnindex"))):
        data = Path(path).read_bytes()
        assert len(data) % _TXN_ENTRY.size == 0, f"{path}: {len(data)} bytes"
        for version, pid, first, last, lso in _TXN_ENTRY.iter_unpack(data):
            assert version == 0, path
            out.append((pid, first, last, lso))
    return out


def expected_txn_index(batches: list[Batch]) -> list[tuple[int, int, int, int]]:
    """The entries Kafka's rule gives for these batches: at every ABORT marker of a producer
    with an open transaction here, (producer, its first offset, the marker's offset, the first
    offset of the oldest other open transaction, else the marker's offset + 1)."""
    open_txns: dict[int, int] = {}
    out = []
    for b in batches:
        ctl = b.control
        if ctl is None:
            if b.transactional:
                open_txns.setdefault(b.producer_id, b.base_offset)
            continue
        first = open_txns.pop(b.producer_id, None)
        if ctl[0] == ABORT and first is not None:
            out.append((b.producer_id, first, b.base_offset, min(open_txns.values(), default=b.base_offset + 1)))
    return out


def txn_state_records(data_dir: str, txn_id: str) -> list[tuple[Batch, int]]:
    """(batch, status) of every ``__transaction_state`` record of ``txn_id``, in log order.
    Key: int16 version 0 | string id; value: int16 version | int64 producer_id |
    int16 epoch | int32 timeout | int8 status | ... (status: 2 PrepareCommit, 4 CompleteCommit)."""
    out = []
    for d in sorted(glob.glob(os.path.join(data_dir, "__transaction_state-*"))):
        for path in sorted(glob.glob(os.path.join(d, "*.log"))):
            for b in decode_log_file(path):
                for _, key, value in b.records:
                    assert key is not None
                    kv, n = struct.unpack_from(">hh", key)
                    if kv == 0 and key[4:4 + n].decode() == txn_id and value is not None:
                        out.append((b, value[2 + 8 + 2 + 4]))
    return out


# ---------------------------------------------------------------- .txnindex and markers


def ck_txn_producer(bootstrap: str, txn_id: str, **extra: Any) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "compression.type": "none",
                  "linger.ms": 1, "socket.timeout.ms": 5000, **extra})
    p.init_transactions(30)
    return p


def ck_send(p: Producer, topic: str, items: list[tuple[int, bytes]]) -> list[int]:
    """Produce ``(partition, value)`` items and flush; their offsets."""
    offsets: list[int] = [-1] * len(items)
    for i, (part, value) in enumerate(items):
        p.produce(topic, value, partition=part,
                  on_delivery=lambda err, m, i=i: offsets.__setitem__(i, m.offset() if err is None else -2))
    assert p.flush(10) == 0 and min(offsets) >= 0, offsets
    return offsets


def test_txnindex_and_control_batches_match_what_the_producers_did(txn_broker: BrokerProcess) -> None:
    bs, topic = txn_broker.bootstrap, "txnindex"
    create_topic(bs, topic, 2)
    plain = Producer({"bootstrap.servers": bs, "compression.type": "none", "linger.ms": 1})
    a = ck_txn_producer(bs, "idx-a")
    x = ck_txn_producer(bs, "idx-x")

    def txn(p: Producer, items: list[tuple[int, bytes]], commit: bool) -> list[int]:
        p.begin_transaction()
        offs = ck_send(p, topic, items)
        (p.commit_transaction if commit else p.abort_transaction)(10)
        return offs

    ck_send(plain, topic, [(0, b"n1"), (0, b"n2")])
    t1 = txn(a, [(0, b"a1"), (0, b"a1"), (0, b"a1"), (1, b"a1"), (1, b"a1")], commit=True)
    t2 = txn(a, [(0, b"a2"), (0, b"a2")], commit=False)
    x.begin_transaction()  # open across a's next abort: that entry's last stable offset is x's first offset
    x1 = ck_send(x, topic, [(0, b"x1")])
    t3 = txn(a, [(0, b"a3"), (0, b"a3"), (1, b"a3")], commit=False)
    ck_send(plain, topic, [(1, b"n3")])
    x1 += ck_send(x, topic, [(1, b"x1")])
    x.commit_transaction(10)
    t4 = txn(a, [(1, b"a4")], commit=False)
    # Markers are written after EndTxn is answered: wait until none is missing.
    wait_for(lambda: last_stable_offsets(txn_broker.port, topic, 2) == high_watermarks(txn_broker.port, topic, 2),
             10, "the markers")

    data = txn_broker.data_dir
    by_part = {p: decode_partition(data, topic, p) for p in (0, 1)}
    pid = {}
    for b in by_part[0]:
        if b.records[0][2] in (b"a1", b"x1") and b.control is None:
            pid[b.records[0][2]] = (b.producer_id, b.producer_epoch)
    (pa, ea), (px, ex) = pid[b"a1"], pid[b"x1"]
    assert pa != px

    def story(p: int) -> list[tuple[str, bytes | str | None]]:
        """The partition's records as (who, what): a data record's value, or the marker type
        (how the records were cut into batches is the clients' business)."""
        who = {pa: "a", px: "x", -1: "plain"}
        out: list[tuple[str, bytes | str | None]] = []
        for b in by_part[p]:
            ctl = b.control
            if ctl is None:
                assert b.transactional == (b.producer_id != -1), b  # the plain producer is not idempotent
                out += [(who[b.producer_id], v) for _, _, v in b.records]
            else:
                assert b.transactional and b.producer_epoch == (ea if b.producer_id == pa else ex), b
                assert ctl[1] == 0, f"coordinator epoch {ctl[1]}"
                out.append((who[b.producer_id], "COMMIT" if ctl[0] == COMMIT else "ABORT"))
        return out

    # Each transaction's marker follows its data in each partition it wrote to, and only there.
    assert story(0) == [("plain", b"n1"), ("plain", b"n2"), *[("a", b"a1")] * 3, ("a", "COMMIT"),
                        *[("a", b"a2")] * 2, ("a", "ABORT"), ("x", b"x1"), *[("a", b"a3")] * 2, ("a", "ABORT"),
                        ("x", "COMMIT")]
    assert story(1) == [*[("a", b"a1")] * 2, ("a", "COMMIT"), ("a", b"a3"), ("a", "ABORT"), ("plain", b"n3"),
                        ("x", b"x1"), ("x", "COMMIT"), ("a", b"a4"), ("a", "ABORT")]
    markers = {p: [b.base_offset for b in by_part[p] if b.control] for p in (0, 1)}
    # One entry per aborted transaction with data here; first offsets as the producer was told.
    assert decode_txn_index(data, topic, 0) == [
        (pa, t2[0], markers[0][1], markers[0][1] + 1),
        (pa, t3[0], markers[0][2], x1[0]),  # x's transaction was still open
    ]
    assert decode_txn_index(data, topic, 1) == [
        (pa, t3[2], markers[1][1], markers[1][1] + 1),
        (pa, t4[0], markers[1][3], markers[1][3] + 1),
    ]
    for p in (0, 1):
        assert decode_txn_index(data, topic, p) == expected_txn_index(by_part[p])
    assert [(g.partition, g.value) for g in sorted(ck_read_all(bs, topic, 2))] == [
        (0, b"n1"), (0, b"n2"), (0, b"a1"), (0, b"a1"), (0, b"a1"), (0, b"x1"),
        (1, b"a1"), (1, b"a1"), (1, b"n3"), (1, b"x1")]
    assert t1[0] == 2
    for producer in (a, x, plain):
        producer.flush(1)


# ---------------------------------------------------------------- a hanging transaction

_HANGING = """
import sys, time
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": "hanging", "transaction.timeout.ms": 1500,
              "compression.type": "none", "linger.ms": 1})
p.init_transactions(30)
p.begin_transaction()
for i in range(5):
    p.produce(sys.argv[2], b"hanging-%d" % i, partition=0)
assert p.flush(10) == 0
print("sent", flush=True)
time.sleep(60)
"""


def test_hanging_transaction_is_aborted_at_its_timeout_and_consumers_move_on(txn_broker: BrokerProcess) -> None:
    bs, port, topic = txn_broker.bootstrap, txn_broker.port, "hanging"
    create_topic(bs, topic, 1)
    ck_send(Producer({"bootstrap.servers": bs, "compression.type": "none"}), topic, [(0, b"before")])
    child = subprocess.Popen([sys.executable, "-c", _HANGING, bs, topic], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "sent\n"
        t_sent = time.monotonic()
    finally:
        child.kill()
        child.wait(10)
    after = ck_send(Producer({"bootstrap.servers": bs, "compression.type": "none"}), topic,
                    [(0, b"after-1"), (0, b"after-2")])
    assert after == [6, 7]
    # The open transaction (offsets 1-5) holds the LSO at its first offset...
    assert last_stable_offsets(port, topic, 1) == {0: 1}
    c = Consumer({"bootstrap.servers": bs, "group.id": "hanging-reader", "isolation.level": "read_committed",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 50})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        got: list[tuple[float, bytes | None]] = []

        def poll(until: Callable[[], bool], timeout: float) -> None:
            deadline = time.monotonic() + timeout
            while not until() and time.monotonic() < deadline:
                for m in c.consume(100, timeout=0.1):
                    assert m.error() is None, m.error()
                    got.append((time.monotonic(), m.value()))

        poll(lambda: False, 0.5)  # ...so a read_committed consumer gets what is below it, and waits
        assert [v for _, v in got] == [b"before"]
        assert last_stable_offsets(port, topic, 1) == {0: 1}
        # ...until the coordinator aborts it, 1.5 s (its timeout) after it began.
        poll(lambda: len(got) >= 3, 15)
        assert [v for _, v in got] == [b"before", b"after-1", b"after-2"]
        assert got[1][0] - t_sent >= 1.0, "aborted before its timeout"
        poll(lambda: False, 0.3)
        assert len(got) == 3
    finally:
        c.close()
    assert last_stable_offsets(port, topic, 1) == {0: 9} == high_watermarks(port, topic, 1)
    batches = decode_partition(txn_broker.data_dir, topic, 0)
    hanging = [b for b in batches if b.producer_id >= 0]
    assert [b.control for b in hanging] == [None, (ABORT, 0)]
    data, marker = hanging
    assert (data.base_offset, data.last_offset, marker.base_offset) == (1, 5, 8)
    assert marker.producer_epoch == data.producer_epoch + 1, "the abort fences the producer under a new epoch"
    assert decode_txn_index(txn_broker.data_dir, topic, 0) == [(data.producer_id, 1, 8, 9)]
    assert "transaction of hanging" in txn_broker.log_text() and "timed out" in txn_broker.log_text()
    assert [g.value for g in ck_read_all(bs, topic, 1, committed=False)] == [
        b"before", *(b"hanging-%d" % i for i in range(5)), b"after-1", b"after-2"]


# ---------------------------------------------------------------- PrepareCommit at a power loss


def read_checkpoint(path: str) -> dict[tuple[str, int], int]:
    """Kafka's offset checkpoint file: ``0``, a count, then ``topic partition offset`` lines."""
    try:
        lines = Path(path).read_text().splitlines()
    except FileNotFoundError:
        return {}
    assert lines[0] == "0" and int(lines[1]) == len(lines) - 2, lines
    return {(t, int(p)): int(o) for t, p, o in (ln.split() for ln in lines[2:])}


@pytest.mark.slow
def test_prepare_commit_left_by_a_power_loss_is_completed_at_start_up(tmp_path: Path) -> None:
    """Power lost right after PrepareCommit reached the disk, before the markers and the
    CompleteCommit record did: the broker is SIGKILLed after a commit and its files are cut back
    to that moment. At start-up the coordinator writes the markers, then CompleteCommit."""
    data, topic, parts = str(tmp_path / "data"), "power-loss", 3
    b = BrokerProcess(data, FAST_TXN_CHECKS, port=_free_port()).start()
    try:
        create_topic(b.bootstrap, topic, parts)
        p = ck_txn_producer(b.bootstrap, "power-loss")
        p.begin_transaction()
        ck_send(p, topic, [(part, b"%d-%d" % (part, k)) for part in range(parts) for k in range(2)])
        p.commit_transaction(10)
        wait_for(lambda: [s for _, s in txn_state_records(data, "power-loss")][-2:] == [2, 4], 10, "CompleteCommit")
        b.kill()
        del p

        # Cut back: each partition's COMMIT marker, and the CompleteCommit record.
        for part in range(parts):
            last = decode_partition(data, topic, part)[-1]
            assert last.control == (COMMIT, 0) and last.base_offset == 2, last
            os.truncate(last.path, last.position)
        complete, status = txn_state_records(data, "power-loss")[-1]
        assert status == 4 and len(complete.records) == 1
        os.truncate(complete.path, complete.position)
        assert [s for _, s in txn_state_records(data, "power-loss")][-1] == 2  # PrepareCommit is the last word
        # A power loss keeps only what was fsync'd, and a checkpoint only says what was.
        checkpoint = read_checkpoint(os.path.join(data, "recovery-point-offset-checkpoint"))
        assert all(checkpoint.get((topic, part), 0) <= 2 for part in range(parts)), checkpoint

        b.start()
        wait_for(lambda: last_stable_offsets(b.port, topic, parts) == {part: 3 for part in range(parts)}, 10,
                 "the markers written again")
        assert "completing the PrepareCommit of power-loss left by the last run" in b.log_text()
        got = sorted(ck_read_all(b.bootstrap, topic, parts))
        assert [(g.partition, g.value) for g in got] == [
            (part, b"%d-%d" % (part, k)) for part in range(parts) for k in range(2)]
        wait_for(lambda: [s for _, s in txn_state_records(data, "power-loss")][-2:] == [2, 4], 10,
                 "CompleteCommit after the restart")
        for part in range(parts):
            assert [bt.control for bt in decode_partition(data, topic, part)] == [None, (COMMIT, 0)]
        assert b.stop() == 0, b.log_text()
    finally:
        b.kill()  # after a failure: the broker must not outlive the test


# ---------------------------------------------------------------- kafka-python, aiokafka, kcat
#
# The same story with each client: a committed transaction (with the group's consumed offset
# sent to it: 10), an aborted one (offset 20), a committed one; partitions 0 and 1.

STORY = [("c1", True, 10), ("a1", False, 20), ("c2", True, None)]
WANT_COMMITTED = {0: [b"c1-0", b"c1-2", b"c2-0"], 1: [b"c1-1", b"c1-3", b"c2-1"]}
WANT_ALL = {0: [b"c1-0", b"c1-2", b"a1-0", b"a1-2", b"c2-0"], 1: [b"c1-1", b"c1-3", b"a1-1", b"a1-3", b"c2-1"]}


def story_values(name: str) -> list[tuple[int, bytes]]:
    n = 2 if name == "c2" else 4
    return [(i % 2, b"%s-%d" % (name.encode(), i)) for i in range(n)]


def check_story(topic: str, read: Callable[..., dict[tuple[str, int], list[Any]]], bs: str) -> None:
    """Read the story back with ``read`` (an adapter of _clients.py), read_committed and not."""
    for level, want in (("read_committed", WANT_COMMITTED), ("read_uncommitted", WANT_ALL)):
        got = read(bs, {(topic, p): (0, len(want[p])) for p in (0, 1)}, timeout=10, isolation_level=level)
        assert {p: [r.value for r in got[(topic, p)]] for p in (0, 1)} == want, level


def test_kafka_python_transactions(txn_broker: BrokerProcess) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTP
    from kafka.structs import OffsetAndMetadata

    bs, topic = txn_broker.bootstrap, "kp-txn"
    create_topic(bs, topic, 2)
    create_topic(bs, "kp-src", 1)
    p = KafkaProducer(bootstrap_servers=bs, transactional_id="kp-txn", linger_ms=1, **KP_TIMEOUTS)
    try:
        p.init_transactions()
        for name, commit, offset in STORY:
            p.begin_transaction()
            futs = [p.send(topic, v, partition=part) for part, v in story_values(name)]
            if offset is not None:
                p.send_offsets_to_transaction({KTP("kp-src", 0): OffsetAndMetadata(offset, "", -1)}, "kp-group")
            # written before the transaction ends (an abort drops what is still unsent)
            assert all(f.get(timeout=5).offset >= 0 for f in futs)
            (p.commit_transaction if commit else p.abort_transaction)()
    finally:
        p.close(timeout=5)
    check_story(topic, kp_consume, bs)
    c = KafkaConsumer(bootstrap_servers=bs, group_id="kp-group", enable_auto_commit=False, **KP_TIMEOUTS)
    try:
        assert c.committed(KTP("kp-src", 0)) == 10
    finally:
        c.close(autocommit=False)


def test_aiokafka_transactions_with_send_offsets_to_transaction(txn_broker: BrokerProcess) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka import TopicPartition as ATP

    bs, topic = txn_broker.bootstrap, "aio-txn"
    create_topic(bs, topic, 2)
    create_topic(bs, "aio-src", 1)

    async def produce() -> None:
        p = AIOKafkaProducer(bootstrap_servers=bs, transactional_id="aio-txn", enable_idempotence=True,
                             linger_ms=1, request_timeout_ms=5000)
        await p.start()
        try:
            for name, commit, offset in STORY:
                await p.begin_transaction()
                futs = [await p.send(topic, v, partition=part) for part, v in story_values(name)]
                if offset is not None:
                    await p.send_offsets_to_transaction({ATP("aio-src", 0): offset}, "aio-group")
                assert all(md.offset >= 0 for md in await asyncio.gather(*futs))
                await (p.commit_transaction() if commit else p.abort_transaction())
        finally:
            await p.stop()

    async def committed() -> int | None:
        c = AIOKafkaConsumer(bootstrap_servers=bs, group_id="aio-group", enable_auto_commit=False,
                             request_timeout_ms=5000)
        await c.start()
        try:
            return await c.committed(ATP("aio-src", 0))
        finally:
            await c.stop()

    asyncio.run(produce())
    check_story(topic, aio_consume, bs)
    assert asyncio.run(committed()) == 10
    # the other clients read what aiokafka wrote the same way
    check_story(topic, kp_consume, bs)


@pytest.mark.skipif(KCAT is None, reason=KCAT_MISSING)
def test_kcat_reads_committed_transactions_only(txn_broker: BrokerProcess) -> None:
    bs, topic = txn_broker.bootstrap, "kcat-txn"
    create_topic(bs, topic, 2)
    p = ck_txn_producer(bs, "kcat-txn")
    for name, commit, _ in STORY:
        p.begin_transaction()
        ck_send(p, topic, story_values(name))
        (p.commit_transaction if commit else p.abort_transaction)(10)
    for level, want in (("read_committed", WANT_COMMITTED), ("read_uncommitted", WANT_ALL)):
        for part in (0, 1):
            r = kcat("-b", bs, "-C", "-t", topic, "-p", str(part), "-o", "beginning", "-e", "-q", "-f", "%s\n",
                     "-X", f"isolation.level={level}", "-X", "fetch.wait.max.ms=50", timeout=20)
            assert r.returncode == 0, r.stderr.decode(errors="replace")
            assert r.stdout.split() == want[part], (level, part)


# ---------------------------------------------------------------- transactions V2 (KIP-890 part 2)


@pytest.fixture(scope="module")
def tv2_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker on which an operator finalized ``transaction.version`` 2 with kafka-python 3's
    ``update_features`` (``kafka-features.sh upgrade --feature transaction.version=2``)."""
    from kafka import KafkaAdminClient

    b = BrokerProcess(str(tmp_path_factory.mktemp("txn-v2") / "data")).start()
    try:
        admin = KafkaAdminClient(bootstrap_servers=b.bootstrap, **KP_TIMEOUTS)
        try:
            assert admin.update_features({"transaction.version": 2}) == {"transaction.version": "OK"}
        finally:
            admin.close()
        yield b
    finally:
        rc = b.stop()
        assert rc == 0, f"broker exited with {rc}:\n{b.log_text()}"


def _describe_epochs(port: int, txn_ids: list[str]) -> dict[str, int]:
    with Conn(port) as c:
        r = c.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": txn_ids})
    return {t["transactional_id"]: t["producer_epoch"] for t in r["transaction_states"]}


def test_a_transactions_v2_producer_beside_older_clients(tv2_broker: BrokerProcess) -> None:
    """On one broker at ``transaction.version`` 2, at the same time: our producer speaking
    transactions V2 (no AddPartitionsToTxn, Produce v12+, EndTxn v5: the epoch bumps at every
    transaction), confluent-kafka (librdkafka 2.16: EndTxn v1) and kafka-python 3 (EndTxn v3)
    on the older protocol, interleaving commits and aborts on the same partitions.
    read_committed readers see exactly the committed records; only our producer's epoch moved."""
    from kafka import KafkaProducer

    from client import Producer as MbProducer

    bs, topic = tv2_broker.bootstrap, "v2-mixed"
    create_topic(bs, topic, 2)
    plan = [True, False, True, True, False, True]
    committed: list[bytes] = []
    lock = threading.Lock()
    errors: list[BaseException] = []
    go = threading.Barrier(3)

    def record(name: str, r: int, commit: bool) -> list[tuple[int, bytes]]:
        values = [(i % 2, b"%s-%d-%d" % (name.encode(), r, i)) for i in range(4)]
        if commit:
            with lock:
                committed.extend(v for _, v in values)
        return values

    def ours() -> None:
        async def run() -> None:
            async with MbProducer(bs, transactional_id="mb-v2", linger_ms=1) as p:
                await p.init_transactions()
                go.wait(30)
                for r, commit in enumerate(plan):
                    p.begin_transaction()
                    assert p._transactions().v2
                    values = record("mb", r, commit)
                    await asyncio.gather(*[p.send_nowait(topic, v, partition=part) for part, v in values])
                    await (p.commit_transaction() if commit else p.abort_transaction())
        asyncio.run(run())

    def kafka_python() -> None:
        p = KafkaProducer(bootstrap_servers=bs, transactional_id="kp-v2", linger_ms=1, **KP_TIMEOUTS)
        try:
            p.init_transactions()
            go.wait(30)
            for r, commit in enumerate(plan):
                p.begin_transaction()
                futs = [p.send(topic, v, partition=part) for part, v in record("kp", r, commit)]
                assert all(f.get(timeout=10).offset >= 0 for f in futs)
                (p.commit_transaction if commit else p.abort_transaction)()
        finally:
            p.close(timeout=5)

    def guarded(fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                fn()
            except BaseException as e:  # noqa: BLE001 - reported by the main thread
                errors.append(e)
                go.abort()
        return run

    threads = [threading.Thread(target=guarded(f)) for f in (ours, kafka_python)]
    for t in threads:
        t.start()
    ck = ck_txn_producer(bs, "ck-v2")
    try:
        go.wait(30)
        for r, commit in enumerate(plan):
            ck.begin_transaction()
            ck_send(ck, topic, record("ck", r, commit))
            (ck.commit_transaction if commit else ck.abort_transaction)(10)
    finally:
        for t in threads:
            t.join(60)
    assert not errors, errors
    got = ck_read_all(bs, topic, 2)
    assert sorted(g.value or b"" for g in got) == sorted(committed)
    everything = ck_read_all(bs, topic, 2, committed=False)
    assert len(everything) == 3 * 4 * len(plan)
    # our producer's epoch bumped once per transaction; the older protocol's never
    assert _describe_epochs(tv2_broker.port, ["mb-v2", "kp-v2", "ck-v2"]) == {"mb-v2": len(plan), "kp-v2": 0,
                                                                               "ck-v2": 0}


@pytest.mark.skipif(PK_MISSING is not None, reason=PK_MISSING or "")
@pytest.mark.parametrize("level", [0, 2])
def test_platformatic_transactions_add_partitions_with_v5(level: int, txn_broker: BrokerProcess,
                                                           tv2_broker: BrokerProcess) -> None:
    """@platformatic/kafka's producer adds its partitions with the highest AddPartitionsToTxn
    version offered, the brokers' batched form (v5, verify_only false), and ends with EndTxn
    v4: served at either ``transaction.version``."""
    b = tv2_broker if level else txn_broker
    topic = f"pk-txn-{level}"
    create_topic(b.bootstrap, topic, 2)
    out = subprocess.run(["node", os.path.join(NODE_DIR, "txn_producer.mjs"), b.bootstrap, f"pk-{level}", topic,
                          '["commit", "abort", "commit"]'], capture_output=True, text=True, timeout=60, cwd=NODE_DIR)
    assert out.returncode == 0, out.stderr
    got = ck_read_all(b.bootstrap, topic, 2)
    assert sorted(g.value or b"" for g in got) == [b"pk-%d-%d-%d" % (level, i, p) for i in (0, 2) for p in (0, 1)]
