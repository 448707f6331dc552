"""Broker: the LogManager, the server and the periodic storage work, started and stopped
together.

Periodic work, on the event loop unless it may block on the disk:
- retention (``log.retention.check.interval.ms``, 5 min) and removal of ``.deleted`` files once
  their ``file.delete.delay.ms`` has passed (checked every second, unlinked in a worker thread:
  freeing a segment's blocks takes the filesystem a while);
- flush: each second, logs whose ``flush.ms`` has elapsed, and logs whose recovery point is
  below the active segment (Kafka flushes a rolled segment asynchronously) are flushed in a
  worker thread; ``flush.messages`` triggers the same from the append path;
- checkpoints (``log.flush.offset.checkpoint.interval.ms``, 1 min; 0: only at shutdown), in a
  worker thread;
- log compaction (``log.cleaner.enable``): the cleaner's threads (storage/cleaner/) clean
  compacted topics off the event loop, each in a worker process of its own by default
  (``log.cleaner.mode``); the one step that changes a live log, the segment swap, is handed to
  the event loop (``_run_on_loop``), where reads and appends run.

Shutdown (SIGTERM/SIGINT): stop accepting, let in-flight requests finish, flush every log,
close the segments (trims), write the checkpoints, then the clean-shutdown marker.

Opt-in operator endpoints (off by default; broker/http_listener.py): ``metrics.listeners``
serves ``GET /metrics`` (Prometheus, broker/metrics.py) and ``GET /healthz``;
``fault.injection.listener`` serves ``/faults`` (broker/testing/faults.py) and ``/healthz``.
``schema.registry.listeners`` serves the schema registry (broker/schema_registry/), which loads
``_schemas`` before it listens.
``/healthz`` answers 200 once everything in ``pending`` is loaded (the logs, and whatever else
registers there at start-up, e.g. internal topics), 503 with the list before.

Request hook: with metrics on, or fault rules pending, the server hands every request to
``_hook`` instead of straight to its handler; with neither, ``server.request_hook`` is None and
the request path is exactly as without these features.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from time import perf_counter
from typing import TYPE_CHECKING, Any

from client.clock import now_ms
from client.protocol.api import ApiKey

from .config import BrokerConfig
from .dynamic_config import DynamicBrokerConfig, with_new_stores
from .http_listener import HttpListener, Response
from .request_context import RequestContext
from .security.listener_security import ListenerSecurity
from .security.scram_credentials import ScramSeed, apply_seeds
from .socket_server import BrokerServer, Connection, RequestHook, handle_request
from .state import BrokerState
from .storage.cleaner import CleanerConfig, LogCleaner
from .storage.log import Log
from .storage.log_manager import LogManager, prepare_log_dir
from .storage.segment import LogSegment

__all__ = ["Broker"]

if TYPE_CHECKING:
    from .metrics import BrokerMetrics
    from .schema_registry import SchemaRegistry
    from .testing.faults import FaultInjector

logger = logging.getLogger("broker")

#: APIs whose newer versions name topics by id (KIP-516): (first such version, the list of
#: topics, the name key the fault rules match), for the fault injector's hook
_BY_TOPIC_ID: dict[int, tuple[int, str, str]] = {
    ApiKey.FETCH: (13, "topics", "topic"), ApiKey.PRODUCE: (13, "topic_data", "name"),
    ApiKey.OFFSET_COMMIT: (10, "topics", "name"),
}


class Broker:
    """``faults``: a FaultInjector to consult (in-process test brokers pass one); one is made
    when ``fault.injection.listener`` is set."""

    def __init__(self, config: BrokerConfig, faults: FaultInjector | None = None, *,
                 scram_seeds: Sequence[ScramSeed] = ()) -> None:
        self.config = config
        #: SCRAM credentials stored at start-up, before the listener opens (``serve --add-scram``)
        self.scram_seeds = list(scram_seeds)
        self.logs: LogManager | None = None
        self.state: BrokerState | None = None
        self.server: BrokerServer | None = None
        self.metrics: BrokerMetrics | None = None
        self.faults = faults
        self.http: list[HttpListener] = []
        self.schema_registry: SchemaRegistry | None = None
        #: what /healthz waits for: names added before start-up work, removed when it is done
        self.pending: set[str] = {"logs"}
        self._periodic: list[asyncio.Task[None]] = []
        self._flushing: set[int] = set()
        self.cleaner: LogCleaner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.port

    async def start(self) -> None:
        t0 = time.perf_counter()
        cfg = self.config
        prepare_log_dir(cfg.log_dir)  # a bad data directory: one LogDirError before anything reads it
        dynamic = DynamicBrokerConfig(cfg, cfg.log_dir)  # broker configs altered at run time
        self.logs = LogManager(cfg.log_dir, dynamic.log_config(), node_id=cfg.node_id,
                               flush_scheduler=self._schedule_flush,
                               producer_id_expiration_ms=cfg.int("producer.id.expiration.ms"))
        self.logs.startup()
        self.pending.discard("logs")
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        cleaner_config = CleanerConfig.from_properties(cfg.props)
        if cleaner_config.enable_cleaner and cleaner_config.num_threads > 0:
            logs = self.logs
            self.cleaner = logs.cleaner = LogCleaner(cleaner_config, logs.log_dir, lambda: logs.logs,
                                                     run_swap=self._run_on_loop)
            self.cleaner.start()
        self.state = BrokerState(cfg, self.logs, dynamic)
        if self.scram_seeds:  # replaces a user's credential for that mechanism, as kafka-storage format does
            apply_seeds(self.state.scram_credentials, self.scram_seeds)
            logger.info("stored the SCRAM credentials of %s", ", ".join(sorted({f"{s.user} ({s.mechanism})"
                                                                               for s in self.scram_seeds})))
        props = dynamic.effective_props()  # a keystore set at run time (AlterConfigs) outlives a restart
        listeners = [ListenerSecurity(props, e, self.state.scram_credentials) for e in cfg.endpoints]
        self.server = BrokerServer(self.state, listeners)
        self._apply_connection_limits(props)
        dynamic.on_keystore_change = self._reload_keystores
        dynamic.on_change = self._apply_connection_limits
        await self.server.start()
        for name, e in self.state.advertised.items():  # port 0: the port each listener was given
            if e.port == 0:
                self.state.advertised[name] = e._replace(port=self.server.ports[name])
        self.state.host, self.state.port = self.state.advertised_endpoint(listeners[0].name)
        await self._start_operator_endpoints()
        registry_at = cfg.schema_registry_listener
        if registry_at is not None:
            from .schema_registry import SchemaRegistry
            basic = cfg.get("schema.registry.authentication").strip().lower() == "basic"
            self.schema_registry = SchemaRegistry(self.state, *registry_at,
                                                  credentials=self.state.scram_credentials if basic else None)
            await self.schema_registry.start()
        self._start_groups()
        self._periodic = [
            asyncio.ensure_future(self._every(cfg.int("log.retention.check.interval.ms") / 1000, self._retention)),
            asyncio.ensure_future(self._every(1.0, self._housekeeping)),
            asyncio.ensure_future(self._every(cfg.int("producer.id.expiration.check.interval.ms") / 1000,
                                              self._expire_producers)),
            asyncio.ensure_future(self._every(cfg.int("offsets.retention.check.interval.ms") / 1000,
                                              self.state.groups.expire_offsets)),
            asyncio.ensure_future(self._every(
                cfg.int("transaction.abort.timed.out.transaction.cleanup.interval.ms") / 1000,
                self.state.txn.abort_timed_out)),
            asyncio.ensure_future(self._every(
                cfg.int("transaction.remove.expired.transaction.cleanup.interval.ms") / 1000,
                self.state.txn.expire_transactional_ids)),
        ]
        if self.state.quotas.connections.hosts():
            self._periodic.append(asyncio.ensure_future(self._resolve_quota_hosts()))
        checkpoint_ms = cfg.int("log.flush.offset.checkpoint.interval.ms")
        if checkpoint_ms > 0:  # 0: no periodic checkpoint (Kafka's scheduler runs a period-0 task once)
            self._periodic.append(asyncio.ensure_future(self._every(checkpoint_ms / 1000, self._checkpoint)))
        logger.info("minibroker listening on %s (advertised %s), data in %s, %d partitions, started in %.3f s",
                    ", ".join(f"{ls.name}://{ls.endpoint.host}:{self.server.ports[ls.name]}" for ls in listeners),
                    ", ".join(str(e) for e in self.state.advertised.values()), self.logs.log_dir,
                    len(self.logs.logs), time.perf_counter() - t0)

    def _reload_keystores(self, props: Mapping[str, str]) -> None:
        """A new key or trust store (AlterConfigs): new connections of each TLS listener use it;
        those already open keep the one they were accepted with. The listener's other TLS
        settings stay as they are (a dynamic ssl.client.auth applies at the next start, as in Kafka)."""
        assert self.server is not None
        for ls in self.server.listeners.values():
            if ls.endpoint.tls:
                ls.reload_ssl(with_new_stores(ls.props, props))
                logger.info("listener %s: new TLS key and trust stores loaded for new connections", ls.name)

    def _apply_connection_limits(self, props: Mapping[str, str]) -> None:
        """max.connections and max.connections.per.ip, static or dynamic (Kafka's SocketServer
        reconfigures both at run time); connections already open stay."""
        assert self.server is not None
        limits = (int(props["max.connections"]), int(props["max.connections.per.ip"]))
        if limits != (self.server.max_connections, self.server.max_connections_per_ip):
            self.server.max_connections, self.server.max_connections_per_ip = limits
            logger.info("connection limits: max.connections %d, max.connections.per.ip %d", *limits)

    async def _start_operator_endpoints(self) -> None:
        cfg, server = self.config, self.server
        assert server is not None and self.state is not None and self.logs is not None
        routes: dict[str, Any] = {"/healthz": self._healthz}
        metrics_at = cfg.metrics_listener
        if metrics_at is not None:
            from .metrics import BrokerMetrics
            self.metrics = self.state.metrics = BrokerMetrics(
                self.logs, cfg.node_id, lambda: (len(server.connections), server.accepted),
                cfg.int("metrics.group.partition.series.max"))
            self.metrics.authentication = lambda: dict(server.auth_stats)
            sessions = self.state.fetch_sessions
            self.metrics.fetch_sessions = lambda: (len(sessions), sessions.partitions_cached, sessions.evictions)
            self.http.append(HttpListener(
                "metrics", *metrics_at, {**routes, "/metrics": self._metrics_route},
                max_connections=cfg.int("metrics.connections.max"),
                idle_timeout=cfg.int("metrics.connections.max.idle.ms") / 1000,
                request_timeout=cfg.int("metrics.request.timeout.ms") / 1000))
        faults_at = cfg.fault_injection_listener
        if faults_at is not None and self.faults is None:
            from .testing.faults import FaultInjector
            self.faults = FaultInjector()
        if faults_at is not None and self.faults is not None:
            self.http.append(HttpListener("fault injection", *faults_at, {**routes, "/faults": self.faults.http_route}))
        for listener in self.http:
            await listener.start()
        if self.faults is not None:
            self.faults.on_change = self._install_hook
        self._install_hook(self.faults is not None and self.faults.armed)

    def _start_groups(self) -> None:
        """Load ``__consumer_offsets``, ``__transaction_state`` and ``__share_group_state`` in the
        background; /healthz says "loading: groups" / "transactions" / "share state" until each is
        done."""
        assert self.state is not None
        groups = self.state.groups
        if self.metrics is not None:
            self.metrics.group_offsets = groups.group_offsets
            self.metrics.group_members = groups.group_members
        groups.start_loading()
        if groups.load_task is not None:
            self.pending.add("groups")
            groups.load_task.add_done_callback(lambda _: self.pending.discard("groups"))
        txn_load = self.state.txn.start_loading()
        if txn_load is not None:
            self.pending.add("transactions")
            txn_load.add_done_callback(lambda _: self.pending.discard("transactions"))
        share_load = self.state.share_state.start_loading()
        if share_load is not None:
            self.pending.add("share state")
            share_load.add_done_callback(lambda _: self.pending.discard("share state"))

    def _healthz(self, method: str, body: bytes) -> Response:
        if self.pending:
            return 503, "text/plain", ("loading: " + ", ".join(sorted(self.pending)) + "\n").encode()
        return 200, "text/plain", b"ok\n"

    async def _metrics_route(self, method: str, body: bytes) -> Response:
        from prometheus_client import CONTENT_TYPE_LATEST
        assert self.metrics is not None  # the route exists only with metrics on
        return 200, CONTENT_TYPE_LATEST, await self.metrics.scrape()

    def _install_hook(self, faults_armed: bool) -> None:
        """Point the server's request hook at what is on: metrics, pending fault rules, both or
        neither (None). Called by the FaultInjector under its lock, from any thread: a plain
        attribute store, read by the event loop thread once per request."""
        assert self.server is not None and self.state is not None
        metrics, state = self.metrics, self.state
        faults = self.faults if faults_armed else None
        hook: RequestHook | None = None
        if faults is not None:
            injector = faults

            def with_faults(conn: Connection, ctx: RequestContext, request: dict[str, Any]) -> Any:
                key, version = ctx.api_key, ctx.api_version
                # topics by id: name them for rules naming a topic (the handlers read the ids)
                by_id = _BY_TOPIC_ID.get(key)
                if by_id is not None and version >= by_id[0]:
                    for t in request[by_id[1]]:
                        t[by_id[2]] = state.logs.topic_name(t["topic_id"]) or ""
                return injector.intercept(conn, key, version, request, lambda req: handle_request(ctx, req))

            hook = with_faults
        if metrics is not None:
            timed, inner = metrics, hook

            def with_metrics(conn: Connection, ctx: RequestContext, request: dict[str, Any]) -> Any:
                t0 = perf_counter()
                result = handle_request(ctx, request) if inner is None else inner(conn, ctx, request)
                if type(result) is not dict and asyncio.iscoroutine(result):
                    return _timed(timed, ctx.api_key, ctx.api_version, t0, result)
                timed.request_done(ctx.api_key, ctx.api_version, result, perf_counter() - t0)
                return result

            hook = with_metrics
        self.server.request_hook = hook

    async def _every(self, seconds: float, fn: Callable[[], Any]) -> None:
        while True:
            await asyncio.sleep(seconds)
            try:
                result = fn()
                if asyncio.iscoroutine(result):
                    await result
            except asyncio.CancelledError:
                raise
            except Exception:  # periodic work must keep running
                logger.exception("periodic task %s failed", getattr(fn, "__name__", fn))

    def _run_on_loop(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` on the event loop and wait for it (from a cleaner thread): the segment
        swap must not interleave with reads and appends, which run there. Never abandoned
        half-way: the cleaner deletes its files only once it knows the swap did not happen."""
        loop = self._loop
        assert loop is not None
        if threading.get_ident() == self._loop_thread:
            return fn()
        fut: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def run() -> None:
            try:
                fut.set_result(fn())
            except BaseException as e:  # noqa: BLE001 - handed to the cleaner thread
                fut.set_exception(e)

        loop.call_soon_threadsafe(run)
        return fut.result()

    def _retention(self) -> None:
        assert self.logs is not None and self.state is not None
        n = self.logs.cleanup_logs(delete_expired_files=False,  # _housekeeping removes them
                                   log_start_moved=self.state.notify_append)
        if n:
            logger.info("retention deleted %d segments", n)

    def _schedule_flush(self, log: Log, up_to: int | None = None) -> None:
        if id(log) in self._flushing:
            return
        self._flushing.add(id(log))
        loop = asyncio.get_running_loop()
        fut = loop.run_in_executor(None, log.flush, up_to)
        key = id(log)

        def done(f: asyncio.Future[int]) -> None:
            self._flushing.discard(key)
            if f.exception() is not None:
                logger.error("flush of %s failed: %s", log, f.exception())

        fut.add_done_callback(done)

    def _housekeeping(self) -> None:
        assert self.logs is not None
        now = now_ms()
        expired: list[LogSegment] = []
        for log in list(self.logs.logs.values()):
            expired += log.pop_expired_files(now)
        for log, up_to in self.logs.flushes_due(now):
            self._schedule_flush(log, up_to)
        if expired:  # unlinking large files frees their blocks in the syscall: off the loop
            asyncio.get_running_loop().run_in_executor(None, _delete_segment_files, expired)
        if self.state is not None:
            self.state.quotas.expire()  # client quota measures idle for an hour

    async def _resolve_quota_hosts(self) -> None:
        """The ip quota entities that name hosts (``connection_creation_rate``): their addresses,
        looked up once at start-up (AlterClientQuotas looks up those it sets)."""
        assert self.state is not None
        connections = self.state.quotas.connections
        loop = asyncio.get_running_loop()
        for host in connections.hosts():
            try:
                infos = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
            except (OSError, UnicodeError) as e:
                logger.warning("the connection_creation_rate of ip entity %s does not apply: %s", host, e)
                continue
            connections.resolved(host, sorted({str(info[4][0]) for info in infos}))

    def _expire_producers(self) -> None:
        assert self.logs is not None
        n = self.logs.remove_expired_producers()
        if n:
            logger.info("expired %d idle producer ids (producer.id.expiration.ms)", n)

    async def _checkpoint(self) -> None:
        assert self.logs is not None
        await asyncio.get_running_loop().run_in_executor(None, self.logs.checkpoint_logs)

    async def stop(self) -> None:
        for t in self._periodic:
            t.cancel()
        for listener in self.http:
            await listener.stop()
        if self.schema_registry is not None:
            await self.schema_registry.stop()
        if self.metrics is not None:
            self.metrics.close()
        if self.server is not None:
            await self.server.stop()
        if self.state is not None:  # the counts of repeated handler lines not yet logged
            self.state.log_limiter.flush()
        if self.state is not None and self.state.txn is not None:
            await self.state.txn.close()
        if self.state is not None:
            await self.state.share_state.close()
        if self.state is not None and self.state.groups is not None:
            await self.state.groups.close()
        if self.state is not None:  # produce batches still being inflated finish (their appends then fail)
            await asyncio.get_running_loop().run_in_executor(None, self.state.inflate_executor.shutdown)
        if self.cleaner is not None:  # a cleaning in progress gives up (its swap may still run here)
            await asyncio.get_running_loop().run_in_executor(None, self.cleaner.shutdown)
        # wait for background flushes to finish before closing the logs
        for _ in range(500):
            if not self._flushing:
                break
            await asyncio.sleep(0.01)
        if self.logs is not None:
            self.logs.shutdown()
        logger.info("minibroker stopped cleanly")


async def _timed(metrics: Any, key: int, version: int, t0: float, result: Any) -> Any:
    body = await result
    metrics.request_done(key, version, body, perf_counter() - t0)
    return body


def _delete_segment_files(segments: list[LogSegment]) -> None:
    """Remove the files of segments whose ``file.delete.delay.ms`` passed (a worker thread)."""
    for seg in segments:
        try:
            seg.delete_if_exists()
        except OSError as e:
            logger.warning("could not delete %s: %s", seg.log.path, e)
