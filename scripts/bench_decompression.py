"""What a decompression bomb costs the other clients: a broker process, one client sending
bomb Produce requests (v7, one topic, one partition), another sending ApiVersions every 10 ms
and recording how long each took to be answered.

Cases (``--case``):

- ``multi``: one Produce v7 request carrying ``--batches`` zstd batches in one partition,
  each a records section of zeros inflating to ``--inflate-mib`` MiB (64 by default: just
  within 64 x the default ``max.message.bytes``).
- ``raised``: a topic created with ``max.message.bytes=2147483647`` and one zstd batch whose
  records inflate to ``--inflate-mib`` MiB.
- ``partitions``: one batch (``--inflate-mib``) in each of ``--partitions`` partitions of one
  request.

Each batch is one valid record whose value is zeros, so it passes every record check: only a
bound on inflating stops it. ``--version`` sets the Produce version (7).

Printed: the partition's error code, the slowest ApiVersions round trip while the bomb was
handled (the loop stall another client sees), the broker's CPU seconds for the request, and its
VmRSS before/after and VmHWM (peak) in MiB. Run it with ``--override`` to try broker
properties (``--override request.max.decompressed.bytes=...``).

    python scripts/bench_decompression.py --case multi
    python scripts/bench_decompression.py --case raised --inflate-mib 1024
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import sys
import tempfile
import threading
import time

import cramjam

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from broker.testing.process import BrokerProcess
from client.protocol.api import ApiKey, response_header_version
from client.protocol.header import encode_request_header
from client.protocol.messages import REQUESTS, RESPONSES
from client.protocol.primitives import Reader, Writer
from client.records import Compression, build_batch
from client.records.batch import RECORDS_OFFSET, compute_crc


def _request(key: int, version: int, cid: int, body: dict) -> bytes:
    w = Writer(bytearray(4))
    encode_request_header(w, key, version, cid, "bench-decompression")
    REQUESTS[key].encode(body, version, w)
    struct.pack_into(">i", w.buf, 0, len(w.buf) - 4)
    return bytes(w.buf)


def _recv(sock: socket.socket) -> bytes:
    buf = bytearray()
    while len(buf) < 4:
        chunk = sock.recv(4 - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    (n,) = struct.unpack(">i", buf)
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return bytes(out)


def _call(sock: socket.socket, key: int, version: int, body: dict, cid: int = 1) -> dict:
    sock.sendall(_request(key, version, cid, body))
    r = Reader(_recv(sock))
    r.int32()
    if response_header_version(key, version) >= 1:
        r.tagged_fields()
    return RESPONSES[key].decode(r, version)


def _varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)  # zigzag
    out = bytearray()
    while True:
        b, z = z & 0x7F, z >> 7
        out.append(b | (0x80 if z else 0))
        if not z:
            return bytes(out)


def zstd_record_of_zeros(size: int) -> bytes:
    """A valid records section (one record, null key, a value of zeros) inflating to about
    ``size`` bytes, zstd-compressed without holding it."""
    value = size - 32
    body_head = b"\0" + _varint(0) + _varint(0) + _varint(-1) + _varint(value)  # attrs, ts, offset, key, value
    head = _varint(len(body_head) + value + 1) + body_head
    c = cramjam.zstd.Compressor()
    c.compress(head)
    chunk = b"\0" * (1 << 20)
    left = value
    while left:
        n = min(left, len(chunk))
        c.compress(chunk[:n])
        left -= n
    c.compress(_varint(0))  # no headers
    return bytes(c.finish())


def bomb_batch(inflate: int) -> bytes:
    """A zstd batch of one valid record whose value is ~``inflate`` bytes of zeros: it passes
    every record check, so the broker inflates it whole."""
    out = bytearray(build_batch([(None, b"x")], Compression.ZSTD)[:RECORDS_OFFSET]) + zstd_record_of_zeros(inflate)
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">I", out, 17, compute_crc(memoryview(out)))
    return bytes(out)


def _status(pid: int) -> dict[str, int]:
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0]) // 1024
    return out


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", choices=["multi", "raised", "partitions"], required=True)
    ap.add_argument("--partitions", type=int, default=20, help="partitions (partitions; default 20)")
    ap.add_argument("--version", type=int, default=7, help="Produce version (default 7)")
    ap.add_argument("--batches", type=int, default=100, help="batches in the one partition (multi; default 100)")
    ap.add_argument("--inflate-mib", type=int, default=64, help="MiB each batch's records inflate to (default 64)")
    ap.add_argument("--override", action="append", default=[], help="broker property k=v (repeatable)")
    args = ap.parse_args()

    batch = bomb_batch(args.inflate_mib << 20)
    records = batch * (args.batches if args.case == "multi" else 1)
    configs = [{"name": "max.message.bytes", "value": "2147483647"}] if args.case == "raised" else []
    with tempfile.TemporaryDirectory() as d:
        b = BrokerProcess(os.path.join(d, "data"), args.override).start()
        try:
            pid = b.pid
            admin = socket.create_connection(("127.0.0.1", b.port))
            nparts = args.partitions if args.case == "partitions" else 1
            r = _call(admin, ApiKey.CREATE_TOPICS, 3, {
                "topics": [{"name": "bomb", "num_partitions": nparts, "replication_factor": 1, "assignments": [],
                            "configs": configs}], "timeout_ms": 10000, "validate_only": False})
            assert r["topics"][0]["error_code"] == 0, r
            before = _status(pid)
            cpu0 = _cpu_seconds(pid)
            done = threading.Event()
            latencies: list[float] = []

            def probe() -> None:
                s = socket.create_connection(("127.0.0.1", b.port))
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                body = {"client_software_name": "probe", "client_software_version": "1"}
                cid = 0
                while not done.is_set():
                    cid += 1
                    t = time.perf_counter()
                    s.sendall(_request(ApiKey.API_VERSIONS, 3, cid, body))
                    _recv(s)
                    latencies.append(time.perf_counter() - t)
                    time.sleep(0.01)
                s.close()

            prober = threading.Thread(target=probe)
            prober.start()
            time.sleep(0.3)
            t0 = time.perf_counter()
            resp = _call(admin, ApiKey.PRODUCE, args.version, {
                "transactional_id": None, "acks": 1, "timeout_ms": 30000,
                "topic_data": [{"name": "bomb", "partition_data": [{"index": i, "records": records}
                                                                   for i in range(nparts)]}]}, cid=2)
            elapsed = time.perf_counter() - t0
            time.sleep(0.3)
            done.set()
            prober.join()
            cpu = _cpu_seconds(pid) - cpu0
            after = _status(pid)
            parts = resp["responses"][0]["partition_responses"]
            print(f"case={args.case} Produce v{args.version} request={len(records) * nparts} bytes"
                  f" batches={args.batches if args.case == 'multi' else 1} x {nparts} partitions"
                  f" inflate={args.inflate_mib} MiB each overrides={args.override}")
            codes = [p["error_code"] for p in parts]
            print(f"  error_codes={codes if len(codes) < 5 else {c: codes.count(c) for c in set(codes)}}"
                  f" first error_message={next((p.get('error_message') for p in parts if p['error_code']), None)!r}")
            print(f"  produce answered in {elapsed * 1000:.0f} ms; broker CPU {cpu:.2f} s")
            print(f"  other client's ApiVersions: max {max(latencies) * 1000:.1f} ms over {len(latencies)} requests")
            print(f"  broker VmRSS {before['VmRSS']} -> {after['VmRSS']} MiB, VmHWM {before['VmHWM']} ->"
                  f" {after['VmHWM']} MiB")
            admin.close()
        finally:
            b.stop()


if __name__ == "__main__":
    main()
