"""KIP-848 consumer groups with real clients: confluent-kafka (librdkafka) members with
``group.protocol=consumer``, our client's with ``group_protocol="consumer"``, and groups mixing
both, each member in its own process (tests/compat/group_worker.py). The broker
assigns; a member joining moves only the partitions that must move, and the others never stop
consuming theirs; a member leaving or SIGKILLed gives its partitions away; commits survive a
broker SIGKILL; a regular-expression subscription picks up a topic created later."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer

from broker.testing import BrokerProcess, create_topic

from .test_groups import Worker, committed, produce, wait_for

pytestmark = pytest.mark.slow

#: short sessions and heartbeats, so that a SIGKILLed member's partitions move within seconds
FAST = ["group.consumer.session.timeout.ms=6000", "group.consumer.min.session.timeout.ms=6000",
        "group.consumer.heartbeat.interval.ms=500", "group.consumer.min.heartbeat.interval.ms=500",
        # Kafka's initial delay, for the kafka-python classic members of the migration test
        # (docs/pages/consumer-groups.md, "kafka-python 3.0 and that delay")
        "group.initial.rebalance.delay.ms=3000"]


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    b = BrokerProcess(str(tmp_path / "data"), overrides=FAST).start()
    yield b
    b.kill()


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for w in started:
        if w.proc.poll() is None:
            w.kill()


#: the client of each member a..f: confluent-kafka's, ours, or a mix of both
CLIENTS = {"confluent": "cccccc", "minibroker": "mmmmmm", "mixed": "cmcmcm"}


@pytest.mark.parametrize("clients", list(CLIENTS))
def test_members_join_leave_die_and_commits_survive_a_broker_sigkill(
        broker: BrokerProcess, tmp_path: Path, workers: list[Worker], clients: str) -> None:
    bs, topic, group = broker.bootstrap_servers, "cg", "g-cg"
    create_topic(bs, topic, 6)
    sent = produce(bs, topic, 60)

    def start(name: str) -> Worker:
        client = {"c": "confluent", "m": "minibroker"}[CLIENTS[clients]["abcdef".index(name)]]
        w = Worker(tmp_path, client, bs, topic, group, name, protocol="consumer")
        workers.append(w)
        return w

    a, b, c = start("a"), start("b"), start("c")
    trio = (a, b, c)

    def owned_by_member() -> dict[str, set[int]]:
        """Each member's partitions as the broker assigns them (the workers' files lag a poll)."""
        from client.sync import SyncAdmin
        with SyncAdmin(bs) as admin:
            desc = admin.describe_groups([group])[group]
        return {m.member_id: {tp.partition for tp in m.assignment} for m in desc.members}

    def stable(members: int) -> bool:
        """The group reconciled: Stable, every member at its target (the workers' own view of
        their assignments lags by at most a poll)."""
        from client.sync import SyncAdmin
        with SyncAdmin(bs) as admin:
            desc = admin.describe_groups([group])[group]
        return desc.state == "Stable" and len(desc.members) == members and \
            all(m.assignment == m.target_assignment for m in desc.members)

    def covered(ws: tuple[Worker, ...]) -> bool:
        parts = [w.assignment() for w in ws]
        return all(parts) and sorted(sum(parts, [])) == list(range(6))  # type: ignore[arg-type]

    wait_for(lambda: covered(trio) and stable(3), 30, "three members sharing six partitions", trio, broker, group)
    done = lambda ws: set().union(*(set(w.processed()) for w in ws))
    wait_for(lambda: done(trio) >= sent, 30, "the first 60 records", trio)
    before = owned_by_member()

    d = start("d")
    quad = (a, b, c, d)
    wait_for(lambda: covered(quad) and all(w.assignment() for w in quad) and stable(4), 30,
             "a fourth member taking its share", quad, broker, group)
    after = owned_by_member()
    # the broker's default assignor (uniform) is sticky: members only give partitions away, so
    # one partition moves (Kafka's range assignor, by design, may shift several)
    assert set(after) >= set(before)
    assert all(after[m] <= before[m] for m in before), (before, after)
    assert sum(len(before[m] - after[m]) for m in before) == 1, (before, after)
    assert sorted(len(w.assignment() or []) for w in quad) == [1, 1, 2, 2]

    a.stop()  # leaves (epoch -1)
    b.kill()  # dies: its partitions move after group.consumer.session.timeout.ms (6 s)
    wait_for(lambda: covered((c, d)), 30, "the two survivors owning all six partitions", (c, d), broker, group)
    sent |= produce(bs, topic, 60, 60)
    wait_for(lambda: done(quad) >= sent, 30, "every record processed", quad)
    c.stop()
    d.stop()
    ends: dict[int, int] = {}
    for p, o in sent:
        ends[p] = max(ends.get(p, 0), o + 1)
    assert committed(bs, group, topic, 6) == ends

    # the broker dies and comes back on the same port and data: the commits are there
    port = broker.port
    broker.kill()
    broker.requested_port = port
    broker.start()
    assert committed(bs, group, topic, 6) == ends
    e, f = start("e"), start("f")
    wait_for(lambda: covered((e, f)), 30, "the restarted members", (e, f), broker, group)
    new = produce(bs, topic, 30, 120)
    wait_for(lambda: done((e, f)) >= new, 30, "the new records", (e, f))
    e.stop()
    f.stop()
    assert done((e, f)) == new  # nothing committed was read again


def test_regex_subscription_picks_up_a_topic_created_later(broker: BrokerProcess) -> None:
    bs = broker.bootstrap_servers
    create_topic(bs, "orders.eu", 2)
    c = Consumer({"bootstrap.servers": bs, "group.id": "g-regex", "group.protocol": "consumer",
                  "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 500})
    try:
        c.subscribe(["^orders\\..*"])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(c.assignment()) < 2:
            c.poll(0.1)
        assert sorted((tp.topic, tp.partition) for tp in c.assignment()) == [("orders.eu", 0), ("orders.eu", 1)]
        create_topic(bs, "orders.us", 1)
        created = time.monotonic()
        while time.monotonic() < deadline and len(c.assignment()) < 3:
            c.poll(0.05)
        took = time.monotonic() - created
        assert ("orders.us", 0) in [(tp.topic, tp.partition) for tp in c.assignment()]
        print(f"the new topic was assigned {took * 1000:.0f} ms after it was created (heartbeat interval 500 ms)")
        assert took < 3, took  # within a few heartbeat intervals (500 ms here)
        produce(bs, "orders.us", 1)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and m.error() is None and m.topic() == "orders.us":
                break
        else:
            raise AssertionError("nothing read from the topic created after the subscription")
    finally:
        c.close()


def test_online_migration_between_kafka_python_classic_and_confluent_consumer_members(
        broker: BrokerProcess, tmp_path: Path, workers: list[Worker]) -> None:
    """A running classic group (kafka-python, eager range) is joined by a confluent-kafka member
    speaking the consumer protocol: the group is upgraded, everyone keeps consuming, nothing is
    lost or read twice; the classic members leave; a new classic member joins the consumer group;
    when the consumer-protocol member leaves, the group is classic again."""
    bs, topic, group = broker.bootstrap_servers, "mig", "g-mig"
    create_topic(bs, topic, 6)
    sent = produce(bs, topic, 60)

    def start(name: str, client: str, protocol: str = "classic") -> Worker:
        w = Worker(tmp_path, client, bs, topic, group, name, protocol=protocol)
        workers.append(w)
        return w

    def group_type() -> str:
        from client.sync import SyncAdmin
        with SyncAdmin(bs) as admin:
            return admin.describe_groups([group])[group].group_type

    a, b = start("a", "kafka-python"), start("b", "kafka-python")

    def covered(ws: tuple[Worker, ...]) -> bool:
        parts = [w.assignment() for w in ws]
        return all(parts) and sorted(sum(parts, [])) == list(range(6))  # type: ignore[arg-type]

    wait_for(lambda: covered((a, b)), 60, "two classic members sharing six partitions", (a, b), broker, group)
    done = lambda ws: [r for w in ws for r in w.processed()]
    wait_for(lambda: set(done((a, b))) >= sent, 30, "the first 60 records", (a, b))
    assert group_type() == "classic"

    c = start("c", "confluent", "consumer")
    trio = (a, b, c)
    wait_for(lambda: covered(trio), 60, "the consumer-protocol member taking its share", trio, broker, group)
    assert group_type() == "consumer"
    sent |= produce(bs, topic, 60, 60)
    wait_for(lambda: set(done(trio)) >= sent, 30, "every record", trio)
    processed = done(trio)
    assert len(processed) == len(set(processed)), "a record was read twice"

    a.stop()
    b.stop()
    wait_for(lambda: c.assignment() == list(range(6)), 30, "the consumer member owning everything", (c,), broker, group)
    d = start("d", "kafka-python")
    wait_for(lambda: covered((c, d)) and bool(d.assignment()), 60, "a classic member joining the consumer group",
             (c, d), broker, group)
    assert group_type() == "consumer"
    c.stop()  # the last consumer-protocol member leaves: the group is downgraded and rebalances
    wait_for(lambda: d.assignment() == list(range(6)), 60, "the classic member owning everything", (d,), broker, group)
    assert group_type() == "classic"
    sent |= produce(bs, topic, 30, 120)
    everyone = (a, b, c, d)
    wait_for(lambda: set(done(everyone)) >= sent, 30, "every record", everyone)
    d.stop()
    processed = done(everyone)
    assert len(processed) == len(set(processed)), "a record was read twice"
    ends: dict[int, int] = {}
    for p, o in sent:
        ends[p] = max(ends.get(p, 0), o + 1)
    assert committed(bs, group, topic, 6) == ends
