# test_ours.py: minibroker's own asyncio client
import asyncio

from client import Consumer, Producer


def test_roundtrip(minibroker, minibroker_topic):
    async def go():
        async with Producer(minibroker.bootstrap_servers) as producer:
            await producer.send(minibroker_topic, b"hello", key=b"k")
        async with Consumer(minibroker.bootstrap_servers, auto_offset_reset="earliest") as consumer:
            consumer.assign([(minibroker_topic, 0)])
            batches = await consumer.getmany(timeout_ms=5000)
            return [r.value for records in batches.values() for r in records]

    assert asyncio.run(go()) == [b"hello"]
