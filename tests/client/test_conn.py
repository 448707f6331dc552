"""client/conn.py against a real broker (broker.testing, with its fault injection): a request
that outlives its timeout fails with KafkaTimeoutError and closes the connection (its
in-order stream is out of step); a cancelled request leaves the connection usable, its late
response dropped, the next request matched with its own response; requests reach the broker
in the order they were made, also when the transport was paused and resumes while a later
request is starting; ``send_request`` writes at once or not at all and answers by callback."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import broker.testing
from broker.testing import BrokerProcess, create_topic
from client.conn import BrokerConnection
from client.errors import KafkaTimeoutError
from client.protocol.api import ApiKey
from client.records import build_batch


@pytest.fixture(scope="module")
def delayed_broker():
    with broker.testing.run() as b:
        yield b


async def _connect(b) -> BrokerConnection:
    host, port = b.bootstrap_servers.rsplit(":", 1)
    return await BrokerConnection.connect(host, int(port))


def _metadata(conn: BrokerConnection) -> tuple[int, dict]:
    return conn.pick_version(ApiKey.METADATA), {"topics": [], "allow_auto_topic_creation": False}


async def test_request_timeout_fails_it_and_closes_the_connection(delayed_broker) -> None:
    conn = await _connect(delayed_broker)
    v, body = _metadata(conn)
    assert (await conn.request(ApiKey.METADATA, v, body))["brokers"]
    delayed_broker.faults.delay("METADATA", 1000, count=1)
    with pytest.raises(KafkaTimeoutError, match="METADATA request .* timed out"):
        await conn.request(ApiKey.METADATA, v, body, timeout=0.2)
    assert not conn.connected
    with pytest.raises(KafkaTimeoutError):  # the reason the connection closed, for later requests too
        await conn.request(ApiKey.METADATA, v, body)
    await conn.close()


async def test_cancelled_request_leaves_the_connection_usable(delayed_broker) -> None:
    conn = await _connect(delayed_broker)
    v, body = _metadata(conn)
    delayed_broker.faults.delay("METADATA", 300, count=1)
    first = asyncio.ensure_future(conn.request(ApiKey.METADATA, v, body))
    await asyncio.sleep(0.05)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    api_versions = await conn.request(ApiKey.API_VERSIONS, 0, {})  # answered after the late one
    assert api_versions["error_code"] == 0 and api_versions["api_keys"]
    assert conn.connected
    await conn.close()


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


async def test_send_request_writes_now_or_not_at_all_and_answers_by_callback(delayed_broker) -> None:
    """``send_request``: True and a callback with the response (from the data callback, never
    within the call); False, nothing written, while a slot is missing or an awaited request
    holds the write lock; a timeout or a broken connection reaches the callback as the error."""
    host, port = delayed_broker.bootstrap_servers.rsplit(":", 1)
    conn = await BrokerConnection.connect(host, int(port), max_in_flight=1)
    v, body = _metadata(conn)
    got: list[tuple[Any, Any]] = []
    answered = asyncio.Event()

    def on_response(resp: Any, exc: Any) -> None:
        got.append((resp, exc))
        answered.set()

    assert conn.send_request(ApiKey.METADATA, v, body, on_response)
    assert got == []  # not from within the call
    assert not conn.send_request(ApiKey.METADATA, v, body, on_response)  # the one slot is taken
    await answered.wait()
    (resp, exc), = got
    assert exc is None and resp["brokers"]
    # The slot came back: an awaited request and a callback request take turns in order.
    assert (await conn.request(ApiKey.API_VERSIONS, 0, {}))["error_code"] == 0
    async with conn._write_lock:  # as while an awaited request waits for the transport
        assert not conn.send_request(ApiKey.METADATA, v, body, on_response)
    # A request that outlives the timeout: the callback gets KafkaTimeoutError, the connection closes.
    got.clear()
    answered.clear()
    conn.request_timeout = 0.2
    delayed_broker.faults.delay("METADATA", 1000, count=1)
    assert conn.send_request(ApiKey.METADATA, v, body, on_response)
    await asyncio.wait_for(answered.wait(), 5)
    (resp, exc), = got
    assert resp is None and isinstance(exc, KafkaTimeoutError)
    assert not conn.connected
    assert not conn.send_request(ApiKey.METADATA, v, body, on_response)  # closed: nothing written
    await conn.close()
