"""The calls MirrorMaker 2 makes to its *source* cluster, made with confluent-kafka against a
broker process: what moving history from minibroker to a Kafka cluster needs (docs/pages/operations.md,
"Outgrowing one node"). The broker's own request counters (``minibroker_requests_total``,
``minibroker_request_errors_total``) then show that each Kafka API was called and answered
without an error.

MM2 (Kafka's connect/mirror) and the calls, by connector:

- MirrorSourceConnector (source admin): list and describe the topics to replicate (Metadata),
  their configs to copy (DescribeConfigs); with ``offset-syncs.topic.location=source`` (the
  default) it creates ``mm2-offset-syncs.<target>.internal``, one partition, compacted
  (CreateTopics). ``sync.topic.acls.enabled`` must be false: minibroker has no ACL APIs.
- MirrorSourceTask (source consumer, partitions assigned, no group): ListOffsets, Fetch; its
  offset-sync producer (idempotent, acks=all) writes the offset-syncs topic: InitProducerId,
  Produce.
- MirrorCheckpointConnector / Task (source admin): the groups (ListGroups), their committed
  offsets (FindCoordinator, OffsetFetch); the offset-syncs topic read back (ListOffsets, Fetch).
- every client: ApiVersions first.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from tests.broker_process import BrokerProcess

OFFSET_SYNCS = "mm2-offset-syncs.target.internal"
MM2_APIS = ["API_VERSIONS", "METADATA", "DESCRIBE_CONFIGS", "CREATE_TOPICS", "INIT_PRODUCER_ID", "PRODUCE",
            "LIST_OFFSETS", "FETCH", "LIST_GROUPS", "FIND_COORDINATOR", "OFFSET_FETCH"]  # the broker's metric labels


@pytest.fixture
def source(tmp_path: Any) -> Iterator[BrokerProcess]:
    b = BrokerProcess(str(tmp_path / "data"), metrics=True).start()
    try:
        yield b
    finally:
        assert b.stop() == 0, b.log_text()


def counters(text: str, family: str) -> dict[str, float]:
    """{api: total over versions (and errors)} of one ``family`` in a Prometheus scrape."""
    out: dict[str, float] = {}
    for m in re.finditer(rf'^{family}\{{api="([^"]+)"[^}}]*\}} ([0-9.e+]+)$', text, re.M):
        out[m.group(1)] = out.get(m.group(1), 0) + float(m.group(2))
    return out


def test_every_source_cluster_call_of_mirrormaker2(source: BrokerProcess) -> None:
    bs = source.bootstrap
    admin = AdminClient({"bootstrap.servers": bs})
    # History to move: a topic with a config of its own, and a group with committed offsets.
    admin.create_topics([NewTopic("orders", 2, 1, config={"retention.ms": "604800000"})])["orders"].result(10)
    prod = Producer({"bootstrap.servers": bs})
    for i in range(20):
        prod.produce("orders", f"o{i}".encode(), partition=i % 2)
    assert prod.flush(10) == 0
    app = Consumer({"bootstrap.servers": bs, "group.id": "billing", "auto.offset.reset": "earliest",
                    "enable.auto.commit": False})
    app.assign([TopicPartition("orders", 0, 0), TopicPartition("orders", 1, 0)])
    seen = 0
    deadline = time.monotonic() + 20
    while seen < 20 and time.monotonic() < deadline:
        seen += len(app.consume(20, 1.0))
    app.commit(offsets=[TopicPartition("orders", 0, 7), TopicPartition("orders", 1, 5)], asynchronous=False)
    app.close()
    before = counters(source.scrape(), "minibroker_requests_total")

    # MirrorSourceConnector: topics, partitions, configs; the offset-syncs topic.
    md = admin.list_topics(timeout=10)
    assert "orders" in md.topics and sorted(md.topics["orders"].partitions) == [0, 1]
    res = ConfigResource(ConfigResource.Type.TOPIC, "orders")
    cfg = admin.describe_configs([res])[res].result(10)
    assert cfg["retention.ms"].value == "604800000" and not cfg["retention.ms"].is_default
    admin.create_topics([NewTopic(OFFSET_SYNCS, 1, 1, config={"cleanup.policy": "compact"})])[OFFSET_SYNCS].result(10)

    # MirrorSourceTask: read the partitions from the start (no group), write offset syncs.
    mirror = Consumer({"bootstrap.servers": bs, "group.id": "unused-by-assign", "enable.auto.commit": False})
    lo, hi = mirror.get_watermark_offsets(TopicPartition("orders", 0), timeout=10)
    assert (lo, hi) == (0, 10)
    mirror.assign([TopicPartition("orders", p, 0) for p in (0, 1)])
    copied = []
    deadline = time.monotonic() + 20
    while len(copied) < 20 and time.monotonic() < deadline:
        copied += [m for m in mirror.consume(20, 1.0) if m.error() is None]
    mirror.close()
    assert sorted(m.value() for m in copied) == sorted(f"o{i}".encode() for i in range(20))
    syncs = Producer({"bootstrap.servers": bs, "enable.idempotence": True, "acks": "all"})
    for p in (0, 1):
        syncs.produce(OFFSET_SYNCS, b"sync", key=f"orders-{p}".encode(), partition=0)
    assert syncs.flush(10) == 0

    # MirrorCheckpointConnector / Task: groups and their committed offsets; read the syncs back.
    groups = admin.list_consumer_groups().result(10)
    assert "billing" in {g.group_id for g in groups.valid}
    from confluent_kafka import ConsumerGroupTopicPartitions

    got = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("billing")])["billing"].result(10)
    assert {(tp.topic, tp.partition, tp.offset) for tp in got.topic_partitions} == {("orders", 0, 7), ("orders", 1, 5)}
    reader = Consumer({"bootstrap.servers": bs, "group.id": "unused-by-assign", "enable.auto.commit": False})
    reader.assign([TopicPartition(OFFSET_SYNCS, 0, 0)])
    back: list[Any] = []
    deadline = time.monotonic() + 20
    while len(back) < 2 and time.monotonic() < deadline:
        back += [m for m in reader.consume(10, 1.0) if m.error() is None]
    reader.close()
    assert sorted(m.key() for m in back) == [b"orders-0", b"orders-1"]

    scrape = source.scrape()
    after = counters(scrape, "minibroker_requests_total")
    errors = counters(scrape, "minibroker_request_errors_total")
    for api in MM2_APIS:
        assert after.get(api, 0) > before.get(api, 0), f"{api} was not called: {after}"
    assert not {api: n for api, n in errors.items() if api in MM2_APIS}, errors
