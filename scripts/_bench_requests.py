"""The ``requests`` section of ``scripts/bench.py``: what one small request costs the broker, per
API — requests/s and broker CPU µs per request (``/proc/<broker pid>/stat`` utime + stime over
the run, divided by the requests answered).

Load generator: one raw socket per run, no client library. Each request is encoded once with
``client.protocol``'s schema tables (the same bytes, same correlation id, sent again and again:
the broker does not look at correlation ids); ``depth`` copies go out at once and each batch of
replies received is answered with as many new copies, so ``depth`` requests stay in flight
until ``--request-seconds`` have passed, then the run waits for the last replies. Replies are
counted by walking their size prefixes; every reply must have the size of the first one (a
probe sent and fully decoded before the clock starts, whose error codes must be 0) and the
last reply of the run is decoded and checked the same way. Runs with ``--depth`` 1 (one at a
time: a round trip per request) and 16 by default.

Rows (the versions are those confluent-kafka 2.16.1 / librdkafka 2.16.0 sends to this broker,
seen with ``debug=protocol``; the ``what`` column names them):

- Produce, one 100-byte record (one batch, one partition), acks=1 and acks=all (answered once
  the batch is fsync'd; requests in flight share fsyncs). acks=0 has no reply, so no depth:
  copies are streamed back to back in groups of 16 (TCP back-pressure is the only limit) and
  the run ends with an ApiVersions request, whose reply says every Produce before it was
  handled; the row is labelled ``stream``. Every Produce topic's end offset is checked
  against the records sent at the end of the section.
- Fetch of 1 partition and of 100 partitions (one topic, never written: fetch offset 0 is the
  log end, so nothing new), ``max_wait_ms=0``, ``min_bytes=1``: the empty-fetch path, answered
  at once (no long poll). Also 1 partition with ``max_wait_ms=1``: the long-poll path — the
  request registers a waiter, re-reads, waits for its 1 ms timer and reads again; the rate is
  bounded by the timer (about ``depth`` per ms), the CPU figure is the path's cost.
- Metadata of one topic (by name), ApiVersions.
- Heartbeat of a member of a real group (JoinGroup twice — the second with the member id
  MEMBER_ID_REQUIRED handed out — then SyncGroup, before the section; session timeout 5 min).
- OffsetCommit of one partition by that member (generation and member id checked), answered
  once its record in ``__consumer_offsets`` is fsync'd (acks=all-like durability).

For acks=all and OffsetCommit the CPU figure includes the kernel's work for each fsync (system
time of whichever broker thread calls it), not the time spent waiting for the disk; at depth 1
every request pays a whole fsync, at depth 16 the requests in flight share them.

Target: <= 20 µs broker CPU per single-record Produce at acks=1, at every depth.

The floor row: the same ApiVersions request sent to ``scripts/_bench_floor.py``, a minimal
uvloop server with the broker's socket handling (one ``recv`` per wake-up, ``TCP_QUICKACK``,
one ``send`` of the replies) and no decoding or handler, which replays the reply the broker
gave. Its CPU per request is what the wake-up, the system calls and the kernel's loopback TCP
work cost on this machine: at depth 1 every request pays them, at depth 16 they are shared.
On loopback the ``send`` of a reply runs the client side's receive path in the sender's
context, and waking a process that sleeps on the other core costs more than taking turns on
one: ``--same-core`` pins the broker (all its threads), the floor server and the load
generator to one CPU for the section (rows labelled ``same core``) to show that part apart.
Each row prints user and system CPU separately.

``/proc`` counts CPU in ticks of 1/``SC_CLK_TCK`` s (10 ms): a run of 0.8 s at half a core
reads ~40 ticks, ~2.5% resolution; the median of ``--repeats`` runs is reported, rows and depths
alternating within each repeat so that a noisy moment hits them alike.
"""

from __future__ import annotations

import os
import socket
import statistics
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from broker.testing import create_topic
from client.protocol import REQUESTS, ApiKey, Writer, encode_request_header
from client.protocol.api import response_header_version
from client.protocol.messages import RESPONSES
from client.protocol.primitives import Reader
from client.records.record import build_batch

REQUEST_TARGETS: dict[str, tuple[str, float]] = {
    "request_produce_us": ("<=", 20.0),  # broker CPU per single-record Produce, acks=1
}

#: What confluent-kafka 2.16.1 (librdkafka 2.16.0) sends to this broker (``debug=protocol``).
VERSIONS: dict[int, int] = {
    ApiKey.PRODUCE: 10, ApiKey.FETCH: 16, ApiKey.METADATA: 12, ApiKey.API_VERSIONS: 3,
    ApiKey.HEARTBEAT: 3, ApiKey.OFFSET_COMMIT: 9, ApiKey.JOIN_GROUP: 5, ApiKey.SYNC_GROUP: 3,
    ApiKey.LEAVE_GROUP: 4, ApiKey.LIST_OFFSETS: 7,
}
VALUE_SIZE = 100
STREAM_GROUP = 16  # acks=0 copies per sendall
_SIZE = struct.Struct(">i")


def encode(key: int, body: dict[str, Any], version: int | None = None) -> bytes:
    """One framed request (correlation id 1, client id ``bench-requests``)."""
    v = VERSIONS[key] if version is None else version
    w = Writer(bytearray(4))
    encode_request_header(w, key, v, 1, "bench-requests")
    REQUESTS[key].encode(body, v, w)
    _SIZE.pack_into(w.buf, 0, len(w.buf) - 4)
    return bytes(w.buf)


def decode(key: int, frame: bytes, version: int | None = None) -> dict[str, Any]:
    """A reply frame (without its size prefix) decoded with the schema tables."""
    v = VERSIONS[key] if version is None else version
    r = Reader(frame)
    r.int32()  # correlation id
    if response_header_version(key, v) >= 1:
        r.tagged_fields()
    body: dict[str, Any] = RESPONSES[key].decode(r, v)
    return body


def error_codes(obj: Any) -> list[int]:
    """Every non-zero ``error_code`` anywhere in a decoded reply."""
    if isinstance(obj, dict):
        own = [obj["error_code"]] if obj.get("error_code") else []
        return own + [c for k, v in obj.items() if k != "error_code" for c in error_codes(v)]
    if isinstance(obj, list):
        return [c for v in obj for c in error_codes(v)]
    return []


def connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_frame(sock: socket.socket) -> bytes:
    """The next reply frame, without its size prefix."""
    def exact(n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            buf += chunk
        return bytes(buf)
    return exact(_SIZE.unpack(exact(4))[0])


def call(sock: socket.socket, key: int, body: dict[str, Any], version: int | None = None) -> dict[str, Any]:
    sock.sendall(encode(key, body, version))
    return decode(key, read_frame(sock), version)


# ---------------------------------------------------------------- load generator


def pipeline(sock: socket.socket, req: bytes, depth: int, seconds: float, reply_size: int) -> tuple[int, bytes]:
    """Keep ``depth`` copies of ``req`` in flight for ``seconds``, then collect the replies
    still due. Returns (replies, the last reply frame without its size prefix). Raises if a
    reply's size differs from ``reply_size`` (prefix included)."""
    copies = [req * k for k in range(depth + 1)]
    pend = bytearray()
    unpack = _SIZE.unpack_from
    clock = time.perf_counter
    deadline = clock() + seconds
    sock.sendall(copies[depth])
    sent, done = depth, 0
    last = b""
    while done < sent:
        data = sock.recv(1 << 16)
        if not data:
            raise ConnectionError("broker closed the connection")
        pend += data
        pos = n = 0
        end = len(pend)
        while end - pos >= 4:
            size = unpack(pend, pos)[0] + 4
            if end - pos < size:
                break
            if size != reply_size:
                raise RuntimeError(f"a reply of {size} bytes, the probe's was {reply_size}")
            pos += size
            n += 1
        if not n:
            continue
        done += n
        if clock() < deadline:
            sock.sendall(copies[n])
            sent += n
        elif done == sent:
            last = bytes(pend[pos - reply_size + 4:pos])
        del pend[:pos]
    return done, last


def stream(sock: socket.socket, req: bytes, fence: bytes, seconds: float) -> int:
    """Requests without replies (acks=0) back to back for ``seconds``, then ``fence`` (a request
    with a reply) and its reply: the broker handles a connection's requests in order, so every
    request sent is handled by then. Returns the requests sent."""
    group = req * STREAM_GROUP
    clock = time.perf_counter
    deadline = clock() + seconds
    sent = 0
    while clock() < deadline:
        sock.sendall(group)
        sent += STREAM_GROUP
    sock.sendall(fence)
    read_frame(sock)
    return sent


# ---------------------------------------------------------------- rows


@dataclass
class Row:
    """One API measured: ``body`` is encoded once; ``replies`` False for acks=0."""

    name: str
    key: int
    body: dict[str, Any]
    target: str | None = None
    replies: bool = True
    produce_topic: str | None = None  # records to count at the end
    floor: bool = False  # sent to scripts/_bench_floor.py, not to the broker
    runs: dict[int, list[dict[str, float]]] = field(default_factory=dict)  # depth -> runs

    @property
    def version(self) -> int:
        return VERSIONS[self.key]

    def label(self, depth: int, placement: str = "") -> str:
        return f"{self.name} v{self.version}, " + (f"depth {depth}" if self.replies else "stream") + placement


def produce_body(topic: str, acks: int) -> dict[str, Any]:
    return {"transactional_id": None, "acks": acks, "timeout_ms": 30000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": build_batch([(None, b"v" * VALUE_SIZE)])}]}]}


def _fetch_body(topic_id: Any, partitions: int, max_wait_ms: int) -> dict[str, Any]:
    # librdkafka's defaults: fetch.max.bytes 50 MiB, max.partition.fetch.bytes 1 MiB.
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 52428800,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic_id": topic_id, "partitions": [
                {"partition": p, "fetch_offset": 0, "partition_max_bytes": 1048576} for p in range(partitions)]}],
            "forgotten_topics_data": [], "rack_id": ""}


def _subscription(topic: str) -> bytes:
    """ConsumerProtocolSubscription v0: int16 version, [string topic], bytes user_data (null)."""
    t = topic.encode()
    return struct.pack(">hih", 0, 1, len(t)) + t + struct.pack(">i", -1)


def _assignment(topic: str) -> bytes:
    """ConsumerProtocolAssignment v0: int16 version, [string topic, [int32 partition]], bytes
    user_data (null)."""
    t = topic.encode()
    return struct.pack(">hih", 0, 1, len(t)) + t + struct.pack(">iii", 1, 0, -1)


def join_group(sock: socket.socket, group: str, topic: str) -> tuple[str, int]:
    """Become the only member of ``group`` (JoinGroup until accepted, SyncGroup as its leader);
    returns (member id, generation)."""
    member = ""
    for _ in range(3):
        resp = call(sock, ApiKey.JOIN_GROUP, {
            "group_id": group, "session_timeout_ms": 300_000, "rebalance_timeout_ms": 60_000,
            "member_id": member, "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": _subscription(topic)}]})
        member = resp["member_id"]
        if resp["error_code"] == 79:  # MEMBER_ID_REQUIRED: rejoin with the id handed out
            continue
        if resp["error_code"]:
            raise RuntimeError(f"JoinGroup error {resp['error_code']}")
        generation = resp["generation_id"]
        sync = call(sock, ApiKey.SYNC_GROUP, {
            "group_id": group, "generation_id": generation, "member_id": member, "group_instance_id": None,
            "assignments": [{"member_id": member, "assignment": _assignment(topic)}]})
        if sync["error_code"]:
            raise RuntimeError(f"SyncGroup error {sync['error_code']}")
        return member, generation
    raise RuntimeError("JoinGroup kept answering MEMBER_ID_REQUIRED")


def topic_id(sock: socket.socket, topic: str) -> Any:
    resp = call(sock, ApiKey.METADATA, {"topics": [{"topic_id": None, "name": topic}],
                                        "allow_auto_topic_creation": False})
    return resp["topics"][0]["topic_id"]


def end_offset(sock: socket.socket, topic: str) -> int:
    resp = call(sock, ApiKey.LIST_OFFSETS, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
    offset: int = resp["topics"][0]["partitions"][0]["offset"]
    return offset


# ---------------------------------------------------------------- the section


def build_rows(bootstrap: str, port: int, prefix: str) -> tuple[list[Row], dict[str, Any]]:
    """Create the topics and the group member; the rows to measure, and what to clean up."""
    topics = {name: f"{prefix}-{name}" for name in ("acks0", "acks1", "acksall", "fetch1", "fetch100", "commit")}
    for name, t in topics.items():
        create_topic(bootstrap, t, 100 if name == "fetch100" else 1)
    setup = connect(port)
    ids = {name: topic_id(setup, topics[name]) for name in ("fetch1", "fetch100")}
    group = f"{prefix}-group"
    member, generation = join_group(setup, group, topics["commit"])
    rows = [
        Row("Produce 1 record acks=0", ApiKey.PRODUCE, produce_body(topics["acks0"], 0), replies=False,
            produce_topic=topics["acks0"]),
        Row("Produce 1 record acks=1", ApiKey.PRODUCE, produce_body(topics["acks1"], 1),
            target="request_produce_us", produce_topic=topics["acks1"]),
        Row("Produce 1 record acks=all", ApiKey.PRODUCE, produce_body(topics["acksall"], -1),
            produce_topic=topics["acksall"]),
        Row("Fetch 1 partition, nothing new, max_wait 0", ApiKey.FETCH, _fetch_body(ids["fetch1"], 1, 0)),
        Row("Fetch 1 partition, nothing new, max_wait 1 ms", ApiKey.FETCH, _fetch_body(ids["fetch1"], 1, 1)),
        Row("Fetch 100 partitions, nothing new, max_wait 0", ApiKey.FETCH, _fetch_body(ids["fetch100"], 100, 0)),
        Row("Metadata 1 topic", ApiKey.METADATA, {"topics": [{"topic_id": None, "name": topics["fetch1"]}],
                                                  "allow_auto_topic_creation": False}),
        Row("ApiVersions", ApiKey.API_VERSIONS, {"client_software_name": "bench-requests",
                                                 "client_software_version": "1"}),
        Row("Heartbeat", ApiKey.HEARTBEAT, {"group_id": group, "generation_id": generation, "member_id": member,
                                            "group_instance_id": None}),
        Row("OffsetCommit 1 partition (after fsync)", ApiKey.OFFSET_COMMIT, {
            "group_id": group, "generation_id_or_member_epoch": generation, "member_id": member,
            "group_instance_id": None, "topics": [{"name": topics["commit"], "partitions": [
                {"partition_index": 0, "committed_offset": 0, "committed_metadata": ""}]}]}),
    ]
    return rows, {"sock": setup, "group": group, "member": member}


def run_once(row: Row, port: int, depth: int, seconds: float, meter: Callable[[], Any],
             fence: bytes) -> tuple[dict[str, float], int]:
    """One measured run of ``row`` on a new connection to ``port``, ``meter`` measuring the
    process behind it; (figures, records produced)."""
    req = encode(row.key, row.body)
    sock = connect(port)
    try:
        if not row.replies:
            sock.sendall(req + fence)  # the probe: one record, then the fence's reply
            read_frame(sock)
            with meter() as m:
                n = stream(sock, req, fence, seconds)
            return figures(m, n), n + 1
        sock.sendall(req)  # the probe: decoded and checked, and its size is every reply's size
        probe = read_frame(sock)
        if bad := error_codes(decode(row.key, probe)):
            raise RuntimeError(f"{row.name}: error codes {bad}")
        with meter() as m:
            n, last = pipeline(sock, req, depth, seconds, len(probe) + 4)
        if bad := error_codes(decode(row.key, last)):
            raise RuntimeError(f"{row.name}: error codes {bad} in the last reply")
        return figures(m, n), n + 1
    finally:
        sock.close()


def figures(m: Any, n: int) -> dict[str, float]:
    return {"requests_per_s": n / m.wall, "broker_us": 1e6 * m.broker / n, "user_us": 1e6 * m.broker_user / n,
            "sys_us": 1e6 * m.broker_sys / n, "requests": n, **m.as_dict()}


class FloorServer:
    """``scripts/_bench_floor.py`` in a child process, answering every request with ``body``
    (a reply without its size and correlation id). It exits when its stdin closes."""

    def __init__(self, body: bytes) -> None:
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bench_floor.py")
        self.proc = subprocess.Popen([sys.executable, script], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(_SIZE.pack(len(body)) + body)
        self.proc.stdin.flush()
        line = self.proc.stdout.readline().decode()
        if not line.startswith("port "):
            self.close()
            raise RuntimeError(f"the floor server did not start: {line!r}")
        self.port, self.pid = int(line.split()[1]), self.proc.pid

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class SameCore:
    """``--same-core``: the broker (every thread) and this load generator (the calling thread)
    pinned to one CPU for the section, so that a round trip is two processes taking turns on
    one core instead of waking each other across cores; the affinities are restored after."""

    def __init__(self, pids: list[int]) -> None:
        self.cpu = min(os.sched_getaffinity(0))
        self.saved: dict[int, set[int]] = {}
        self.pids = pids

    def pin(self, pid: int) -> None:
        """Pin ``pid`` (a process: all its threads) to the section's CPU."""
        try:
            tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
        except FileNotFoundError:
            tids = [pid]
        for tid in tids:
            try:
                self.saved.setdefault(tid, os.sched_getaffinity(tid))
                os.sched_setaffinity(tid, {self.cpu})
            except (ProcessLookupError, PermissionError):
                pass  # a thread that ended meanwhile

    def __enter__(self) -> SameCore:
        self.saved[0] = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {self.cpu})
        for pid in self.pids:
            self.pin(pid)
        return self

    def __exit__(self, *exc: object) -> None:
        for tid, cpus in self.saved.items():
            try:
                os.sched_setaffinity(tid, cpus)
            except (ProcessLookupError, PermissionError):
                pass


def section_requests(ctx: Any, meter: Callable[[int], Any]) -> dict[str, Any]:
    args = ctx.args
    depths = sorted({int(d) for d in str(args.depth).split(",") if d.strip()})
    seconds = args.request_seconds
    same_core = bool(getattr(args, "same_core", False))
    placement = ", same core" if same_core else ""
    print(f"== requests: broker CPU per small request, per API; raw socket, each request encoded once,"
          f" depth {', '.join(map(str, depths))} in flight, {seconds:g} s per run, median of {args.repeats};"
          + (" broker and load generator pinned to one CPU" if same_core else " processes placed by the kernel"))
    port = ctx.broker.port
    rows, setup = build_rows(ctx.broker.bootstrap, port, "requests")
    fence = encode(ApiKey.API_VERSIONS, {"client_software_name": "bench-requests", "client_software_version": "1"})
    setup["sock"].sendall(fence)
    floor = FloorServer(read_frame(setup["sock"])[4:])  # the broker's ApiVersions reply, replayed
    rows.append(Row("floor: minimal uvloop server, ApiVersions reply", ApiKey.API_VERSIONS,
                    {"client_software_name": "bench-requests", "client_software_version": "1"}, floor=True))
    produced: dict[str, int] = {}
    pinned = SameCore([ctx.broker.pid, floor.pid]) if same_core else None
    try:
        if pinned is not None:
            pinned.__enter__()
        for r in range(args.repeats):
            for row in rows:
                for depth in depths if row.replies else depths[:1]:
                    if pinned is not None:
                        pinned.pin(ctx.broker.pid)  # threads started since
                    target = floor if row.floor else ctx.broker
                    who = "floor server" if row.floor else "broker"
                    res, records = run_once(row, target.port, depth, seconds, lambda: meter(target.pid), fence)
                    row.runs.setdefault(depth, []).append(res)
                    if row.produce_topic:
                        produced[row.produce_topic] = produced.get(row.produce_topic, 0) + records
                    print(f"  {row.label(depth, placement):<58} run {r + 1}: {res['requests_per_s']:>9,.0f} requests/s"
                          f" {res['broker_us']:7.1f} µs {who} CPU/request"
                          f" ({res['user_us']:.1f} user, {res['sys_us']:.1f} system)  ({m_describe(res, who)})")
        for t, n in produced.items():
            got = end_offset(setup["sock"], t)
            if got != n:
                raise RuntimeError(f"{t}: end offset {got}, {n} single-record Produce requests sent")
        call(setup["sock"], ApiKey.LEAVE_GROUP, {"group_id": setup["group"], "members": [
            {"member_id": setup["member"], "group_instance_id": None}]})
    finally:
        if pinned is not None:
            pinned.__exit__()
        floor.close()
        setup["sock"].close()
    out: dict[str, Any] = {"depths": depths, "seconds": seconds, "same_core": same_core, "rows": {}}
    print(f"  {'request':<48} {'version':>7} {'depth':>6} {'requests/s':>11} {'µs/request':>11} {'user':>6}"
          f" {'system':>6}   (medians; CPU of the broker, of the floor server in its row)")
    for row in rows:
        for depth, runs in row.runs.items():
            rps = statistics.median(x["requests_per_s"] for x in runs)
            us = statistics.median(x["broker_us"] for x in runs)
            user = statistics.median(x["user_us"] for x in runs)
            system = statistics.median(x["sys_us"] for x in runs)
            label = row.label(depth, placement)
            out["rows"][label] = {"api": ApiKey(row.key).name, "version": row.version,
                                  "depth": depth if row.replies else None, "runs": runs, "floor": row.floor,
                                  "median_requests_per_s": rps, "median_broker_us": us,
                                  "median_user_us": user, "median_sys_us": system}
            print(f"  {row.name:<48} {row.version:>7} {depth if row.replies else 'stream':>6} {rps:>11,.0f}"
                  f" {us:>11.1f} {user:>6.1f} {system:>6.1f}")
            ctx.table.add("requests", f"{label}: requests/s", rps, "req/s",
                          runs=[x["requests_per_s"] for x in runs])
            what = "floor server CPU" if row.floor else "broker CPU"
            ctx.table.add("requests", f"{label}: {what} per request", us, "us", row.target,
                          [x["broker_us"] for x in runs], fmt="{:,.1f}")
    return out


def m_describe(res: dict[str, float], who: str = "broker") -> str:
    wall = res["wall_s"]
    return (f"{who} CPU {res['broker_cpu_s'] / wall:4.0%}, load generator CPU {res['client_cpu_s'] / wall:4.0%}"
            f" of one core over {wall:.2f} s")
