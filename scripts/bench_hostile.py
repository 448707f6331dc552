#!/usr/bin/env python3
"""Hostile and unlucky input, item by item: what each attack or accident costs a broker — the
longest wait another client sees meanwhile (an ApiVersions every 10 ms), the broker's peak RSS,
and what is lost — printed as one table. Run it on two checkouts to compare them side by side:

    .venv/bin/python scripts/bench_hostile.py                      # this checkout
    .venv/bin/python scripts/bench_hostile.py --tree /tmp/old      # another checkout (git worktree)
    .venv/bin/python scripts/bench_hostile.py --only 1,4,12

The brokers run the code of ``--tree`` (``python -m broker serve`` with that checkout first on
PYTHONPATH); the attacking clients are this checkout's raw-socket client. Items:

 1  one flipped byte in a ``__consumer_offsets`` batch (clean stop): groups loaded of 20, and
    whether a commit made after it survives the next restart
 2  8 KiB of zeros appended to a partition's active segment (clean stop); a garbage
    ``partition.metadata`` in a one-partition topic: does the broker start, do others serve
 3  a broken length field at batch 250 of 300: batches a fetch from offset 0 returns
 4  one Metadata request naming ``--topics`` new topics (auto-creation): stall, and a restart
 5  CreateTopics ``__consumer_offsets`` with 1 partition, then a group commit's error
 6  a transactional batch with a made-up producer id in Produce v2: LSO behind the HW after?
 7  a Produce v7 carrying 100 zstd batches of 64 MiB of zeros in one partition: stall, RSS
 8  64 idle connections held on the metrics port: /healthz status
 9  ``connections.max.idle.ms=1``: does it start, and its idle CPU
10  an OffsetCommit of 40,000 partitions (1.5 MB): answered or connection closed
11  500 connections sending Produce v99: WARNING lines logged
12  10,000 members joining one group (JoinGroup v2 on 20 connections): stall, time
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from broker.testing.wire import CLOSED, Conn, create_topic, decode_response, fetch, pinger, produce, request_bytes  # noqa: E402
from client.protocol.api import ApiKey  # noqa: E402
from client.records import build_batch  # noqa: E402
from client.records.batch import iter_batch_headers  # noqa: E402

_LISTEN = re.compile(r"minibroker listening on [\d.]+:(\d+)")
_HTTP = re.compile(r"minibroker metrics listening on http://[\d.]+:(\d+)")


class Broker:
    """``python -m broker serve`` of a checkout, on a free port; stderr kept."""

    def __init__(self, tree: str, data: str, overrides: list[str]) -> None:
        self.tree, self.data, self.overrides = tree, data, overrides
        self.lines: list[str] = []
        self.port = self.metrics_port = -1

    def start(self, timeout: float = 60) -> Broker:
        env = dict(os.environ, PYTHONPATH=self.tree)
        cmd = [sys.executable, "-m", "broker", "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", self.data]
        for o in ["group.initial.rebalance.delay.ms=0", *self.overrides]:
            cmd += ["--override", o]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, env=env, cwd=self.tree)
        ready = threading.Event()

        def read() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.lines.append(line)
                if (m := _HTTP.search(line)) is not None:
                    self.metrics_port = int(m.group(1))
                if (m := _LISTEN.search(line)) is not None:
                    self.port = int(m.group(1))
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        ready.wait(timeout)
        if self.port < 0:
            self.stop()
            raise RuntimeError("did not start: " + "".join(self.lines[-5:]).strip()[-300:])
        deadline = time.monotonic() + 10
        while any(o.startswith("metrics.listeners=") for o in self.overrides) and self.metrics_port < 0 \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kib(self, field: str) -> int:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        return 0

    def cpu_seconds(self) -> float:
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    @property
    def log(self) -> str:
        return "".join(self.lines)


@contextmanager
def broker(tree: str, data: str, overrides: list[str] = ()) -> Iterator[Broker]:  # type: ignore[assignment]
    b = Broker(tree, data, list(overrides)).start()
    try:
        yield b
    finally:
        b.stop()


def commit(c: Conn, group: str, topic: str, offsets: dict[int, int], version: int = 2) -> list[int]:
    resp = c.call(ApiKey.OFFSET_COMMIT, version, {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
        "topics": [{"name": topic, "partitions": [{"partition_index": p, "committed_offset": o, "committed_metadata": ""}
                                                  for p, o in offsets.items()]}]})
    return [p["error_code"] for t in resp["topics"] for p in t["partitions"]]


def committed(c: Conn, group: str) -> int:
    for _ in range(100):
        r = c.call(ApiKey.OFFSET_FETCH, 1, {"group_id": group, "topics": [{"name": "t", "partition_indexes": [0]}]})
        p = r["topics"][0]["partitions"][0]
        if p["error_code"] != 14:
            return int(p["committed_offset"])
        time.sleep(0.05)
    return -2


def fill(c: Conn, topic: str, n: int) -> None:
    for i in range(n):
        c.call(ApiKey.PRODUCE, 7, produce(topic, 0, build_batch([(None, b"v%d" % i)])))


def positions(path: str) -> list[int]:
    data = open(path, "rb").read()
    out, pos = [], 0
    while pos + 12 <= len(data):
        out.append(pos)
        pos += struct.unpack_from(">i", data, pos + 8)[0] + 12
    return out


# ------------------------------------------------------------------ items


def item1(tree: str, work: str, _: Any) -> str:
    data = os.path.join(work, "d1")
    with broker(tree, data, ["offsets.topic.num.partitions=1"]) as b, Conn(b.port) as c:
        c.call(ApiKey.CREATE_TOPICS, 4, create_topic("t", 1))
        for i in range(20):
            commit(c, f"g{i}", "t", {0: 100 + i})
    seg = sorted(glob.glob(f"{data}/__consumer_offsets-0/*.log"))[-1]
    with open(seg, "r+b") as f:
        pos = positions(seg)[3] + 70
        f.seek(pos)
        byte = f.read(1)[0]
        f.seek(pos)
        f.write(bytes([byte ^ 0x10]))
    try:
        with broker(tree, data, ["offsets.topic.num.partitions=1"]) as b, Conn(b.port) as c:
            loaded = sum(committed(c, f"g{i}") == 100 + i for i in range(20))
            commit(c, "after", "t", {0: 7})
        with broker(tree, data, ["offsets.topic.num.partitions=1"]) as b, Conn(b.port) as c:
            kept = committed(c, "after") == 7
    except RuntimeError as e:
        return f"broker does not start: {e}"
    return f"{loaded}/20 groups loaded; a later commit {'survives' if kept else 'is LOST at'} the next restart"


def item2(tree: str, work: str, _: Any) -> str:
    data = os.path.join(work, "d2")
    with broker(tree, data) as b, Conn(b.port) as c:
        for t in ("a", "lonely"):
            c.call(ApiKey.CREATE_TOPICS, 4, create_topic(t, 1))
            fill(c, t, 20)
    with open(glob.glob(f"{data}/a-0/*.log")[0], "ab") as f:
        f.write(bytes(8192))
    with open(f"{data}/lonely-0/partition.metadata", "wb") as f:
        f.write(b"garbage\x00\xff")
    try:
        with broker(tree, data) as b, Conn(b.port) as c:
            p = c.call(ApiKey.FETCH, 11, fetch("a", 0, 0))["responses"][0]["partitions"][0]
            n = len(list(iter_batch_headers(p["records"] or b"")))
            tb = "a traceback" if "Traceback" in b.log else "no traceback"
            return f"starts ({tb}); topic a serves {n}/20 batches"
    except RuntimeError as e:
        return f"broker does not start: {e}"


def item3(tree: str, work: str, _: Any) -> str:
    data = os.path.join(work, "d3")
    with broker(tree, data) as b, Conn(b.port) as c:
        c.call(ApiKey.CREATE_TOPICS, 4, create_topic("t", 1))
        fill(c, "t", 300)
    seg = glob.glob(f"{data}/t-0/*.log")[0]
    with open(seg, "r+b") as f:
        f.seek(positions(seg)[250] + 8)
        f.write(b"\xff\xff\x00\x00")
    try:
        with broker(tree, data) as b, Conn(b.port) as c:
            p = c.call(ApiKey.FETCH, 11, fetch("t", 0, 0))["responses"][0]["partitions"][0]
            try:
                n = f"{len(list(iter_batch_headers(p['records'] or b'')))} whole batches"
            except Exception:  # noqa: BLE001 - what a client's parser meets
                n = "the damaged batch too (a client's parse fails)"
            return f"fetch from 0: error {p['error_code']}, {n} of the 250 before the damage"
    except RuntimeError as e:
        return f"broker does not start: {e}"


def item4(tree: str, work: str, args: Any) -> str:
    data = os.path.join(work, "d4")
    n = args.topics
    with broker(tree, data) as b:
        with pinger(b.port) as pings, Conn(b.port, timeout=900) as c:
            t0 = time.perf_counter()
            try:
                r = c.call(ApiKey.METADATA, 4, {"topics": [{"name": f"n{i}"} for i in range(n)],
                                                "allow_auto_topic_creation": True})
                made = sum(t["error_code"] == 0 for t in r["topics"])
            except Exception as e:  # noqa: BLE001
                made = -1
                print(f"  item 4: {e}", file=sys.stderr)
            took = time.perf_counter() - t0
        rss = b.kib("VmHWM") // 1024
    try:
        with broker(tree, data):
            restart = "restarts"
    except RuntimeError:
        restart = "does NOT restart"
    return f"{made}/{n} created in {took:.1f} s; stall {pings.worst * 1000:.0f} ms; peak RSS {rss} MiB; {restart}"


def item5(tree: str, work: str, _: Any) -> str:
    with broker(tree, os.path.join(work, "d5")) as b, Conn(b.port) as c:
        code = c.call(ApiKey.CREATE_TOPICS, 4, create_topic("__consumer_offsets", 1))["topics"][0]["error_code"]
        c.call(ApiKey.CREATE_TOPICS, 4, create_topic("t", 1))
        fc = c.call(ApiKey.FIND_COORDINATOR, 1, {"key": "g", "key_type": 0})["error_code"]
        got = commit(c, "g", "t", {0: 1})
    return f"CreateTopics answers {code}; then FindCoordinator {fc}, a commit {got[0]}"


def item6(tree: str, work: str, _: Any) -> str:
    with broker(tree, os.path.join(work, "d6")) as b, Conn(b.port) as c:
        c.call(ApiKey.CREATE_TOPICS, 4, create_topic("t", 1))
        batch = build_batch([(None, b"x")], producer_id=4242, producer_epoch=0, base_sequence=0,
                            is_transactional=True)
        r = c.call(ApiKey.PRODUCE, 2, produce("t", 0, batch))
        code = r["responses"][0]["partition_responses"][0]["error_code"]
        fill(c, "t", 3)
        lso = c.call(ApiKey.LIST_OFFSETS, 2, {"replica_id": -1, "isolation_level": 1, "topics": [
            {"name": "t", "partitions": [{"partition_index": 0, "timestamp": -1}]}]})["topics"][0]["partitions"][0]
        hw = c.call(ApiKey.LIST_OFFSETS, 2, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": "t", "partitions": [{"partition_index": 0, "timestamp": -1}]}]})["topics"][0]["partitions"][0]
    return f"Produce v2 answers {code}; LSO {lso['offset']} vs HW {hw['offset']}" + (
        " (read_committed consumers stuck)" if lso["offset"] < hw["offset"] else "")


def _zstd_zeros_batch(inflate: int) -> bytes:
    import cramjam

    def varint(n: int) -> bytes:
        n = (n << 1) ^ (n >> 63)
        out = bytearray()
        while n >= 0x80:
            out.append((n & 0x7F) | 0x80)
            n >>= 7
        out.append(n)
        return bytes(out)

    body = b"\x00" + varint(0) + varint(0) + varint(-1) + varint(inflate) + bytes(inflate) + varint(0)
    record = varint(len(body)) + body
    comp = bytes(cramjam.zstd.compress(record))
    batch = bytearray(build_batch([(None, b"x")]))
    # a one-record batch with the zstd codec and the compressed section in place of the records
    head = bytearray(batch[:61])
    head[21:23] = struct.pack(">h", 4)
    out = head + comp
    struct.pack_into(">i", out, 8, len(out) - 12)
    import crc32c
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


def item7(tree: str, work: str, _: Any) -> str:
    with broker(tree, os.path.join(work, "d7")) as b, Conn(b.port, timeout=600) as c:
        c.call(ApiKey.CREATE_TOPICS, 4, create_topic("t", 1))
        bomb = _zstd_zeros_batch(64 << 20)
        with pinger(b.port) as pings:
            t0 = time.perf_counter()
            r = c.call(ApiKey.PRODUCE, 7, produce("t", 0, bomb * 100))
            took = time.perf_counter() - t0
        code = r["responses"][0]["partition_responses"][0]["error_code"]
        return f"answers {code} in {took:.1f} s; stall {pings.worst * 1000:.0f} ms; peak RSS {b.kib('VmHWM') // 1024} MiB"


def item8(tree: str, work: str, _: Any) -> str:
    with broker(tree, os.path.join(work, "d8"), ["metrics.listeners=http://127.0.0.1:0"]) as b:
        held = [socket.create_connection(("127.0.0.1", b.metrics_port)) for _ in range(64)]
        try:
            codes = []
            for _ in range(3):
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{b.metrics_port}/healthz", timeout=5) as resp:
                        codes.append(resp.status)
                except (urllib.error.URLError, OSError) as e:
                    codes.append(type(e).__name__)
        finally:
            for s in held:
                s.close()
    return f"/healthz behind 64 idle connections: {codes}"


def item9(tree: str, work: str, _: Any) -> str:
    try:
        with broker(tree, os.path.join(work, "d9"), ["connections.max.idle.ms=1"]) as b:
            time.sleep(1)
            t0 = b.cpu_seconds()
            time.sleep(2)
            return f"starts; idle CPU {(b.cpu_seconds() - t0) / 2 * 100:.0f}% of a core"
    except RuntimeError as e:
        return f"refused at start: {e.args[0].splitlines()[-1][:110]}"


def item10(tree: str, work: str, _: Any) -> str:
    with broker(tree, os.path.join(work, "d10")) as b, Conn(b.port) as c:
        c.call(ApiKey.CREATE_TOPICS, 4, create_topic("t", 10))
        offsets = {p: 1 for p in range(40_000)}
        c.send(ApiKey.OFFSET_COMMIT, 2, {
            "group_id": "big", "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
            "topics": [{"name": "t", "partitions": [{"partition_index": p, "committed_offset": o,
                                                     "committed_metadata": ""} for p, o in offsets.items()]}]})
        frame = c.recv_frame()
        if frame is CLOSED:
            return "40,000-partition OffsetCommit: connection closed"
        _, resp = decode_response(ApiKey.OFFSET_COMMIT, 2, frame)  # type: ignore[arg-type]
        codes: dict[int, int] = {}
        for p in resp["topics"][0]["partitions"]:
            codes[p["error_code"]] = codes.get(p["error_code"], 0) + 1
        c2 = Conn(b.port)
        unknown = commit(c2, "g", "nope", {0: 1})[0]
        c2.close()
        return (f"40,000-partition OffsetCommit (10 partitions exist) answered, error codes {codes}; a commit for an"
                f" unknown topic answers {unknown}")


def item11(tree: str, work: str, _: Any) -> str:
    with broker(tree, os.path.join(work, "d11")) as b:
        for i in range(500):
            with socket.create_connection(("127.0.0.1", b.port)) as s:
                s.sendall(request_bytes(ApiKey.PRODUCE, 99, i, b""))
                try:
                    s.recv(100)
                except OSError:
                    pass
        time.sleep(0.5)
        warnings = sum(1 for line in b.lines if " WARNING " in line)
    return f"{warnings} WARNING lines for 500 bad requests"


def item12(tree: str, work: str, _: Any) -> str:
    n, conns = 10_000, 20
    with broker(tree, os.path.join(work, "d12"), ["group.initial.rebalance.delay.ms=3000"]) as b:
        body = {"group_id": "flood", "session_timeout_ms": 30000, "rebalance_timeout_ms": 60000, "member_id": "",
                "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b"\x00\x01"}]}
        socks = [socket.create_connection(("127.0.0.1", b.port)) for _ in range(conns)]
        with pinger(b.port) as pings:
            t0 = time.perf_counter()
            for i in range(n):
                socks[i % conns].sendall(request_bytes(ApiKey.JOIN_GROUP, 2, i + 1, body))
            for s in socks:
                s.settimeout(300)
                buf, got = b"", 0
                while got < n // conns:
                    chunk = s.recv(1 << 20)
                    if not chunk:
                        break
                    buf += chunk
                    while len(buf) >= 4 and len(buf) >= 4 + struct.unpack_from(">i", buf)[0]:
                        buf = buf[4 + struct.unpack_from(">i", buf)[0]:]
                        got += 1
            took = time.perf_counter() - t0
        for s in socks:
            s.close()
    return f"{n} joins answered in {took:.1f} s; stall {pings.worst * 1000:.0f} ms"


ITEMS: dict[int, Callable[[str, str, Any], str]] = {
    1: item1, 2: item2, 3: item3, 4: item4, 5: item5, 6: item6, 7: item7, 8: item8, 9: item9, 10: item10,
    11: item11, 12: item12}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", default=ROOT, help="the checkout whose broker is attacked (default: this one)")
    ap.add_argument("--only", default="", help="comma-separated item numbers (default: all)")
    ap.add_argument("--topics", type=int, default=8000, help="new topics in item 4's Metadata request (8000)")
    args = ap.parse_args()
    only = [int(x) for x in args.only.split(",") if x] or list(ITEMS)
    rev = subprocess.run(["git", "-C", args.tree, "log", "-1", "--format=%h"], capture_output=True, text=True).stdout.strip()
    print(f"# bench_hostile on {args.tree} ({rev or 'not a git checkout'})")
    print("# reproduce: .venv/bin/python scripts/bench_hostile.py --tree " + args.tree
          + (f" --only {args.only}" if args.only else "") + f" --topics {args.topics}")
    with tempfile.TemporaryDirectory(prefix="hostile-") as work:
        for i in only:
            t0 = time.perf_counter()
            try:
                result = ITEMS[i](args.tree, work, args)
            except Exception as e:  # noqa: BLE001 - one item's failure is its row
                result = f"FAILED: {type(e).__name__}: {str(e)[:150]}"
            print(f"{i:>2} | {result} ({time.perf_counter() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
