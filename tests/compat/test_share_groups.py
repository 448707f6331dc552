"""Share groups (KIP-932) with a real client: confluent-kafka ``ShareConsumer`` processes
(tests/compat/share_worker.py) sharing a one-partition topic as a queue — each record processed
by one of them; records a SIGKILLed consumer held come back after the lock timeout with their
delivery count raised; rejected records and records released past the delivery-count limit are
archived; and the broker SIGKILLed during acknowledgements, five times, loses nothing and
delivers no acknowledged record again."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from broker.testing import BrokerProcess, create_topic

from .test_groups import produce, wait_for

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
LOCK_MS = 5000
OVERRIDES = [f"group.share.record.lock.duration.ms={LOCK_MS}", "group.share.delivery.count.limit=3"]


class ShareWorker:
    def __init__(self, tmp: Path, bs: str, topic: str, group: str, name: str, mode: str = "accept") -> None:
        self.out = tmp / f"{name}.out"
        self.stop_file = tmp / f"{name}.stop"
        self.log = open(tmp / f"{name}.log", "w")
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.compat.share_worker", bs, topic, group,
                                      "--out", str(self.out), "--stop", str(self.stop_file), "--mode", mode],
                                     cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT)

    def deliveries(self) -> list[tuple[int, int, str]]:
        """(offset, delivery count, what it did) of every record it was given."""
        if not self.out.exists():
            return []
        out = []
        for ln in self.out.read_text().splitlines():
            f = ln.split()
            if len(f) == 3:
                out.append((int(f[0]), int(f[1]), f[2]))
        return out

    def committed(self) -> list[tuple[int, int]]:
        """(line number, offset) of each acknowledgement the broker answered."""
        if not self.out.exists():
            return []
        return [(i, int(ln.split()[1])) for i, ln in enumerate(self.out.read_text().splitlines())
                if ln.startswith("C ")]

    def stop(self) -> None:
        self.stop_file.touch()
        assert self.proc.wait(60) == 0, Path(self.log.name).read_text()

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    b = BrokerProcess(str(tmp_path / "data"), overrides=OVERRIDES).start()
    yield b
    b.kill()


@pytest.fixture
def workers() -> Iterator[list[ShareWorker]]:
    started: list[ShareWorker] = []
    yield started
    for w in started:
        if w.proc.poll() is None:
            w.kill()


def earliest(bs: str, group: str) -> None:
    """share.auto.offset.reset=earliest for the group (a group config, as kafka-configs.sh sets it)."""
    admin = AdminClient({"bootstrap.servers": bs})
    r = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([r])[r].result(10)


def test_three_consumers_share_one_partition_each_record_once(
        broker: BrokerProcess, tmp_path: Path, workers: list[ShareWorker]) -> None:
    bs, topic, group = broker.bootstrap_servers, "queue", "sg-queue"
    create_topic(bs, topic, 1)
    earliest(bs, group)
    ws = [ShareWorker(tmp_path, bs, topic, group, n, "slow") for n in "abc"]
    workers += ws
    sent = set()
    for wave in range(10):  # while they consume
        sent |= produce(bs, topic, 30, wave * 30)
        time.sleep(0.1)
    offsets = {o for _, o in sent}
    accepted = lambda: [o for w in ws for o, _, what in w.deliveries() if what == "accept"]
    wait_for(lambda: set(accepted()) >= offsets, 60, "every record accepted")
    for w in ws:
        w.stop()
    got = accepted()
    assert sorted(got) == sorted(offsets), "a record was processed twice or not at all"
    assert all(count == 1 for w in ws for _, count, _ in w.deliveries())
    print("records per consumer:", [len(w.deliveries()) for w in ws])


def test_a_killed_consumers_records_come_back_after_the_lock_timeout(
        broker: BrokerProcess, tmp_path: Path, workers: list[ShareWorker]) -> None:
    bs, topic, group = broker.bootstrap_servers, "locks", "sg-locks"
    create_topic(bs, topic, 1)
    earliest(bs, group)
    produce(bs, topic, 5)
    holder = ShareWorker(tmp_path, bs, topic, group, "holder", "hold")
    workers.append(holder)
    wait_for(lambda: len(holder.deliveries()) == 5, 30, "the holder acquiring the five records")
    other = ShareWorker(tmp_path, bs, topic, group, "other")
    workers.append(other)
    time.sleep(1)
    assert other.deliveries() == []  # locked to the holder
    killed = time.monotonic()
    holder.kill()
    wait_for(lambda: len(other.deliveries()) == 5, 30, "the records delivered again")
    took = time.monotonic() - killed
    assert sorted(other.deliveries()) == [(o, 2, "accept") for o in range(5)]  # second delivery each
    assert took < LOCK_MS / 1000 + 5
    other.stop()


def test_rejected_and_over_delivered_records_are_archived(
        broker: BrokerProcess, tmp_path: Path, workers: list[ShareWorker]) -> None:
    bs, topic, group = broker.bootstrap_servers, "poison", "sg-poison"
    create_topic(bs, topic, 1)
    earliest(bs, group)
    produce(bs, topic, 10)
    rejecter = ShareWorker(tmp_path, bs, topic, group, "rejecter", "reject=3")
    workers.append(rejecter)
    wait_for(lambda: {o for o, _, _ in rejecter.deliveries()} == set(range(10)), 30, "ten records")
    rejecter.stop()
    releaser = ShareWorker(tmp_path, bs, topic, group, "releaser", "release=12")
    workers.append(releaser)
    produce(bs, topic, 5, 10)  # offsets 10-14; 12 is released every time
    wait_for(lambda: [c for o, c, _ in releaser.deliveries() if o == 12] == [1, 2, 3], 30,
             "offset 12 delivered three times (group.share.delivery.count.limit=3)")
    time.sleep(LOCK_MS / 1000 + 1)
    releaser.stop()
    assert [c for o, c, _ in releaser.deliveries() if o == 12] == [1, 2, 3]  # then archived: never again
    assert [d for d in rejecter.deliveries() if d[0] == 3] == [(3, 1, "reject")]
    assert all(o != 3 for o, _, _ in releaser.deliveries())  # rejected: never delivered again
    late = ShareWorker(tmp_path, bs, topic, group, "late")
    workers.append(late)
    produce(bs, topic, 1, 15)
    wait_for(lambda: [o for o, _, _ in late.deliveries()] == [15], 30, "only the new record")
    late.stop()


def test_broker_sigkilled_during_acknowledgements_five_times(
        broker: BrokerProcess, tmp_path: Path, workers: list[ShareWorker]) -> None:
    bs, topic, group = broker.bootstrap_servers, "crash", "sg-crash"
    create_topic(bs, topic, 1)
    earliest(bs, group)
    sent = {o for _, o in produce(bs, topic, 400)}
    ws = [ShareWorker(tmp_path, bs, topic, group, n, "slow") for n in ("x", "y")]
    workers += ws
    port = broker.port
    for _ in range(5):
        wait_for(lambda: any(w.committed() for w in ws), 30, "acknowledgements being answered")
        time.sleep(0.5)
        broker.kill()
        broker.requested_port = port
        broker.start()
    committed = lambda: {o for w in ws for _, o in w.committed()}
    wait_for(lambda: committed() >= sent, 120, "every record acknowledged")
    for w in ws:
        w.stop()
    # no acknowledged record was delivered again: after its C line, no delivery of that offset
    for w in ws:
        lines = w.out.read_text().splitlines()
        done_at = {}
        for i, ln in enumerate(lines):
            if ln.startswith("C "):
                done_at.setdefault(int(ln.split()[1]), (w, i))
        for other in ws:
            for j, ln in enumerate(other.out.read_text().splitlines()):
                f = ln.split()
                if len(f) == 3 and int(f[0]) in done_at:
                    owner, i = done_at[int(f[0])]
                    assert not (owner is other and j > i), f"offset {f[0]} delivered again after its ack was stored"
    assert committed() == sent  # nothing lost


def test_read_committed_share_group_gets_committed_records_only(
        broker: BrokerProcess, tmp_path: Path, workers: list[ShareWorker]) -> None:
    from confluent_kafka import Producer
    bs, topic, group = broker.bootstrap_servers, "txn", "sg-txn"
    create_topic(bs, topic, 1)
    earliest(bs, group)
    admin = AdminClient({"bootstrap.servers": bs})
    r = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.isolation.level", "read_committed", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([r])[r].result(10)
    p = Producer({"bootstrap.servers": bs, "transactional.id": "share-txn"})
    p.init_transactions(10)
    for commit in (True, False, True):
        p.begin_transaction()
        for _ in range(3):
            p.produce(topic, b"ok" if commit else b"aborted")
        p.flush(10)
        (p.commit_transaction if commit else p.abort_transaction)(10)
    # the log: 0-2 committed, 3 marker, 4-6 aborted, 7 marker, 8-10 committed, 11 marker
    w = ShareWorker(tmp_path, bs, topic, group, "rc")
    workers.append(w)
    wait_for(lambda: len(w.deliveries()) >= 6, 30, "the committed records")
    time.sleep(1)
    w.stop()
    assert sorted(o for o, _, _ in w.deliveries()) == [0, 1, 2, 8, 9, 10]
