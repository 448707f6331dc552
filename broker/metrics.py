"""Prometheus metrics of one broker, exposed on the opt-in HTTP listener (``metrics.listeners``).

Off by default: then ``BrokerState.metrics`` is None and nothing below runs (the handlers and
the request hook test one attribute for None).

How values are kept, and why: the per-request and per-batch counters (messages and bytes per
topic, requests per API and version, errors) are plain ints in ``__slots__`` objects and dicts,
updated on the event loop thread, and turned into text only when scraped (``Snapshot.render``).
A ``prometheus_client.Counter`` child costs
~0.35 us per ``inc`` (it takes a lock, as it allows any thread) against ~0.04 us for an int
field; the produce path would pay that 3 times per partition. Request latency is counted the
same way, per API: a ``bisect`` into the bucket bounds and two additions (~0.2 us against ~0.7 us
for ``Histogram.observe``), exposed as a histogram with cumulative buckets at scrape time. With metrics on, a small produce request costs the broker a few microseconds more
(scripts/bench_testing.py measures it); a 64 KiB batch, nothing measurable. Everything the broker already knows (log sizes, segment
counts, offsets, connections) is read at scrape time, so it costs nothing between scrapes.

Exposed (kafka_exporter's names where it has one, so existing dashboards work)::

    kafka_brokers                                   1
    kafka_topic_partitions{topic}                   partition count
    kafka_topic_partition_current_offset{topic,partition}   high watermark (= log end offset)
    kafka_topic_partition_oldest_offset{topic,partition}    log start offset
    kafka_topic_partition_leader{topic,partition}   this node's id
    kafka_topic_partition_replicas / _in_sync_replica{topic,partition}   1
    kafka_topic_partition_under_replicated_partition{topic,partition}   0
    kafka_consumergroup_current_offset{consumergroup,topic,partition}   committed offset
    kafka_consumergroup_lag{consumergroup,topic,partition}   high watermark - committed (-1: none)
    kafka_consumergroup_current_offset_sum / _lag_sum{consumergroup,topic}   over its partitions
                                           (every group, also those left out of the two above)
    kafka_consumergroup_members{consumergroup}
    minibroker_consumergroup_partition_series_dropped   committed partitions left out of the
                                           per-partition families by the bound (below)
    minibroker_messages_in_total{topic}    records appended by Produce
    minibroker_bytes_in_total{topic}       record-batch bytes appended by Produce
    minibroker_messages_out_total{topic}   records in the whole batches Fetch replies carried
                                           (a batch sent again, e.g. to a consumer that re-reads
                                           or starts mid-batch, counts again; a partial trailing
                                           batch, which clients drop, does not count)
    minibroker_bytes_out_total{topic}      record bytes Fetch replies carried (partial tail included)
    minibroker_requests_total{api,version}
    minibroker_request_errors_total{api,version,error}   per error code in responses (per partition
                                           for partitioned APIs, as Kafka's ErrorsPerSec)
    minibroker_request_duration_seconds{api}   histogram: request decoded -> response ready
                                           (includes acks=all fsync waits and Fetch long polls)
    kafka_server_socket_server_metrics_successful_authentication_total{listener}   and
        ..._failed_authentication_total, _successful_reauthentication_total,
        _failed_reauthentication_total, _successful_authentication_no_reauth_total: Kafka's
        authentication counters (TLS handshakes on SSL listeners, SASL logins)
    kafka_server_fetchsessioncache_numincrementalfetchsessions   fetch sessions in the cache
    kafka_server_fetchsessioncache_numincrementalfetchpartitionscached   their partitions
    kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total   sessions evicted
        for new ones (Kafka's FetchSessionCache metrics, named as the JMX exporter names them)
    minibroker_connections                 open client connections
    minibroker_connections_accepted_total
    minibroker_log_size_bytes{topic,partition}
    minibroker_log_segments{topic,partition}
    minibroker_build_info{version,python,event_loop,codec,record_future}   1: what this broker
                                           runs (broker.build_info; codec and record_future are
                                           "c" or "python", the fallback), as Prometheus' own
                                           prometheus_build_info
    process_* (prometheus_client's process collector: CPU, RSS, open fds)

The consumer-group families are filled by ``group_offsets`` / ``group_members``, callables the
group coordinator sets (``None`` without one): they return (group, {(topic, partition): committed
offset with an ``offset`` attribute}) pairs, the live mappings, and {group: member count}.

A scrape never holds the event loop for longer than a short copy, whatever the number of
partitions and committed offsets (``scrape()``):

1. on the loop, a ``Snapshot``: the counters' dicts copied, one tuple of plain ints per partition
   log, and each group's offsets mapping copied with ``dict()`` (a C-level copy, ~35 ns an
   entry), yielding to the loop after every ``SNAPSHOT_SLICE`` entries copied, so other
   requests are served in between; each group's copy is consistent, the groups are not
   (Prometheus samples are not either);
2. in a worker thread of its own (one at a time; scrapes that arrive meanwhile share its
   result): the text written from the snapshot alone, line by line as plain strings (11x
   faster than prometheus_client's metric families for 200,000 series, and without the objects
   per sample whose allocation sets off the garbage collector's full collections, which hold
   every thread, the event loop's too, for as long as they take over a large heap).

Bounded output: kafka_consumergroup_current_offset and kafka_consumergroup_lag have a series
per committed (group, topic, partition), which a few groups with thousands of partitions each
turn into millions of lines. At most ``metrics.group.partition.series.max`` (``series_max``)
committed partitions are exported one by one, whole groups at a time, in group name order: a
group whose committed partitions no longer fit in what is left of the bound is exported only
through the ``_sum`` families (which every group has, as kafka_exporter's), and the next groups
are tried. ``minibroker_consumergroup_partition_series_dropped`` counts the committed partitions
left out (each one series less in both per-partition families).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import struct
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from prometheus_client import ProcessCollector
from prometheus_client.registry import Collector

from client.protocol.api import ApiKey, error_name

from .build_info import detect

__all__ = ["BrokerMetrics", "Snapshot", "TopicStats", "count_errors", "SERIES_MAX"]

#: Request latency buckets (seconds): 100 us to 30 s; Fetch long polls land in the top ones.
LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                   1.0, 2.5, 5.0, 10.0, 30.0)

# RecordBatch header fields read to count the records of a batch in a fetched slice:
# baseOffset int64 | batchLength int32 at 8 | ... | recordsCount int32 at 57 (61-byte header).
_BATCH_LENGTH = struct.Struct(">qi")
_RECORDS_COUNT = struct.Struct(">i")
_HEADER = 61

#: ``metrics.group.partition.series.max``'s default: committed partitions exported one by one.
SERIES_MAX = 10_000
#: Committed offsets a snapshot copies between two yields to the event loop (~1 ms of copying).
SNAPSHOT_SLICE = 20_000


class _Latency:
    """One API's request-duration histogram: ``counts[i]`` requests took at most
    ``LATENCY_BUCKETS[i]`` seconds and more than the bound before (the last slot: more than
    every bound), ``total`` is their sum of seconds."""

    __slots__ = ("counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * (len(LATENCY_BUCKETS) + 1)
        self.total = 0.0


class TopicStats:
    __slots__ = ("messages_in", "bytes_in", "messages_out", "bytes_out")

    def __init__(self) -> None:
        self.messages_in = self.bytes_in = self.messages_out = self.bytes_out = 0


def _api_name(key: int) -> str:
    try:
        return ApiKey(key).name
    except ValueError:
        return str(key)


def _produce_errors(body: dict[str, Any], out: dict[int, int]) -> None:
    for t in body["responses"]:
        for p in t["partition_responses"]:
            code = p["error_code"]
            if code:
                out[code] = out.get(code, 0) + 1


def count_errors(body: Any, out: dict[int, int]) -> None:
    """Add every non-zero ``error_code`` found in a response body (dicts and lists) to ``out``."""
    if isinstance(body, dict):
        for k, v in body.items():
            if k == "error_code":
                if v:
                    out[v] = out.get(v, 0) + 1
            elif type(v) is list:
                for item in v:
                    if type(item) is dict:
                        count_errors(item, out)
    elif isinstance(body, list):
        for item in body:
            count_errors(item, out)


def records_in_slices(slices: Iterable[Any]) -> int:
    """Records in the whole batches of ``slices`` (FileSlice: fd, position, size), read from
    the batch headers with ``pread`` (61 bytes per batch; the records are never read)."""
    n = 0
    for s in slices:
        pos, end = s.position, s.position + s.size
        while end - pos >= _HEADER:
            head = os.pread(s.fd, _HEADER, pos)
            if len(head) < _HEADER:
                break
            length = _BATCH_LENGTH.unpack_from(head, 0)[1]
            if length <= 0 or pos + 12 + length > end:
                break
            n += _RECORDS_COUNT.unpack_from(head, 57)[0]
            pos += 12 + length
    return n


#: Kafka's authentication counters (its selector's metric names) and what they count
AUTHENTICATION_METRICS = {
    "successful-authentication-total": "Connections that authenticated (TLS handshake on an SSL listener, SASL login)",
    "failed-authentication-total": "Connections whose TLS handshake or SASL login failed",
    "successful-reauthentication-total": "SASL re-authentications that succeeded (KIP-368)",
    "failed-reauthentication-total": "SASL re-authentications that failed",
    "successful-authentication-no-reauth-total": "SASL logins by clients that cannot re-authenticate",
}


class BrokerMetrics:
    """The counters the broker updates, and the scrape that exposes them with its logs' and
    groups' gauges. ``logs`` is the LogManager; ``connections()`` returns (open, accepted
    total); ``series_max``: ``metrics.group.partition.series.max``."""

    def __init__(self, logs: Any, node_id: int, connections: Callable[[], tuple[int, int]],
                 series_max: int = SERIES_MAX) -> None:
        self.logs = logs
        self.node_id = node_id
        self.connections = connections
        self.series_max = series_max
        self.topics: dict[str, TopicStats] = {}
        self.requests: dict[tuple[int, int], int] = {}
        self.errors: dict[tuple[int, int, int], int] = {}
        self.group_offsets: Callable[[], Iterable[tuple[str, Mapping[tuple[str, int], _Committed]]]] | None = None
        self.group_members: Callable[[], Mapping[str, int]] | None = None
        #: the socket server's authentication counters, {(listener, Kafka's name): count}
        self.authentication: Callable[[], dict[tuple[str, str], int]] | None = None
        #: the fetch session cache's (sessions, partitions cached, evictions)
        self.fetch_sessions: Callable[[], tuple[int, int, int]] | None = None
        self.latency: dict[int, _Latency] = {}
        self._process = ProcessCollector(registry=None)
        #: broker.build_info's labels, detected once: constructed on the broker's event loop,
        #: so event_loop is the loop that serves
        self.build_info = detect().labels()
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._scraping: asyncio.Future[bytes] | None = None

    # ------------------------------------------------------------ updates (event loop thread)

    def topic(self, name: str) -> TopicStats:
        s = self.topics.get(name)
        if s is None:
            s = self.topics[name] = TopicStats()
        return s

    def produced(self, topic: str, records: int, nbytes: int) -> None:
        s = self.topics.get(topic) or self.topic(topic)
        s.messages_in += records
        s.bytes_in += nbytes

    def fetched(self, version: int, result: list[tuple[str, list[tuple[Any, ...]]]]) -> None:
        """One Fetch reply as the fetch handler built it: [(topic, [(partition, error, hw,
        log_start, slices)])]."""
        errors: dict[int, int] = {}
        for name, parts in result:
            s = self.topics.get(name) or self.topic(name)
            for p in parts:
                err, slices = p[1], p[4]
                if err:
                    errors[err] = errors.get(err, 0) + 1
                elif slices:
                    s.bytes_out += sum(x.size for x in slices)
                    s.messages_out += records_in_slices(slices)
        if errors:
            self._add_errors(ApiKey.FETCH, version, errors)

    def request_done(self, key: int, version: int, body: Any, seconds: float) -> None:
        """A request answered: count it, its errors (from a dict body) and its latency."""
        rk = (key, version)
        self.requests[rk] = self.requests.get(rk, 0) + 1
        if type(body) is dict:
            errors: dict[int, int] = {}
            if key == 0:  # Produce, the hot one: its shape is known
                _produce_errors(body, errors)
            else:
                count_errors(body, errors)
            if errors:
                self._add_errors(key, version, errors)
        h = self.latency.get(key)
        if h is None:
            h = self.latency[key] = _Latency()
        h.counts[bisect_left(LATENCY_BUCKETS, seconds)] += 1
        h.total += seconds

    def _add_errors(self, key: int, version: int, errors: dict[int, int]) -> None:
        for code, n in errors.items():
            ek = (key, version, code)
            self.errors[ek] = self.errors.get(ek, 0) + n

    # ------------------------------------------------------------ exposition (at scrape time)

    async def scrape(self) -> bytes:
        """The text format (``CONTENT_TYPE_LATEST``) of a snapshot taken now (on the event loop,
        in slices), rendered in the metrics thread. A scrape that arrives while one is being
        made gets that one's text. Call on the event loop thread."""
        if self._scraping is None:
            self._scraping = asyncio.ensure_future(self._scrape_once())
            self._scraping.add_done_callback(self._scrape_done)
        # shielded: a scrape whose connection is dropped must not cancel the others' result
        return await asyncio.shield(self._scraping)

    def _scrape_done(self, fut: asyncio.Future[bytes]) -> None:
        self._scraping = None
        if not fut.cancelled():
            fut.exception()  # retrieved: a failed scrape is reported to its waiters, not logged again

    async def _scrape_once(self) -> bytes:
        snap = await self.snapshot()
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="metrics")
        return await asyncio.get_running_loop().run_in_executor(self._executor, snap.render)

    def close(self) -> None:
        """Let the metrics thread end (a render under way finishes first)."""
        if self._executor is not None:
            self._executor.shutdown(wait=False)
            self._executor = None

    async def snapshot(self) -> Snapshot:
        """Everything a scrape exposes, copied on the event loop thread; yields to the loop
        after every ``SNAPSHOT_SLICE`` committed offsets copied."""
        snap = Snapshot(self.node_id, self.series_max, self._process)
        snap.build_info = self.build_info
        snap.topics = [(name, s.messages_in, s.bytes_in, s.messages_out, s.bytes_out)
                       for name, s in self.topics.items()]
        snap.requests = dict(self.requests)
        snap.errors = dict(self.errors)
        snap.latency = {key: (list(h.counts), h.total) for key, h in self.latency.items()}
        snap.connections = self.connections()
        snap.authentication = self.authentication() if self.authentication is not None else {}
        snap.fetch_sessions = self.fetch_sessions() if self.fetch_sessions is not None else (0, 0, 0)
        snap.logs = [(topic, partition, log.size, log.num_segments, log.high_watermark, log.log_start_offset)
                     for (topic, partition), log in self.logs.logs.items()]
        if self.group_offsets is None:
            return snap
        snap.members = dict(self.group_members()) if self.group_members is not None else None
        groups = snap.groups = []
        copied = 0
        for group, offsets in list(self.group_offsets()):
            groups.append((group, dict(offsets)))
            copied += len(offsets)
            if copied >= SNAPSHOT_SLICE:
                copied = 0
                await asyncio.sleep(0)
        return snap


class _Committed(Protocol):
    """A committed offset as the group coordinator keeps it (OffsetAndMetadata)."""

    @property
    def offset(self) -> int: ...


#: (topic, messages in, bytes in, messages out, bytes out)
TopicRow = tuple[str, int, int, int, int]
#: (topic, partition, size in bytes, segments, high watermark, log start offset)
LogRow = tuple[str, int, int, int, int, int]


class Snapshot:
    """One scrape's data, plain values and private copies only (``BrokerMetrics.snapshot``),
    so that ``render`` may run in any thread while the broker goes on. ``groups``: (group,
    {(topic, partition): committed}) per group, or None without a group coordinator;
    ``members``: {group: member count} or None."""

    def __init__(self, node_id: int, series_max: int, process: Collector) -> None:
        self.node_id = node_id
        self.series_max = series_max
        self.process = process
        self.topics: list[TopicRow] = []
        self.requests: dict[tuple[int, int], int] = {}
        self.errors: dict[tuple[int, int, int], int] = {}
        self.latency: dict[int, tuple[list[int], float]] = {}
        self.connections = (0, 0)
        self.authentication: dict[tuple[str, str], int] = {}
        self.fetch_sessions = (0, 0, 0)
        self.logs: list[LogRow] = []
        self.groups: list[tuple[str, dict[tuple[str, int], _Committed]]] | None = None
        self.members: dict[str, int] | None = None
        self.build_info: dict[str, str] = {}

    def render(self) -> bytes:
        """The text format (version 0.0.4): per family ``# HELP name text`` and ``# TYPE name
        kind`` lines, then a ``name{label="value",...} value`` line per series, label names in
        alphabetical order, values as Python float reprs (``3.0``); counters' names end in
        ``_total``. Written line by line as strings (no object per sample, which would also
        feed the garbage collector: its full collections of a large heap hold every thread),
        then the process collector's families through prometheus_client."""
        from prometheus_client import generate_latest
        out: list[str] = []
        self._topics(out)
        self._requests(out)
        self._authentication(out)
        self._logs(out)
        self._groups(out)
        self._build_info(out)
        return "".join(out).encode() + generate_latest(self.process)

    def _topics(self, out: list[str]) -> None:
        rows = sorted(self.topics)
        for i, (name, text) in enumerate((
                ("minibroker_messages_in_total", "Records appended by Produce"),
                ("minibroker_bytes_in_total", "Record-batch bytes appended by Produce"),
                ("minibroker_messages_out_total", "Records in the whole batches sent in Fetch replies"),
                ("minibroker_bytes_out_total", "Record bytes sent in Fetch replies")), 1):
            _family(out, name, "counter", text)
            out.extend(f'{name}{{topic="{row[0]}"}} {float(row[i])!r}\n' for row in rows)

    def _authentication(self, out: list[str]) -> None:
        """Kafka's socket-server authentication counters, named as the JMX exporter names them
        (``kafka_server_socket_server_metrics_<name>``), per listener."""
        for metric, text in AUTHENTICATION_METRICS.items():
            name = "kafka_server_socket_server_metrics_" + metric.replace("-", "_")
            _family(out, name, "counter", text)
            for (listener, m), n in sorted(self.authentication.items()):
                if m == metric:
                    out.append(f'{name}{{listener="{_label(listener)}"}} {float(n)!r}\n')

    def _requests(self, out: list[str]) -> None:
        name = "minibroker_requests_total"
        _family(out, name, "counter", "Requests answered, by API and version")
        for (key, version), n in sorted(self.requests.items()):
            out.append(f'{name}{{api="{_api_name(key)}",version="{version}"}} {float(n)!r}\n')
        name = "minibroker_request_errors_total"
        _family(out, name, "counter", "Error codes in responses (one per partition for partitioned APIs)")
        for (key, version, code), n in sorted(self.errors.items()):
            out.append(f'{name}{{api="{_api_name(key)}",error="{error_name(code)}",version="{version}"}} {float(n)!r}\n')
        name = "minibroker_request_duration_seconds"
        _family(out, name, "histogram", "Time from a request decoded to its response ready, by API")
        for key, (counts, seconds) in sorted(self.latency.items()):
            api, cumulative = _api_name(key), 0
            for le, n in zip(_LE, counts):
                cumulative += n
                out.append(f'{name}_bucket{{api="{api}",le="{le}"}} {float(cumulative)!r}\n')
            out.append(f'{name}_count{{api="{api}"}} {float(cumulative)!r}\n')
            out.append(f'{name}_sum{{api="{api}"}} {float(seconds)!r}\n')
        sessions, cached, evictions = self.fetch_sessions
        name = "kafka_server_fetchsessioncache_"
        _family(out, name + "numincrementalfetchsessions", "gauge", "Incremental fetch sessions in the cache")
        out.append(f"{name}numincrementalfetchsessions {float(sessions)!r}\n")
        _family(out, name + "numincrementalfetchpartitionscached", "gauge", "Partitions of the cached fetch sessions")
        out.append(f"{name}numincrementalfetchpartitionscached {float(cached)!r}\n")
        _family(out, name + "incrementalfetchsessionevictions_total", "counter",
                "Fetch sessions evicted for new ones")
        out.append(f"{name}incrementalfetchsessionevictions_total {float(evictions)!r}\n")
        open_, accepted = self.connections
        _family(out, "minibroker_connections", "gauge", "Open client connections")
        out.append(f"minibroker_connections {float(open_)!r}\n")
        _family(out, "minibroker_connections_accepted_total", "counter", "Client connections accepted")
        out.append(f"minibroker_connections_accepted_total {float(accepted)!r}\n")

    def _logs(self, out: list[str]) -> None:
        rows = sorted(self.logs)
        _family(out, "kafka_brokers", "gauge", "Number of Brokers in the Kafka Cluster.")
        out.append("kafka_brokers 1.0\n")
        per_topic: dict[str, int] = {}
        for row in rows:
            per_topic[row[0]] = per_topic.get(row[0], 0) + 1
        _family(out, "kafka_topic_partitions", "gauge", "Number of partitions for this Topic")
        out.extend(f'kafka_topic_partitions{{topic="{topic}"}} {float(n)!r}\n' for topic, n in per_topic.items())
        node = float(self.node_id)
        for name, text, column, constant in (
                ("kafka_topic_partition_current_offset", "Current Offset of a Broker at Topic/Partition", 4, 0.0),
                ("kafka_topic_partition_oldest_offset", "Oldest Offset of a Broker at Topic/Partition", 5, 0.0),
                ("kafka_topic_partition_leader", "Leader Broker ID of this Topic/Partition", -1, node),
                ("kafka_topic_partition_replicas", "Number of Replicas for this Topic/Partition", -1, 1.0),
                ("kafka_topic_partition_in_sync_replica", "Number of In-Sync Replicas for this Topic/Partition", -1, 1.0),
                ("kafka_topic_partition_under_replicated_partition", "1 if Topic/Partition is under Replicated", -1,
                 0.0),
                ("minibroker_log_size_bytes", "Bytes of a partition's segments (.log files)", 2, 0.0),
                ("minibroker_log_segments", "Segments of a partition", 3, 0.0)):
            _family(out, name, "gauge", text)
            if column < 0:
                out.extend(f'{name}{{partition="{row[1]}",topic="{row[0]}"}} {constant!r}\n' for row in rows)
            else:
                out.extend(f'{name}{{partition="{row[1]}",topic="{row[0]}"}} {float(row[column])!r}\n' for row in rows)

    def _build_info(self, out: list[str]) -> None:
        name = "minibroker_build_info"
        _family(out, name, "gauge", "Always 1; the labels say what this broker runs (version, Python, event loop,"
                " c or python for each fast path)")
        labels = ",".join(f'{k}="{_label(v)}"' for k, v in sorted(self.build_info.items()))
        out.append(f"{name}{{{labels}}} 1.0\n")

    def _groups(self, out: list[str]) -> None:
        if self.groups is None:
            return
        hw = {(topic, partition): h for topic, partition, _, _, h, _ in self.logs}
        cur: list[str] = []
        lag: list[str] = []
        sums: list[tuple[str, str, int, int]] = []  # (group label, topic, committed sum, lag sum)
        room, dropped = self.series_max, 0
        for group, offsets in sorted(self.groups, key=lambda g: g[0]):
            label = _label(group)
            each = len(offsets) <= room  # the whole group, one series per partition
            if each:
                room -= len(offsets)
            else:
                dropped += len(offsets)
            per_topic: dict[str, list[int]] = {}
            for (topic, partition), om in sorted(offsets.items()) if each else offsets.items():
                committed = om.offset
                high = hw.get((topic, partition))
                lag_value = -1 if (high is None or committed < 0) else max(0, high - committed)
                if each:
                    labels = f'{{consumergroup="{label}",partition="{partition}",topic="{topic}"}} '
                    cur.append(f"kafka_consumergroup_current_offset{labels}{float(committed)!r}\n")
                    lag.append(f"kafka_consumergroup_lag{labels}{float(lag_value)!r}\n")
                acc = per_topic.get(topic)
                if acc is None:
                    acc = per_topic[topic] = [0, 0]
                acc[0] += committed
                if lag_value >= 0:
                    acc[1] += lag_value
            sums.extend((label, topic, c, lg) for topic, (c, lg) in sorted(per_topic.items()))
        _family(out, "kafka_consumergroup_current_offset", "gauge", "Current Offset of a ConsumerGroup at Topic/Partition")
        out += cur
        _family(out, "kafka_consumergroup_lag", "gauge", "Current Approximate Lag of a ConsumerGroup at Topic/Partition")
        out += lag
        for name, text, i in (
                ("kafka_consumergroup_current_offset_sum", "Current Offset of a ConsumerGroup at Topic for all partitions",
                 2),
                ("kafka_consumergroup_lag_sum", "Current Approximate Lag of a ConsumerGroup at Topic for all partitions",
                 3)):
            _family(out, name, "gauge", text)
            out.extend(f'{name}{{consumergroup="{row[0]}",topic="{row[1]}"}} {float(row[i])!r}\n' for row in sums)
        name = "minibroker_consumergroup_partition_series_dropped"
        _family(out, name, "gauge", "Committed partitions of consumer groups left out of"
                " kafka_consumergroup_current_offset and kafka_consumergroup_lag"
                " (metrics.group.partition.series.max); their groups are in the _sum families")
        out.append(f"{name} {float(dropped)!r}\n")
        if self.members is not None:
            _family(out, "kafka_consumergroup_members", "gauge", "Amount of members in a consumer group")
            out.extend(f'kafka_consumergroup_members{{consumergroup="{_label(group)}"}} {float(n)!r}\n'
                       for group, n in sorted(self.members.items()))


#: the ``le`` label of each latency bucket, the last one +Inf
_LE = (*(repr(float(bound)) for bound in LATENCY_BUCKETS), "+Inf")


def _family(out: list[str], name: str, kind: str, text: str) -> None:
    out.append(f"# HELP {name} {text}\n# TYPE {name} {kind}\n")


def _label(value: str) -> str:
    """A label value as the text format quotes it: backslash, double quote and newline escaped
    (topic names cannot hold them; group ids can)."""
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return value
