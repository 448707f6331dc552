"""kcat 1.7.1 (Debian's, linked against librdkafka 2.0.2, the oldest client we support) against
a real broker process.

What it sends (seen in librdkafka's debug log): ``-P``: ApiVersions v3, Metadata v4 (auto-create),
Produce v7; ``-C`` without ``-G``: Metadata, ListOffsets v2 (unless ``-o N``), Fetch v11 in a
loop; ``-L``: Metadata; ``-Q``: ListOffsets with a timestamp. librdkafka 2.0.2 enables
features only when the broker's ranges contain exact versions, so these tests are also the
check of the advertised ApiVersions ranges (MsgVer2, zstd, gzip/snappy, lz4).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from ._clients import (
    KCAT,
    KCAT_FAST,
    KCAT_MISSING,
    Msg,
    Rec,
    assert_codec,
    ck_produce,
    create_topic,
    kcat,
    kcat_consume,
    kcat_produce,
    parse_kcat_output,
    stored_batches,
    stored_records,
)

pytestmark = pytest.mark.skipif(KCAT is None, reason=KCAT_MISSING)

FMT = "%k %s %o %T\n"


def _consume(bootstrap: str, topic: str, *args: str) -> tuple[list[bytes], bytes]:
    """``kcat -C -e`` with ``args``; returns the output lines (split at newlines) and stderr."""
    r = kcat("-b", bootstrap, "-C", "-t", topic, "-e", *KCAT_FAST, *args)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    return r.stdout.splitlines(), r.stderr


def _produce(bootstrap: str, topic: str, data: bytes, *args: str) -> None:
    r = kcat("-b", bootstrap, "-P", "-t", topic, *args, input=data)
    assert r.returncode == 0, r.stderr.decode(errors="replace")


def test_produce_with_key_delimiter_and_consume_format(module_broker: Any, topic: str) -> None:
    b = module_broker.bootstrap
    t0 = int(time.time() * 1000)
    _produce(b, topic, b"k1:v1\nk2:value two\nk3:v:with:colons\n", "-K:")
    t1 = int(time.time() * 1000)
    lines, _ = _consume(b, topic, "-o", "beginning", "-q", "-f", FMT)
    assert [ln.rsplit(b" ", 1)[0] for ln in lines] == [b"k1 v1 0", b"k2 value two 1", b"k3 v:with:colons 2"]
    for ln in lines:
        ts = int(ln.rsplit(b" ", 1)[1])
        assert t0 - 1000 <= ts <= t1 + 1000  # CreateTime stamped by librdkafka, kept by the broker


def test_fixed_key_and_headers(module_broker: Any, topic: str) -> None:
    b = module_broker.bootstrap
    _produce(b, topic, b"one\ntwo\n", "-k", "the-key", "-H", "h1=v1", "-H", "h2=", "-H", "h3")
    recs = kcat_consume(b, {(topic, 0): (0, 2)})[(topic, 0)]
    assert [(r.offset, r.key, r.value) for r in recs] == [(0, b"the-key", b"one"), (1, b"the-key", b"two")]
    # "-H h3" is a header with a null value; "h2=" an empty one
    assert all(r.headers == (("h1", b"v1"), ("h2", b""), ("h3", None)) for r in recs)


def test_null_keys_and_values(module_broker: Any, topic: str) -> None:
    b = module_broker.bootstrap
    _produce(b, topic, b"k1:v1\n:no-key\nno-value:\n", "-K:", "-Z")
    recs = kcat_consume(b, {(topic, 0): (0, 3)})[(topic, 0)]
    assert [(r.key, r.value) for r in recs] == [(b"k1", b"v1"), (None, b"no-key"), (b"no-value", None)]
    lines, _ = _consume(b, topic, "-o", "beginning", "-q", "-Z", "-f", "%k|%s\n")
    assert lines == [b"k1|v1", b"NULL|no-key", b"no-value|NULL"]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_compression(module_broker: Any, topic: str, codec: str) -> None:
    """Each codec is really used (librdkafka 2.0.2 silently falls back to uncompressed when the
    broker's ApiVersions do not match its feature table) and reads back exactly."""
    b = module_broker.bootstrap
    hdrs = (("h", b"x"),)
    msgs = [Msg(b"key%d" % i, (b"value %d " % i) * 50, hdrs) for i in range(200)]
    offsets = kcat_produce(b, topic, 0, msgs, codec)
    assert offsets == list(range(200))
    batches = stored_batches(module_broker.data_dir, topic, 0)
    assert_codec(batches, codec)
    stored = stored_records(module_broker.data_dir, topic, 0)
    assert [(r.key, r.value, r.headers) for r in stored] == [(m.key, m.value, m.headers) for m in msgs]
    assert kcat_consume(b, {(topic, 0): (0, 200)})[(topic, 0)] == stored


def test_consume_to_end_exits(module_broker: Any, topic: str) -> None:
    b = module_broker.bootstrap
    _produce(b, topic, b"".join(b"m%d\n" % i for i in range(25)))
    t = time.monotonic()
    lines, err = _consume(b, topic, "-o", "beginning", "-f", "%o:%s\n")
    assert lines == [b"%d:m%d" % (i, i) for i in range(25)]
    assert b"Reached end of topic" in err and b"at offset 25" in err
    assert time.monotonic() - t < 10
    # -o end: nothing to read, exits at once; -o 20: from an absolute offset (no ListOffsets);
    # -o -3: three before the end (ListOffsets -1, then a fetch from there)
    assert _consume(b, topic, "-o", "end", "-q")[0] == []
    assert _consume(b, topic, "-o", "20", "-q", "-f", "%o\n")[0] == [b"%d" % i for i in range(20, 25)]
    assert _consume(b, topic, "-o", "-3", "-q", "-f", "%o\n")[0] == [b"22", b"23", b"24"]


def test_consume_empty_topic_exits(module_broker: Any, topic: str) -> None:
    create_topic(module_broker.bootstrap, topic)
    lines, err = _consume(module_broker.bootstrap, topic, "-o", "beginning")
    assert lines == [] and b"Reached end of topic" in err


def test_offset_from_timestamp(module_broker: Any, topic: str) -> None:
    """``-o s@ts`` starts at the first record with timestamp >= ts (ListOffsets by time); kcat
    cannot set timestamps, so another client writes them."""
    b = module_broker.bootstrap
    base = 1_600_000_000_000
    ck_produce(b, topic, 0, [Msg(b"k", b"v%d" % i, (), base + 1000 * i) for i in range(10)])
    lines, _ = _consume(b, topic, "-o", f"s@{base + 4500}", "-q", "-f", FMT)
    assert lines == [b"k v%d %d %d" % (i, i, base + 1000 * i) for i in range(5, 10)]
    lines, _ = _consume(b, topic, "-o", f"s@{base + 4000}", "-q", "-f", "%o\n")
    assert lines[0] == b"4"
    # and -Q, the offset lookup alone
    r = kcat("-b", b, "-Q", "-t", f"{topic}:0:{base + 2500}")
    assert r.returncode == 0 and f"{topic} [0] offset 3" in r.stdout.decode(), r.stdout + r.stderr


def test_partitions(module_broker: Any, topic: str) -> None:
    b = module_broker.bootstrap
    create_topic(b, topic, 3)
    for p in range(3):
        _produce(b, topic, b"p%d-a\np%d-b\n" % (p, p), "-p", str(p))
    lines, _ = _consume(b, topic, "-p", "2", "-o", "beginning", "-q", "-f", "%p %o %s\n")
    assert lines == [b"2 0 p2-a", b"2 1 p2-b"]
    lines, _ = _consume(b, topic, "-o", "beginning", "-q", "-f", "%p %o %s\n")  # all partitions
    assert sorted(lines) == sorted(b"%d %d p%d-%s" % (p, o, p, x) for p in range(3) for o, x in ((0, b"a"), (1, b"b")))


def test_metadata_listing(module_broker: Any, topic: str) -> None:
    b = module_broker.bootstrap
    create_topic(b, topic, 4)
    r = kcat("-b", b, "-L", "-J")
    assert r.returncode == 0, r.stderr
    md = json.loads(r.stdout)
    assert md["controllerid"] == 0
    assert md["brokers"] == [{"id": 0, "name": b}]
    t = next(t for t in md["topics"] if t["topic"] == topic)
    assert "error" not in t
    assert [p["partition"] for p in t["partitions"]] == [0, 1, 2, 3]
    assert all(p["leader"] == 0 and p["replicas"] == [{"id": 0}] and p["isrs"] == [{"id": 0}] for p in t["partitions"])
    # the plain text form too
    text = kcat("-b", b, "-L", "-t", topic).stdout.decode()
    assert f"broker 0 at {b} (controller)" in text
    assert f'topic "{topic}" with 4 partitions:' in text
    assert "partition 3, leader 0, replicas: 0, isrs: 0" in text


def test_binary_values_byte_exact(module_broker: Any, topic: str) -> None:
    """Every byte value but the two delimiters, in keys and values (also newlines and NULs)."""
    b = module_broker.bootstrap
    data = bytes(i for i in range(256) if i not in (0x1E, 0x1F))
    msgs = [Msg(data[:40], data, ()), Msg(b"\x00", data * 100, ())]
    kcat_produce(b, topic, 0, msgs, "lz4")
    got = kcat_consume(b, {(topic, 0): (0, 2)})[(topic, 0)]
    assert [(r.key, r.value) for r in got] == [(m.key, m.value) for m in msgs]


def test_large_records_with_small_fetch_size(module_broker: Any, topic: str) -> None:
    """Fetch replies cut mid-batch (fetch.message.max.bytes=4096) and a batch larger than the
    limit (sent whole, KIP-74): kcat must still read every record once, in order."""
    b = module_broker.bootstrap
    msgs = [Msg(b"k%d" % i, bytes([65 + i % 26]) * (50_000 if i == 7 else 300), ()) for i in range(60)]
    kcat_produce(b, topic, 0, msgs, "none", "-X", "linger.ms=50", "-X", "batch.num.messages=5")
    sizes = [len(batch) for _, _, _, batch in stored_batches(module_broker.data_dir, topic, 0)]
    assert len(sizes) >= 12 and max(sizes) > 50_000 and min(sizes) < 2048, sizes
    got = kcat_consume(b, {(topic, 0): (0, 60)}, 20.0, "-X", "fetch.message.max.bytes=4096",
                       "-X", "fetch.max.bytes=8192", "-X", "message.max.bytes=4096")[(topic, 0)]
    assert [(r.offset, r.key, r.value) for r in got] == [(i, m.key, m.value) for i, m in enumerate(msgs)]


def test_parse_kcat_output_round_trip() -> None:
    out = b"0 5 1 -1 h=NULL,e=\nk\n1 6 -1 3 \nabc\n"
    assert parse_kcat_output(out) == [Rec(0, 5, b"k", None, (("h", None), ("e", b""))), Rec(1, 6, None, b"abc", ())]
