"""Idempotent producers of every client family deliver each record exactly once, in order, when
the broker drops the connection *after* writing a Produce request (the answer is lost, the
client resends the batch with the same sequence, the broker recognises it), and when the broker
is SIGKILLed and restarted while they send (the retries are recognised from the producer state
rebuilt from the snapshot and the log tail).

Exactly once is checked per partition: the values read back are the values sent to that
partition, in the order they were sent, each once.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

import pytest

from broker.testing import create_topic
from client import Consumer, Producer
from tests.broker_process import BrokerProcess

from ._clients import KP_TIMEOUTS

N = 900
PARTITIONS = 3
CLIENTS = ["ours", "confluent", "kafka-python", "aiokafka"]


def _values(n: int = N) -> list[bytes]:
    return [b"record-%05d" % i for i in range(n)]


def _expected(values: list[bytes]) -> dict[int, list[bytes]]:
    return {p: values[p::PARTITIONS] for p in range(PARTITIONS)}


def _read_partitions(bootstrap: str, topic: str) -> dict[int, list[bytes]]:
    async def go() -> dict[int, list[bytes]]:
        async with Consumer(bootstrap, auto_offset_reset="earliest") as c:
            tps = [(topic, p) for p in range(PARTITIONS)]
            c.assign(tps)
            ends = await c.end_offsets(tps)
            out: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
            deadline = time.monotonic() + 30
            while sum(map(len, out.values())) < sum(ends.values()) and time.monotonic() < deadline:
                for tp, recs in (await c.getmany(timeout_ms=500)).items():
                    out[tp[1]].extend(r.value for r in recs)
            return out
    return asyncio.run(go())


def produce(client: str, bootstrap: str, topic: str, values: list[bytes], pause: float = 0.0) -> None:
    """Send ``values[i]`` to partition ``i % 3`` with ``client``'s idempotent producer; raise
    unless every record is acknowledged. ``pause`` seconds between records spreads the sending
    over time (for the restart test)."""
    if client == "ours":
        async def ours() -> None:
            async with Producer(bootstrap, retry_backoff_ms=50, request_timeout_ms=5000) as p:
                assert p.enable_idempotence
                futs = []
                for i, v in enumerate(values):
                    futs.append(p.send_nowait(topic, v, partition=i % PARTITIONS))
                    if pause:
                        await asyncio.sleep(pause)
                for f in futs:
                    await f
        asyncio.run(ours())
    elif client == "confluent":
        from confluent_kafka import Producer as CProducer
        errors: list[Any] = []
        p = CProducer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5,
                       "retry.backoff.ms": 50, "socket.timeout.ms": 5000, "message.timeout.ms": 60000,
                       "on_delivery": lambda err, msg: errors.append(err) if err is not None else None})
        for i, v in enumerate(values):
            p.produce(topic, v, partition=i % PARTITIONS)
            p.poll(0)
            if pause:
                time.sleep(pause)
        assert p.flush(60) == 0
        assert errors == []
    elif client == "kafka-python":
        from kafka import KafkaProducer
        kp = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, linger_ms=5,
                           retry_backoff_ms=50, delivery_timeout_ms=60000, **KP_TIMEOUTS)
        try:
            futs = []
            for i, v in enumerate(values):
                futs.append(kp.send(topic, v, partition=i % PARTITIONS))
                if pause:
                    time.sleep(pause)
            kp.flush(60)
            for f in futs:
                f.get(timeout=60)
        finally:
            kp.close(5)
    else:
        from aiokafka import AIOKafkaProducer

        async def aio() -> None:
            p = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, linger_ms=5,
                                 retry_backoff_ms=50, request_timeout_ms=5000)
            await p.start()
            try:
                futs = []
                for i, v in enumerate(values):
                    futs.append(await p.send(topic, v, partition=i % PARTITIONS))
                    if pause:
                        await asyncio.sleep(pause)
                await asyncio.gather(*futs)
            finally:
                await p.stop()
        asyncio.run(aio())


@pytest.mark.slow
@pytest.mark.parametrize("client", CLIENTS)
def test_lost_answers_are_retried_into_exactly_one_copy(minibroker_factory: Any, client: str) -> None:
    b = minibroker_factory(kind="process")
    topic = f"idem-{client}"
    create_topic(b.bootstrap_servers, topic, PARTITIONS)
    b.faults.drop("PRODUCE", count=3, after=True, topic=topic)
    produce(client, b.bootstrap_servers, topic, _values())
    assert b.faults.rules() == [], "every injected fault was hit"
    assert _read_partitions(b.bootstrap_servers, topic) == _expected(_values())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
@pytest.mark.parametrize("client", ["ours", "confluent"])
def test_sigkill_and_restart_mid_stream_loses_and_doubles_nothing(tmp_path: Any, client: str) -> None:
    values = _values(1500)
    with BrokerProcess(str(tmp_path / "data"), ["log.segment.bytes=16384"], port=_free_port()) as b:
        topic = f"restart-{client}"
        create_topic(b.bootstrap, topic, PARTITIONS)
        failure: list[BaseException] = []

        def run() -> None:
            try:
                produce(client, b.bootstrap, topic, values, pause=0.001)
            except BaseException as e:  # noqa: BLE001 - reported by the test thread
                failure.append(e)

        t = threading.Thread(target=run, daemon=True)
        t.start()
        time.sleep(0.7)  # mid-stream
        b.kill()
        time.sleep(0.3)
        b.start()
        t.join(120)
        assert not t.is_alive(), "the producer did not finish"
        assert failure == []
        assert "producer state rebuilt" in b.log_text()
        assert _read_partitions(b.bootstrap, topic) == _expected(values)
