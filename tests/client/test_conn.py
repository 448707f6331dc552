"""client/conn.py against a real broker (broker.testing, with its fault injection): a request
that outlives its timeout fails with KafkaTimeoutError and closes the connection (its
in-order stream is out of step); a cancelled request leaves the connection usable, its late
response dropped, the next request matched with its own response."""

from __future__ import annotations

import asyncio

import pytest

import broker.testing
from client.conn import BrokerConnection
from client.errors import KafkaTimeoutError
from client.protocol.api import ApiKey


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
