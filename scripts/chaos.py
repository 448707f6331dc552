#!/usr/bin/env python3
"""A soak under failure: producers (acks=all), a consumer group, a transactional producer,
read_committed readers and admin calls run against a broker that is SIGKILLed and restarted at
random moments, with a byte of ``__consumer_offsets`` damaged on disk between some kills; at
the end every acknowledged record must be in the log, in the order its producer had it
acknowledged, and every acknowledged commit and transaction must have its effect.

    .venv/bin/python scripts/chaos.py --duration 120          # what CI runs (tests/broker)
    .venv/bin/python scripts/chaos.py --duration 1800 --seed 7 # a long one

Load: one confluent-kafka producer (librdkafka, acks=all, ``enable.idempotence=true``) and one
of ours (acks=all, ``enable_idempotence=True``, 1 request in flight), each writing values
``<producer>-<sequence>`` to the 3-partition topic ``chaos``; a member of the group
``chaos-group`` (confluent-kafka, ``enable.auto.commit=false``) consuming ``chaos`` and
committing the offsets it processed synchronously; a transactional producer (confluent-kafka,
``transaction.timeout.ms=10000``) writing transactions of 1-20 records to ``chaos-txn``, about
30% aborted on purpose; a read_committed consumer (confluent-kafka) reading ``chaos-txn`` as
it is written; plus an admin thread listing offsets and describing the topic. The broker (a
``python -m broker serve`` process on a fixed port, data kept across restarts) is SIGKILLed
every ``--kill-every`` seconds on average (uniformly 0.5x-1.5x) and restarted at once.

Checks on the records, on a last clean start: every acknowledged record is present; per
producer and partition, acknowledged records appear in the log in sequence order; the log's
offsets are contiguous; no value is in the log twice. Records written but not acknowledged (in
flight at a kill) may or may not be there. A retried batch whose first attempt was written (its
answer lost with the killed broker) is recognised by the broker from the producer's id, epoch
and sequences, also after the restart (producer state rebuilt from the snapshot plus the log
tail), and answered with its first offsets: a value in the log twice is a failure.
``--no-idempotence`` runs both producers without idempotence, where such retries are written
twice: duplicates are then counted and reported, not failures.

Checks on the group's commits: every commit the broker acknowledged is recorded (per
partition, offset and time). After each restart, with no commit in flight, the group's
committed offsets (OffsetFetch, our admin client) must be >= the last acknowledged commit
(else a commit was lost) and >= what OffsetFetch answered after the previous restart (else it
moved backwards). After the last clean start they must equal the last acknowledged commits.

Checks on transactions: after the last clean start the last stable offset (ListOffsets with
READ_COMMITTED, confluent-kafka's admin client) must reach the high watermark on every
partition within transaction.timeout.ms + 20 s (else a transaction was left hanging); then our
read_committed consumer reads ``chaos-txn`` from offset 0 to the last stable offset: every
record of a transaction whose commit was acknowledged is read exactly once, no record of an
aborted one is read, a transaction whose outcome the client could not know (an error during
commit, then a new producer) is read whole or not at all, and no other value is read. The
live read_committed consumer must have read no aborted record and none twice.

Damage (issue 29, "a bad byte never costs more than its batch"): before every
``--corrupt-every``-th restart (default 5; 0: never), while the broker is down, one bit of one
byte in the CRC-covered part of one batch of a ``__consumer_offsets`` segment is flipped:
alternately a batch picked uniformly among all of them and the batch holding the group's
latest commit. The broker must start (else the run stops with a failure) and its log must name
the damaged batch (its segment file and position). A damaged batch costs only itself: if it
held the group's latest commit of a partition, the committed offset may fall back at that
restart to the latest acknowledged commit no damaged batch held; that is counted as
``commits_lost_to_injected_corruption``, not a failure. Any other loss is.

Exit status 1 on any lost or reordered acknowledged record, any duplicate with idempotent
producers, any commit lost or moved backwards, any failed transactional check above, any
hanging transaction, a damaged batch the log does not name, or a broker that does not start.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import re
import shutil
import struct
import sys
import tempfile
import threading
import time
from collections import defaultdict
from concurrent.futures import Future
from typing import NamedTuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from broker.testing import BrokerProcess, BrokerStartError  # noqa: E402
from client.records.record import decode_batch  # noqa: E402
from client.sync import SyncAdmin, SyncConsumer, SyncProducer  # noqa: E402

TOPIC = "chaos"
TXN_TOPIC = "chaos-txn"
GROUP = "chaos-group"
PARTITIONS = 3
TXN_TIMEOUT_MS = 10000
_GROUPS_LOADED = re.compile(r"loaded \d+ groups")


class Acks:
    """Acknowledged (partition, offset, value) per producer, thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_producer: dict[str, list[tuple[int, int, bytes]]] = defaultdict(list)
        self.errors: dict[str, int] = defaultdict(int)

    def ok(self, producer: str, partition: int, offset: int, value: bytes) -> None:
        with self.lock:
            self.by_producer[producer].append((partition, offset, value))

    def failed(self, producer: str) -> None:
        with self.lock:
            self.errors[producer] += 1


class Commits:
    """The chaos group's offset commits the broker acknowledged: per partition, ``(offset,
    time)`` in acknowledgement order. ``lock`` is held by the group consumer around each commit
    and its recording, and by the main thread while it checks the committed offsets after a
    restart, so that no commit is in flight during a check."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.acked: dict[int, list[tuple[int, float]]] = defaultdict(list)
        self.requests_acked = 0
        self.errors = 0

    def last(self, partition: int) -> int:
        acked = self.acked.get(partition)
        return acked[-1][0] if acked else -1


class Txns:
    """Transactions of the transactional producer, by outcome as the client saw it:
    ``committed`` (commit_transaction returned), ``aborted`` (abort_transaction returned: on
    purpose or after an error), ``unknown`` (an error left the outcome to the broker: all of
    its records or none may be read). Each is a list of the transaction's values."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.committed: list[list[bytes]] = []
        self.aborted: list[list[bytes]] = []
        self.aborted_on_purpose = 0
        self.unknown: list[list[bytes]] = []
        self.producer_inits = 0
        self.errors: dict[str, int] = defaultdict(int)

    def add(self, outcome: str, values: list[bytes], on_purpose: bool = False) -> None:
        with self.lock:
            getattr(self, outcome).append(values)
            self.aborted_on_purpose += on_purpose

    def add_error(self, what: str) -> None:
        with self.lock:
            self.errors[what] += 1


def run_confluent(bootstrap: str, acks: Acks, stop: threading.Event, rng: random.Random, idempotence: bool) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": idempotence,
                  "linger.ms": 5, "message.timeout.ms": 600000, "retry.backoff.ms": 50,
                  "reconnect.backoff.max.ms": 200, "log_level": 2})  # no line per refused reconnect

    def delivered(err, msg) -> None:  # type: ignore[no-untyped-def]
        if err is None:
            acks.ok("confluent", msg.partition(), msg.offset(), msg.value())
        else:
            acks.failed("confluent")

    seq = 0
    while not stop.is_set():
        for _ in range(rng.randint(1, 50)):
            p.produce(TOPIC, b"confluent-%09d" % seq, partition=seq % PARTITIONS, on_delivery=delivered)
            seq += 1
        p.poll(0.01)
    p.flush(120)


def run_ours(bootstrap: str, acks: Acks, stop: threading.Event, rng: random.Random, idempotence: bool) -> None:
    with SyncProducer(bootstrap, acks="all", linger_ms=5, retries=1_000_000, delivery_timeout_ms=600000,
                      max_in_flight_requests_per_connection=1, retry_backoff_ms=50,
                      enable_idempotence=idempotence) as p:
        seq = 0
        pending: list[tuple[bytes, Future]] = []  # type: ignore[type-arg]
        while not stop.is_set():
            for _ in range(rng.randint(1, 50)):
                value = b"ours-%09d" % seq
                pending.append((value, p.send_nowait(TOPIC, value, partition=seq % PARTITIONS)))
                seq += 1
            time.sleep(0.01)
            still = []
            for value, fut in pending:
                if not fut.done():
                    still.append((value, fut))
                elif fut.exception() is None:
                    md = fut.result()
                    acks.ok("ours", md.partition, md.offset, value)
                else:
                    acks.failed("ours")
            pending = still
        p.flush()
        for value, fut in pending:
            try:
                md = fut.result(timeout=120)
                acks.ok("ours", md.partition, md.offset, value)
            except Exception:  # noqa: BLE001 - counted, not fatal
                acks.failed("ours")


def run_admin(bootstrap: str, stop: threading.Event, calls: list[int]) -> None:
    while not stop.is_set():
        try:
            with SyncAdmin(bootstrap, request_timeout_ms=5000) as admin:
                while not stop.is_set():
                    admin.topic_offsets(TOPIC)
                    admin.describe_topics([TOPIC])
                    calls[0] += 1
                    time.sleep(0.2)
        except Exception:  # noqa: BLE001 - the broker was killed under it: reconnect
            time.sleep(0.2)


def run_group_consumer(bootstrap: str, commits: Commits, stop: threading.Event, rng: random.Random) -> None:
    """A member of GROUP (confluent-kafka, no auto-commit) consuming TOPIC and committing, after
    each processed poll (at random, about half of them), the next offset of every partition it
    has read, synchronously; every commit the broker acknowledges is recorded. Offsets
    committed are the highest processed so far, so they never go down from this side, also when
    a rebalance or a lost commit makes the consumer read a stretch again. At the end it commits
    until one commit is acknowledged, so that the last write of the group is a recorded one."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "session.timeout.ms": 10000, "heartbeat.interval.ms": 1000,
                  "reconnect.backoff.max.ms": 200, "retry.backoff.ms": 50, "log_level": 2})
    c.subscribe([TOPIC])
    processed: dict[int, int] = {}  # partition -> next offset to read, the highest seen

    def commit() -> bool:
        offsets = [TopicPartition(TOPIC, p, o) for p, o in sorted(processed.items())]
        with commits.lock:
            try:
                res = c.commit(offsets=offsets, asynchronous=False)
            except KafkaException:
                commits.errors += 1
                return False
            if res is None or any(tp.error is not None for tp in res):
                commits.errors += 1
                return False
            now = time.time()
            for tp in res:
                commits.acked[tp.partition].append((tp.offset, now))
            commits.requests_acked += 1
            return True

    try:
        while not stop.is_set():
            msgs = c.consume(500, timeout=0.2)
            for m in msgs:
                part, offset = m.partition(), m.offset()
                if m.error() is None and part is not None and offset is not None:
                    processed[part] = max(processed.get(part, 0), offset + 1)
            if processed and msgs and rng.random() < 0.5:
                commit()
        deadline = time.monotonic() + 120
        while processed and not commit() and time.monotonic() < deadline:
            c.consume(100, timeout=0.5)
    finally:
        c.close()


def run_transactions(bootstrap: str, txns: Txns, stop: threading.Event, rng: random.Random) -> None:
    """A transactional producer (confluent-kafka) writing transactions of 1-20 records over
    TXN_TOPIC's partitions, values ``txn-<transaction>-<record>``; about 30% are aborted on
    purpose. Errors as the client requires: a retriable one retries the commit (or abort), an
    abortable one aborts, a fatal one (or an abort that fails) gives a new producer, whose
    InitProducerId completes the open transaction on the broker: its outcome is then unknown
    to the client (all of its records or none)."""
    from confluent_kafka import KafkaError, KafkaException, Producer

    conf = {"bootstrap.servers": bootstrap, "transactional.id": "chaos-txn-producer",
            "transaction.timeout.ms": TXN_TIMEOUT_MS, "linger.ms": 5, "retry.backoff.ms": 50,
            "reconnect.backoff.max.ms": 200, "log_level": 2}

    def new_producer() -> Producer:
        while True:
            p = Producer(conf)
            try:
                p.init_transactions(60)
                with txns.lock:
                    txns.producer_inits += 1
                return p
            except KafkaException as e:
                txns.add_error("init:" + e.args[0].name())
                p.flush(0)
                time.sleep(0.2)

    def finish(p: Producer, commit: bool) -> str:
        """``committed``, ``aborted`` or ``unknown`` (the producer must then be replaced)."""
        for _ in range(20):
            try:
                if commit:
                    p.commit_transaction(30)
                    return "committed"
                p.abort_transaction(30)
                return "aborted"
            except KafkaException as e:
                err: KafkaError = e.args[0]
                txns.add_error(("commit:" if commit else "abort:") + err.name())
                if err.fatal():
                    return "unknown"
                if err.txn_requires_abort():
                    commit = False
                elif not err.retriable():
                    return "unknown"
        return "unknown"

    p = new_producer()
    n = 0
    while not stop.is_set():
        values = [b"txn-%07d-%03d" % (n, i) for i in range(rng.randint(1, 20))]
        n += 1
        on_purpose = rng.random() < 0.3
        try:
            p.begin_transaction()
            for i, v in enumerate(values):
                p.produce(TXN_TOPIC, v, partition=(n + i) % PARTITIONS)
            p.poll(0)
            outcome = finish(p, commit=not on_purpose)
        except (KafkaException, BufferError) as e:  # begin or produce refused: abort
            txns.add_error("produce:" + (e.args[0].name() if isinstance(e, KafkaException) else "BufferError"))
            outcome = finish(p, commit=False)
        txns.add(outcome, values, on_purpose=on_purpose and outcome == "aborted")
        if outcome == "unknown":
            p.flush(0)
            p = new_producer()
        time.sleep(rng.uniform(0, 0.05))
    p.flush(10)


def run_read_committed(bootstrap: str, seen: dict[bytes, int], stop: threading.Event) -> None:
    """A read_committed consumer (confluent-kafka, partitions assigned, no group commits)
    reading TXN_TOPIC from the start while it is written and the broker is killed: counts how
    often it read each value."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "chaos-read-committed", "enable.auto.commit": False,
                  "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                  "reconnect.backoff.max.ms": 200, "log_level": 2})
    c.assign([TopicPartition(TXN_TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    try:
        while not stop.is_set():
            for m in c.consume(1000, timeout=0.2):
                v = m.value()
                if m.error() is None and v is not None:
                    seen[v] = seen.get(v, 0) + 1
    finally:
        c.close()


def read_all(bootstrap: str) -> dict[int, list[tuple[int, bytes]]]:
    out: dict[int, list[tuple[int, bytes]]] = {}
    with SyncAdmin(bootstrap) as admin:
        ends = admin.topic_offsets(TOPIC)
    with SyncConsumer(bootstrap, auto_offset_reset="earliest", max_poll_records=10000) as consumer:
        for part in range(PARTITIONS):
            consumer.assign([(TOPIC, part)])
            consumer.seek((TOPIC, part), 0)
            got: list[tuple[int, bytes]] = []
            while not got or got[-1][0] < ends[part] - 1:
                batch = consumer.poll(timeout_ms=2000)
                if not batch and (not got or got[-1][0] >= ends[part] - 1):
                    break
                got += [(r.offset, r.value) for r in batch]
            out[part] = got
    return out


def check(acks: Acks, log: dict[int, list[tuple[int, bytes]]]) -> dict[str, int]:
    where: dict[bytes, list[int]] = defaultdict(list)  # value -> offsets holding it
    partition_of: dict[bytes, int] = {}
    gaps = 0
    for part, records in log.items():
        offsets = [o for o, _ in records]
        gaps += sum(1 for a, b in zip(offsets, offsets[1:], strict=False) if b != a + 1)
        for offset, value in records:
            where[value].append(offset)
            partition_of[value] = part
    lost = reordered = 0
    for producer, acked in acks.by_producer.items():
        last_offset: dict[int, int] = {}
        for partition, _, value in sorted(acked, key=lambda a: a[2]):  # sequence order
            offsets = where.get(value)
            if not offsets:
                lost += 1
                print(f"LOST: {value!r} acknowledged by {producer} on partition {partition}", file=sys.stderr)
                continue
            if offsets[0] < last_offset.get(partition, -1):
                reordered += 1
            last_offset[partition] = offsets[0]
    duplicated = sorted((partition_of[value], offsets, value) for value, offsets in where.items() if len(offsets) > 1)
    for part, offsets, value in duplicated[:20]:
        print(f"DUPLICATE: {value!r} in partition {part} at offsets {offsets}", file=sys.stderr)
    duplicates = sum(len(o) - 1 for _, o, _ in duplicated)
    return {"lost": lost, "reordered": reordered, "duplicates": duplicates, "offset_gaps": gaps,
            "records_in_log": sum(len(r) for r in log.values())}


class Corruption(NamedTuple):
    """A byte flipped on disk: ``position`` is the damaged batch's in the segment ``path``;
    ``commits`` the chaos group's offsets (per partition) that the batch held."""
    path: str
    position: int
    byte: int
    commits: dict[int, set[int]]


def segment_batches(path: str) -> list[tuple[int, int]]:
    """``(position, size)`` of every batch of a segment, walking the length fields."""
    with open(path, "rb") as f:
        data = f.read()
    out, pos = [], 0
    while pos + 12 <= len(data):
        length = struct.unpack_from(">i", data, pos + 8)[0]
        if length < 49 or pos + 12 + length > len(data):
            break
        out.append((pos, 12 + length))
        pos += 12 + length
    return out


def group_commits_in(batch: bytes) -> dict[int, set[int]]:
    """The chaos group's committed offsets, per partition of TOPIC, in one ``__consumer_offsets``
    batch (key version 0/1: group, topic, partition; value: version, offset). An unreadable batch
    (damaged before) holds none."""
    out: dict[int, set[int]] = defaultdict(set)
    try:
        records = decode_batch(batch)
    except Exception:  # noqa: BLE001 - a batch damaged by an earlier injection
        return {}
    for r in records:
        key, value = r.key, r.value
        if key is None or value is None or len(key) < 4 or struct.unpack_from(">h", key)[0] not in (0, 1):
            continue
        n = struct.unpack_from(">h", key, 2)[0]
        group, q = key[4:4 + n], 4 + n
        m = struct.unpack_from(">h", key, q)[0]
        topic, q = key[q + 2:q + 2 + m], q + 2 + m
        if group == GROUP.encode() and topic == TOPIC.encode():
            out[struct.unpack_from(">i", key, q)[0]].add(struct.unpack_from(">q", value, 2)[0])
    return dict(out)


def inject_corruption(data_dir: str, rng: random.Random, latest: bool, done: set[tuple[str, int]]) -> Corruption | None:
    """Flip one bit of one byte in the CRC-covered part (attributes to the end) of one batch
    of one ``__consumer_offsets`` segment, while the broker is down. ``latest``: the batch
    holding the chaos group's latest commit (the worst case: that commit is lost); otherwise a
    batch picked uniformly among all of them. Batches damaged before (``done``) are not
    picked again."""
    candidates: list[tuple[str, int, int]] = []
    for seg in sorted(glob.glob(os.path.join(data_dir, "__consumer_offsets-*", "*.log"))):
        candidates += [(seg, pos, size) for pos, size in segment_batches(seg) if (seg, pos) not in done]
    if latest:
        for seg, pos, size in reversed(candidates):
            with open(seg, "rb") as f:
                f.seek(pos)
                if group_commits_in(f.read(size)):
                    candidates = [(seg, pos, size)]
                    break
    if not candidates:
        return None
    seg, pos, size = rng.choice(candidates)
    with open(seg, "r+b") as f:
        f.seek(pos)
        batch = f.read(size)
        at = pos + rng.randrange(21, size)  # 21: the attributes, first byte the CRC covers
        f.seek(at)
        f.write(bytes([batch[at - pos] ^ (1 << rng.randrange(8))]))
    done.add((seg, pos))
    return Corruption(seg, pos, at, group_commits_in(batch))


def names_damage(log: str, c: Corruption) -> bool:
    """Whether the broker's log names the damaged batch: its segment file and position."""
    name = os.path.join(os.path.basename(os.path.dirname(c.path)), os.path.basename(c.path))
    return any(name in line and (f"position {c.position} of" in line or f"byte offset {c.position}:" in line)
               for line in log.splitlines())


def wait_groups_loaded(broker: BrokerProcess, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _GROUPS_LOADED.search(broker.log_text()):
            return True
        time.sleep(0.05)
    return False


def fetch_committed(bootstrap: str, timeout: float = 60) -> dict[int, int] | None:
    """The chaos group's committed offsets (OffsetFetch, our admin client; -1: none), retried
    while the coordinator loads; None if it never answered."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with SyncAdmin(bootstrap, request_timeout_ms=5000) as admin:
                got = admin.fetch_group_offsets(GROUP, [(TOPIC, p) for p in range(PARTITIONS)])
            out = {p: -1 for p in range(PARTITIONS)}
            out.update({tp.partition: om.offset for tp, om in got.items()})
            return out
        except Exception:  # noqa: BLE001 - loading, or the connection is not up yet
            if time.monotonic() > deadline:
                return None
            time.sleep(0.2)


class CommitCheck:
    """The committed offsets after each restart against the acknowledged commits.

    Per partition, after a restart the committed offset must be >= the last acknowledged
    commit (else ``lost``) and >= the committed offset read after the previous restart (else
    ``backwards``: a commit the broker had served is gone). One exception: when the batch
    damaged before this restart held the partition's latest commit, the committed offset may
    fall back as far as the latest acknowledged commit whose offset no damaged batch held;
    such a fall-back is counted in ``lost_to_corruption`` and is no failure; from then on, the
    commits acknowledged before it no longer bind that partition (the offset it fell back to
    does, and the commits acknowledged after it)."""

    def __init__(self) -> None:
        self.checks = self.lost = self.backwards = self.lost_to_corruption = self.unanswered = 0
        self.seen: dict[int, int] = {}
        self.destroyed: dict[int, set[int]] = defaultdict(set)
        self.rebased: dict[int, int] = {}  # partition -> acknowledged commits before its last fall-back

    def last_binding(self, commits: Commits, p: int) -> int:
        """The last acknowledged commit of ``p`` not lost to an injected damage (-1: none)."""
        acked = commits.acked.get(p, [])
        return acked[-1][0] if len(acked) > self.rebased.get(p, 0) else -1

    def after_restart(self, committed: dict[int, int] | None, commits: Commits, corruption: Corruption | None,
                      when: str) -> None:
        hit = corruption.commits if corruption is not None else {}
        for p, offsets in hit.items():
            self.destroyed[p] |= offsets
        if committed is None:
            self.unanswered += 1
            print(f"{when}: OffsetFetch of {GROUP} never answered", file=sys.stderr)
            return
        self.checks += 1
        for p in range(PARTITIONS):
            v, last, seen = committed[p], self.last_binding(commits, p), self.seen.get(p, -1)
            expected = max(last, seen)
            if v >= expected:
                self.seen[p] = v
                continue
            if hit.get(p) and max(hit[p]) >= expected:
                floor = next((o for o, _ in reversed(commits.acked[p]) if o not in self.destroyed[p]), -1)
                if v >= floor:
                    self.lost_to_corruption += 1
                    print(f"{when}: {TOPIC}-{p} committed offset fell back from {expected} to {v}: its latest"
                          f" commit was in the damaged batch", file=sys.stderr)
                    self.seen[p] = v
                    self.rebased[p] = len(commits.acked[p])
                    continue
            if v < last:
                self.lost += 1
                print(f"{when}: COMMIT LOST: {TOPIC}-{p} committed {v}, last acknowledged commit {last}"
                      f" (at {commits.acked[p][-1][1]:.3f})", file=sys.stderr)
            else:
                self.backwards += 1
                print(f"{when}: COMMIT MOVED BACKWARDS: {TOPIC}-{p} committed {v}, {seen} after the previous"
                      " restart", file=sys.stderr)
            self.seen[p] = max(seen, v)


def wait_stable(bootstrap: str, timeout: float) -> tuple[dict[int, int], dict[int, int], float]:
    """TXN_TOPIC's high watermarks (ListOffsets, read_uncommitted, our admin client) and last
    stable offsets (ListOffsets, read_committed, confluent-kafka's admin client), polled until
    they are equal on every partition or ``timeout`` passes; and the seconds it took."""
    from confluent_kafka import IsolationLevel
    from confluent_kafka import TopicPartition as CTopicPartition
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.admin import OffsetSpec as COffsetSpec  # type: ignore[attr-defined]

    ca = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})
    t0 = time.monotonic()
    while True:
        with SyncAdmin(bootstrap) as admin:
            hw = admin.topic_offsets(TXN_TOPIC)
        futures = ca.list_offsets({CTopicPartition(TXN_TOPIC, p): COffsetSpec.latest()  # type: ignore[no-untyped-call]
                                   for p in range(PARTITIONS)},
                                  isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=10)
        lso = {tp.partition: f.result().offset for tp, f in futures.items()}
        if lso == hw or time.monotonic() - t0 > timeout:
            return hw, lso, time.monotonic() - t0
        time.sleep(0.5)


def read_committed_all(bootstrap: str, lso: dict[int, int]) -> tuple[list[bytes], dict[int, int]]:
    """Every value of TXN_TOPIC a read_committed consumer (ours) reads from offset 0 up to the
    last stable offsets, and the positions it reached."""
    values: list[bytes] = []
    with SyncConsumer(bootstrap, isolation_level="read_committed", auto_offset_reset="earliest",
                      max_poll_records=10000) as consumer:
        tps = [(TXN_TOPIC, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        for tp in tps:
            consumer.seek(tp, 0)
        idle_since = time.monotonic()
        while any(consumer.position(tp) < lso[tp[1]] for tp in tps) and time.monotonic() - idle_since < 10:
            batch = consumer.poll(timeout_ms=1000)
            if batch:
                idle_since = time.monotonic()
            values += [r.value for r in batch if r.value is not None]
        return values, {p: consumer.position(tp) for p, tp in enumerate(tps)}


def check_txns(txns: Txns, values: list[bytes], live: dict[bytes, int]) -> dict[str, int]:
    """Records of committed transactions read exactly once by read_committed, none of aborted
    ones, a transaction of unknown outcome all or nothing; the live read_committed consumer
    read no aborted record and none twice."""
    count: dict[bytes, int] = defaultdict(int)
    for v in values:
        count[v] += 1
    missing = sum(1 for t in txns.committed for v in t if count[v] == 0)
    duplicated = sum(count[v] - 1 for t in txns.committed + txns.unknown for v in t if count[v] > 1)
    aborted_read = sum(1 for t in txns.aborted for v in t if count[v])
    partial = unknown_committed = 0
    for t in txns.unknown:
        n = sum(1 for v in t if count[v])
        partial += 0 < n < len(t)
        unknown_committed += n == len(t)
    known = {v for t in txns.committed + txns.aborted + txns.unknown for v in t}
    stray = sum(1 for v in count if v not in known)
    live_aborted = sum(1 for t in txns.aborted for v in t if live.get(v))
    live_dups = sum(n - 1 for n in live.values() if n > 1)
    for what, n in (("MISSING committed transactional records", missing), ("DUPLICATED transactional records", duplicated),
                    ("ABORTED records read", aborted_read), ("PARTIALLY visible transactions", partial),
                    ("records of no transaction read", stray), ("ABORTED records read by the live consumer", live_aborted),
                    ("records read twice by the live consumer", live_dups)):
        if n:
            print(f"{what}: {n}", file=sys.stderr)
    return {"transactional_records_missing": missing, "transactional_records_duplicated": duplicated,
            "aborted_records_read": aborted_read, "transactions_partially_visible": partial,
            "transactions_unknown_found_committed": unknown_committed, "stray_transactional_records": stray,
            "live_read_committed_aborted_read": live_aborted, "live_read_committed_duplicates": live_dups,
            "live_read_committed_records": sum(live.values())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=120, help="seconds of load (default 120)")
    ap.add_argument("--kill-every", type=float, default=6, help="mean seconds between SIGKILLs (default 6)")
    ap.add_argument("--corrupt-every", type=int, default=5,
                    help="damage a __consumer_offsets batch before every Nth restart (default 5; 0: never)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--data-dir", default=None, help="keep the data here (default: a temp dir, removed)")
    ap.add_argument("--json", default=None, help="also write the summary to this file")
    ap.add_argument("--no-idempotence", dest="idempotence", action="store_false",
                    help="producers without idempotence: duplicates reported, not failures")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    data = args.data_dir or tempfile.mkdtemp(prefix="minibroker-chaos-")
    data_dir = os.path.join(data, "data")
    broker = BrokerProcess(data_dir, overrides=[f"num.partitions={PARTITIONS}"]).start()
    broker.requested_port = broker.port  # restarts keep the port: the clients reconnect to it
    bootstrap = broker.bootstrap
    with SyncAdmin(bootstrap) as admin:
        admin.create_topic(TOPIC, num_partitions=PARTITIONS)
        admin.create_topic(TXN_TOPIC, num_partitions=PARTITIONS)
    acks, commits, txns, commit_check = Acks(), Commits(), Txns(), CommitCheck()
    live_seen: dict[bytes, int] = {}
    stop = threading.Event()
    admin_calls = [0]
    threads = [threading.Thread(target=run_confluent,
                                args=(bootstrap, acks, stop, random.Random(seed + 1), args.idempotence)),
               threading.Thread(target=run_ours, args=(bootstrap, acks, stop, random.Random(seed + 2), args.idempotence)),
               threading.Thread(target=run_group_consumer, args=(bootstrap, commits, stop, random.Random(seed + 3))),
               threading.Thread(target=run_transactions, args=(bootstrap, txns, stop, random.Random(seed + 4))),
               threading.Thread(target=run_read_committed, args=(bootstrap, live_seen, stop)),
               threading.Thread(target=run_admin, args=(bootstrap, stop, admin_calls), daemon=True)]
    for t in threads:
        t.start()
    kills = corruptions = not_named = 0
    damaged: set[tuple[str, int]] = set()
    t_end = time.monotonic() + args.duration
    try:
        while time.monotonic() < t_end:
            time.sleep(min(rng.uniform(0.5, 1.5) * args.kill_every, max(0.0, t_end - time.monotonic())))
            if time.monotonic() >= t_end:
                break
            broker.kill()
            kills += 1
            corruption = None
            if args.corrupt_every and kills % args.corrupt_every == 0:
                corruption = inject_corruption(data_dir, rng, latest=(kills // args.corrupt_every) % 2 == 0, done=damaged)
                corruptions += corruption is not None
                acked_then = {p: commits.last(p) for p in range(PARTITIONS)}
                requests_then = commits.requests_acked
            since_kill = 0  # commits acknowledged between the kill and the check
            when = f"[{args.duration - (t_end - time.monotonic()):6.1f} s] kill {kills}"
            try:
                broker.start(timeout=60)
            except BrokerStartError as e:
                print(f"{when}: THE BROKER DID NOT START"
                      f"{f' after damaging {corruption.path} at {corruption.byte}' if corruption else ''}: {e}",
                      file=sys.stderr)
                print(json.dumps({"seed": seed, "start_failures": 1, "kills": kills, "data_dir": data}), flush=True)
                os._exit(1)  # the client threads would wait for the broker for minutes
            if corruption is not None:
                loaded = wait_groups_loaded(broker)
                if not loaded or not names_damage(broker.log_text(), corruption):
                    not_named += 1
                    print(f"{when}: the broker's log does not name the damaged batch at position"
                          f" {corruption.position} of {corruption.path}:\n{broker.log_text()}", file=sys.stderr)
            if not commits.lock.acquire(timeout=120):
                commit_check.unanswered += 1
                print(f"{when}: the group consumer's commit did not return in 120 s", file=sys.stderr)
            else:
                try:
                    since_kill = commits.requests_acked - requests_then if corruption else 0
                    commit_check.after_restart(fetch_committed(bootstrap), commits, corruption, when)
                finally:
                    commits.lock.release()
            damage = (f"; damaged {corruption.path} at byte {corruption.byte} (batch at {corruption.position},"
                      f" holding the group's commits {corruption.commits or 'none'}; last acknowledged"
                      f" {acked_then}, {since_kill} more acknowledged before the"
                      " check)" if corruption else "")
            print(f"{when}: restarted{damage};"
                  f" acknowledged so far {sum(len(v) for v in acks.by_producer.values())} records,"
                  f" {commits.requests_acked} commits, {len(txns.committed)} transactions", flush=True)
        stop.set()
        for t in threads[:5]:
            t.join(300)
        assert broker.stop() == 0, "the broker did not shut down cleanly"
        broker.start(timeout=60)
        log = read_all(bootstrap)
        final = fetch_committed(bootstrap)
        hw, lso, stable_after = wait_stable(bootstrap, timeout=TXN_TIMEOUT_MS / 1000 + 20)
        txn_values, txn_positions = read_committed_all(bootstrap, lso)
    finally:
        stop.set()
        broker.stop()
        if args.data_dir is None:
            shutil.rmtree(data, ignore_errors=True)
    expected_final = [max(commit_check.last_binding(commits, p), commit_check.seen.get(p, -1))
                      if commit_check.rebased.get(p) == len(commits.acked[p]) else commits.last(p)
                      for p in range(PARTITIONS)]
    final_mismatched = sum(1 for p in range(PARTITIONS) if final is None or final[p] != expected_final[p])
    if final_mismatched:
        print(f"FINAL COMMITTED OFFSETS {final} != last acknowledged commits {expected_final}", file=sys.stderr)
    hanging = sum(1 for p in range(PARTITIONS) if lso[p] < hw[p])
    if hanging:
        print(f"HANGING TRANSACTIONS: last stable offsets {lso} below the high watermarks {hw}", file=sys.stderr)
    unread = sum(1 for p in range(PARTITIONS) if txn_positions[p] < lso[p])
    if unread:
        print(f"read_committed stopped at {txn_positions}, below the last stable offsets {lso}", file=sys.stderr)
    result = {"seed": seed, "duration_s": args.duration, "idempotence": args.idempotence, "kills": kills,
              "restarts": kills + 1, "admin_calls": admin_calls[0],
              "acknowledged": {k: len(v) for k, v in acks.by_producer.items()},
              "failed_deliveries": dict(acks.errors), **check(acks, log),
              "commits_acknowledged": commits.requests_acked, "commit_errors": commits.errors,
              "commit_checks": commit_check.checks, "commit_checks_unanswered": commit_check.unanswered,
              "commits_lost": commit_check.lost, "commits_moved_backwards": commit_check.backwards,
              "commits_lost_to_injected_corruption": commit_check.lost_to_corruption,
              "final_commits_mismatched": final_mismatched,
              "transactions_committed": len(txns.committed), "transactions_aborted": len(txns.aborted),
              "transactions_aborted_on_purpose": txns.aborted_on_purpose,
              "transactions_outcome_unknown": len(txns.unknown), "transactional_producer_inits": txns.producer_inits,
              "transactional_errors": dict(txns.errors), **check_txns(txns, txn_values, live_seen),
              "read_committed_partitions_short_of_lso": unread,
              "hanging_transactions": hanging, "stable_after_s": round(stable_after, 2),
              "corruptions_injected": corruptions, "corruptions_not_named_in_log": not_named, "start_failures": 0}
    print(json.dumps(result, indent=2))
    print(f"reproduce: .venv/bin/python scripts/chaos.py --duration {args.duration:g}"
          f" --kill-every {args.kill_every:g} --corrupt-every {args.corrupt_every} --seed {seed}"
          + ("" if args.idempotence else " --no-idempotence"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    failures = ("lost", "reordered", "commits_lost", "commits_moved_backwards", "commit_checks_unanswered",
                "final_commits_mismatched", "transactional_records_missing", "transactional_records_duplicated",
                "aborted_records_read", "transactions_partially_visible", "stray_transactional_records",
                "live_read_committed_aborted_read", "live_read_committed_duplicates",
                "read_committed_partitions_short_of_lso", "hanging_transactions", "corruptions_not_named_in_log")
    failed = any(result[k] for k in failures) or (args.idempotence and result["duplicates"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
