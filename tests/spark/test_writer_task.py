"""client/spark/writer.py's task, called in-process (no JVM): what one Spark task does with its
Arrow batches, against a real broker; the ``kafka.*`` settings seen in the broker's log files."""

from __future__ import annotations

import glob
import os
import struct
from typing import Any

import pytest

from client.spark.sink_options import parse_sink_options
from client.sync import SyncAdmin, SyncConsumer

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")
from client.spark.writer import SinkCommitMessage, write_task

# RecordBatch v2 header: baseOffset q, batchLength i, partitionLeaderEpoch i, magic b, crc I, attributes h,
# lastOffsetDelta i, baseTimestamp q, maxTimestamp q, producerId q, producerEpoch h, baseSequence i, count i
HEADER = struct.Struct(">qiibIhiqqqhii")


def batch_headers(data_dir: str, topic: str) -> list[tuple[int, int, int]]:
    """(attributes, producerId, record count) of every batch in ``topic``'s log files."""
    out = []
    for path in sorted(glob.glob(os.path.join(data_dir, f"{topic}-*", "*.log"))):
        with open(path, "rb") as f:
            data = f.read()
        pos = 0
        while pos + HEADER.size <= len(data):
            h = HEADER.unpack_from(data, pos)
            out.append((h[5], h[9], h[12]))
            pos += 12 + h[1]
    return out


def batches(n: int, size: int = 1000) -> list[Any]:
    return [pa.record_batch([pa.array([f"k{i}".encode() for i in range(lo, min(lo + size, n))], pa.binary()),
                             pa.array([f"v{i}" for i in range(lo, min(lo + size, n))], pa.string())],
                            names=["key", "value"]) for lo in range(0, n, size)]


def consume(servers: str, topic: str, parts: int, n: int) -> list[Any]:
    got: list[Any] = []
    with SyncConsumer(servers, auto_offset_reset="earliest") as c:
        c.assign([(topic, p) for p in range(parts)])
        for _ in range(50):
            got += c.poll(timeout_ms=200)
            if len(got) >= n:
                break
    return got


@pytest.mark.parametrize("codec,idempotent", [("zstd", "true"), ("gzip", "false")])
def test_task_counts_and_settings(broker: Any, codec: str, idempotent: str) -> None:
    topic = f"task-{codec}"
    with SyncAdmin(broker.bootstrap) as admin:
        admin.create_topic(topic, num_partitions=2)
    o = parse_sink_options({"kafka.bootstrap.servers": broker.bootstrap, "topic": topic,
                            "kafka.compression.type": codec, "kafka.enable.idempotence": idempotent,
                            "kafka.linger.ms": "50", "kafka.batch.size": "200000"})
    msg = write_task(iter(batches(3000)), o, frozenset({"key", "value"}))
    assert msg == SinkCommitMessage(rows=3000, bytes=sum(len(f"k{i}") + len(f"v{i}") for i in range(3000)),
                                    topics={topic: 3000})
    got = consume(broker.bootstrap, topic, 2, 3000)
    assert sorted((r.key, r.value) for r in got) == sorted((f"k{i}".encode(), f"v{i}".encode()) for i in range(3000))
    heads = batch_headers(broker.data_dir, topic)
    assert sum(c for _, _, c in heads) == 3000
    codec_id = {"gzip": 1, "zstd": 4}[codec]
    assert {a & 7 for a, _, _ in heads} == {codec_id}
    pids = {pid for _, pid, _ in heads}
    assert (min(pids) >= 0) if idempotent == "true" else pids == {-1}


def test_a_failed_record_fails_the_task(broker: Any) -> None:
    with SyncAdmin(broker.bootstrap) as admin:
        admin.create_topic("tiny", num_partitions=1, configs={"max.message.bytes": "500"})
    from client.errors import KafkaError

    o = parse_sink_options({"kafka.bootstrap.servers": broker.bootstrap, "topic": "tiny"})
    rb = pa.record_batch([pa.array([b"x" * 2000], pa.binary())], names=["value"])
    with pytest.raises(KafkaError) as e:
        write_task(iter([rb]), o, frozenset({"value"}))
    assert e.value.code == 10  # MESSAGE_TOO_LARGE, the broker's answer


def test_concurrent_idempotent_tasks_deliver_every_record_once(broker: Any) -> None:
    """Two tasks of one Python worker write the same new topic at once, each with its own
    (idempotent, the default) producer on the shared loop thread. Before the sender wrote a
    node's requests in the order it made them, a batch made later could reach the broker first
    while the connection was being set up, and the broker refused the earlier one
    (OUT_OF_ORDER_SEQUENCE_NUMBER) in about a third of these rounds."""
    import threading

    values = pa.array([str(i).ljust(50, "x").encode() for i in range(1000)], pa.binary())
    for r in range(8):
        topic = f"concurrent-{r}"
        with SyncAdmin(broker.bootstrap) as admin:
            admin.create_topic(topic, num_partitions=2)
        o = parse_sink_options({"kafka.bootstrap.servers": broker.bootstrap, "topic": topic})
        errors: list[BaseException] = []

        def task(o: Any, errors: list[BaseException]) -> None:
            try:
                write_task(iter([pa.record_batch([values], names=["value"])]), o, frozenset({"value"}))
            except BaseException as e:  # noqa: BLE001 - reported by the assertion below
                errors.append(e)

        threads = [threading.Thread(target=task, args=(o, errors)) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == []
        with SyncConsumer(broker.bootstrap, auto_offset_reset="earliest") as c:
            c.assign([(topic, 0), (topic, 1)])
            got = []
            for _ in range(20):
                got += c.poll(timeout_ms=200)
                if len(got) >= 2000:
                    break
        assert len(got) == 2000


def read_committed_values(servers: str, topic: str, parts: int) -> list[bytes]:
    """Every record of ``topic`` a read_committed consumer gets, read to the last stable offset."""
    got: list[Any] = []
    with SyncConsumer(servers, auto_offset_reset="earliest", isolation_level="read_committed") as c:
        c.assign([(topic, p) for p in range(parts)])
        ends = c.end_offsets([(topic, p) for p in range(parts)])
        for _ in range(100):
            got += c.poll(timeout_ms=100)
            if all(c.position(tp) >= end for tp, end in ends.items()):
                break
    return sorted(r.value for r in got)


def test_exactly_once_task_commits_once_and_recognises_a_replayed_batch(broker: Any) -> None:
    """With ``kafka.transactional.id`` a task writes its rows in one transaction that also
    records the micro-batch; the same (batch, partition) written again — a replay — is
    recognised and writes nothing; the next batch is written."""
    from client.spark.writer import BATCH_MARKER_TOPIC
    from client.structs import TopicPartition

    with SyncAdmin(broker.bootstrap) as admin:
        admin.create_topic("eos", num_partitions=2)
    o = parse_sink_options({"kafka.bootstrap.servers": broker.bootstrap, "topic": "eos",
                            "kafka.transactional.id": "q1"})
    cols = frozenset({"key", "value"})
    first = write_task(iter(batches(500)), o, cols, batch_id=7, partition_id=3)
    assert (first.rows, first.batch_id, first.replayed) == (500, 7, False)
    assert write_task(iter(batches(500)), o, cols, batch_id=7, partition_id=3) == \
        SinkCommitMessage(batch_id=7, replayed=True)
    expected = sorted(f"v{i}".encode() for i in range(500))
    assert read_committed_values(broker.bootstrap, "eos", 2) == expected
    heads = batch_headers(broker.data_dir, "eos")
    assert all(a & 0x10 for a, _, _ in heads)  # every batch transactional, markers included
    assert write_task(iter(batches(10)), o, cols, batch_id=8, partition_id=3).rows == 10
    assert len(read_committed_values(broker.bootstrap, "eos", 2)) == 510
    with SyncAdmin(broker.bootstrap) as admin:
        got = admin.fetch_group_offsets("q1", [TopicPartition(BATCH_MARKER_TOPIC, 3)])
    assert [(tp.partition, om.offset) for tp, om in got.items()] == [(3, 9)]  # the next batch to write


def test_exactly_once_failed_task_leaves_nothing_visible_and_fences_its_zombie(broker: Any) -> None:
    from client.errors import KafkaError, ProducerFencedError
    from client.sync import SyncProducer

    with SyncAdmin(broker.bootstrap) as admin:
        admin.create_topic("eos-fail", num_partitions=1, configs={"max.message.bytes": "500"})
    o = parse_sink_options({"kafka.bootstrap.servers": broker.bootstrap, "topic": "eos-fail",
                            "kafka.transactional.id": "q2"})
    # An older attempt of the same task still running: the new attempt fences it.
    zombie = SyncProducer(broker.bootstrap, transactional_id="q2-0")
    zombie.init_transactions()
    zombie.begin_transaction()
    zombie.send("eos-fail", b"zombie")  # written, in its open transaction
    ok_rows = pa.record_batch([pa.array([b"small"] * 3, pa.binary())], names=["value"])
    too_big = pa.record_batch([pa.array([b"x" * 2000], pa.binary())], names=["value"])
    with pytest.raises(KafkaError) as e:
        write_task(iter([ok_rows, too_big]), o, frozenset({"value"}), batch_id=0, partition_id=0)
    assert e.value.code == 10  # MESSAGE_TOO_LARGE fails the task ...
    assert read_committed_values(broker.bootstrap, "eos-fail", 1) == []  # ... and its 3 rows stay invisible
    with pytest.raises(ProducerFencedError):
        zombie.commit_transaction()
    zombie.close()
    assert write_task(iter([ok_rows]), o, frozenset({"value"}), batch_id=0, partition_id=0).rows == 3
    assert read_committed_values(broker.bootstrap, "eos-fail", 1) == [b"small"] * 3
