"""Records produced by one real client are read byte-exact by every other one; our own client
(``client/``: "ours") takes part both as a producer and as a consumer.

For each producer client x codec it supports, one topic gets a set of records with keys,
values, null keys, null values, empty keys and values, repeated and non-ASCII header keys,
null header values (where the client can send them), binary data with every byte value, a
16 KiB value, explicit timestamps (also one earlier than the batch's first), and enough small
records to fill multi-record batches. Then:

- ``test_stored_as_sent``: the broker's ``.log`` files hold exactly those records, in batches
  of the requested codec, at the offsets the producer was told;
- ``test_read_by``: every consumer client returns exactly the stored records (offset,
  timestamp, key, value, headers), compared as bytes.

Producing happens once per module (one broker); each consumer reads all topics in one session.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from ._clients import (
    CODECS,
    CONSUMERS,
    KCAT,
    KCAT_MISSING,
    PRODUCERS,
    Msg,
    Rec,
    assert_codec,
    first_differences,
    stored_batches,
    stored_records,
)

T0 = 1_700_000_000_000
PARTITION = 1  # the second of two partitions, so partition numbers are not all 0
BIG = bytes(range(256)) * 64 + b"tail"  # 16 KiB, every byte value


def messages(producer: str) -> list[Msg]:
    """What ``producer`` sends: the richest set it can express."""
    if producer == "kcat":
        # kcat: one header set per invocation, no timestamps, -Z turns empty into null,
        # values are cut at the -D/-K delimiters (RS/US) -- everything else goes.
        hdrs = (("h1", b"v1"), ("h2", b""), ("nul", None), ("utf8-ключ", "välue".encode()))
        big = BIG.replace(b"\x1e", b"").replace(b"\x1f", b"")
        return [
            Msg(b"key-1", b"value-1", hdrs),
            Msg(None, "héllo\nwörld\t✓".encode(), hdrs),
            Msg(b"tombstone", None, hdrs),
            Msg(b"\x00\xff\n\t bin", big, hdrs),
            *[Msg(b"k%d" % i, b"v%d" % i * i, hdrs) for i in range(1, 51)],
        ]
    null_header = producer != "kafka-python"  # kafka-python refuses None header values
    return [
        Msg(b"key-1", b"value-1", (("h1", b"v1"), ("h2", b"")), T0),
        Msg(None, "héllo\nwörld\t✓".encode(), (), T0 + 1),
        Msg(b"tombstone", None, (("dup", b"a"), ("dup", b"b")), T0 + 2),
        Msg(b"", b"", (("nul", None),) if null_header else (("nul", b"not null"),), T0 + 3),
        Msg(b"\x00\xff\n\t bin", BIG, (("utf8-ключ", "välue".encode()),), T0 - 5000),
        *[Msg(b"k%d" % i, b"v%d" % i * i, (), T0 + 10 + i) for i in range(1, 51)],
    ]


CELLS = [(p, c) for p in PRODUCERS for c in CODECS]


def _topic(producer: str, codec: str) -> str:
    return f"xc-{producer}-{codec}"


class Produced:
    """Outcome of one (producer, codec) cell: the expected records, or the exception."""

    def __init__(self, topic: str, expected: list[Rec] | None = None, error: BaseException | None = None) -> None:
        self.topic, self.expected, self.error = topic, expected, error

    def check(self) -> list[Rec]:
        if self.error is not None:
            raise AssertionError(f"producing to {self.topic} failed: {self.error!r}") from self.error
        assert self.expected is not None
        return self.expected


@pytest.fixture(scope="module")
def produced(module_broker: Any) -> dict[tuple[str, str], Produced]:
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap = module_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000})
    futures = admin.create_topics([NewTopic(_topic(p, c), 2, 1) for p, c in CELLS], request_timeout=10)
    for f in futures.values():
        f.result()
    out = {}
    for producer, codec in CELLS:
        topic = _topic(producer, codec)
        if producer == "kcat" and KCAT is None:
            out[(producer, codec)] = Produced(topic, error=RuntimeError(KCAT_MISSING))
            continue
        msgs = messages(producer)
        try:
            t_before = int(time.time() * 1000)
            offsets = PRODUCERS[producer](bootstrap, topic, PARTITION, msgs, codec)
            t_after = int(time.time() * 1000)
        except Exception as e:  # noqa: BLE001 - reported by this cell's tests only
            out[(producer, codec)] = Produced(topic, error=e)
            continue
        expected = []
        stored = {r.offset: r for r in stored_records(module_broker.data_dir, topic, PARTITION)}
        for off, m in zip(offsets, msgs):
            ts = m.timestamp
            if ts is None:  # stamped by the client: take it from the log, check it is plausible
                ts = stored[off].timestamp if off in stored else -1
                assert t_before - 1000 <= ts <= t_after + 1000, (topic, off, ts, t_before, t_after)
            expected.append(Rec(off, ts, m.key, m.value, m.headers))
        out[(producer, codec)] = Produced(topic, expected)
    return out


@pytest.fixture(scope="module")
def consumed(module_broker: Any, produced: dict[tuple[str, str], Produced]) -> Callable[[str], Any]:
    """``consumed(name)``: what consumer ``name`` read, ``{(topic, partition): [Rec]}``, or its
    exception; each consumer client reads every produced topic in one session, on first use."""
    cache: dict[str, Any] = {}

    def get(consumer: str) -> Any:
        if consumer not in cache:
            positions = {(p.topic, PARTITION): (p.expected[0].offset, len(p.expected))
                         for p in produced.values() if p.expected}
            try:
                cache[consumer] = CONSUMERS[consumer](module_broker.bootstrap, positions)
            except Exception as e:  # noqa: BLE001
                cache[consumer] = e
        return cache[consumer]

    return get


@pytest.mark.parametrize("producer,codec", CELLS)
def test_stored_as_sent(module_broker: Any, produced: dict[tuple[str, str], Produced], producer: str, codec: str) -> None:
    cell = produced[(producer, codec)]
    if producer == "kcat" and KCAT is None:
        pytest.skip(KCAT_MISSING)
    expected = cell.check()
    assert [r.offset for r in expected] == list(range(len(expected))), "offsets start at 0 and are consecutive"
    stored = stored_records(module_broker.data_dir, cell.topic, PARTITION)
    assert stored == expected, first_differences(stored, expected)
    assert_codec(stored_batches(module_broker.data_dir, cell.topic, PARTITION), codec)


@pytest.mark.parametrize("consumer", list(CONSUMERS))
@pytest.mark.parametrize("producer,codec", CELLS)
def test_read_by(produced: dict[tuple[str, str], Produced], consumed: Callable[[str], Any], producer: str, codec: str,
                 consumer: str) -> None:
    if KCAT is None and "kcat" in (producer, consumer):
        pytest.skip(KCAT_MISSING)
    cell = produced[(producer, codec)]
    expected = cell.check()
    result = consumed(consumer)
    if isinstance(result, Exception):
        raise AssertionError(f"{consumer} failed to consume: {result!r}") from result
    got = result[(cell.topic, PARTITION)]
    assert got == expected, first_differences(got, expected)
