"""Consumer groups with the real clients, each member in its own process
(tests/compat/group_worker.py): members share a topic, one leaves, one is SIGKILLed and its
partitions move after the session timeout, every record is processed, and after everyone
restarts nothing committed is read again. Also: two libraries in one group (same assignor),
static membership, and kcat's balanced consumer (-G).

The module's broker runs with Kafka's ``group.initial.rebalance.delay.ms`` (3000, the broker's
default), not the test harness's 0: members that start together join one generation, as in
production, and kafka-python leaders have the topic's metadata when they assign (see
test_kafka_python_leader_with_a_slow_sync_group)."""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from broker.testing import BrokerProcess, Fault, create_topic
from client.admin import Admin
from client.protocol.api import ApiKey

from ._clients import KCAT, KCAT_MISSING

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


class Worker:
    def __init__(self, tmp: Path, client: str, bs: str, topic: str, group: str, name: str, **opts: str) -> None:
        self.out = tmp / f"{name}.out"
        self.stop_file = tmp / f"{name}.stop"
        args = [sys.executable, "-m", "tests.compat.group_worker", client, bs, topic, group, "--out", str(self.out),
                "--stop", str(self.stop_file), "--name", name]
        for k, v in opts.items():
            args += [f"--{k.replace('_', '-')}", v]
        self.log = open(tmp / f"{name}.log", "w")
        self.proc = subprocess.Popen(args, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT)

    def assignment(self) -> list[int] | None:
        try:
            first = (Path(str(self.out) + ".assignment")).read_text().splitlines()[0]
        except (FileNotFoundError, IndexError):
            return None
        return [int(x) for x in first.split()]

    def revocations(self) -> int:
        lines = (Path(str(self.out) + ".assignment")).read_text().splitlines()
        return int(lines[1].split()[1])

    def processed(self) -> list[tuple[int, int]]:
        if not self.out.exists():
            return []
        return [(int(f[0]), int(f[1])) for f in (ln.split() for ln in self.out.read_text().splitlines()
                                                  if ln and not ln.startswith("#"))]

    def processed_at(self) -> list[tuple[int, int, float]]:
        """(partition, offset, when it was processed: time.time())"""
        return [(int(f[0]), int(f[1]), float(f[2])) for f in (ln.split() for ln in self.out.read_text().splitlines()
                                                              if ln and not ln.startswith("#"))]

    def stop(self, timeout: float = 60) -> None:
        self.stop_file.touch()
        assert self.proc.wait(timeout) == 0, Path(self.log.name).read_text()

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)


def wait_for(cond: Callable[[], bool], timeout: float, what: str, workers: Sequence[Worker] = (),
             broker: BrokerProcess | None = None, group: str = "") -> None:
    """Poll ``cond``; on timeout, fail with each worker's assignment file and log (the group
    protocol's steps, see group_worker.py) and the broker's log lines about ``group``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.1)
    detail = "".join(f"\n--- {Path(w.log.name).stem}: assignment {w.assignment()}\n{Path(w.log.name).read_text()[-4000:]}"
                     for w in workers)
    if broker is not None:
        lines = [ln for ln in broker.log_text().splitlines() if f"group {group}:" in ln]
        detail += f"\n--- broker, group {group}:\n" + "\n".join(lines[-200:])
    raise AssertionError(f"timed out after {timeout} s waiting for {what}{detail}")


def produce(bs: str, topic: str, n: int, start: int = 0) -> set[tuple[int, int]]:
    """Produce ``n`` keyed records; the (partition, offset) of each."""
    out: set[tuple[int, int]] = set()
    p = Producer({"bootstrap.servers": bs, "linger.ms": 1})
    for i in range(start, start + n):
        p.produce(topic, f"v{i}".encode(), key=f"k{i}".encode(),
                  on_delivery=lambda err, m: out.add((m.partition(), m.offset())) if err is None else None)
    assert p.flush(10) == 0
    assert len(out) == n
    return out


def committed(bs: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bs, "group.id": group})
    try:
        return {tp.partition: tp.offset for tp in c.committed([TopicPartition(topic, p) for p in range(partitions)],
                                                              timeout=10)}
    finally:
        c.close()


KAFKA_DELAY = "group.initial.rebalance.delay.ms=3000"
BROKER_OVERRIDES = [KAFKA_DELAY]  # module_broker's (tests/conftest.py)


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for w in started:
        if w.proc.poll() is None:
            w.kill()


@pytest.mark.parametrize("client", ["confluent", "kafka-python", "aiokafka"])
def test_members_share_leave_die_and_restart_without_rereading(
        client: str, module_broker: BrokerProcess, tmp_path: Path, workers: list[Worker]) -> None:
    bs, topic, group = module_broker.bootstrap_servers, f"shared-{client}", f"g-{client}"
    create_topic(bs, topic, 6)
    sent = produce(bs, topic, 60)

    def start(name: str) -> Worker:
        w = Worker(tmp_path, client, bs, topic, group, name)
        workers.append(w)
        return w

    a, b, c = start("a"), start("b"), start("c")

    def spread() -> bool:
        parts = [w.assignment() for w in (a, b, c)]
        return all(parts) and sorted(sum(parts, [])) == list(range(6))  # type: ignore[arg-type]

    wait_for(spread, 60, "three members sharing six partitions", [a, b, c], module_broker, group)
    done = lambda ws: set().union(*(set(w.processed()) for w in ws))
    wait_for(lambda: done((a, b, c)) >= sent, 30, "the first 60 records")
    a.stop()  # leaves the group
    b.kill()  # dies: its partitions move after its session timeout (6 s)
    wait_for(lambda: c.assignment() == list(range(6)), 60, "the survivor owning all six partitions", [c],
             module_broker, group)
    sent |= produce(bs, topic, 60, 60)
    wait_for(lambda: done((a, b, c)) >= sent, 30, "every record processed")
    c.stop()
    ends: dict[int, int] = {}
    for p, o in sent:
        ends[p] = max(ends.get(p, 0), o + 1)
    assert committed(bs, group, topic, 6) == ends  # everything processed was committed

    # Everyone restarts: only records produced since are read.
    d, e, f = start("d"), start("e"), start("f")
    wait_for(lambda: all(w.assignment() for w in (d, e, f)), 60, "the restarted members", [d, e, f],
             module_broker, group)
    new = produce(bs, topic, 30, 120)
    wait_for(lambda: done((d, e, f)) >= new, 30, "the new records")
    for w in (d, e, f):
        w.stop()
    assert done((d, e, f)) == new


def test_kafka_python_leader_with_a_slow_sync_group(tmp_path: Path, workers: list[Worker]) -> None:
    """Every SyncGroup answered 400 ms late (longer than the worker's 200 ms poll): with Kafka's
    initial rebalance delay a lone kafka-python member leads its first generation with the
    topic's metadata in hand and gets every partition. (With the delay at 0 it may lead a first
    generation before its metadata arrives, rejoin for the metadata, and kafka-python 3.0.12
    drops the second SyncGroup answer if its poll returned first: docs/pages/consumer-groups.md,
    "kafka-python 3.0 and that delay".)"""
    b = BrokerProcess(str(tmp_path / "data"), overrides=[KAFKA_DELAY], faults=True).start()
    try:
        bs = b.bootstrap_servers
        create_topic(bs, "slow-sync", 6)
        sent = produce(bs, "slow-sync", 12)
        b.faults.add(Fault(api=int(ApiKey.SYNC_GROUP), action="delay", delay_ms=400, count=-1))
        w = Worker(tmp_path, "kafka-python", bs, "slow-sync", "g-slow-sync", "solo")
        workers.append(w)
        wait_for(lambda: w.assignment() == list(range(6)), 30, "the lone member owning all six partitions", [w],
                 b, "g-slow-sync")
        wait_for(lambda: set(w.processed()) >= sent, 30, "every record", [w])
        w.stop()
    finally:
        assert b.stop() == 0, b.log_text()


def test_one_group_two_libraries(module_broker: BrokerProcess, tmp_path: Path, workers: list[Worker]) -> None:
    """confluent-kafka and kafka-python members in one group, both with the range assignor:
    the leader (either) assigns for both, and together they cover the topic once."""
    bs, topic, group = module_broker.bootstrap_servers, "mixed", "g-mixed"
    create_topic(bs, topic, 6)
    sent = produce(bs, topic, 60)
    x = Worker(tmp_path, "confluent", bs, topic, group, "x")
    y = Worker(tmp_path, "kafka-python", bs, topic, group, "y")
    workers += [x, y]

    def shared() -> bool:
        px, py = x.assignment(), y.assignment()
        return bool(px) and bool(py) and sorted(px + py) == list(range(6))  # type: ignore[operator]

    wait_for(shared, 60, "two libraries sharing six partitions")
    wait_for(lambda: set(x.processed()) | set(y.processed()) >= sent, 30, "every record")
    assert not set(x.processed()) & set(y.processed())
    x.stop()
    y.stop()


def test_static_member_restart_keeps_its_partitions_without_a_rebalance(
        module_broker: BrokerProcess, tmp_path: Path, workers: list[Worker]) -> None:
    bs, topic, group = module_broker.bootstrap_servers, "static", "g-static"
    create_topic(bs, topic, 4)
    s1 = Worker(tmp_path, "confluent", bs, topic, group, "s1", instance="i-1", session_ms="30000")
    s2 = Worker(tmp_path, "confluent", bs, topic, group, "s2", instance="i-2", session_ms="30000")
    workers += [s1, s2]
    wait_for(lambda: bool(s1.assignment()) and bool(s2.assignment())
             and sorted(s1.assignment() + s2.assignment()) == [0, 1, 2, 3], 60, "two static members")  # type: ignore[operator]
    time.sleep(1)
    before = s1.assignment(), s2.assignment(), s2.revocations()
    s1.kill()  # no LeaveGroup: a static member's partitions wait for it (session timeout 30 s)
    again = Worker(tmp_path, "confluent", bs, topic, group, "s1-again", instance="i-1", session_ms="30000")
    workers.append(again)
    wait_for(lambda: again.assignment() is not None, 30, "the restarted static member")
    assert again.assignment() == before[0]
    time.sleep(2)
    assert s2.assignment() == before[1] and s2.revocations() == before[2]  # s2 never rebalanced
    again.stop()
    s2.stop()


@pytest.mark.skipif(KCAT is None, reason=KCAT_MISSING)
def test_kcat_balanced_consumer_commits(module_broker: BrokerProcess) -> None:
    bs, topic = module_broker.bootstrap_servers, "kcat-group"
    create_topic(bs, topic, 3)
    sent = produce(bs, topic, 30)

    def run_kcat() -> set[tuple[int, int]]:
        out = subprocess.run([KCAT, "-b", bs, "-G", "kcat-g", "-e", "-q", "-f", "%p %o\\n",
                              "-X", "auto.offset.reset=earliest", "-X", "enable.auto.commit=true", topic],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return {(int(p), int(o)) for p, o in (ln.split() for ln in out.stdout.splitlines() if ln.strip())}

    assert run_kcat() == sent
    assert committed(bs, "kcat-g", topic, 3) == {p: max(o for q, o in sent if q == p) + 1 for p in range(3)}
    new = produce(bs, topic, 9, 30)
    assert run_kcat() == new  # only what came after the committed offsets


class KcatMember:
    """``kcat -G GROUP TOPIC`` (librdkafka's balanced consumer) in its own process, running until
    signalled: every record it reads is a ``partition offset`` line on stdout (unbuffered, -u);
    its rebalances are ``Group ... rebalanced ...: assigned: t [0], t [3]`` lines on stderr."""

    def __init__(self, tmp: Path, bs: str, group: str, topic: str, name: str) -> None:
        assert KCAT is not None
        self.out, self.err = tmp / f"{name}.out", tmp / f"{name}.err"
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.proc = subprocess.Popen(
                [KCAT, "-b", bs, "-G", group, "-u", "-f", "%p %o\\n", "-X", "auto.offset.reset=earliest",
                 "-X", "enable.auto.commit=true", "-X", "auto.commit.interval.ms=200",
                 "-X", "session.timeout.ms=45000", "-X", "heartbeat.interval.ms=500",
                 "-X", "fetch.wait.max.ms=50", topic], stdin=subprocess.DEVNULL, stdout=out, stderr=err)

    def read(self) -> list[tuple[int, int]]:
        return [(int(p), int(o)) for p, o in (ln.split() for ln in self.out.read_text().splitlines() if ln.strip())]

    def assignment(self) -> list[int] | None:
        """The partitions of its latest rebalance (None before its first assignment)."""
        last: list[int] | None = None
        for line in self.err.read_text(errors="replace").splitlines():
            if "rebalanced" in line and "assigned:" in line:
                last = sorted(int(p) for p in re.findall(r"\[(\d+)\]", line.split("assigned:", 1)[1]))
            elif "rebalanced" in line and "revoked:" in line:
                last = []
        return last

    def terminate(self) -> None:
        """SIGTERM: kcat closes its consumer (a final commit, then LeaveGroup) and exits 0."""
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(30) == 0, self.err.read_text(errors="replace")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.mark.skipif(KCAT is None, reason=KCAT_MISSING)
def test_kcat_balanced_consumers_share_then_one_leaves(module_broker: BrokerProcess, tmp_path: Path) -> None:
    """Three ``kcat -G`` processes share a six-partition topic; together they read every record
    (at least once: a partition moving between members may be re-read from its last commit).
    One is SIGTERMed and leaves; the survivors take over its partitions and read what comes
    next; the committed offsets reach the log end of every partition."""
    bs, topic, group = module_broker.bootstrap_servers, "kcat-members", "kcat-members-g"
    create_topic(bs, topic, 6)
    sent = produce(bs, topic, 30)  # before anyone joins: read from the earliest offset
    members = [KcatMember(tmp_path, bs, group, topic, name) for name in ("a", "b", "c")]
    try:
        def shares(ms: list[KcatMember], each: int) -> bool:
            parts = [m.assignment() for m in ms]
            return all(p is not None and len(p) == each for p in parts) \
                and sorted(sum(parts, [])) == list(range(6))  # type: ignore[arg-type]

        def read(ms: list[KcatMember]) -> list[tuple[int, int]]:
            return [r for m in ms for r in m.read()]

        wait_for(lambda: shares(members, 2), 60, "three kcat members with two partitions each")
        sent |= produce(bs, topic, 30, 30)
        wait_for(lambda: set(read(members)) >= sent, 30, "every record read by some member")
        assert set(read(members)) == sent  # nothing that was not produced
        a, b, c = members
        before = {m: len(m.read()) for m in (b, c)}
        a.terminate()
        # the session timeout (45 s) is longer than this wait: only a's LeaveGroup can move its
        # partitions in time; they continue from a's last commit (its close commits)
        wait_for(lambda: shares([b, c], 3), 30, "the two survivors with three partitions each")
        new = produce(bs, topic, 30, 60)
        wait_for(lambda: set(read([b, c])) >= new, 30, "the records produced after a left")
        assert set(read(members)) == sent | new
        for m in (b, c):
            later = m.read()[before[m]:]
            assert {p for p, _ in later} <= set(m.assignment() or []), "a survivor read a partition it does not own"
        ends: dict[int, int] = {}
        for p, o in sent | new:
            ends[p] = max(ends.get(p, 0), o + 1)

        async def offsets() -> dict[int, tuple[int, int | None, int | None]]:
            async with Admin(bs) as admin:
                got = await admin.list_group_offsets(group, [(topic, p) for p in range(6)])
            return {tp.partition: (go.committed, go.log_end_offset, go.lag) for tp, go in got.items()}

        want = {p: (end, end, 0) for p, end in ends.items()}
        wait_for(lambda: asyncio.run(offsets()) == want, 30, "committed offsets at the log end (auto-commit)")
        b.terminate()
        c.terminate()
        assert asyncio.run(offsets()) == want
    finally:
        for m in members:
            m.kill()
