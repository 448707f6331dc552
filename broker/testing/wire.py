"""A raw-socket Kafka client for server tests and benchmark scripts, built on the sans-IO codec
(client/protocol): requests are encoded with the schema tables, responses cut and decoded by
hand so a caller sees exactly what the broker wrote (correlation ids, order, closed connections)."""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from client.protocol.api import ApiKey, response_header_version
from client.protocol.header import encode_request_header
from client.protocol.messages import REQUESTS, RESPONSES
from client.protocol.primitives import Reader, Writer
from client.records import build_batch

CLOSED = object()  # recv_frame's answer when the broker closed the connection


def request_bytes(key: int, version: int, cid: int, body: dict[str, Any] | bytes,
                  client_id: str | None = "wire-test") -> bytes:
    """One framed request; ``body`` is a dict for the schema, or raw body bytes."""
    w = Writer(bytearray(4))
    encode_request_header(w, key, version, cid, client_id)
    if isinstance(body, (bytes, bytearray)):
        w.buf += body
    else:
        REQUESTS[key].encode(body, version, w)
    struct.pack_into(">i", w.buf, 0, len(w.buf) - 4)
    return bytes(w.buf)


def decode_response(key: int, version: int, frame: bytes) -> tuple[int, dict[str, Any]]:
    """(correlation id, body); asserts the body uses every byte of the frame."""
    r = Reader(frame)
    cid = r.int32()
    if response_header_version(key, version) >= 1:
        r.tagged_fields()
    body = RESPONSES[key].decode(r, version)
    assert r.remaining == 0, f"{r.remaining} bytes left after {RESPONSES[key].name} v{version}"
    return cid, body


class Conn:
    def __init__(self, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buf = bytearray()
        self.cid = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Conn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def next_cid(self) -> int:
        self.cid += 1
        return self.cid

    def send(self, key: int, version: int, body: dict[str, Any] | bytes, cid: int | None = None) -> int:
        cid = self.next_cid() if cid is None else cid
        self.sock.sendall(request_bytes(key, version, cid, body))
        return cid

    def _fill(self, n: int) -> bool:
        while len(self._buf) < n:
            try:
                chunk = self.sock.recv(1 << 20)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                return False
            self._buf += chunk
        return True

    def recv_frame(self) -> bytes | object:
        """The next response frame (without its size), or CLOSED."""
        if not self._fill(4):
            return CLOSED
        size = struct.unpack_from(">i", self._buf)[0]
        if not self._fill(4 + size):
            return CLOSED
        frame = bytes(self._buf[4 : 4 + size])
        del self._buf[: 4 + size]
        return frame

    def recv(self, key: int, version: int) -> tuple[int, dict[str, Any]]:
        frame = self.recv_frame()
        assert frame is not CLOSED, "the broker closed the connection"
        return decode_response(key, version, frame)  # type: ignore[arg-type]

    def call(self, key: int, version: int, body: dict[str, Any] | bytes) -> dict[str, Any]:
        cid = self.send(key, version, body)
        got, resp = self.recv(key, version)
        assert got == cid
        return resp

    def is_closed_by_peer(self, timeout: float = 5.0) -> bool:
        """True once the broker has closed the connection (recv returns b"")."""
        self.sock.settimeout(timeout)
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False


# ------------------------------------------------------------------ request bodies


def metadata(topics: list[str] | None, auto_create: bool = True) -> dict[str, Any]:
    return {"topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": auto_create}


def produce(topic: str, partition: int, records: bytes | None, acks: int = 1) -> dict[str, Any]:
    return {"transactional_id": None, "acks": acks, "timeout_ms": 30000,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": records}]}]}


def fetch(topic: str, partition: int, offset: int, *, max_wait_ms: int = 0, min_bytes: int = 0,
          max_bytes: int = 50 << 20, partition_max_bytes: int = 1 << 20) -> dict[str, Any]:
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes, "max_bytes": max_bytes,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [{
                "partition": partition, "current_leader_epoch": -1, "fetch_offset": offset,
                "log_start_offset": -1, "partition_max_bytes": partition_max_bytes}]}],
            "forgotten_topics_data": [], "rack_id": ""}


def list_offsets(topic: str, partition: int, timestamp: int) -> dict[str, Any]:
    return {"replica_id": -1, "isolation_level": 0,
            "topics": [{"name": topic, "partitions": [{"partition_index": partition, "timestamp": timestamp}]}]}


def create_topic(name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> dict[str, Any]:
    return {"topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
                        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}],
            "timeout_ms": 10000, "validate_only": False}


def batch(n: int = 3, value_size: int = 10, tag: bytes = b"v") -> bytes:
    return bytes(build_batch([(b"k%d" % i, tag * value_size) for i in range(n)]))


def partition_response(resp: dict[str, Any], key: str = "partition_responses") -> dict[str, Any]:
    """The single partition of a one-topic, one-partition response."""
    (t,) = resp["responses"] if "responses" in resp else resp["topics"]
    (p,) = t[key]
    return p


# ------------------------------------------------------------------ broker files and process


def log_file(data_dir: str, topic: str, partition: int = 0) -> str:
    d = os.path.join(data_dir, f"{topic}-{partition}")
    logs = sorted(f for f in os.listdir(d) if f.endswith(".log"))
    assert len(logs) == 1, logs
    return os.path.join(d, logs[0])


def log_bytes(data_dir: str, topic: str, partition: int = 0) -> bytes:
    with open(log_file(data_dir, topic, partition), "rb") as f:
        return f.read()


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def open_fds(pid: int, kind: str = "") -> int:
    """Open file descriptors of a process; with ``kind="socket:"`` only sockets."""
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith(kind):
                n += 1
        except OSError:
            pass
    return n


def wait_until(cond: Any, timeout: float = 5.0, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(interval)
    return bool(cond())


class Pings:
    """What ``pinger`` saw: requests answered and the longest round trip, in seconds."""

    def __init__(self) -> None:
        self.answered = 0
        self.worst = 0.0


@contextmanager
def pinger(port: int, interval: float = 0.01, timeout: float = 300.0) -> Iterator[Pings]:
    """Another client on its own thread: an ApiVersions every ``interval`` s while the block
    runs, to see how long a request being handled makes the other clients wait. A broker
    that goes away ends it."""
    pings = Pings()
    stop = threading.Event()

    def run() -> None:
        try:
            with Conn(port, timeout=timeout) as c:
                while not stop.is_set():
                    t = time.perf_counter()
                    c.call(ApiKey.API_VERSIONS, 0, {})
                    pings.worst = max(pings.worst, time.perf_counter() - t)
                    pings.answered += 1
                    time.sleep(interval)
        except (OSError, AssertionError):
            pass

    th = threading.Thread(target=run, daemon=True)
    th.start()
    try:
        yield pings
    finally:
        stop.set()
        th.join(timeout)
