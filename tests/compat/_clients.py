"""The four real clients, and our own (``client/``), driven the same way, so tests can compare
what each of them sees.

A producer adapter takes ``Msg``s and returns the offsets the broker acknowledged; a consumer
adapter reads ``{(topic, partition): (start_offset, count)}`` and returns ``Rec``s. ``Rec`` has
the field order of ``client.records.Record`` (offset, timestamp, key, value, headers; headers
a tuple of ``(str, bytes | None)``), so what a consumer returns compares equal to the records
decoded from the broker's own ``.log`` files (``stored_records``).

Timeouts are short everywhere: a broker bug must fail a test in seconds, not hang it for the
clients' defaults (30-120 s). The consumers never join a group (no group APIs in the broker):
kafka-python and aiokafka run with ``group_id=None``, confluent-kafka needs a ``group.id`` but
only ``assign()`` is called, and kcat runs without ``-G``.
"""

from __future__ import annotations

import asyncio
import glob
import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from client.records.batch import iter_batch_headers
from client.records.compression import Compression
from client.records.record import iter_records

KCAT = shutil.which("kcat")
KCAT_MISSING = ("kcat is not installed (Debian package `kcat`; scripts/test installs it with apt-get "
                "when apt is available)")
#: The Node.js client (@platformatic/kafka) that tests/compat/node/admin_calls.mjs drives.
NODE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node")
PK_MISSING = None if shutil.which("node") and os.path.isdir(os.path.join(NODE_DIR, "node_modules", "@platformatic",
                                                                            "kafka")) else (
    "node or tests/compat/node/node_modules is missing (scripts/test runs `npm ci` there when node and npm are"
    " installed)")

Header = tuple[str, "bytes | None"]
Positions = Mapping[tuple[str, int], tuple[int, int]]  # (topic, partition) -> (start offset, count)

#: Codecs every client here supports (kafka-python needs python-snappy, lz4 and zstandard,
#: which the ``test`` extra installs; aiokafka uses cramjam; librdkafka has them built in).
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")

#: kafka-python 3.x has no api_version_auto_timeout_ms (it is refused); bootstrap_timeout_ms bounds
#: the first connection and ApiVersions exchange.
KP_TIMEOUTS = {"request_timeout_ms": 5000, "bootstrap_timeout_ms": 10000}
RDK_TIMEOUTS = {"socket.timeout.ms": 5000, "message.timeout.ms": 10000}


class Msg(NamedTuple):
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    timestamp: int | None = None  # None: the client stamps it (CreateTime)


class Rec(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


def _codec(codec: str) -> str | None:
    return None if codec == "none" else codec


# ---------------------------------------------------------------- the broker's files


def stored_batches(data_dir: str, topic: str, partition: int) -> list[tuple[int, int, int, bytes]]:
    """``(base_offset, compression id, producer_id, whole batch bytes)`` of every batch in the
    partition's segment files, read straight from disk."""
    out = []
    for path in sorted(glob.glob(os.path.join(data_dir, f"{topic}-{partition}", "*.log"))):
        with open(path, "rb") as f:
            buf = f.read()
        for h in iter_batch_headers(buf):
            out.append((h.base_offset, h.compression_id, h.producer_id, buf[h.pos:h.pos + h.size_in_bytes]))
    return out


def assert_codec(batches: Sequence[tuple[int, int, int, bytes]], codec: str) -> None:
    """Every stored batch uses ``codec``, except small ones: all four clients send a batch
    uncompressed when compressing does not make it smaller (kafka-python and aiokafka
    ``_maybe_compress``, librdkafka ``rd_kafka_msgset_writer_compress``), which with the
    codecs' frame overhead happens to a batch of one short record. The data in these tests is
    repetitive, so any batch over 1 KiB must shrink."""
    want = int(Compression.from_name(codec))
    assert batches, "no batches stored"
    assert any(c == want for _, c, _, _ in batches), [(o, c, len(b)) for o, c, _, b in batches]
    for base, c, _, batch in batches:
        assert c == want or (c == 0 and len(batch) <= 1024), (
            f"batch at offset {base} ({len(batch)} bytes) has codec {c}, want {want} ({codec})")


def stored_records(data_dir: str, topic: str, partition: int) -> list[Rec]:
    """Every record of the partition as the broker stored it (CRC-checked decode)."""
    out = []
    for _, _, _, batch in stored_batches(data_dir, topic, partition):
        out.extend(Rec(*r) for r in iter_records(batch))
    return out


def create_topic(bootstrap: str, topic: str, partitions: int = 1, config: Mapping[str, str] | None = None) -> None:
    """Create a topic with confluent-kafka's AdminClient (the quickest of the admin clients)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000})
    fut = admin.create_topics([NewTopic(topic, partitions, 1, config=dict(config or {}))], request_timeout=10)
    fut[topic].result(15)


def pk_admin_calls(bootstrap: str, calls: Sequence[tuple[str, Sequence[Any]]]) -> list[Any]:
    """Run ``[(name, args), ...]`` through @platformatic/kafka (tests/compat/node/admin_calls.mjs
    says which names and args) and return its decoded responses, int64 fields as strings."""
    out = subprocess.run(["node", os.path.join(NODE_DIR, "admin_calls.mjs"), bootstrap, json.dumps(calls)],
                         capture_output=True, text=True, timeout=60, cwd=NODE_DIR)
    assert out.returncode == 0, out.stderr
    result: list[Any] = json.loads(out.stdout)
    return result


# ---------------------------------------------------------------- kafka-python


def kp_produce(bootstrap: str, topic: str, partition: int | None, msgs: Sequence[Msg], codec: str = "none",
               **config: Any) -> list[int]:
    from kafka import KafkaProducer

    cfg: dict[str, Any] = dict(KP_TIMEOUTS, compression_type=_codec(codec), linger_ms=5, max_block_ms=10000,
                               delivery_timeout_ms=15000)
    cfg.update(config)
    p = KafkaProducer(bootstrap_servers=bootstrap, **cfg)
    try:
        futs = [p.send(topic, key=m.key, value=m.value, headers=list(m.headers), partition=partition,
                       timestamp_ms=m.timestamp) for m in msgs]
        p.flush(timeout=15)
        return [f.get(timeout=15).offset for f in futs]
    finally:
        p.close(timeout=5)


def kp_consume(bootstrap: str, positions: Positions, timeout: float = 20.0, **config: Any) -> dict[tuple[str, int], list[Rec]]:
    from kafka import KafkaConsumer, TopicPartition

    cfg: dict[str, Any] = dict(KP_TIMEOUTS, enable_auto_commit=False, fetch_max_wait_ms=100)
    cfg.update(config)
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, **cfg)
    out: dict[tuple[str, int], list[Rec]] = {k: [] for k in positions}
    try:
        tps = {TopicPartition(t, p): v for (t, p), v in positions.items()}
        c.assign(list(tps))
        for tp, (start, _) in tps.items():
            c.seek(tp, start)
        deadline = time.monotonic() + timeout
        while any(len(out[k]) < n for k, (_, n) in positions.items()) and time.monotonic() < deadline:
            for tp, msgs in c.poll(timeout_ms=200).items():
                for m in msgs:
                    out[(tp.topic, tp.partition)].append(
                        Rec(m.offset, m.timestamp, m.key, m.value, tuple((k, v) for k, v in m.headers)))
    finally:
        c.close(autocommit=False)
    return out


# ---------------------------------------------------------------- aiokafka


async def aio_produce_async(bootstrap: str, topic: str, partition: int | None, msgs: Sequence[Msg],
                            codec: str = "none", **config: Any) -> list[int]:
    from aiokafka import AIOKafkaProducer

    cfg: dict[str, Any] = dict(request_timeout_ms=5000, compression_type=_codec(codec), linger_ms=5)
    cfg.update(config)
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, **cfg)
    await p.start()
    try:
        futs = [await p.send(topic, key=m.key, value=m.value, headers=list(m.headers), partition=partition,
                             timestamp_ms=m.timestamp) for m in msgs]
        metas = await asyncio.wait_for(asyncio.gather(*futs), 15)
        # acks=0: aiokafka resolves the future with None (there is no response to read)
        return [-1 if md is None else md.offset for md in metas]
    finally:
        await p.stop()


def aio_produce(*args: Any, **kwargs: Any) -> list[int]:
    return asyncio.run(aio_produce_async(*args, **kwargs))


async def aio_consume_async(bootstrap: str, positions: Positions, timeout: float = 20.0,
                            **config: Any) -> dict[tuple[str, int], list[Rec]]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    cfg: dict[str, Any] = dict(request_timeout_ms=5000, enable_auto_commit=False, fetch_max_wait_ms=100)
    cfg.update(config)
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, **cfg)
    await c.start()
    out: dict[tuple[str, int], list[Rec]] = {k: [] for k in positions}
    try:
        tps = {TopicPartition(t, p): v for (t, p), v in positions.items()}
        c.assign(list(tps))
        for tp, (start, _) in tps.items():
            c.seek(tp, start)
        deadline = time.monotonic() + timeout
        while any(len(out[k]) < n for k, (_, n) in positions.items()) and time.monotonic() < deadline:
            for tp, msgs in (await c.getmany(timeout_ms=200)).items():
                for m in msgs:
                    out[(tp.topic, tp.partition)].append(
                        Rec(m.offset, m.timestamp, m.key, m.value, tuple((k, v) for k, v in m.headers)))
    finally:
        await c.stop()
    return out


def aio_consume(*args: Any, **kwargs: Any) -> dict[tuple[str, int], list[Rec]]:
    return asyncio.run(aio_consume_async(*args, **kwargs))


# ---------------------------------------------------------------- confluent-kafka (librdkafka 2.16)


def ck_produce(bootstrap: str, topic: str, partition: int | None, msgs: Sequence[Msg], codec: str = "none",
               **config: Any) -> list[int]:
    from confluent_kafka import KafkaException, Producer

    cfg: dict[str, Any] = dict(RDK_TIMEOUTS, **{"bootstrap.servers": bootstrap, "compression.type": codec,
                                                "linger.ms": 5})
    cfg.update(config)
    p = Producer(cfg)
    missing = object()
    results: list[Any] = [missing] * len(msgs)

    def report(i: int) -> Any:
        def cb(err: Any, m: Any) -> None:
            # acks=0: no offset comes back (librdkafka reports OFFSET_INVALID, Python None)
            results[i] = err if err is not None else (m.offset() if m.offset() is not None else -1)
        return cb

    for i, m in enumerate(msgs):
        kw: dict[str, Any] = {"key": m.key, "value": m.value, "on_delivery": report(i)}
        if m.headers:
            kw["headers"] = list(m.headers)
        if m.timestamp is not None:
            kw["timestamp"] = m.timestamp
        if partition is not None:
            kw["partition"] = partition
        p.produce(topic, **kw)
    left = p.flush(15)
    assert left == 0, f"{left} messages not delivered"
    assert missing not in results, "a delivery report is missing"
    for r in results:
        if not isinstance(r, int):
            raise KafkaException(r)
    return results


def ck_consume(bootstrap: str, positions: Positions, timeout: float = 20.0, **config: Any) -> dict[tuple[str, int], list[Rec]]:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    cfg: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": f"compat-{uuid.uuid4().hex[:8]}",
                           "enable.auto.commit": False, "enable.auto.offset.store": False,
                           "fetch.wait.max.ms": 100, "socket.timeout.ms": 5000}
    cfg.update(config)
    c = Consumer(cfg)
    out: dict[tuple[str, int], list[Rec]] = {k: [] for k in positions}
    try:
        c.assign([TopicPartition(t, p, start) for (t, p), (start, _) in positions.items()])
        deadline = time.monotonic() + timeout
        while any(len(out[k]) < n for k, (_, n) in positions.items()) and time.monotonic() < deadline:
            for m in c.consume(num_messages=10000, timeout=0.2):
                if m.error():
                    raise KafkaException(m.error())
                out[(m.topic(), m.partition())].append(
                    Rec(m.offset(), m.timestamp()[1], m.key(), m.value(), tuple(m.headers() or ())))
    finally:
        c.close()
    return out


# ---------------------------------------------------------------- kcat (librdkafka 2.0.2)

# kcat -P reads messages from stdin cut at -D and splits key from value at -K; with -Z an empty
# key or value is sent as null. ASCII RS/US as delimiters let values carry newlines and tabs.
KCAT_MSG_DELIM, KCAT_KEY_DELIM = b"\x1e", b"\x1f"
KCAT_FAST = ["-X", "fetch.wait.max.ms=50", "-X", "socket.timeout.ms=5000"]


def kcat(*args: str | bytes, input: bytes | None = None, timeout: float = 30.0) -> subprocess.CompletedProcess[bytes]:
    assert KCAT is not None, KCAT_MISSING
    return subprocess.run([KCAT, *args], input=input, capture_output=True, timeout=timeout, check=False)


def kcat_produce(bootstrap: str, topic: str, partition: int | None, msgs: Sequence[Msg], codec: str = "none",
                 *extra: str) -> list[int]:
    """Produce ``msgs`` with one ``kcat -P``. kcat's limits: headers are per invocation (-H), so
    every message must carry the same ones; no explicit timestamps; empty (non-null) keys and
    values cannot be told from null ones under -Z. Returns the offsets, read back from the
    broker's high watermark (kcat does not print them)."""
    hdrs = {m.headers for m in msgs}
    assert len(hdrs) == 1, "kcat sends the same -H headers with every message"
    data = bytearray()
    for m in msgs:
        assert m.timestamp is None, "kcat -P cannot set timestamps"
        for part in (m.key, m.value):
            assert part is None or (part and KCAT_MSG_DELIM not in part and KCAT_KEY_DELIM not in part)
        data += (m.key or b"") + KCAT_KEY_DELIM + (m.value or b"") + KCAT_MSG_DELIM
    args: list[str | bytes] = ["-b", bootstrap, "-P", "-t", topic, "-D", r"\x1e", "-K", r"\x1f", "-Z",
                               "-z", codec, "-X", "socket.timeout.ms=5000", "-X", "message.timeout.ms=10000"]
    if partition is not None:
        args += ["-p", str(partition)]
    for k, v in next(iter(hdrs)):
        args += ["-H", k.encode() if v is None else k.encode() + b"=" + v]  # "-H name": null value
    before = kcat_high_watermark(bootstrap, topic, partition or 0)
    r = kcat(*args, *extra, input=bytes(data))
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    after = kcat_high_watermark(bootstrap, topic, partition or 0)
    assert after - before == len(msgs), (before, after, r.stderr)
    return list(range(before, after))


def kcat_high_watermark(bootstrap: str, topic: str, partition: int) -> int:
    """The log end offset by ``kcat -Q`` (ListOffsets with timestamp -1); 0 for a topic that
    does not exist yet."""
    r = kcat("-b", bootstrap, "-Q", "-t", f"{topic}:{partition}:-1", "-X", "allow.auto.create.topics=false")
    out = r.stdout.decode()
    if r.returncode != 0 or "offset" not in out:
        return 0
    return int(out.rsplit("offset", 1)[1].split()[0])


_KCAT_FMT = "%o %T %K %S %h\n%k%s\n"


def parse_kcat_output(out: bytes) -> list[Rec]:
    """Parse ``-f '%o %T %K %S %h\\n%k%s\\n'``: the lengths (-1 = null) make keys and values
    binary-safe. Headers print as ``k=v,k2=NULL`` (kcat's own format), so header values used
    with kcat avoid ``,`` ``=`` newlines and the literal ``NULL``."""
    recs = []
    pos = 0
    while pos < len(out):
        nl = out.index(b"\n", pos)
        o, ts, klen, vlen, *rest = out[pos:nl].split(b" ", 4)
        hstr = rest[0] if rest else b""
        pos = nl + 1
        kl, vl = int(klen), int(vlen)
        key = out[pos:pos + kl] if kl >= 0 else None
        pos += max(kl, 0)
        value = out[pos:pos + vl] if vl >= 0 else None
        pos += max(vl, 0)
        assert out[pos:pos + 1] == b"\n", f"kcat output out of step at {pos}: {out[pos - 20:pos + 20]!r}"
        pos += 1
        headers: list[Header] = []
        if hstr:
            for h in hstr.split(b","):
                name, _, val = h.partition(b"=")
                headers.append((name.decode(), None if val == b"NULL" else val))
        recs.append(Rec(int(o), int(ts), key, value, tuple(headers)))
    return recs


def kcat_consume(bootstrap: str, positions: Positions, timeout: float = 20.0, *extra: str) -> dict[tuple[str, int], list[Rec]]:
    out = {}
    for (t, p), (start, n) in positions.items():
        r = kcat("-b", bootstrap, "-C", "-t", t, "-p", str(p), "-o", str(start), "-c", str(n), "-e", "-q",
                 "-f", _KCAT_FMT, *KCAT_FAST, *extra, timeout=timeout)
        assert r.returncode == 0, r.stderr.decode(errors="replace")
        out[(t, p)] = parse_kcat_output(r.stdout)
    return out


# ---------------------------------------------------------------- ours (client/, asyncio)


async def ours_produce_async(bootstrap: str, topic: str, partition: int | None, msgs: Sequence[Msg],
                             codec: str = "none", **config: Any) -> list[int]:
    from client import Producer

    cfg: dict[str, Any] = dict(request_timeout_ms=5000, connect_timeout_ms=5000, max_block_ms=10000,
                               delivery_timeout_ms=15000, compression_type=_codec(codec), linger_ms=5)
    cfg.update(config)
    async with Producer(bootstrap_servers=bootstrap, **cfg) as p:
        futs = [p.send_nowait(topic, m.value, key=m.key, headers=list(m.headers), partition=partition,
                              timestamp_ms=m.timestamp) for m in msgs]
        await p.flush(timeout=15)
        metas = await asyncio.wait_for(asyncio.gather(*futs), 15)
    return [md.offset for md in metas]  # -1 with acks=0


def ours_produce(*args: Any, **kwargs: Any) -> list[int]:
    return asyncio.run(ours_produce_async(*args, **kwargs))


async def ours_consume_async(bootstrap: str, positions: Positions, timeout: float = 20.0,
                             **config: Any) -> dict[tuple[str, int], list[Rec]]:
    from client import Consumer, TopicPartition

    cfg: dict[str, Any] = dict(request_timeout_ms=5000, connect_timeout_ms=5000, fetch_max_wait_ms=100,
                               auto_offset_reset="none", max_poll_records=None)
    cfg.update(config)
    out: dict[tuple[str, int], list[Rec]] = {k: [] for k in positions}
    async with Consumer(bootstrap_servers=bootstrap, **cfg) as c:
        tps = {TopicPartition(t, p): v for (t, p), v in positions.items()}
        c.assign(list(tps))
        for tp, (start, _) in tps.items():
            c.seek(tp, start)
        deadline = time.monotonic() + timeout
        while any(len(out[k]) < n for k, (_, n) in positions.items()) and time.monotonic() < deadline:
            for tp, msgs in (await c.getmany(timeout_ms=200)).items():
                for m in msgs:
                    out[(tp.topic, tp.partition)].append(
                        Rec(m.offset, m.timestamp, m.key, m.value, tuple((k, v) for k, v in m.headers)))
    return out


def ours_consume(*args: Any, **kwargs: Any) -> dict[tuple[str, int], list[Rec]]:
    return asyncio.run(ours_consume_async(*args, **kwargs))


PRODUCERS = {"kafka-python": kp_produce, "aiokafka": aio_produce, "confluent": ck_produce, "kcat": kcat_produce,
             "ours": ours_produce}
CONSUMERS = {"kafka-python": kp_consume, "aiokafka": aio_consume, "confluent": ck_consume, "kcat": kcat_consume,
             "ours": ours_consume}


def first_differences(got: Iterable[Rec], want: Iterable[Rec], limit: int = 3) -> str:
    """A short readable diff of two record lists for assertion messages."""
    got, want = list(got), list(want)
    lines = [f"got {len(got)} records, want {len(want)}"]
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            lines.append(f"#{i}: got  {g!r:.300}\n     want {w!r:.300}")
            if len(lines) > limit:
                break
    return "\n".join(lines)
