# test_share.py: a share group (KIP-932) with minibroker's ShareConsumer
import asyncio

from client import Producer
from client.share_consumer import AcknowledgeType


def test_share_group(minibroker, minibroker_topic, minibroker_share_consumer):
    async def go():
        async with Producer(minibroker.bootstrap_servers) as producer:
            await producer.send(minibroker_topic, b"job-1")
        async with minibroker_share_consumer([minibroker_topic], share_acknowledgement_mode="explicit") as c:
            first = await c.poll(timeout_ms=5000)
            c.acknowledge(first[0], AcknowledgeType.RELEASE)  # give it back: delivered again
            again = await c.poll(timeout_ms=5000)
            c.acknowledge(again[0], AcknowledgeType.ACCEPT)
            await c.commit_sync()
            return [(r.value, r.delivery_count) for r in first + again]

    assert asyncio.run(go()) == [(b"job-1", 1), (b"job-1", 2)]
