"""Admin changes on a broker process, and what survives a restart or a SIGKILL: a topic's
retention lowered at run time deletes old segments at the next retention check (their
``.deleted`` files removed once ``file.delete.delay.ms`` passed) and stays lowered after a
restart; DeleteRecords' log start offset survives a SIGKILL right after its
answer; added partitions and dynamic broker configs survive too."""

from __future__ import annotations

import asyncio
import glob
import os
import time

from client import Admin, Consumer, Producer, TopicPartition
from client.admin import ConfigSource
from client.errors import OffsetOutOfRangeError  # type: ignore[attr-defined]
from tests.broker_process import BrokerProcess

OVERRIDES = ["log.retention.check.interval.ms=300"]


def segment_bases(data_dir: str, topic: str, partition: int = 0) -> list[int]:
    return sorted(int(os.path.basename(p)[:20]) for p in glob.glob(os.path.join(data_dir, f"{topic}-{partition}",
                                                                                "*.log")))


async def produce(bootstrap: str, topic: str, n: int, timestamp_ms: int | None = None) -> None:
    async with Producer(bootstrap, linger_ms=0) as producer:
        for i in range(n):
            await producer.send(topic, b"%05d" % i * 20, partition=0, timestamp_ms=timestamp_ms)


async def earliest(bootstrap: str, topic: str) -> int:
    async with Admin(bootstrap) as admin:
        return (await admin.topic_offsets(topic, -2))[0]


def test_retention_lowered_at_run_time_deletes_old_segments_and_survives_restart(tmp_path) -> None:
    data = str(tmp_path / "data")
    b = BrokerProcess(data, OVERRIDES).start()
    try:
        async def before_restart() -> int:
            async with Admin(b.bootstrap) as admin:
                await admin.create_topic("ret", configs={"segment.bytes": "2000", "file.delete.delay.ms": "200"})
            await produce(b.bootstrap, "ret", 60, timestamp_ms=int(time.time() * 1000) - 3600_000)  # an hour old
            bases = segment_bases(data, "ret")
            assert len(bases) > 5
            await asyncio.sleep(1.0)  # several retention checks: 7 days of retention deletes nothing
            assert segment_bases(data, "ret") == bases and await earliest(b.bootstrap, "ret") == 0
            async with Admin(b.bootstrap) as admin:
                await admin.incremental_alter_configs("topic", "ret", {"retention.ms": "600000"})  # 10 minutes
            deadline = time.monotonic() + 10
            while await earliest(b.bootstrap, "ret") == 0:
                assert time.monotonic() < deadline, "the next retention check deleted nothing"
                await asyncio.sleep(0.1)
            start = await earliest(b.bootstrap, "ret")
            assert start == 60  # every record was an hour old: every segment went (a new one was rolled)
            assert segment_bases(data, "ret") == [60]
            deadline = time.monotonic() + 10
            while glob.glob(os.path.join(data, "ret-0", "*.deleted")):  # housekeeping, every second
                assert time.monotonic() < deadline, "the .deleted files were not removed"
                await asyncio.sleep(0.1)
            return start

        start = asyncio.run(before_restart())
    finally:
        assert b.stop() == 0, b.log_text()

    b = BrokerProcess(data, OVERRIDES).start()
    try:
        async def after_restart() -> None:
            async with Admin(b.bootstrap) as admin:
                entry = (await admin.describe_configs("topic", "ret"))["retention.ms"]
                assert (entry.value, entry.source) == ("600000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
            assert await earliest(b.bootstrap, "ret") == start
            # still in force after the restart: more hour-old records go at the next checks
            await produce(b.bootstrap, "ret", 60, timestamp_ms=int(time.time() * 1000) - 3600_000)
            deadline = time.monotonic() + 10
            while await earliest(b.bootstrap, "ret") < 120:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.1)

        asyncio.run(after_restart())
    finally:
        assert b.stop() == 0, b.log_text()


def test_delete_records_then_sigkill_keeps_the_log_start_offset(tmp_path) -> None:
    data = str(tmp_path / "data")
    b = BrokerProcess(data).start()

    async def delete() -> dict[TopicPartition, int]:
        async with Admin(b.bootstrap) as admin:
            await admin.create_topic("dr", 1, configs={"segment.bytes": "2000"})
            await produce(b.bootstrap, "dr", 100)
            got = await admin.delete_records({("dr", 0): 57})
            await admin.create_partitions({"dr": 3})
            await admin.incremental_alter_configs("broker", 0, {"log.retention.bytes": "123456789"})
            return got

    try:
        assert asyncio.run(delete()) == {TopicPartition("dr", 0): 57}
    finally:
        b.kill()  # SIGKILL right after the answers: no clean shutdown, no periodic checkpoint
    assert not os.path.exists(os.path.join(data, ".kafka_cleanshutdown"))

    b = BrokerProcess(data).start()
    try:
        async def check() -> None:
            assert await earliest(b.bootstrap, "dr") == 57
            async with Consumer(b.bootstrap, auto_offset_reset="none") as consumer:
                consumer.assign([("dr", 0)])
                consumer.seek(("dr", 0), 56)
                try:
                    await consumer.getmany(timeout_ms=5000)
                    raise AssertionError("a fetch below the log start offset succeeded")
                except OffsetOutOfRangeError:
                    pass
                consumer.seek(("dr", 0), 57)
                records = (await consumer.getmany(timeout_ms=5000))[TopicPartition("dr", 0)]
                assert records[0].offset == 57 and records[0].value == b"00057" * 20
            async with Admin(b.bootstrap) as admin:
                assert len((await admin.describe_topics(["dr"]))["dr"].partitions) == 3
                entry = (await admin.describe_configs("topic", "dr"))["retention.bytes"]
                assert (entry.value, entry.source) == ("123456789", ConfigSource.DYNAMIC_BROKER_CONFIG)

        asyncio.run(check())
    finally:
        assert b.stop() == 0, b.log_text()
