#!/usr/bin/env python3
"""broker.testing's costs: how fast the test brokers start, and what fault injection and
metrics cost on the request path.

1. Start-up: ``broker.testing.start()`` of each kind (``process``: a child ``python -m broker
   serve``; ``inprocess``: a thread of this process) on an empty data directory, timed from the
   call to its return (the broker is listening then), ``--starts`` times each; median and max.
   The first in-process start also pays for importing the broker, reported apart.
2. Request path: broker CPU (``/proc/PID/stat`` of the broker process) per single-record
   Produce v7 request (acks=1, ``--depth`` requests in flight on one raw socket, ``--requests``
   per run), for four subprocess brokers started side by side and measured in turn, run after
   run: ``plain`` (no listener), ``faults idle`` (the fault injection listener open, no rule:
   the request hook stays unset), ``faults armed`` (a rule pending for an API this workload
   never sends, so every request goes through the injector's matching), ``metrics`` (the
   metrics listener on; not scraped). Medians over ``--runs`` runs.

Run from the repository root::

    .venv/bin/python scripts/bench_testing.py
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import struct
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from _benchutil import command_line, machine_line, proc_cpu_s  # noqa: E402

from broker.testing import BrokerProcess, create_topic, start  # noqa: E402
from client.protocol import REQUESTS, ApiKey, FrameDecoder, Writer, encode_request_header  # noqa: E402
from client.records.record import build_batch  # noqa: E402


def produce_request(topic: str) -> bytearray:
    w = Writer(bytearray(4))
    encode_request_header(w, ApiKey.PRODUCE, 7, 0, "bench-testing")
    REQUESTS[ApiKey.PRODUCE].encode({"transactional_id": None, "acks": 1, "timeout_ms": 30000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": build_batch([(None, b"v" * 100)])}]}]}, 7, w)
    struct.pack_into(">i", w.buf, 0, len(w.buf) - 4)
    return w.buf


def drive(port: int, topic: str, n: int, depth: int) -> float:
    """Send ``n`` single-record Produce requests, ``depth`` in flight; seconds taken."""
    import socket
    req = produce_request(topic)
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    dec = FrameDecoder()
    sent = done = 0
    t0 = time.perf_counter()
    while done < n:
        while sent < n and sent - done < depth:
            sent += 1
            struct.pack_into(">i", req, 8, sent)
            s.sendall(req)
        data = s.recv(1 << 16)
        if not data:
            raise ConnectionError("broker closed the connection")
        dec.feed(data)
        while dec.next_frame() is not None:
            done += 1
    dt = time.perf_counter() - t0
    s.close()
    return dt


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--starts", type=int, default=10, help="starts timed per kind (default 10)")
    ap.add_argument("--requests", type=int, default=20000, help="Produce requests per run (default 20,000)")
    ap.add_argument("--depth", type=int, default=16, help="requests in flight (default 16)")
    ap.add_argument("--runs", type=int, default=5, help="runs per broker (default 5)")
    args = ap.parse_args()
    print("# bench_testing: broker.testing start-up and the request-path cost of faults/metrics")
    print(f"# command: {command_line()}")
    print(f"# {machine_line()}")
    scratch = tempfile.mkdtemp(prefix=".bench-testing-", dir=REPO)
    try:
        print(f"== start-up: broker.testing.start() -> listening, {args.starts} starts per kind")
        for kind in ("process", "inprocess"):
            times = []
            for i in range(args.starts + (1 if kind == "inprocess" else 0)):
                d = os.path.join(scratch, f"start-{kind}-{i}")
                t0 = time.perf_counter()
                b = start(kind, d)
                times.append(time.perf_counter() - t0)
                b.stop()
            if kind == "inprocess":
                print(f"  inprocess first start (imports the broker): {times[0] * 1000:.0f} ms")
                times = times[1:]
            print(f"  {kind:<9}: median {statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms")

        print(f"== request path: broker CPU per single-record Produce v7 (acks=1), {args.requests:,} requests,"
              f" {args.depth} in flight, {args.runs} runs per broker, brokers in turn")
        brokers = {
            "plain": BrokerProcess(os.path.join(scratch, "plain")),
            "faults idle": BrokerProcess(os.path.join(scratch, "idle"), faults=True),
            "faults armed": BrokerProcess(os.path.join(scratch, "armed"), faults=True),
            "metrics": BrokerProcess(os.path.join(scratch, "metrics"), metrics=True),
        }
        results: dict[str, list[float]] = {k: [] for k in brokers}
        rates: dict[str, list[float]] = {k: [] for k in brokers}
        try:
            for b in brokers.values():
                b.start()
                create_topic(b.bootstrap_servers, "p", 1)
                drive(b.port, "p", 2000, args.depth)  # warm-up
            brokers["faults armed"].faults.fail("DELETE_TOPICS", "NOT_CONTROLLER", count=-1)
            for _ in range(args.runs):
                for name, b in brokers.items():
                    c0 = proc_cpu_s(b.pid)
                    dt = drive(b.port, "p", args.requests, args.depth)
                    results[name].append((proc_cpu_s(b.pid) - c0) / args.requests * 1e6)
                    rates[name].append(args.requests / dt)
        finally:
            for b in brokers.values():
                b.stop()
        base = statistics.median(results["plain"])
        for name in brokers:
            med = statistics.median(results[name])
            print(f"  {name:<13} {med:6.1f} us broker CPU per request ({med / base:5.3f}x plain),"
                  f" {statistics.median(rates[name]):>9,.0f} requests/s;"
                  f" runs: {', '.join(f'{x:.1f}' for x in results[name])}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"# reproduce: {command_line()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
