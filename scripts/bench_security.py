#!/usr/bin/env python3
"""What TLS and SASL cost: one broker process with PLAINTEXT and SASL_SSL listeners
(broker.testing.secure: trustme certificates, SCRAM users), measured side by side, alternating
plaintext and SASL_SSL runs so that the machine's noise hits both alike:

- **W1 produce**: confluent-kafka's Producer with its default configs (plus the listener's
  security settings), 100-byte values, 1 partition, acks=1: records/s, and the broker's CPU
  per record (from /proc); the ratio SASL_SSL / plaintext.
- **raw fetch**: bench.py's RawFetcher (Fetch v11 of 8 MiB replies, read and dropped) re-reading
  one partition; over SASL_SSL its socket is TLS (Python's ssl, SCRAM-SHA-512 login first):
  GB/s and the broker's CPU per GB. Plaintext fetches go by ``os.sendfile``; TLS ones are read
  with aiofiles and encrypted.
- **login time**: TCP connect + TLS handshake + ApiVersions + SaslHandshake + SCRAM-SHA-512
  (two SaslAuthenticate round trips), p50/p99 over ``--logins`` logins (the client's PBKDF2 at
  4096 iterations included: every SCRAM client pays it).
- **idle connections**: the broker's RSS before and after ``--idle`` authenticated TLS
  connections are opened and left idle: KiB per connection.
- **strace -c** of the broker during a plaintext fetch run (if strace is installed): the
  system calls, showing ``sendfile`` carries the record bytes.

    .venv/bin/python scripts/bench_security.py                 # the figures quoted in docs
    .venv/bin/python scripts/bench_security.py --quick         # a smaller, faster run
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import ssl
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import bench  # noqa: E402 - scripts/bench.py: RawFetcher, CpuMeter, encode_request
from _benchutil import proc_cpu_split  # noqa: E402

from broker.testing.secure import USERS, SecureSetup, secure_broker  # noqa: E402
from client.protocol.api import ApiKey  # noqa: E402
from client.security.sasl import ScramClient  # noqa: E402

GB = 1e9
MiB = 1 << 20
COMMAND = "scripts/bench_security.py"


def _recv_frame(sock: socket.socket) -> bytes:
    head = b""
    while len(head) < 4:
        chunk = sock.recv(4 - len(head))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        head += chunk
    size = struct.unpack(">i", head)[0]
    data = bytearray(size)
    bench.recv_exact(sock, memoryview(data), size)
    return bytes(data)


def _roundtrip(sock: socket.socket, api_key: int, version: int, cid: int, body: dict[str, Any]) -> bytes:
    sock.sendall(bench.encode_request(api_key, version, cid, body))
    return _recv_frame(sock)


def sasl_ssl_socket(port: int, setup: SecureSetup, user: str = "alice") -> ssl.SSLSocket:
    """A TLS socket to the SASL_SSL listener, logged in with SCRAM-SHA-512 (raw requests)."""
    ctx = ssl.create_default_context(cafile=setup.ca_pem)
    raw = socket.create_connection(("127.0.0.1", port))
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
    _roundtrip(sock, ApiKey.API_VERSIONS, 0, 1, {})
    reply = _roundtrip(sock, ApiKey.SASL_HANDSHAKE, 1, 2, {"mechanism": "SCRAM-SHA-512"})
    if struct.unpack_from(">h", reply, 4)[0] != 0:
        raise RuntimeError("SaslHandshake failed")
    mechanism = ScramClient("SCRAM-SHA-512", user, USERS[user])
    token: bytes | None = mechanism.first()
    cid = 3
    while token is not None:
        reply = _roundtrip(sock, ApiKey.SASL_AUTHENTICATE, 1, cid, {"auth_bytes": token})
        cid += 1
        error = struct.unpack_from(">h", reply, 4)[0]
        if error:
            raise RuntimeError(f"SCRAM login failed: error {error}")
        (msg_len,) = struct.unpack_from(">h", reply, 6)
        pos = 8 + max(msg_len, 0)
        (n,) = struct.unpack_from(">i", reply, pos)
        challenge = reply[pos + 4:pos + 4 + n]
        token = None if mechanism.complete else mechanism.step(challenge)
        if token is None and not mechanism.complete:
            mechanism.step(challenge)
    return sock


def produce(conf: dict[str, Any], topic: str, n: int) -> None:
    from confluent_kafka import Producer

    p = Producer({**conf, "logger": bench._rdkafka_logger()})
    value = b"x" * 100
    for _ in range(n):
        while True:
            try:
                p.produce(topic, value)
                break
            except BufferError:
                p.poll(0.001)
    left = p.flush(120)
    if left:
        raise RuntimeError(f"{left} records not delivered")


def cpu_s(pid: int) -> float:
    return float(sum(proc_cpu_split(pid)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000, help="records per W1 run")
    ap.add_argument("--fetch-gb", type=float, default=4.0, help="GB read per fetch run")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--logins", type=int, default=200)
    ap.add_argument("--idle", type=int, default=1000)
    ap.add_argument("--quick", action="store_true", help="records 300k, fetch 1 GB, 100 logins, 300 idle")
    args = ap.parse_args()
    if args.quick:
        args.records, args.fetch_gb, args.logins, args.idle = 300_000, 1.0, 100, 300
    work = tempfile.mkdtemp(prefix="bench-security-")
    broker, setup = secure_broker(work, log_level="WARNING")
    pid = broker.pid
    results: dict[str, list[dict[str, float]]] = {}
    try:
        plain_conf = {"bootstrap.servers": f"127.0.0.1:{broker.listener_ports['PLAINTEXT']}", "acks": "1"}
        secure_conf = {"bootstrap.servers": f"127.0.0.1:{broker.listener_ports['SASL_SSL']}", "acks": "1",
                       **setup.client_properties("SASL_SSL", "SCRAM-SHA-512")}
        print(f"== W1 produce: {args.records:,} x 100-byte records per run, confluent-kafka defaults, acks=1,"
              f" {args.repeats} runs each, alternating")
        for r in range(args.repeats):
            for name, conf in (("PLAINTEXT", plain_conf), ("SASL_SSL", secure_conf)):
                topic = f"w1-{name.lower()}-{r}"
                produce(conf, topic, 1)  # connect, log in, create the topic: not timed
                c0, t0 = cpu_s(pid), time.perf_counter()
                produce(conf, topic, args.records)
                wall, cpu = time.perf_counter() - t0, cpu_s(pid) - c0
                row = {"rps": args.records / wall, "cpu_us_per_record": cpu / args.records * 1e6}
                results.setdefault(f"w1 {name}", []).append(row)
                print(f"  {name:<9} run {r + 1}: {row['rps']:>10,.0f} records/s, broker CPU"
                      f" {row['cpu_us_per_record']:.2f} us/record ({cpu / wall:.0%} of a core)")
        fetch_topic = "w1-plaintext-0"
        end = args.records + 1  # the topic's records: the untimed first one, then the run's
        print(f"== raw fetch: Fetch v11, 8 MiB replies, {end:,} records of {fetch_topic}, >= {args.fetch_gb:g} GB"
              f" per run, {args.repeats} runs each, alternating")
        for r in range(args.repeats):
            for name in ("PLAINTEXT", "SASL_SSL"):
                f = bench.RawFetcher(broker.listener_ports["PLAINTEXT"], fetch_topic, 8 * MiB, 11)
                if name == "SASL_SSL":
                    f.sock.close()
                    f.sock = sasl_ssl_socket(broker.listener_ports["SASL_SSL"], setup)
                f.read_partition(end, False)  # warm-up
                total = 0
                c0, t0 = cpu_s(pid), time.perf_counter()
                while total < args.fetch_gb * GB:
                    total += f.read_partition(end, False)[0]
                wall, cpu = time.perf_counter() - t0, cpu_s(pid) - c0
                f.close()
                row = {"gbps": total / wall / GB, "cpu_s_per_gb": cpu / (total / GB)}
                results.setdefault(f"fetch {name}", []).append(row)
                print(f"  {name:<9} run {r + 1}: {row['gbps']:.2f} GB/s, broker CPU {row['cpu_s_per_gb']:.2f} s/GB"
                      f" ({cpu / wall:.0%} of a core)")
        print(f"== login: connect + TLS + ApiVersions + SaslHandshake + SCRAM-SHA-512, {args.logins} logins")
        times = []
        for _ in range(args.logins):
            t0 = time.perf_counter()
            s = sasl_ssl_socket(broker.listener_ports["SASL_SSL"], setup)
            times.append((time.perf_counter() - t0) * 1000)
            s.close()
        times.sort()
        p50, p99 = times[len(times) // 2], times[min(len(times) - 1, int(len(times) * 0.99))]
        print(f"  p50 {p50:.2f} ms, p99 {p99:.2f} ms")
        print(f"== idle: {args.idle} authenticated TLS connections (SASL_SSL, SCRAM-SHA-512)")
        rss0 = bench.proc_status_kb(pid, "VmRSS")
        conns = [sasl_ssl_socket(broker.listener_ports["SASL_SSL"], setup) for _ in range(args.idle)]
        time.sleep(1.0)
        rss1 = bench.proc_status_kb(pid, "VmRSS")
        print(f"  broker RSS {rss0 / 1024:.1f} MiB -> {rss1 / 1024:.1f} MiB: {(rss1 - rss0) / args.idle:.1f} KiB per"
              " idle authenticated TLS connection")
        for s in conns:
            s.close()
        if shutil.which("strace"):
            print("== strace -c -f of the broker during one plaintext fetch run (top system calls)")
            trace = subprocess.Popen(["strace", "-c", "-f", "-p", str(pid), "-o", os.path.join(work, "strace.txt")],
                                     stderr=subprocess.DEVNULL)
            time.sleep(1.0)
            f = bench.RawFetcher(broker.listener_ports["PLAINTEXT"], fetch_topic, 8 * MiB, 11)
            total = 0
            while total < 1 * GB:
                total += f.read_partition(end, False)[0]
            f.close()
            trace.terminate()
            trace.wait(10)
            with open(os.path.join(work, "strace.txt")) as fh:
                lines = fh.read().splitlines()
            print("\n".join("  " + line for line in lines[:9]))
        else:
            print("== strace not installed: no system-call summary")
        print("\n== summary (medians)")
        w1p = statistics.median(x["rps"] for x in results["w1 PLAINTEXT"])
        w1s = statistics.median(x["rps"] for x in results["w1 SASL_SSL"])
        fp = statistics.median(x["gbps"] for x in results["fetch PLAINTEXT"])
        fs = statistics.median(x["gbps"] for x in results["fetch SASL_SSL"])
        cpp = statistics.median(x["cpu_us_per_record"] for x in results["w1 PLAINTEXT"])
        cps = statistics.median(x["cpu_us_per_record"] for x in results["w1 SASL_SSL"])
        print(f"  W1 produce  PLAINTEXT {w1p:,.0f} rec/s ({cpp:.2f} us CPU/record), SASL_SSL {w1s:,.0f} rec/s"
              f" ({cps:.2f} us CPU/record): {w1s / w1p:.2f}x (target >= 0.7x)")
        print(f"  raw fetch   PLAINTEXT {fp:.2f} GB/s, SASL_SSL {fs:.2f} GB/s (target >= 0.5 GB/s)")
        print(f"  login       p50 {p50:.2f} ms, p99 {p99:.2f} ms")
        print(f"  idle TLS    {(rss1 - rss0) / args.idle:.1f} KiB RSS per connection")
        print(f"  reproduce:  .venv/bin/python {COMMAND}" + (" --quick" if args.quick else ""))
    finally:
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
