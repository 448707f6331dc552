"""Real producers retry through injected faults and deliver every record: confluent-kafka
(librdkafka) and our Producer, against a subprocess broker whose fault rules are set through
its control listener (the pytest plugin's ``minibroker_factory``).

Exactly once, without idempotence (both producers here have it off: confluent-kafka by
default, ours by ``enable_idempotence=False``): NOT_LEADER_OR_FOLLOWER answers write nothing,
and a connection dropped *before* the request is handled loses nothing that was applied, so a
retried batch is written once, provided the producer has a single request in flight (with more,
replies of earlier, applied requests queued on the dropped connection are lost too and their
retries duplicate them). A connection dropped *after* the request was applied (``drop_after``)
is what idempotent producers exist for: without idempotence the retry carries no sequence the
broker could recognise and is written again, which the last test shows (at least once, with
duplicates); tests/compat/test_idempotence.py shows idempotent producers writing it once.
"""

from __future__ import annotations

import asyncio
import collections
from typing import Any

import pytest

from broker.testing import create_topic
from client import Consumer, Producer

N = 600
PARTITIONS = 3


def _values(n: int = N) -> list[bytes]:
    return [b"record-%05d" % i for i in range(n)]


def _read_all(bootstrap: str, topic: str) -> list[bytes]:
    """Every record value of the topic, read with our consumer from offset 0 to the end."""
    async def go() -> list[bytes]:
        async with Consumer(bootstrap, auto_offset_reset="earliest") as c:
            tps = [(topic, p) for p in range(PARTITIONS)]
            c.assign(tps)
            ends = await c.end_offsets(tps)
            out: list[bytes] = []
            want = sum(ends.values())
            deadline = asyncio.get_running_loop().time() + 30
            while len(out) < want and asyncio.get_running_loop().time() < deadline:
                for recs in (await c.getmany(timeout_ms=500)).values():
                    out.extend(r.value for r in recs)
            return out
    return asyncio.run(go())


def _arm(faults: Any, topic: str) -> None:
    faults.fail("PRODUCE", "NOT_LEADER_OR_FOLLOWER", count=3, topic=topic)
    faults.drop("PRODUCE", count=1, topic=topic)


def _produce_confluent(bootstrap: str, topic: str, values: list[bytes], **conf: Any) -> list[Any]:
    from confluent_kafka import Producer as CProducer
    errors: list[Any] = []
    p = CProducer({"bootstrap.servers": bootstrap, "linger.ms": 5, "retry.backoff.ms": 20,
                   "message.timeout.ms": 30000, "socket.timeout.ms": 5000, **conf,
                   "on_delivery": lambda err, msg: errors.append(err) if err is not None else None})
    for i, v in enumerate(values):
        p.produce(topic, v, partition=i % PARTITIONS)
    left = p.flush(60)
    assert left == 0, f"{left} records undelivered"
    return errors


async def _produce_ours(bootstrap: str, topic: str, values: list[bytes], **opts: Any) -> None:
    async with Producer(bootstrap, retry_backoff_ms=20, request_timeout_ms=5000, **opts) as p:
        futs = [p.send_nowait(topic, v, partition=i % PARTITIONS) for i, v in enumerate(values)]
        for f in futs:
            await f  # raises if a record was not delivered


@pytest.mark.slow
def test_confluent_retries_through_not_leader_and_a_dropped_connection(minibroker_factory: Any) -> None:
    b = minibroker_factory(kind="process")
    create_topic(b.bootstrap_servers, "cf", PARTITIONS)
    _arm(b.faults, "cf")
    errors = _produce_confluent(b.bootstrap_servers, "cf", _values(),
                                **{"max.in.flight.requests.per.connection": 1})
    assert errors == []
    assert b.faults.rules() == [], "every injected fault was hit"
    assert sorted(_read_all(b.bootstrap_servers, "cf")) == _values()  # each record exactly once


@pytest.mark.slow
def test_our_producer_retries_through_not_leader_and_a_dropped_connection(minibroker_factory: Any) -> None:
    b = minibroker_factory(kind="process")
    create_topic(b.bootstrap_servers, "ours", PARTITIONS)
    _arm(b.faults, "ours")
    asyncio.run(_produce_ours(b.bootstrap_servers, "ours", _values(), max_in_flight_requests_per_connection=1,
                              enable_idempotence=False))
    assert b.faults.rules() == []
    assert sorted(_read_all(b.bootstrap_servers, "ours")) == _values()


@pytest.mark.slow
@pytest.mark.parametrize("client", ["confluent", "ours"])
def test_reply_lost_after_the_write_is_at_least_once_without_idempotence(minibroker_factory: Any, client: str) -> None:
    b = minibroker_factory(kind="process")
    topic = f"lost-{client}"
    create_topic(b.bootstrap_servers, topic, PARTITIONS)
    b.faults.drop("PRODUCE", count=2, after=True, topic=topic)
    if client == "confluent":
        assert _produce_confluent(b.bootstrap_servers, topic, _values()) == []
    else:
        asyncio.run(_produce_ours(b.bootstrap_servers, topic, _values(), enable_idempotence=False))
    assert b.faults.rules() == []
    got = collections.Counter(_read_all(b.bootstrap_servers, topic))
    assert set(got) == set(_values()), "every record delivered"
    # the batches whose replies were lost were written, then written again by their retries
    assert sum(got.values()) > N
