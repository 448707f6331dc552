#!/usr/bin/env python3
"""The metrics port under a large and a hostile load: G consumer groups x P committed
partitions (one topic of P partitions; one OffsetCommit v2 of P partitions per group, generation
-1, pipelined on one raw connection), then:

- a scrape of ``/metrics``: its size, its time (request sent to last byte) and the broker's
  resident memory before, after and at its peak (``VmHWM``), while another thread sends an
  ApiVersions request every 10 ms on its own connection: the longest of those round trips
  during the scrape is the stall the scrape caused on the event loop (and the longest before the
  scrape, for comparison);
- ``/healthz`` asked while N idle TCP connections (connected, nothing sent) are held open to
  the metrics port: its answer, or the failure, and how long it took.

Medians of ``--repeats`` scrapes (the peak RSS is the one after all of them).

    .venv/bin/python scripts/bench_metrics.py --groups 100 --partitions 5000 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import struct
import sys
import tempfile
import threading
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _benchutil import command_line, machine_line

from broker.testing import BrokerProcess, create_topic
from client.protocol.api import ApiKey
from client.protocol.header import encode_request_header
from client.protocol.messages import REQUESTS, RESPONSES
from client.protocol.primitives import Reader, Writer


class Conn:
    """Requests on one blocking socket (non-flexible versions: response header v0)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.sock.makefile("rb")
        self.cid = 0

    def close(self) -> None:
        self.f.close()
        self.sock.close()

    def send(self, key: int, version: int, body: dict[str, Any]) -> None:
        self.cid += 1
        w = Writer(bytearray(4))
        encode_request_header(w, key, version, self.cid, "bench-metrics")
        REQUESTS[key].encode(body, version, w)
        struct.pack_into(">i", w.buf, 0, len(w.buf) - 4)
        self.sock.sendall(w.buf)

    def recv(self, key: int, version: int) -> dict[str, Any]:
        size = struct.unpack(">i", self.f.read(4))[0]
        return RESPONSES[key].decode(Reader(self.f.read(size), 4), version)


def commit_all(port: int, groups: int, partitions: int) -> None:
    c = Conn(port)
    try:
        in_flight = 0
        for g in range(groups):
            c.send(ApiKey.OFFSET_COMMIT, 2, {
                "group_id": f"g{g}", "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
                "topics": [{"name": "t", "partitions": [{"partition_index": p, "committed_offset": g + p,
                                                          "committed_metadata": ""} for p in range(partitions)]}]})
            in_flight += 1
            if in_flight >= 16:
                c.recv(ApiKey.OFFSET_COMMIT, 2)
                in_flight -= 1
        for _ in range(in_flight):
            c.recv(ApiKey.OFFSET_COMMIT, 2)
    finally:
        c.close()


def proc_kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} for {pid}")


class Pinger(threading.Thread):
    """ApiVersions v0 every 10 ms; (send time, round trip seconds) of each."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.conn = Conn(port)
        self.samples: list[tuple[float, float]] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            t0 = time.perf_counter()
            self.conn.send(ApiKey.API_VERSIONS, 0, {})
            self.conn.recv(ApiKey.API_VERSIONS, 0)
            self.samples.append((t0, time.perf_counter() - t0))
            time.sleep(0.01)
        self.conn.close()

    def longest(self, start: float, end: float) -> float:
        """The longest round trip in flight at any time in [start, end]."""
        return max((rt for t0, rt in self.samples if t0 <= end and t0 + rt >= start), default=0.0)


def http_get(port: int, path: str, timeout: float) -> tuple[int, bytes]:
    """(status, body) of ``GET path``; status 0 if the connection failed, was closed or timed out."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            chunks = []
            while chunk := s.recv(1 << 20):
                chunks.append(chunk)
    except OSError:
        return 0, b""
    data = b"".join(chunks)
    head, _, body = data.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 "):
        return 0, b""
    return int(head.split()[1]), body


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=5000)
    ap.add_argument("--idle", type=int, default=64, help="idle connections held open to the metrics port")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--override", action="append", default=[], help="broker property key=value")
    a = ap.parse_args()
    data = tempfile.mkdtemp(prefix="minibroker-metrics-")
    b = BrokerProcess(os.path.join(data, "d"), a.override, metrics=True).start(60)
    try:
        mport = b.http_ports["metrics"]
        create_topic(b.bootstrap_servers, "t", a.partitions, timeout=300)
        t0 = time.perf_counter()
        commit_all(b.port, a.groups, a.partitions)
        commit_s = time.perf_counter() - t0
        rss_before = proc_kib(b.pid, "VmRSS")
        pinger = Pinger(b.port)
        pinger.start()
        time.sleep(0.5)
        sizes, times, stalls = [], [], []
        for _ in range(a.repeats):
            t0 = time.perf_counter()
            status, body = http_get(mport, "/metrics", 600)
            t1 = time.perf_counter()
            if status != 200:
                raise RuntimeError(f"scrape answered {status}")
            sizes.append(len(body))
            times.append(t1 - t0)
            time.sleep(0.3)
            stalls.append(pinger.longest(t0, t1))
        quiet = pinger.longest(pinger.samples[0][0], pinger.samples[0][0] + 0.45)
        pinger.done.set()
        pinger.join(30)
        rss_after, rss_peak = proc_kib(b.pid, "VmRSS"), proc_kib(b.pid, "VmHWM")

        idle = [socket.create_connection(("127.0.0.1", mport), timeout=10) for _ in range(a.idle)]
        time.sleep(0.2)
        health = []
        for _ in range(3):
            t0 = time.perf_counter()
            status, body = http_get(mport, "/healthz", 4)  # the healthcheck's timeout
            health.append((status, body.decode(errors="replace").strip(), time.perf_counter() - t0))
        for s in idle:
            s.close()
    finally:
        rc = b.stop()
        shutil.rmtree(data, ignore_errors=True)
    print(f"{a.groups} groups x {a.partitions} committed partitions ({a.groups * a.partitions:,} offsets,"
          f" committed in {commit_s:.1f} s), overrides {a.override or 'none'}; {machine_line()}")
    print(f"  scrape size            {statistics.median(sizes) / 1e6:,.2f} MB")
    print(f"  scrape time            {statistics.median(times) * 1000:,.0f} ms  (median of {a.repeats})")
    print(f"  longest ApiVersions round trip during a scrape  {statistics.median(stalls) * 1000:,.1f} ms"
          f"  (each: {', '.join(f'{x * 1000:,.1f}' for x in stalls)}; before any scrape {quiet * 1000:.1f} ms)")
    print(f"  broker RSS             {rss_before / 1024:,.0f} MiB before, {rss_after / 1024:,.0f} MiB after,"
          f" peak {rss_peak / 1024:,.0f} MiB")
    for status, body, secs in health:
        print(f"  /healthz with {a.idle} idle connections held: "
              f"{status or 'failed'} {body!r} in {secs * 1000:,.0f} ms")
    print(f"  broker exit status {rc}")
    print(command_line())


if __name__ == "__main__":
    main()
