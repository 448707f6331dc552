#!/usr/bin/env python3
"""The broker benchmark: a real ``python -m broker serve`` process driven over loopback, each
figure compared with its target (the "Performance targets" table of docs/pages/benchmarks.md).

The script starts its own broker (``--port 0``, 127.0.0.1 only, data in a scratch directory
under the repository, removed at the end), runs the sections below and stops it with SIGTERM,
checking that it exits 0. Sections (``--only NAME[,NAME...]``; all by default):

- ``w1``: produce throughput. 100-byte values (no key), 1 partition, confluent-kafka Producer
  with ``linger.ms=5``, ``batch.size=65536``, acks=1, acks=all, acks=all with 1 request in
  flight, and acks=all with ``enable.idempotence=true``, the four alternating within each
  repeat. librdkafka sends an idempotent producer's next ProduceRequest for a partition only
  while fewer than 5 *records* of that partition are in flight (``rd_kafka_toppar_producer_serve``
  limits ``max_requests`` to ``RD_KAFKA_IDEMP_MAX_INFLIGHT - inflight``, 5 requests minus
  ``rktp_msgs_inflight``, a count of messages), so with W1's ~600-record batches it keeps one
  request per partition in flight (a few only when the partition's queue holds several
  batches just as the last answer arrives) whatever ``max.in.flight.requests.per.connection`` says;
  acks=all with 1 in flight is the fair comparison for it. It still runs slower than that
  mode, because while its one request is in flight and older records wait, librdkafka's broker
  thread wakes again at once (``rd_kafka_msgq_allow_wakeup_at`` sets the wakeup to now) and
  polls without sleeping, a core the broker would use. N records per run (default 2,000,000;
  ``--quick`` 200,000) into a fresh topic; records/s and payload MB/s = N / time
  from the first ``produce()`` to ``flush()`` returning. Median of ``--repeats`` runs. Two
  more rows say which side bounds W1: the same ``produce()`` loop into a Producer whose broker
  is unreachable (the load generator alone), and a raw socket client sending pre-built ~64 KiB
  batches as Produce v7 with ``--raw-produce-depth`` requests in flight (the broker alone, no
  client library): acks=1, acks=all, and acks=all idempotent (a producer id, each batch the
  next base sequence); the last two isolate the broker's sequence checks (target: idempotent
  < 5% slower).
- ``w1b``: W1 with Kafka's classic producer settings, ``linger.ms=0`` and ``batch.size=16384``
  (acks=1; the rest as W1), so batches only fill while earlier requests are in flight and the
  request rate is what the broker pays for. Target >= 821,557 records/s (Kafka's 2014
  figure). Also the broker CPU per record and per Produce request; the requests are counted as
  the record batches in the partition's log afterwards (librdkafka sends one batch per
  partition per request).
- ``w2``: consume throughput. A confluent-kafka Consumer (``assign`` at offset 0, no group
  membership, 16 MiB fetches, ``consume(num_messages=10000)``) reads W1's acks=1 topic (from the
  page cache); records/s from the first ``consume()`` to the N-th record. Without ``w1`` in the
  run, N records are produced first (untimed). ``fetch.queue.backoff.ms`` is set to
  ``--consumer-backoff-ms`` (1): librdkafka's default of 1000 ms parks the fetcher for a second
  whenever more than ``queued.min.messages`` records are queued, i.e. after every large fetch,
  which caps W2 near 150,000 records/s whatever the broker does.
- ``fetch``: the fetch path alone. A Python client that never decodes records sends Fetch v11
  requests (``--fetch-version``: 4-17; 12+ are flexible, 13+ name the topic by id), built with ``client.protocol``, with ``--fetch-max-bytes`` (default 32 MiB) and reads
  each reply into one preallocated buffer; the next fetch offset comes from the last whole batch
  header of the reply (``client.records.batch``; a partial trailing batch is dropped, as
  clients do). Pass after pass over the whole partition until ``--fetch-gb`` GB have arrived;
  GB/s (decimal) of reply bytes, median of ``--fetch-repeats``. Two modes: ``serial`` (send the
  next request once the reply is in) and ``early`` (send it as soon as the reply's last whole
  batch header has arrived, so the broker prepares the next reply while the tail of this one is
  still being received). Deeper pipelining is not possible on one partition: the next offset
  is only known from the reply. For scale, the same bytes are also moved without the broker:
  a bare child process answering with blocking ``os.sendfile`` of the same ``.log``.
- ``latency``: produce ack latency. acks=1, one record per ``produce()``, ``linger.ms=0``, at a
  fixed rate: 20% of this run's W1 acks=1 median (without W1 in the run: the median of three
  200,000-record W1 acks=1 runs), or ``--latency-rate``. Sends are paced on
  1 ms ticks (the records due are produced, then ``poll(0.001)`` serves delivery callbacks and
  returns early when one arrives). Latency = delivery callback time - ``produce()`` time, so
  it includes librdkafka's own queueing and the up-to-1 ms poll granularity, not only the
  broker; every ``--latency-sample``-th (10th) record is timed, to keep Python callbacks from
  loading the load generator. The first second is dropped as warm-up; p50/p99/p99.9 per run, median over runs.
  Run with librdkafka's defaults (Nagle on: ``socket.nagle.disable=false``) and with
  ``socket.nagle.disable=true``. The same schedule is also replayed by a raw socket client
  (Produce v7 requests carrying the records due, many in flight, latency per record = reply
  time - send time): the broker's and loopback's share without librdkafka.
- ``startup``: start-up and idle memory. ``--startup-runs`` (default 5) broker processes on
  empty data directories: time from spawn to the "minibroker listening" line on stderr and to
  the first ApiVersions reply on a new TCP connection; VmRSS (``/proc/PID/status``) right after
  that and after 2 s idle. Also the RSS of the benchmark's own broker after the workloads.
- ``requests``: the broker's cost per small request, per API (``scripts/_bench_requests.py``
  describes each row): single-record Produce at acks=0, 1 and all, Fetch of 1 and of 100
  partitions with nothing new, Metadata of one topic, ApiVersions, Heartbeat of a real group
  member, OffsetCommit of one partition; raw socket, each request encoded once, ``--depth``
  (1,16) in flight for ``--request-seconds`` (0.8) per run. Requests/s and broker CPU µs per
  request, user and system; target <= 20 µs per single-record Produce at acks=1. A last row,
  ``floor``, measures ``scripts/_bench_floor.py`` (a minimal uvloop server replaying the
  broker's ApiVersions reply) the same way: the wake-up, syscall and loopback cost under every
  row. ``--same-core`` pins the broker and the load generator to one CPU for the section.
- ``txn``: transactional produce against idempotent produce, in the same run
  (``scripts/_bench_txn.py``): confluent-kafka with W1's settings, ``--txn-records`` (default
  100,000; ``--quick`` 20,000) per run, idempotent, then transactions of 10,000 and of 100
  records (``begin_transaction`` .. ``commit_transaction``). Records/s, broker CPU per record
  and, against the idempotent run, broker CPU and wall time per transaction.
- ``client-produce``: our Python client against aiokafka and kafka-python, in one run on the
  same broker (``scripts/_bench_clients.py``). ``--client-records`` (default 1,000,000;
  ``--quick`` 200,000) 100-byte records into a fresh 1-partition topic per run, acks=1,
  linger 5 ms, 64 KiB batches: ours ``send_nowait`` with ``await drain()`` every 10,000,
  aiokafka ``send()`` (not awaiting each ack) with the acks gathered every 10,000,
  kafka-python ``send()`` + ``flush()``. Targets: ours >= 500,000 records/s and >= 3x aiokafka.
- ``client-consume``: the same records read from offset 0 (produced first, untimed, without
  ``client-produce``): ours ``getmany`` (records built), ours bulk ``getbatches`` (columnar
  ColumnBatches, rows counted, no record objects), aiokafka ``getmany``, kafka-python ``poll``,
  10,000 records per call. Targets: ours getmany >= 1,000,000 records/s and >= 3x aiokafka;
  bulk >= 3,000,000 records/s.
- ``client-idioms``: our client in the idioms users write (start + burst of ``send_nowait`` +
  ``flush`` + ``gather``; awaited sends one at a time; ``drain()`` every record; ``async for``
  and ``getmany``; the sync wrappers), each beside aiokafka and confluent-kafka with their
  defaults (``scripts/_bench_idioms.py`` describes each). Targets: every idiom >= 3x aiokafka,
  the burst >= 500,000 records/s.
- ``metrics``: the cost of the metrics listener. A second broker with ``metrics.listeners`` on
  is started; W1 acks=1 and W2 (as above) run against it and against the bench's own broker
  (metrics off), alternating run by run, while the metrics broker is scraped every
  ``--scrape-interval`` (1) s. Reports both medians, their ratio and the broker CPU per record,
  and checks that the metrics broker's ``minibroker_messages_in_total`` and
  ``minibroker_messages_out_total`` equal the records produced and consumed.

Each run also records the CPU seconds used by the broker process (``/proc/PID/stat``) and by
this process (the load generator, including librdkafka's threads): on a 2-core machine the two
compete, and the split says which side ran out of CPU. Warnings and errors the broker logs
during a section are printed after it.

``--profile-broker DIR`` attaches ``py-spy record --pid`` to the broker during each workload
section and writes DIR/<section>.txt (collapsed stacks) plus a summary of the hottest frames.
py-spy itself takes CPU, so figures from a profiled run are not comparable with plain runs;
py-spy also counts a thread preempted on its way out of a syscall (``send`` waking the
client) as busy in that syscall, so compare with ``perf`` before blaming one.

Run from the repository root::

    .venv/bin/python scripts/bench.py                    # 2,000,000 records, 3 repeats
    .venv/bin/python scripts/bench.py --quick            # 200,000 records
    .venv/bin/python scripts/bench.py --only w1,latency --json bench-results/bench.json
    .venv/bin/python scripts/bench.py --only w1b --quick --repeats 1
    .venv/bin/python scripts/bench.py --only requests --depth 1,16 --repeats 3
    .venv/bin/python scripts/bench.py --only requests --repeats 3 --same-core
    .venv/bin/python scripts/bench.py --only txn --repeats 3                   # transactions
    .venv/bin/python scripts/bench.py --only client-produce,client-consume   # Python clients
    .venv/bin/python scripts/bench.py --only client-idioms --quick --repeats 1
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import os
import re
import selectors
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from _bench_clients import CLIENT_TARGETS, section_client_consume, section_client_produce  # noqa: E402
from _bench_idioms import IDIOM_TARGETS, section_client_idioms  # noqa: E402
from _bench_requests import REQUEST_TARGETS, section_requests  # noqa: E402
from _bench_txn import section_txn  # noqa: E402
from _benchutil import command_line, fs_type, machine_line, proc_cpu_s, proc_cpu_split  # noqa: E402

from broker.testing import BrokerProcess, parse_metrics  # noqa: E402
from client.protocol import REQUESTS, ApiKey, FrameDecoder, Writer, encode_request_header  # noqa: E402
from client.protocol.messages import RESPONSES  # noqa: E402
from client.protocol.primitives import Reader  # noqa: E402
from client.records.batch import (  # noqa: E402
    BASE_SEQUENCE_OFFSET,
    CRC_OFFSET,
    LAST_OFFSET_DELTA_OFFSET,
    LOG_OVERHEAD,
    RECORDS_OFFSET,
    compute_crc,
    iter_batch_headers,
)
from client.records.record import build_batch  # noqa: E402

MB = 1_000_000
GB = 1_000_000_000
MiB = 1 << 20
VALUE_SIZE = 100
_LISTENING = re.compile(r"minibroker listening on ([\d.]+):(\d+)")

# docs/pages/benchmarks.md's "Performance targets": (comparison, value).
TARGETS: dict[str, tuple[str, float]] = {
    "w1_rps": (">=", 1_000_000),
    "w1b_rps": (">=", 821_557),  # Kafka's classic single-node figure, with its classic producer settings
    "w2_rps": (">=", 2_000_000),
    "fetch_gbps": (">=", 1.5),
    "latency_p99_ms": ("<", 2.0),
    "idempotence_cost_pct": ("<", 5.0),  # raw socket acks=all, idempotent vs plain, same depth
    "start_s": ("<", 0.5),
    "rss_mb": ("<", 60.0),
    **CLIENT_TARGETS,  # the Python client issue's targets (scripts/_bench_clients.py)
    **IDIOM_TARGETS,  # our client's everyday idioms (scripts/_bench_idioms.py)
    **REQUEST_TARGETS,  # broker CPU per small request (scripts/_bench_requests.py)
}


# ---------------------------------------------------------------- results table


class Table:
    """Rows of (section, what, value, unit, target key or None, runs); printed at the end."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add(self, section: str, what: str, value: float, unit: str, target: str | None = None,
            runs: list[float] | None = None, fmt: str = "{:,.0f}") -> None:
        row: dict[str, Any] = {"section": section, "what": what, "value": value, "unit": unit,
                               "fmt": fmt, "runs": runs or []}
        if target is not None:
            op, limit = TARGETS[target]
            met = value >= limit if op == ">=" else value <= limit if op == "<=" else value < limit
            shown = f"{limit:,.0f}" if limit >= 1000 else f"{limit:g}"
            row.update(target=f"{op} {shown}", status="MET" if met else "MISSED")
        self.rows.append(row)

    def print(self) -> None:
        hdr = ("section", "figure", "median", "unit", "target", "status", "runs")
        lines = []
        for r in self.rows:
            runs = " ".join(r["fmt"].format(x) for x in r["runs"]) if len(r["runs"]) > 1 else ""
            lines.append((r["section"], r["what"], r["fmt"].format(r["value"]), r["unit"],
                          r.get("target", ""), r.get("status", ""), runs))
        widths = [max(len(h), *(len(line[i]) for line in lines)) if lines else len(h) for i, h in enumerate(hdr)]
        fmt_row = "  ".join(f"{{:{'>' if i == 2 else '<'}{w}}}" for i, w in enumerate(widths))
        print(fmt_row.format(*hdr).rstrip())
        print("  ".join("-" * w for w in widths))
        for line in lines:
            print(fmt_row.format(*line).rstrip())

    def json_rows(self) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.items() if k != "fmt"} for r in self.rows]


# ---------------------------------------------------------------- process helpers


def self_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def proc_status_kb(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


class CpuMeter:
    """Wall, broker CPU (user and system) and load-generator CPU over a block of code."""

    def __init__(self, broker_pid: int) -> None:
        self.pid = broker_pid

    def __enter__(self) -> CpuMeter:
        self.b0, self.c0, self.t0 = proc_cpu_split(self.pid), self_cpu_s(), time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.t0
        user, system = proc_cpu_split(self.pid)
        self.broker_user, self.broker_sys = user - self.b0[0], system - self.b0[1]
        self.broker = self.broker_user + self.broker_sys
        self.client = self_cpu_s() - self.c0

    def describe(self) -> str:
        return (f"broker CPU {self.broker / self.wall:4.0%}, load generator CPU {self.client / self.wall:4.0%}"
                f" of one core over {self.wall:.2f} s")

    def as_dict(self) -> dict[str, float]:
        return {"wall_s": self.wall, "broker_cpu_s": self.broker, "client_cpu_s": self.client,
                "broker_user_s": self.broker_user, "broker_sys_s": self.broker_sys}


def broker_command(data_dir: str, log_level: str = "INFO") -> list[str]:
    return [sys.executable, "-m", "broker", "serve", "--host", "127.0.0.1", "--port", "0",
            "--data-dir", data_dir, "--log-level", log_level]


def start_broker(data_dir: str, metrics: bool = False) -> BrokerProcess:
    """``python -m broker serve --port 0`` in ``data_dir`` (broker.testing's harness; its stderr
    lines are kept in ``.output``)."""
    return BrokerProcess(data_dir, metrics=metrics).start(timeout=30.0)


# ---------------------------------------------------------------- raw protocol helpers


def encode_request(api_key: int, version: int, cid: int, body: dict[str, Any]) -> bytes:
    w = Writer(bytearray(4))
    encode_request_header(w, api_key, version, cid, "bench")
    REQUESTS[api_key].encode(body, version, w)
    struct.pack_into(">i", w.buf, 0, len(w.buf) - 4)
    return bytes(w.buf)


def recv_exact(sock: socket.socket, view: memoryview, n: int) -> None:
    got = 0
    while got < n:
        k = sock.recv_into(view[got:n], n - got)
        if k == 0:
            raise ConnectionError("broker closed the connection")
        got += k


def connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def api_versions_roundtrip(sock: socket.socket) -> None:
    sock.sendall(encode_request(ApiKey.API_VERSIONS, 0, 1, {}))
    head = bytearray(4)
    recv_exact(sock, memoryview(head), 4)
    size = struct.unpack(">i", head)[0]
    body = bytearray(size)
    recv_exact(sock, memoryview(body), size)
    cid, err = struct.unpack_from(">ih", body, 0)
    if cid != 1 or err != 0:
        raise RuntimeError(f"ApiVersions failed: correlation id {cid}, error {err}")


# ---------------------------------------------------------------- confluent-kafka helpers


def _rdkafka_logger() -> Any:
    import logging
    log = logging.getLogger("bench.rdkafka")
    if not log.handlers:
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(logging.Formatter("  [librdkafka] %(message)s"))
        log.addHandler(h)
        log.propagate = False
    return log


def client_conf(ctx: Ctx, **extra: Any) -> dict[str, Any]:
    conf = {"bootstrap.servers": ctx.broker.bootstrap, "log_level": 4, "logger": _rdkafka_logger()}
    conf.update(extra)
    return conf


def create_topic(ctx: Ctx, name: str) -> None:
    from confluent_kafka.admin import NewTopic
    futures = ctx.admin().create_topics([NewTopic(name, 1, 1)], operation_timeout=10, request_timeout=15)
    for f in futures.values():
        f.result(15)


def high_watermark(ctx: Ctx, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer(client_conf(ctx, **{"group.id": "bench-hwm", "enable.auto.commit": False}))
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        c.close()


def produce_records(ctx: Ctx, topic: str, n: int, acks: str, idempotence: bool = False,
                    max_in_flight: int | None = None, linger_ms: float = 5,
                    batch_size: int = 65536) -> tuple[float, float]:
    """Produce ``n`` 100-byte records (W1's producer settings unless ``linger_ms`` and
    ``batch_size`` say otherwise: W1b's are 0 and 16384); seconds from the first produce() to
    flush() returning, and to the last produce() returning. Raises if any delivery failed."""
    from confluent_kafka import KafkaException, Producer
    errors: list[Any] = []

    def on_delivery(err: Any, msg: Any) -> None:
        errors.append(err)

    p = Producer(client_conf(ctx, **{
        "acks": acks, "linger.ms": linger_ms, "batch.size": batch_size, "enable.idempotence": idempotence,
        **({"max.in.flight.requests.per.connection": max_in_flight} if max_in_flight else {}),
        "queue.buffering.max.messages": max(n + 1000, 100_000),
        "queue.buffering.max.kbytes": 4 * 1024 * 1024,  # 4 GiB: the whole run fits in the queue
        "delivery.report.only.error": True, "on_delivery": on_delivery,
    }))
    p.list_topics(topic, timeout=10)  # connect and fetch metadata before the clock starts
    value = b"v" * VALUE_SIZE
    produce, poll = p.produce, p.poll
    t0 = time.perf_counter()
    for i in range(n):
        try:
            produce(topic, value, partition=0)
        except BufferError:
            poll(0.01)
            produce(topic, value, partition=0)
        if not i & 0x3FFFF:
            poll(0)
    loop_dt = time.perf_counter() - t0
    left = p.flush(120)
    dt = time.perf_counter() - t0
    if left or errors:
        raise KafkaException(f"{left} records undelivered, {len(errors)} delivery errors (first: {errors[:1]})")
    return dt, loop_dt


def produce_loop_ceiling(n: int) -> float:
    """produce() calls/s of the same loop into a Producer whose broker is unreachable: the
    load generator's own ceiling (librdkafka only queues the records)."""
    from confluent_kafka import Producer
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there: connections are refused
    p = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "log_level": 0, "linger.ms": 5, "batch.size": 65536,
                  "queue.buffering.max.messages": n + 1000, "queue.buffering.max.kbytes": 4 * 1024 * 1024})
    value = b"v" * VALUE_SIZE
    produce = p.produce
    t0 = time.perf_counter()
    for _ in range(n):
        produce("ceiling", value, partition=0)
    dt = time.perf_counter() - t0
    p.purge()
    p.flush(0)
    return n / dt


def raw_produce(ctx: Ctx, topic: str, n: int, depth: int, acks: int = 1,
                idempotent: bool = False) -> tuple[float, int]:
    """Produce v7 over a raw socket: one pre-built batch of ~64 KiB (100-byte values, as
    librdkafka's batch.size=65536 gives) sent again and again, ``depth`` requests in flight,
    until ``n`` records are acknowledged. The broker's ceiling without a client library in the
    way. ``idempotent``: the batch carries a producer id from InitProducerId v0 and each copy
    the next base sequence (its CRC recomputed), as an idempotent producer sends them.
    Returns (seconds, records)."""
    value = b"v" * VALUE_SIZE
    one = len(build_batch([(None, value)] * 2)) - len(build_batch([(None, value)]))  # bytes per record
    per = (65536 - RECORDS_OFFSET) // one
    while len(build_batch([(None, value)] * per)) > 65536:
        per -= 1
    sock = connect(ctx.broker.port)
    decoder = FrameDecoder()
    ids: dict[str, Any] = {}
    if idempotent:
        sock.sendall(encode_request(ApiKey.INIT_PRODUCER_ID, 0, 0,
                                    {"transactional_id": None, "transaction_timeout_ms": 60000}))
        frame = None
        while frame is None:
            decoder.feed(sock.recv(1 << 16))
            frame = decoder.next_frame()
        # correlation id, throttle_time_ms, error_code, producer_id, producer_epoch
        _, _, err, pid, epoch = struct.unpack_from(">iihqh", frame)
        if err:
            raise RuntimeError(f"InitProducerId error {err}")
        ids = {"producer_id": pid, "producer_epoch": epoch, "base_sequence": 0}
    batch = build_batch([(None, value)] * per, **ids)
    template = bytearray(encode_request(ApiKey.PRODUCE, 7, 0, {
        "transactional_id": None, "acks": acks, "timeout_ms": 30000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}))
    at = len(template) - len(batch)  # the records are the request's last field
    view = memoryview(template)
    reqs = -(-n // per)
    err_pos = 4 + 4 + 2 + len(topic.encode()) + 4 + 4
    sent = done = 0
    t0 = time.perf_counter()
    while done < reqs:
        while sent < reqs and sent - done < depth:
            sent += 1
            struct.pack_into(">i", template, 8, sent)
            if idempotent:
                struct.pack_into(">i", template, at + BASE_SEQUENCE_OFFSET, (sent - 1) * per % (1 << 31))
                struct.pack_into(">I", template, at + CRC_OFFSET, compute_crc(view[at:]))
            sock.sendall(template)
        data = sock.recv(1 << 16)
        if not data:
            raise ConnectionError("broker closed the connection")
        decoder.feed(data)
        while (frame := decoder.next_frame()) is not None:
            err = struct.unpack_from(">h", frame, err_pos)[0]
            if err:
                raise RuntimeError(f"produce error {err}")
            done += 1
    dt = time.perf_counter() - t0
    view.release()
    sock.close()
    return dt, reqs * per


# ---------------------------------------------------------------- py-spy


class Profiler:
    """``py-spy record --pid`` over a section (``--profile-broker DIR``)."""

    def __init__(self, ctx: Ctx, name: str) -> None:
        self.ctx, self.name, self.proc = ctx, name, None

    def __enter__(self) -> Profiler:
        d = self.ctx.args.profile_broker
        if d:
            os.makedirs(d, exist_ok=True)
            self.out = os.path.join(d, f"{self.name}.txt")
            spy = shutil.which("py-spy", path=os.path.dirname(sys.executable)) or shutil.which("py-spy")
            if spy is None:
                raise SystemExit("--profile-broker needs py-spy (.venv/bin/pip install py-spy)")
            self.proc = subprocess.Popen([spy, "record", "--pid", str(self.ctx.broker.pid), "--rate", "200",
                                          "--format", "raw", "-o", self.out, "--nonblocking"],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            time.sleep(1.0)  # let it attach
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            _, err = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        if not os.path.exists(self.out):
            print(f"  (py-spy wrote no profile: {err.strip()[-500:]})")
            return
        print(f"  py-spy profile of the broker: {self.out}")
        for line in summarize_collapsed(self.out, self.ctx.args.profile_top):
            print("    " + line)


def summarize_collapsed(path: str, top: int) -> list[str]:
    """Self and inclusive sample shares of the hottest frames in a py-spy raw profile."""
    self_n: collections.Counter[str] = collections.Counter()
    incl_n: collections.Counter[str] = collections.Counter()
    total = 0
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            try:
                n = int(count)
            except ValueError:
                continue
            frames = [re.sub(r" \((?:/[^)]*/)?([^/)]+):\d+\)$", r" (\1)", fr) for fr in stack.split(";")[1:]]
            if not frames:
                continue
            total += n
            self_n[frames[-1]] += n
            for fr in set(frames):
                incl_n[fr] += n
    if not total:
        return ["(no samples)"]
    out = [f"{total} samples; self time:"]
    out += [f"  {n / total:6.1%}  {fr}" for fr, n in self_n.most_common(top)]
    out.append("inclusive time:")
    out += [f"  {n / total:6.1%}  {fr}" for fr, n in incl_n.most_common(top)]
    return out


# ---------------------------------------------------------------- sections


class Ctx:
    def __init__(self, args: argparse.Namespace, broker: BrokerProcess, table: Table, scratch: str) -> None:
        self.args, self.broker, self.table, self.scratch = args, broker, table, scratch
        self.results: dict[str, Any] = {}
        self.w1_topic: str | None = None
        self.w1_max_rps: float | None = None
        self.client_topic: str | None = None
        self._admin: Any = None

    def admin(self) -> Any:
        if self._admin is None:
            from confluent_kafka.admin import AdminClient
            self._admin = AdminClient(client_conf(self))
        return self._admin


SECTIONS: dict[str, Callable[[Ctx], dict[str, Any]]] = {}


def section(name: str) -> Callable[[Callable[[Ctx], dict[str, Any]]], Callable[[Ctx], dict[str, Any]]]:
    def register(fn: Callable[[Ctx], dict[str, Any]]) -> Callable[[Ctx], dict[str, Any]]:
        SECTIONS[name] = fn
        return fn
    return register


@section("w1")
def section_w1(ctx: Ctx) -> dict[str, Any]:
    n = ctx.args.records
    print(f"== W1 produce: {n:,} x {VALUE_SIZE}-byte records, 1 partition, linger.ms=5, batch.size=65536,"
          f" median of {ctx.args.repeats}")
    out: dict[str, Any] = {}
    with Profiler(ctx, "w1"):
        # The modes alternate within each repeat, so a noisy moment hits all of them alike.
        # (acks, enable.idempotence, max.in.flight): librdkafka keeps one request per partition in
        # flight for an idempotent producer once a batch holds 5 records or more (see the module
        # docstring), so "acks=all, 1 in flight" is the baseline that isolates the broker's
        # sequence checks; "acks=all" (1,000,000 in flight) shows what that limit costs.
        modes = (("1", False, None), ("all", False, None), ("all", False, 1), ("all", True, None))
        runs: dict[tuple[str, bool, int | None], list[dict[str, Any]]] = {m: [] for m in modes}

        def mode_name(acks: str, idem: bool, inflight: int | None) -> str:
            return (f"acks={acks}" + (" idempotent" if idem else "")
                    + (f" {inflight} in flight" if inflight is not None else ""))

        for r in range(ctx.args.repeats):
            for acks, idem, inflight in modes:
                name = mode_name(acks, idem, inflight)
                topic = f"w1-acks{acks}{'-idem' if idem else ''}{f'-if{inflight}' if inflight else ''}-{r}"
                create_topic(ctx, topic)
                with CpuMeter(ctx.broker.pid) as m:
                    dt, loop_dt = produce_records(ctx, topic, n, acks, idem, inflight)
                hwm = high_watermark(ctx, topic)
                if hwm != n:
                    raise RuntimeError(f"{topic}: high watermark {hwm}, expected {n}")
                rps = n / dt
                runs[(acks, idem, inflight)].append({"records_per_s": rps, "seconds": dt,
                                                     "produce_loop_seconds": loop_dt, **m.as_dict()})
                print(f"  {name:<28} run {r + 1}: {rps:>12,.0f} records/s  {rps * VALUE_SIZE / MB:7.1f} MB/s"
                      f"  (last produce() returned after {loop_dt / dt:.0%} of it; {m.describe()})")
                if acks == "1":
                    ctx.w1_topic = topic
        for (acks, idem, inflight), mode_runs in runs.items():
            name = mode_name(acks, idem, inflight)
            med = statistics.median(x["records_per_s"] for x in mode_runs)
            key = f"acks_{acks}" + ("_idempotent" if idem else "") + (f"_inflight_{inflight}" if inflight else "")
            out[key] = {"runs": mode_runs, "median_records_per_s": med}
            ctx.table.add("W1 produce", f"{name} records/s", med, "rec/s", "w1_rps" if acks == "1" else None,
                          [x["records_per_s"] for x in mode_runs])
            if not idem and inflight is None:
                ctx.table.add("W1 produce", f"{name} payload MB/s", med * VALUE_SIZE / MB, "MB/s", fmt="{:,.1f}")
            if acks == "1":
                ctx.w1_max_rps = med
        plain = out["acks_all"]["median_records_per_s"]
        capped = out["acks_all_inflight_1"]["median_records_per_s"]
        idem_rps = out["acks_all_idempotent"]["median_records_per_s"]
        print(f"  librdkafka idempotent vs acks=all 1 in flight: {idem_rps / capped - 1:+.1%} records/s;"
              f" vs acks=all: {idem_rps / plain - 1:+.1%} (one request per partition in flight, each"
              " answered after an fsync, and librdkafka's broker thread polling without sleeping meanwhile)")
        # What bounds W1: the load generator alone, and the broker alone.
        ceil = [produce_loop_ceiling(n) for _ in range(ctx.args.repeats)]
        print("  load generator alone (the same produce() loop, broker unreachable): "
              + ", ".join(f"{x:,.0f}" for x in ceil) + " calls/s")
        out["client_ceiling"] = {"runs": ceil, "median_calls_per_s": statistics.median(ceil)}
        ctx.table.add("W1 produce", "client alone: produce() calls/s, no broker", statistics.median(ceil), "rec/s",
                      runs=ceil)
        # The broker alone, and its sequence checks alone: the same raw batches with acks=all,
        # plain and idempotent, at the same depth.
        depth = ctx.args.raw_produce_depth
        raw_modes = (("1", False), ("all", False), ("all", True))
        raw: dict[tuple[str, bool], list[dict[str, Any]]] = {m: [] for m in raw_modes}
        for r in range(ctx.args.repeats):
            # The acks=all pair swaps places every repeat, so that neither always runs second:
            # the later of two runs pays for the writeback of the data written before it.
            for acks, idem in raw_modes if r % 2 == 0 else (raw_modes[0], raw_modes[2], raw_modes[1]):
                topic = f"w1-raw-acks{acks}{'-idem' if idem else ''}-{r}"
                create_topic(ctx, topic)
                with CpuMeter(ctx.broker.pid) as m:
                    dt, count = raw_produce(ctx, topic, n, depth, -1 if acks == "all" else 1, idem)
                raw[(acks, idem)].append({"records_per_s": count / dt, "records": count, **m.as_dict()})
                print(f"  raw socket acks={acks}{' idempotent' if idem else ''} run {r + 1}: {count / dt:>12,.0f}"
                      f" records/s (Produce v7, ~64 KiB batches, {depth} in flight; {m.describe()})")
        raw_med = {}
        for (acks, idem), mode_runs in raw.items():
            med = statistics.median(x["records_per_s"] for x in mode_runs)
            raw_med[(acks, idem)] = med
            key = "raw_socket" + ("" if acks == "1" else f"_acks_{acks}") + ("_idempotent" if idem else "")
            out[key] = {"runs": mode_runs, "median_records_per_s": med, "depth": depth}
            ctx.table.add("W1 produce", f"raw socket acks={acks}{' idempotent' if idem else ''}, {depth} in flight,"
                          " records/s", med, "rec/s", runs=[x["records_per_s"] for x in mode_runs])
        cost = 1 - raw_med[("all", True)] / raw_med[("all", False)]
        # The rate follows the fsync latency, which a shared machine makes noisy; the broker's CPU
        # per record does not.
        cpu_us = {m: statistics.median(1e6 * x["broker_cpu_s"] / x["records"] for x in raw[m]) for m in raw}
        cpu_cost = cpu_us[("all", True)] / cpu_us[("all", False)] - 1
        split = {m: [statistics.median(1e6 * x[f"broker_{k}_s"] / x["records"] for x in raw[m]) for k in ("user", "sys")]
                 for m in raw}
        print(f"  the broker's sequence checks: raw socket acks=all idempotent vs acks=all, {depth} in flight:"
              f" {-cost:+.1%} records/s (target: > -5%); broker CPU per record {cpu_us[('all', True)]:.3f} vs"
              f" {cpu_us[('all', False)]:.3f} µs ({cpu_cost:+.1%}; user {split[('all', True)][0]:.3f} vs"
              f" {split[('all', False)][0]:.3f}, system {split[('all', True)][1]:.3f} vs {split[('all', False)][1]:.3f})")
        out["idempotence_cost"] = cost
        out["idempotence_cpu_cost"] = cpu_cost
        ctx.table.add("W1 produce", f"idempotence check cost, raw socket acks=all, {depth} in flight", 100 * cost,
                      "%", "idempotence_cost_pct", fmt="{:,.1f}")
        ctx.table.add("W1 produce", "idempotence check cost, broker CPU per record", 100 * cpu_cost, "%", fmt="{:,.1f}")
    return out


def log_batches(ctx: Ctx, topic: str) -> int:
    """Record batches in partition 0 of ``topic`` on disk: one per Produce request from a
    client writing one partition (a request carries one batch per partition)."""
    import mmap
    log_dir = os.path.join(ctx.broker.data_dir, f"{topic}-0")
    count = 0
    for name in sorted(f for f in os.listdir(log_dir) if f.endswith(".log")):
        with open(os.path.join(log_dir, name), "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if not size:
                continue
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                count += sum(1 for _ in iter_batch_headers(mm, 0, size))
    return count


@section("w1b")
def section_w1b(ctx: Ctx) -> dict[str, Any]:
    """W1 with Kafka's classic producer settings: ``linger.ms=0``, ``batch.size=16384``, acks=1.
    Batches then fill only while earlier requests are in flight, so the request rate, not the
    record rate, is what the broker pays for."""
    n = ctx.args.records
    print(f"== W1b produce: {n:,} x {VALUE_SIZE}-byte records, 1 partition, acks=1, linger.ms=0, batch.size=16384,"
          f" median of {ctx.args.repeats}; requests = record batches in the log")
    runs: list[dict[str, Any]] = []
    with Profiler(ctx, "w1b"):
        for r in range(ctx.args.repeats):
            topic = f"w1b-{r}"
            create_topic(ctx, topic)
            with CpuMeter(ctx.broker.pid) as m:
                dt, loop_dt = produce_records(ctx, topic, n, "1", linger_ms=0, batch_size=16384)
            hwm = high_watermark(ctx, topic)
            if hwm != n:
                raise RuntimeError(f"{topic}: high watermark {hwm}, expected {n}")
            reqs = log_batches(ctx, topic)
            rps = n / dt
            runs.append({"records_per_s": rps, "seconds": dt, "produce_loop_seconds": loop_dt, "requests": reqs,
                         "broker_us_per_record": 1e6 * m.broker / n, "broker_us_per_request": 1e6 * m.broker / reqs,
                         **m.as_dict()})
            print(f"  run {r + 1}: {rps:>12,.0f} records/s  {reqs:,} requests of {n / reqs:,.0f} records on average;"
                  f" broker CPU {1e6 * m.broker / n:.3f} µs per record, {1e6 * m.broker / reqs:.1f} µs per request"
                  f" ({m.describe()})")
    out: dict[str, Any] = {"runs": runs}
    for key, what, unit, target, fmt in (
            ("records_per_s", "acks=1 linger.ms=0 batch.size=16384 records/s", "rec/s", "w1b_rps", "{:,.0f}"),
            ("broker_us_per_record", "broker CPU per record", "us", None, "{:,.3f}"),
            ("broker_us_per_request", "broker CPU per Produce request", "us", None, "{:,.1f}"),
            ("requests", "Produce requests per run", "req", None, "{:,.0f}")):
        med = statistics.median(x[key] for x in runs)
        out[f"median_{key}"] = med
        ctx.table.add("W1b produce", what, med, unit, target, [x[key] for x in runs], fmt=fmt)
    return out


def ensure_data(ctx: Ctx) -> str:
    """W1's acks=1 topic, or a topic with N records produced now (untimed)."""
    if ctx.w1_topic is None:
        topic = "w2-data"
        create_topic(ctx, topic)
        print(f"  (no W1 in this run: producing {ctx.args.records:,} records into {topic} first, untimed)")
        produce_records(ctx, topic, ctx.args.records, "1")
        ctx.w1_topic = topic
    return ctx.w1_topic


def consume_run(ctx: Ctx, topic: str, n: int, run: int) -> dict[str, Any]:
    """One W2 run: a confluent-kafka Consumer reads ``n`` records of ``topic`` from offset 0."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    fetch_bytes = ctx.args.consumer_fetch_bytes
    c = Consumer(client_conf(ctx, **{
        "group.id": f"bench-w2-{run}", "enable.auto.commit": False, "enable.auto.offset.store": False,
        "fetch.max.bytes": fetch_bytes, "max.partition.fetch.bytes": fetch_bytes,
        "receive.message.max.bytes": fetch_bytes + MiB,
        "queued.max.messages.kbytes": 4 * fetch_bytes // 1024,
        # librdkafka's default (1000 ms) parks the fetcher for a second whenever its
        # queue holds more than queued.min.messages (100,000) records, i.e. after every
        # 16 MiB fetch: ~150,000 records/s whatever the broker does.
        "fetch.queue.backoff.ms": ctx.args.consumer_backoff_ms,
    }))
    c.list_topics(topic, timeout=10)
    got = 0
    errors = 0
    first = 0.0
    consume = c.consume
    with CpuMeter(ctx.broker.pid) as m:
        c.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 300
        while got < n:
            msgs = consume(10000, 1.0)
            if msgs and not got:
                first = time.perf_counter() - m.t0
            bad = sum(1 for msg in msgs if msg.error() is not None)
            errors += bad
            got += len(msgs) - bad
            if time.monotonic() > deadline:
                break
    c.close()
    if got < n or errors:
        raise KafkaException(f"W2 consumed {got} of {n} records, {errors} errors")
    rps = n / m.wall
    return {"records_per_s": rps, "first_record_s": first, "steady_records_per_s": n / (m.wall - first),
            "describe": m.describe(), **m.as_dict()}


@section("w2")
def section_w2(ctx: Ctx) -> dict[str, Any]:
    topic = ensure_data(ctx)
    n = high_watermark(ctx, topic)
    fetch_bytes = ctx.args.consumer_fetch_bytes
    print(f"== W2 consume: {n:,} records of {topic} from offset 0, fetch.max.bytes ="
          f" max.partition.fetch.bytes = {fetch_bytes // MiB} MiB, consume(10000), median of {ctx.args.repeats}")
    runs = []
    with Profiler(ctx, "w2"):
        for r in range(ctx.args.repeats):
            res = consume_run(ctx, topic, n, r)
            runs.append(res)
            print(f"  run {r + 1}: {res['records_per_s']:>12,.0f} records/s  (first records after"
                  f" {res['first_record_s'] * 1000:.0f} ms, {res['steady_records_per_s']:,.0f}/s after that;"
                  f" {res.pop('describe')})")
    med = statistics.median(x["records_per_s"] for x in runs)
    ctx.table.add("W2 consume", "records/s", med, "rec/s", "w2_rps", [x["records_per_s"] for x in runs])
    ctx.table.add("W2 consume", "records/s after the first records arrived",
                  statistics.median(x["steady_records_per_s"] for x in runs), "rec/s",
                  runs=[x["steady_records_per_s"] for x in runs])
    return {"records": n, "runs": runs, "median_records_per_s": med}


@section("metrics")
def section_metrics(ctx: Ctx) -> dict[str, Any]:
    """W1 (acks=1) and W2 against two brokers in the same run, one with the metrics listener
    on (scraped every ``--scrape-interval`` s during the runs, as Prometheus would), one with it
    off (the bench's own broker), alternating run by run so drift in the machine's load hits
    both alike. Then the on-broker's counters are checked against what was produced."""
    n = ctx.args.records
    interval = ctx.args.scrape_interval
    print(f"== metrics on vs off: W1 acks=1 and W2, {n:,} records per run, {ctx.args.repeats} runs each,"
          f" alternating brokers; the metrics broker is scraped every {interval} s during its runs")
    on_broker = start_broker(os.path.join(ctx.scratch, "metrics-on"), metrics=True)
    on = Ctx(ctx.args, on_broker, ctx.table, ctx.scratch)
    out: dict[str, Any] = {"off": {"w1": [], "w2": []}, "on": {"w1": [], "w2": []}, "scrapes": 0}
    produced = 0
    try:
        for r in range(ctx.args.repeats):
            for label, c in (("off", ctx), ("on", on)) if r % 2 == 0 else (("on", on), ("off", ctx)):
                topic = f"metrics-{label}-{r}"
                create_topic(c, topic)
                stop = threading.Event()
                scrapes: list[int] = []

                def scraper() -> None:
                    while not stop.wait(interval):
                        on_broker.scrape()
                        scrapes.append(1)
                th = threading.Thread(target=scraper, daemon=True)
                if label == "on":
                    th.start()
                with CpuMeter(c.broker.pid) as m:
                    dt, _ = produce_records(c, topic, n, "1")
                w2 = consume_run(c, topic, n, r)
                stop.set()
                if label == "on":
                    th.join(10)
                    produced += n
                    out["scrapes"] += len(scrapes)
                w1 = {"records_per_s": n / dt, **m.as_dict()}
                out[label]["w1"].append(w1)
                out[label]["w2"].append(w2)
                print(f"  run {r + 1} metrics {label:<3}: W1 {n / dt:>12,.0f} records/s ({m.describe()});"
                      f" W2 {w2['records_per_s']:>12,.0f} records/s ({w2.pop('describe')})")
        s = parse_metrics(on_broker.scrape())
        msgs_in = sum(v for (name, _), v in s.items() if name == "minibroker_messages_in_total")
        msgs_out = sum(v for (name, _), v in s.items() if name == "minibroker_messages_out_total")
        out["metrics_broker_counters"] = {"messages_in": msgs_in, "messages_out": msgs_out, "produced": produced}
        print(f"  metrics broker counters: messages in {msgs_in:,.0f}, messages out {msgs_out:,.0f}"
              f" (produced and consumed: {produced:,}); {out['scrapes']} scrapes during the runs")
        if msgs_in != produced or msgs_out != produced:
            raise RuntimeError("the metrics broker's counters do not match what was produced and consumed")
    finally:
        rc = on_broker.stop(60)
        if rc != 0:
            print("  metrics broker exit status", rc, "".join(on_broker.output[-20:]))
    for w in ("w1", "w2"):
        off_med = statistics.median(x["records_per_s"] for x in out["off"][w])
        on_med = statistics.median(x["records_per_s"] for x in out["on"][w])
        out[f"{w}_ratio_on_off"] = on_med / off_med
        what = "W1 acks=1 produce" if w == "w1" else "W2 consume"
        ctx.table.add("metrics on/off", f"{what} records/s, metrics off", off_med, "rec/s",
                      runs=[x["records_per_s"] for x in out["off"][w]])
        ctx.table.add("metrics on/off", f"{what} records/s, metrics on", on_med, "rec/s",
                      runs=[x["records_per_s"] for x in out["on"][w]])
        ctx.table.add("metrics on/off", f"{what}: on / off", on_med / off_med, "x", fmt="{:,.3f}")
        for label in ("off", "on"):
            runs = out[label][w]
            cpu = statistics.median(x["broker_cpu_s"] / n * 1e6 for x in runs)
            ctx.table.add("metrics on/off", f"{what}: broker CPU per record, metrics {label}", cpu, "us",
                          fmt="{:,.3f}")
    return out


class BatchWalker:
    """Finds the next fetch offset in a Fetch reply's records ``buf[start:end]`` as its bytes
    arrive: walks whole batch headers (size and lastOffsetDelta only; records are never read)
    and stops at the end or at a partial trailing batch."""

    __slots__ = ("buf", "pos", "end", "next_offset", "done", "batches")

    def __init__(self, buf: bytearray, start: int, end: int) -> None:
        self.buf, self.pos, self.end = buf, start, end
        self.next_offset = -1
        self.done = False
        self.batches = 0

    def advance(self, received: int) -> bool:
        """Walk the headers within the first ``received`` bytes; True once the last whole batch
        is known."""
        buf, pos, end = self.buf, self.pos, self.end
        unpack = struct.unpack_from
        while True:
            if end - pos < RECORDS_OFFSET:  # the end, or a tail too short to be a whole batch
                self.done = True
                break
            if received < pos + LAST_OFFSET_DELTA_OFFSET + 4:
                break
            base, length = unpack(">qi", buf, pos)
            size = length + LOG_OVERHEAD
            if size < RECORDS_OFFSET:
                raise RuntimeError(f"corrupt batch length {length} at {pos}")
            if pos + size > end:  # partial trailing batch: clients skip it
                self.done = True
                break
            self.next_offset = base + unpack(">i", buf, pos + LAST_OFFSET_DELTA_OFFSET)[0] + 1
            self.batches += 1
            pos += size
        self.pos = pos
        return self.done


_FETCH_PART = struct.Struct(">ihqqqi")  # partition, error, hwm, lso, log start, aborted count


def _uvarint(buf: bytearray, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


class RawFetcher:
    def __init__(self, port: int, topic: str, max_bytes: int, version: int = 11,
                 topic_id: Any = None) -> None:
        self.version = version
        self.flexible = version >= 12
        self.topic_id = topic_id  # v13+
        self.sock = connect(port)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 * MiB)
        self.topic = topic
        self.max_bytes = max_bytes
        self.buf = bytearray(max_bytes + MiB)
        self.view = memoryview(self.buf)
        self.cid = 0
        self.hwm = -1

    def request(self, offset: int) -> bytes:
        self.cid += 1
        return encode_request(ApiKey.FETCH, self.version, self.cid, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": self.max_bytes,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": self.topic, "topic_id": self.topic_id, "partitions": [{
                "partition": 0, "current_leader_epoch": -1, "fetch_offset": offset,
                "log_start_offset": -1, "partition_max_bytes": self.max_bytes}]}],
            "forgotten_topics_data": [], "rack_id": ""})

    def _records_range(self) -> tuple[int, int]:
        """Parse the reply header in ``buf`` (one topic, one partition): where its records
        start and how many bytes they take. Raises on any error code."""
        buf = self.buf
        if self.flexible:
            return self._flexible_records_range()
        pos = 4 + 4 + 4  # size, correlation id, throttle_time_ms
        error, _session, ntopics = struct.unpack_from(">hii", buf, pos)
        pos += 10
        tlen = struct.unpack_from(">h", buf, pos)[0]
        pos += 2 + tlen + 4  # topic, n_partitions
        _part, perr, hwm, _lso, _start, aborted = _FETCH_PART.unpack_from(buf, pos)
        pos += _FETCH_PART.size
        if error or perr or ntopics != 1:
            raise RuntimeError(f"fetch error {error}/{perr}")
        if aborted > 0:
            pos += 16 * aborted
        _preferred, rsize = struct.unpack_from(">ii", buf, pos)
        self.hwm = hwm
        return pos + 8, rsize

    def _flexible_records_range(self) -> tuple[int, int]:
        """v12+: compact (varint) lengths, a tag buffer after the correlation id, the topic id
        instead of its name from v13."""
        buf = self.buf
        pos = 4 + 4 + 1 + 4  # size, correlation id, header tags, throttle_time_ms
        error, _session = struct.unpack_from(">hi", buf, pos)
        ntopics, pos = _uvarint(buf, pos + 6)
        if self.version >= 13:
            pos += 16
        else:
            tlen, pos = _uvarint(buf, pos)
            pos += tlen - 1
        _nparts, pos = _uvarint(buf, pos)
        _part, perr, hwm, _lso, _start = struct.unpack_from(">ihqqq", buf, pos)
        pos += 30
        if error or perr or ntopics != 2:
            raise RuntimeError(f"fetch error {error}/{perr}")
        aborted, pos = _uvarint(buf, pos)
        pos += 17 * max(0, aborted - 1)
        pos += 4  # preferred_read_replica
        rsize, pos = _uvarint(buf, pos)
        self.hwm = hwm
        return pos, rsize - 1

    def _recv_some(self, got: int, size: int) -> int:
        k = self.sock.recv_into(self.view[got:size], size - got)
        if k == 0:
            raise ConnectionError("broker closed the connection")
        return got + k

    def _recv_size(self) -> int:
        recv_exact(self.sock, self.view, 4)
        size = struct.unpack_from(">i", self.buf, 0)[0] + 4
        if size > len(self.buf):
            raise RuntimeError(f"fetch reply of {size} bytes exceeds the buffer")
        return size

    def read_reply_early(self, end_offset: int) -> tuple[int, int, bool]:
        """Receive one reply, walking its batch headers as they arrive, and send the next
        request as soon as the last whole batch is known. Returns (reply bytes incl. the size
        field, next offset, whether the next request was sent)."""
        size = self._recv_size()
        got = 4
        head = (4 + 14 + 4 + 2 + len(self.topic.encode()) + 4 + _FETCH_PART.size + 8 if not self.flexible
                else 4 + 4 + 1 + 10 + 1 + 16 + 1 + 30 + 1 + 4 + 5)  # v13+ (v12: at most the name)
        while got < head:
            got = self._recv_some(got, size)
        start, rsize = self._records_range()
        while got < start:  # aborted transactions (never here) push the records further
            got = self._recv_some(got, size)
        walker = BatchWalker(self.buf, start, start + rsize)
        sent = walker.advance(got) and 0 <= walker.next_offset < end_offset
        if sent:
            self.sock.sendall(self.request(walker.next_offset))
        while got < size:
            got = self._recv_some(got, size)
            if not sent and walker.advance(got) and 0 <= walker.next_offset < end_offset:
                self.sock.sendall(self.request(walker.next_offset))
                sent = True
        walker.advance(got)
        if walker.next_offset < 0:
            raise RuntimeError("fetch reply without a whole batch")
        return size, walker.next_offset, sent

    def read_reply_serial(self) -> tuple[int, int, bool]:
        """Receive the whole reply, then take the next offset from its last whole batch
        (iter_batch_headers)."""
        size = self._recv_size()
        recv_exact(self.sock, self.view[4:], size - 4)
        start, rsize = self._records_range()
        last = None
        for last in iter_batch_headers(self.buf, start, start + rsize):
            pass
        if last is None:
            raise RuntimeError("fetch reply without a whole batch")
        return size, last.next_offset, False

    def read_partition(self, end_offset: int, early: bool) -> tuple[int, int]:
        """Fetch offsets [0, end_offset) once; returns (reply bytes, replies)."""
        total = replies = 0
        offset = 0
        self.sock.sendall(self.request(offset))
        while True:
            if early:
                size, offset, sent = self.read_reply_early(end_offset)
            else:
                size, offset, sent = self.read_reply_serial()
            total += size
            replies += 1
            if offset >= end_offset:
                return total, replies
            if not sent:
                self.sock.sendall(self.request(offset))

    def close(self) -> None:
        self.sock.close()


_CEILING_CHILD = r'''
import os, socket, struct, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
fd = os.open(sys.argv[1], os.O_RDONLY)
while True:
    req = b""
    while len(req) < 16:
        chunk = c.recv(16 - len(req))
        if not chunk:
            sys.exit(0)
        req += chunk
    off, n = struct.unpack(">qq", req)
    while n > 0:
        k = os.sendfile(c.fileno(), fd, off, n)
        off += k
        n -= k
'''


def sendfile_ceiling(log_path: str, chunk: int, target_bytes: float) -> tuple[float, float]:
    """The same transfer without the broker: a child process answers 16-byte requests with a
    blocking os.sendfile of ``chunk`` bytes of ``log_path``; this process receives them as the
    raw fetch client does. Returns (GB/s, the child's CPU share of one core)."""
    size = os.path.getsize(log_path)
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(1)
    child = subprocess.Popen([sys.executable, "-c", _CEILING_CHILD, log_path, str(lst.getsockname()[1])])
    sock, _ = lst.accept()
    lst.close()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 * MiB)
    buf = bytearray(chunk)
    view = memoryview(buf)

    def one_pass() -> int:
        off = 0
        while off < size:
            n = min(chunk, size - off)
            sock.sendall(struct.pack(">qq", off, n))
            recv_exact(sock, view, n)
            off += n
        return size

    one_pass()
    total = 0
    c0 = proc_cpu_s(child.pid)
    t0 = time.perf_counter()
    while total < target_bytes:
        total += one_pass()
    wall = time.perf_counter() - t0
    cpu = proc_cpu_s(child.pid) - c0
    sock.close()
    child.wait(10)
    return total / wall / GB, cpu / wall


def fetch_topic_id(ctx: Ctx, topic: str) -> Any:
    """The topic's id (Metadata v12), for Fetch v13+."""
    sock = connect(ctx.broker.port)
    try:
        sock.sendall(encode_request(ApiKey.METADATA, 12, 1, {"topics": [{"name": topic}],
                                                               "allow_auto_topic_creation": False}))
        head = bytearray(4)
        recv_exact(sock, memoryview(head), 4)
        body = bytearray(struct.unpack(">i", head)[0])
        recv_exact(sock, memoryview(body), len(body))
        r = Reader(body)
        r.int32()
        r.tagged_fields()
        return RESPONSES[ApiKey.METADATA].decode(r, 12)["topics"][0]["topic_id"]
    finally:
        sock.close()


@section("fetch")
def section_fetch(ctx: Ctx) -> dict[str, Any]:
    topic = ensure_data(ctx)
    end = high_watermark(ctx, topic)
    max_bytes = ctx.args.fetch_max_bytes
    target_bytes = ctx.args.fetch_gb * GB
    repeats = ctx.args.fetch_repeats
    version = ctx.args.fetch_version
    topic_id = fetch_topic_id(ctx, topic) if version >= 13 else None
    print(f"== raw fetch: Fetch v{version}, max_bytes = partition_max_bytes = {max_bytes // MiB} MiB, {end:,} records of"
          f" {topic}, >= {ctx.args.fetch_gb:g} GB per run, median of {repeats}")
    out: dict[str, Any] = {}
    with Profiler(ctx, "fetch"):
        for mode in ("serial", "early"):
            runs = []
            for r in range(repeats):
                f = RawFetcher(ctx.broker.port, topic, max_bytes, version, topic_id)
                f.read_partition(end, mode == "early")  # warm-up pass: page cache, connection
                total = replies = passes = 0
                with CpuMeter(ctx.broker.pid) as m:
                    while total < target_bytes:
                        b, k = f.read_partition(end, mode == "early")
                        total += b
                        replies += k
                        passes += 1
                f.close()
                gbps = total / m.wall / GB
                runs.append({"gb_per_s": gbps, "bytes": total, "replies": replies, "passes": passes, **m.as_dict()})
                print(f"  {mode:<6} run {r + 1}: {gbps:6.2f} GB/s  ({total / GB:.2f} GB in {replies} replies of"
                      f" ~{total / replies / MiB:.1f} MiB; {m.describe()})")
            med = statistics.median(x["gb_per_s"] for x in runs)
            out[mode] = {"runs": runs, "median_gb_per_s": med}
            ctx.table.add("raw fetch", f"{mode} GB/s", med, "GB/s", "fetch_gbps", [x["gb_per_s"] for x in runs],
                          fmt="{:,.2f}")
    log_dir = os.path.join(ctx.broker.data_dir, f"{topic}-0")
    logs = sorted(f for f in os.listdir(log_dir) if f.endswith(".log"))
    ceil = [sendfile_ceiling(os.path.join(log_dir, logs[0]), max_bytes, ctx.args.fetch_gb * GB) for _ in range(repeats)]
    print("  without the broker (blocking os.sendfile of the same .log in a bare child process, same reader): "
          + ", ".join(f"{g:.2f} GB/s (child CPU {c:.0%})" for g, c in ceil))
    out["sendfile_ceiling"] = {"runs": [{"gb_per_s": g, "child_cpu": c} for g, c in ceil]}
    ctx.table.add("raw fetch", "bare sendfile loop, no broker, GB/s", statistics.median(g for g, _ in ceil), "GB/s",
                  runs=[g for g, _ in ceil], fmt="{:,.2f}")
    return out


def percentiles(samples: list[float]) -> dict[str, float]:
    s = sorted(samples)
    n = len(s)

    def q(p: float) -> float:
        return s[min(n - 1, int(p * n))]

    return {"p50": q(0.50), "p99": q(0.99), "p99.9": q(0.999), "max": s[-1], "n": n}


def latency_confluent(ctx: Ctx, topic: str, rate: float, seconds: float, **conf: Any) -> dict[str, float]:
    """librdkafka at ``rate`` records/s; every ``--latency-sample``-th record carries a delivery
    callback and is timed (a Python callback per record would cost the load generator ~2 us
    per record at these rates); the others are acknowledged the same way, unobserved. The
    high watermark checks at the end that every record arrived."""
    from confluent_kafka import Producer
    total = int(rate * seconds)
    warm = int(rate * 1.0)
    step = ctx.args.latency_sample
    sent = [0.0] * total
    lat: list[float] = []
    errors: list[Any] = []
    clock = time.perf_counter
    unpack = struct.Struct(">Q").unpack_from

    def on_delivery(err: Any, msg: Any) -> None:
        i = unpack(msg.value())[0]
        if err is not None:
            errors.append(err)
        elif i >= warm:
            lat.append(clock() - sent[i])

    p = Producer(client_conf(ctx, **{"acks": "1", "linger.ms": 0,
                                     "queue.buffering.max.messages": total + 1000, **conf}))
    p.list_topics(topic, timeout=10)
    pad = b"v" * (VALUE_SIZE - 8)
    pack = struct.Struct(">Q").pack
    produce, poll = p.produce, p.poll
    i = 0
    gc_was_enabled = gc.isenabled()
    gc.disable()  # no collector pauses in the timed loop (as timeit)
    try:
        t0 = clock()
        while i < total:
            due = min(total, int((clock() - t0) * rate) + 1)
            while i < due:
                v = pack(i) + pad
                sent[i] = clock()
                if i % step:
                    produce(topic, v, partition=0)
                else:
                    produce(topic, v, partition=0, on_delivery=on_delivery)
                i += 1
            poll(0.001)
        left = p.flush(60)
        elapsed = clock() - t0
    finally:
        if gc_was_enabled:
            gc.enable()
    if errors or left:
        raise RuntimeError(f"{left} records undelivered, {len(errors)} delivery errors {errors[:1]}")
    hwm = high_watermark(ctx, topic)
    if hwm != total:
        raise RuntimeError(f"{topic}: high watermark {hwm}, expected {total}")
    res = {k: v * 1000 if k != "n" else v for k, v in percentiles(lat).items()}
    res["achieved_rate"] = total / elapsed
    return res


def latency_raw(ctx: Ctx, topic: str, rate: float, seconds: float) -> dict[str, float]:
    """The same 1 ms schedule over a raw socket: one Produce v7 (acks=1) per tick with the
    records due; the reader matches replies by correlation id (requests are pipelined)."""
    sock = connect(ctx.broker.port)
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ)
    value = b"v" * VALUE_SIZE
    templates: dict[int, bytearray] = {}

    def request(count: int, cid: int) -> bytearray:
        t = templates.get(count)
        if t is None:
            batch = build_batch([(None, value)] * count)
            t = templates[count] = bytearray(encode_request(ApiKey.PRODUCE, 7, 0, {
                "transactional_id": None, "acks": 1, "timeout_ms": 30000,
                "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}))
        struct.pack_into(">i", t, 8, cid)  # size(4) api_key(2) api_version(2) correlation_id
        return t

    decoder = FrameDecoder()
    inflight: dict[int, tuple[float, int, bool]] = {}  # cid -> (send time, records, after warm-up)
    lat: list[float] = []
    weights: list[int] = []
    clock = time.perf_counter
    total = int(rate * seconds)
    i = cid = 0
    gc_was_enabled = gc.isenabled()
    gc.disable()
    t0 = clock()

    def pump(timeout: float) -> None:
        for _key, _ev in sel.select(timeout):
            data = sock.recv(1 << 20)  # readable: does not block
            if not data:
                raise ConnectionError("broker closed the connection")
            now = clock()
            decoder.feed(data)
            while (frame := decoder.next_frame()) is not None:
                rcid, = struct.unpack_from(">i", frame, 0)
                ts, count, keep = inflight.pop(rcid)
                err = struct.unpack_from(">h", frame, 4 + 4 + 2 + len(topic) + 4 + 4)[0]
                if err:
                    raise RuntimeError(f"produce error {err}")
                if keep:
                    lat.append(now - ts)
                    weights.append(count)

    while i < total or inflight:
        if i < total:
            due = min(total, int((clock() - t0) * rate) + 1)
            if due > i:
                cid += 1
                req = request(due - i, cid)
                inflight[cid] = (clock(), due - i, i >= rate)
                sock.sendall(req)
                i = due
        pump(0.001 if i < total else 1.0)
    elapsed = clock() - t0
    if gc_was_enabled:
        gc.enable()
    sock.close()
    samples = [x for x, w in zip(lat, weights) for _ in range(w)]
    res = {k: v * 1000 if k != "n" else v for k, v in percentiles(samples).items()}
    res["requests"] = cid
    res["achieved_rate"] = total / elapsed
    return res


@section("latency")
def section_latency(ctx: Ctx) -> dict[str, Any]:
    if ctx.args.latency_rate:
        rate, why = float(ctx.args.latency_rate), "--latency-rate"
    else:
        if ctx.w1_max_rps is None:
            # One short run scatters (1.09M to 1.55M records/s seen here), and the target rate is
            # 20% of it: the median of three, each on a new topic.
            print("== (no W1 in this run: measuring the W1 acks=1 maximum first, 200,000 records, median of 3)")
            maxima = []
            for r in range(3):
                topic = f"latency-max-{r}"
                create_topic(ctx, topic)
                maxima.append(200_000 / produce_records(ctx, topic, 200_000, "1")[0])
            print(f"   runs: {', '.join(f'{x:,.0f}' for x in maxima)} records/s")
            ctx.w1_max_rps = statistics.median(maxima)
        rate, why = 0.2 * ctx.w1_max_rps, f"20% of W1 acks=1 max {ctx.w1_max_rps:,.0f}"
    seconds = ctx.args.latency_seconds
    print(f"== produce ack latency: acks=1, one record per produce(), linger.ms=0, {rate:,.0f} records/s ({why}),"
          f" {seconds:g} s per run (first 1 s dropped), median of {ctx.args.repeats}")
    print("   (librdkafka latency = delivery callback - produce(): includes librdkafka's queueing and the"
          " 1 ms poll tick)")
    out: dict[str, Any] = {"rate": rate}
    variants: list[tuple[str, Callable[..., dict[str, float]], dict[str, Any], bool]] = [
        ("librdkafka", latency_confluent, {}, True),
        # librdkafka leaves Nagle on by default (socket.nagle.disable=false; the Java client
        # sets TCP_NODELAY): a small request waits for the ACK of the previous one.
        ("librdkafka nagle off", latency_confluent, {"socket.nagle.disable": True}, True),
        ("raw socket", latency_raw, {}, False),
    ]
    with Profiler(ctx, "latency"):
        for kind, fn, conf, targeted in variants:
            runs = []
            for r in range(ctx.args.repeats):
                topic = f"latency-{kind.replace(' ', '-')}-{r}"
                create_topic(ctx, topic)
                with CpuMeter(ctx.broker.pid) as m:
                    res = fn(ctx, topic, rate, seconds, **conf)
                runs.append({**res, **m.as_dict()})
                print(f"  {kind:<20} run {r + 1}: p50 {res['p50']:.3f} ms  p99 {res['p99']:.3f} ms  p99.9"
                      f" {res['p99.9']:.3f} ms  max {res['max']:.1f} ms  ({res['achieved_rate']:,.0f} rec/s;"
                      f" {m.describe()})")
            out[kind] = {"runs": runs}
            for q in ("p50", "p99", "p99.9"):
                med = statistics.median(x[q] for x in runs)
                out[kind][f"median_{q}_ms"] = med
                ctx.table.add("produce latency", f"{kind} {q} @ {rate:,.0f} rec/s", med, "ms",
                              "latency_p99_ms" if (q == "p99" and targeted) else None,
                              [x[q] for x in runs], fmt="{:,.3f}")
    return out


@section("startup")
def section_startup(ctx: Ctx) -> dict[str, Any]:
    runs_n = ctx.args.startup_runs
    print(f"== startup: {runs_n} broker processes on empty data dirs; spawn -> listening line -> first"
          " ApiVersions reply; VmRSS after start and after 2 s idle")
    runs = []
    for r in range(runs_n):
        d = tempfile.mkdtemp(prefix="startup-", dir=ctx.scratch)
        t0 = time.perf_counter()
        proc = subprocess.Popen(broker_command(d), cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, bufsize=1)
        assert proc.stderr is not None
        port = -1
        lines = []
        for line in proc.stderr:
            lines.append(line)
            m = _LISTENING.search(line)
            if m:
                port = int(m.group(2))
                break
        t_listen = time.perf_counter() - t0
        if port < 0:
            proc.kill()
            raise RuntimeError("broker did not start:\n" + "".join(lines))
        drain = threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True)  # type: ignore[union-attr]
        drain.start()
        s = connect(port)
        api_versions_roundtrip(s)
        t_api = time.perf_counter() - t0
        rss0 = proc_status_kb(proc.pid, "VmRSS")
        time.sleep(2.0)
        rss2 = proc_status_kb(proc.pid, "VmRSS")
        anon2 = proc_status_kb(proc.pid, "RssAnon")
        s.close()
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(30)
        drain.join(5)
        if rc != 0:
            raise RuntimeError(f"startup broker exited with {rc}")
        runs.append({"listening_s": t_listen, "api_versions_s": t_api, "rss_mb": rss0 / 1024,
                     "rss_idle_mb": rss2 / 1024, "rss_anon_idle_mb": anon2 / 1024})
        print(f"  run {r + 1}: listening after {t_listen:.3f} s, ApiVersions after {t_api:.3f} s,"
              f" VmRSS {rss0 / 1024:.1f} MB, after 2 s idle {rss2 / 1024:.1f} MB (anon {anon2 / 1024:.1f} MB)")
        shutil.rmtree(d, ignore_errors=True)
    out: dict[str, Any] = {"runs": runs}
    for key, what, target, unit, fmt in (
            ("listening_s", "spawn -> listening", "start_s", "s", "{:,.3f}"),
            ("api_versions_s", "spawn -> first ApiVersions reply", "start_s", "s", "{:,.3f}"),
            ("rss_mb", "VmRSS after start", "rss_mb", "MB", "{:,.1f}"),
            ("rss_idle_mb", "VmRSS after 2 s idle", "rss_mb", "MB", "{:,.1f}")):
        med = statistics.median(x[key] for x in runs)
        out[f"median_{key}"] = med
        ctx.table.add("startup", what, med, unit, target, [x[key] for x in runs], fmt=fmt)
    return out


@section("requests")
def section_requests_(ctx: Ctx) -> dict[str, Any]:
    with Profiler(ctx, "requests"):
        return section_requests(ctx, CpuMeter)


@section("txn")
def section_txn_(ctx: Ctx) -> dict[str, Any]:
    with Profiler(ctx, "txn"):
        return section_txn(ctx, lambda: CpuMeter(ctx.broker.pid), create_topic, produce_records)


@section("client-produce")
def section_client_produce_(ctx: Ctx) -> dict[str, Any]:
    return section_client_produce(ctx, lambda: CpuMeter(ctx.broker.pid))


@section("client-consume")
def section_client_consume_(ctx: Ctx) -> dict[str, Any]:
    return section_client_consume(ctx, lambda: CpuMeter(ctx.broker.pid))


@section("client-idioms")
def section_client_idioms_(ctx: Ctx) -> dict[str, Any]:
    return section_client_idioms(ctx, lambda: CpuMeter(ctx.broker.pid))


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default=",".join(SECTIONS),
                    help=f"comma-separated sections: {', '.join(SECTIONS)} (default: all)")
    ap.add_argument("--quick", action="store_true", help="200,000 records, 1 GB fetched and 5 s of latency per run")
    ap.add_argument("--records", type=int, help="records per W1 run (default 2,000,000; --quick 200,000)")
    ap.add_argument("--txn-records", type=int,
                    help="records per txn run, each mode (default 100,000; --quick 20,000)")
    ap.add_argument("--client-records", type=int,
                    help="records per client-produce run (default 1,000,000; --quick 200,000)")
    ap.add_argument("--idiom-awaited", type=int, default=2000,
                    help="records per awaited-send idiom run in client-idioms (default 2,000; --quick 500)")
    ap.add_argument("--idioms", help="client-idioms: comma-separated idiom numbers to run (0-7; default all)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per figure; medians are reported (default 3)")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    ap.add_argument("--dir", help="parent of the scratch data directory (default: the repository)")
    ap.add_argument("--depth", default="1,16",
                    help="requests: comma-separated numbers of requests in flight (default 1,16)")
    ap.add_argument("--request-seconds", type=float, default=0.8,
                    help="requests: seconds per run of each API and depth (default 0.8)")
    ap.add_argument("--same-core", action="store_true",
                    help="requests: pin the broker and the load generator to one CPU (a round trip then"
                         " takes turns on one core instead of waking the other core)")
    ap.add_argument("--consumer-fetch-bytes", type=int, default=16 * MiB,
                    help="W2 fetch.max.bytes and max.partition.fetch.bytes (default 16 MiB)")
    ap.add_argument("--raw-produce-depth", type=int, default=4,
                    help="Produce requests in flight for W1's raw-socket broker ceiling (default 4)")
    ap.add_argument("--consumer-backoff-ms", type=int, default=1,
                    help="W2 fetch.queue.backoff.ms (default 1; librdkafka's own default of 1000 caps W2 near"
                         " 150,000 records/s)")
    ap.add_argument("--fetch-max-bytes", type=int, default=32 * MiB, help="raw fetch max_bytes (default 32 MiB)")
    ap.add_argument("--fetch-version", type=int, default=11, choices=range(4, 18), metavar="4-17",
                    help="raw fetch request version (default 11; 12+ flexible, 13+ by topic id)")
    ap.add_argument("--fetch-repeats", type=int, default=5, help="runs per raw fetch figure (default 5)")
    ap.add_argument("--fetch-gb", type=float, help="GB read per raw fetch run (default 4; --quick 1)")
    ap.add_argument("--latency-rate", type=float, help="records/s for the latency section (default 20%% of W1 max)")
    ap.add_argument("--latency-sample", type=int, default=10,
                    help="time every N-th librdkafka record (default 10; 1 = every record)")
    ap.add_argument("--latency-seconds", type=float, help="seconds per latency run (default 10; --quick 5)")
    ap.add_argument("--startup-runs", type=int, default=5, help="broker starts timed (default 5)")
    ap.add_argument("--scrape-interval", type=float, default=1.0,
                    help="seconds between scrapes of the metrics broker in the metrics section (default 1)")
    ap.add_argument("--profile-broker", metavar="DIR",
                    help="py-spy record the broker during each workload section into DIR (skews the figures)")
    ap.add_argument("--profile-top", type=int, default=20, help="frames listed per profile summary")
    args = ap.parse_args(argv)
    if args.records is None:
        args.records = 200_000 if args.quick else 2_000_000
    if args.txn_records is None:
        args.txn_records = 20_000 if args.quick else 100_000
    if args.client_records is None:
        args.client_records = 200_000 if args.quick else 1_000_000
    if args.quick and args.idiom_awaited == 2000:
        args.idiom_awaited = 500
    if args.fetch_gb is None:
        args.fetch_gb = 1.0 if args.quick else 4.0
    if args.latency_seconds is None:
        args.latency_seconds = 5.0 if args.quick else 10.0
    chosen = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in SECTIONS]
    if unknown:
        ap.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    if args.latency_seconds <= 1.0:
        ap.error("--latency-seconds must be above 1 (the first second is warm-up)")

    import confluent_kafka
    cmd = command_line()
    print("# bench: minibroker broker benchmark (a real broker process over loopback)")
    print(f"# command: {cmd}")
    print(f"# {machine_line()}")
    print(f"# confluent-kafka {confluent_kafka.version()[0]}, librdkafka {confluent_kafka.libversion()[0]};"
          f" load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at start")
    parent = args.dir or REPO
    os.makedirs(parent, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix=".bench-broker-", dir=parent)
    print(f"# scratch dir {scratch} ({fs_type(scratch)})")
    table = Table()
    results: dict[str, Any] = {"command": cmd, "machine": machine_line(), "args": vars(args), "sections": {}}
    broker = start_broker(os.path.join(scratch, "data"))
    print(f"# broker pid {broker.pid} on {broker.bootstrap}")
    print()
    ctx = Ctx(args, broker, table, scratch)
    rc = None
    try:
        for name in chosen:
            seen = len(broker.output)
            results["sections"][name] = SECTIONS[name](ctx)
            complaints = [ln.rstrip() for ln in broker.output[seen:] if " WARNING " in ln or " ERROR " in ln]
            if complaints:
                print(f"  broker log during {name}: {len(complaints)} warnings/errors, first ones:")
                for ln in complaints[:10]:
                    print("    " + ln[:300])
            results["sections"][name]["broker_warnings"] = complaints[:100]
            print()
        rss = proc_status_kb(broker.pid, "VmRSS") / 1024
        anon = proc_status_kb(broker.pid, "RssAnon") / 1024
        results["broker_rss_after_mb"] = {"VmRSS": rss, "RssAnon": anon}
        table.add("startup", "VmRSS of the bench broker after the run", rss, "MB", fmt="{:,.1f}")
        table.add("startup", "  of which anonymous (RssAnon)", anon, "MB", fmt="{:,.1f}")
    finally:
        if ctx._admin is not None:
            ctx._admin = None
        rc = broker.stop(60)
        shutil.rmtree(scratch, ignore_errors=True)
    results["broker_exit_status"] = rc
    print(f"broker stopped with SIGTERM: exit status {rc}"
          + ("" if rc == 0 else "  <-- expected 0\n" + "".join(broker.output[-30:])))
    print()
    table.print()
    results["rows"] = table.json_rows()
    missed = [r for r in table.rows if r.get("status") == "MISSED"]
    print()
    print(f"# load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end")
    print(f"# targets: {sum(r.get('status') == 'MET' for r in table.rows)} MET, {len(missed)} MISSED")
    print(f"# reproduce: {cmd}")
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
        print(f"# JSON written to {args.json}")
    return 0 if rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
