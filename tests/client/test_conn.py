"""BrokerConnection against a real broker: requests reach the broker in the order they were
made, also when the transport was paused and resumes while a later request is starting."""

from __future__ import annotations

import asyncio
from typing import Any

from broker.testing import BrokerProcess, create_topic
from client.conn import BrokerConnection
from client.protocol.api import ApiKey
from client.records import build_batch


def produce(topic: str, batch: bytes) -> dict[str, Any]:
    return {"transactional_id": None, "acks": 1, "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}


async def _requests_in_order(port: int) -> list[int]:
    conn = await BrokerConnection.connect("127.0.0.1", port)
    try:
        pid = (await conn.request(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": None,
                                                               "transaction_timeout_ms": 60000}))["producer_id"]
        first = bytes(build_batch([(b"k", b"0")], producer_id=pid, producer_epoch=0, base_sequence=0))
        second = bytes(build_batch([(b"k", b"1")], producer_id=pid, producer_epoch=0, base_sequence=1))
        conn._can_write.clear()  # as when the transport's buffer is full (pause_writing)
        a = asyncio.ensure_future(conn.request(ApiKey.PRODUCE, 3, produce("ordered", first)))
        await asyncio.sleep(0)  # a now waits for the transport to drain
        b = asyncio.ensure_future(conn.request(ApiKey.PRODUCE, 3, produce("ordered", second)))
        conn._can_write.set()  # resume_writing: a is woken, but b's first step runs before
        results = await asyncio.gather(a, b)
        return [r["responses"][0]["partition_responses"][0]["error_code"] for r in results]
    finally:
        await conn.close()


def test_a_later_request_does_not_overtake_one_waiting_for_the_transport(tmp_path: Any) -> None:
    """An idempotent producer's batches must arrive in sequence order: with the second batch
    first, the broker would accept it (unknown producer) and refuse the first
    (OUT_OF_ORDER_SEQUENCE_NUMBER)."""
    with BrokerProcess(str(tmp_path / "data")) as b:
        create_topic(b.bootstrap_servers, "ordered", 1)
        assert asyncio.run(_requests_in_order(b.port)) == [0, 0]
