#!/usr/bin/env python3
"""Start-up with many committed offsets: G groups x P committed partitions in
``__consumer_offsets`` (one OffsetCommit of P partitions per group, pipelined on one
connection), then a clean restart and a restart after SIGKILL, each timed from process start
to the broker's "loaded N groups" line (the background load of ``__consumer_offsets``; the
broker serves produce and fetch meanwhile). Also the OffsetCommit round trips per second of
the load phase. Medians of ``--repeats`` runs; a sample group's offsets are checked after
each restart.

    .venv/bin/python scripts/bench_offsets_load.py --groups 1000 --partitions 100 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import struct
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from broker.testing import BrokerProcess, create_topic
from client.protocol.api import ApiKey
from client.protocol.header import encode_request_header
from client.protocol.messages import REQUESTS, RESPONSES
from client.protocol.primitives import Reader, Writer


class Conn:
    """Pipelined requests on one blocking socket (non-flexible versions: response header v0)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.sock.makefile("rb")
        self.cid = 0

    def __enter__(self) -> Conn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.f.close()
        self.sock.close()

    def send(self, key: int, version: int, body: dict[str, Any]) -> int:
        self.cid += 1
        w = Writer(bytearray(4))
        encode_request_header(w, key, version, self.cid, "bench-offsets-load")
        REQUESTS[key].encode(body, version, w)
        struct.pack_into(">i", w.buf, 0, len(w.buf) - 4)
        self.sock.sendall(w.buf)
        return self.cid

    def recv(self, key: int, version: int) -> dict[str, Any]:
        size = struct.unpack(">i", self.f.read(4))[0]
        return RESPONSES[key].decode(Reader(self.f.read(size), 4), version)

    def call(self, key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        self.send(key, version, body)
        return self.recv(key, version)

_LOADED = re.compile(r"loaded (\d+) groups \((\d+) records\) from __consumer_offsets in ([0-9.]+) s")


def commit(group: str, partitions: int, base: int) -> dict[str, Any]:
    return {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
            "topics": [{"name": "t", "partitions": [{"partition_index": p, "committed_offset": base + p,
                                                      "committed_metadata": ""} for p in range(partitions)]}]}


def wait_loaded(b: BrokerProcess, t0: float, timeout: float = 300) -> tuple[float, float, int]:
    """(seconds from process start to the loaded line, the broker's own load time, groups)."""
    while time.monotonic() - t0 < timeout:
        for line in b.output:
            m = _LOADED.search(line)
            if m:
                return time.monotonic() - t0, float(m.group(3)), int(m.group(1))
        time.sleep(0.01)
    raise RuntimeError("no 'loaded' line:\n" + b.log_text())


def check_sample(b: BrokerProcess, groups: int, partitions: int) -> None:
    g = groups // 2
    with Conn(b.port) as c:
        r = c.call(ApiKey.OFFSET_FETCH, 1, {"group_id": f"g{g}", "topics": [{"name": "t", "partition_indexes": [0, partitions - 1]}]})
    got = [p["committed_offset"] for p in r["topics"][0]["partitions"]]
    if got != [g * 1000, g * 1000 + partitions - 1]:
        raise RuntimeError(f"group g{g}: offsets {got} after the restart")


def one_run(groups: int, partitions: int) -> dict[str, float]:
    data = tempfile.mkdtemp(prefix="minibroker-offsets-")
    try:
        b = BrokerProcess(os.path.join(data, "d")).start()
        create_topic(b.bootstrap_servers, "t", partitions)
        t0 = time.perf_counter()
        with Conn(b.port) as c:
            window = 64
            cids = []
            for g in range(groups):
                cids.append(c.send(ApiKey.OFFSET_COMMIT, 2, commit(f"g{g}", partitions, g * 1000)))
                if len(cids) >= window:
                    c.recv(ApiKey.OFFSET_COMMIT, 2)
                    cids.pop(0)
            for _ in cids:
                c.recv(ApiKey.OFFSET_COMMIT, 2)
        commit_rate = groups / (time.perf_counter() - t0)
        assert b.stop() == 0
        out = {"commits_per_s": commit_rate}
        for kind in ("clean", "after_sigkill"):
            t0 = time.monotonic()
            b = BrokerProcess(os.path.join(data, "d")).start()
            out[f"{kind}_to_loaded_s"], out[f"{kind}_broker_load_s"], n = wait_loaded(b, t0)
            if n != groups:
                raise RuntimeError(f"loaded {n} groups, expected {groups}")
            check_sample(b, groups, partitions)
            if kind == "clean":
                b.kill()
            else:
                assert b.stop() == 0
        return out
    finally:
        shutil.rmtree(data, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    runs = [one_run(a.groups, a.partitions) for _ in range(a.repeats)]
    print(f"{a.groups} groups x {a.partitions} committed partitions ({a.groups * a.partitions:,} offsets),"
          f" median of {a.repeats}:")
    for key in runs[0]:
        vals = [r[key] for r in runs]
        print(f"  {key:<28} {statistics.median(vals):>10.3f}   runs: {', '.join(f'{v:.3f}' for v in vals)}")
    print(f"command: .venv/bin/python scripts/bench_offsets_load.py --groups {a.groups} --partitions {a.partitions}"
          f" --repeats {a.repeats}")


if __name__ == "__main__":
    main()
