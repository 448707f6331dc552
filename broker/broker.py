"""Broker: the LogManager, the server and the periodic storage work, started and stopped
together.

Periodic work, on the event loop unless it may block on the disk:
- retention (``log.retention.check.interval.ms``, 5 min) and removal of ``.deleted`` files once
  their ``file.delete.delay.ms`` has passed (checked every second);
- flush: each second, logs whose ``flush.ms`` has elapsed, and logs whose recovery point is
  below the active segment (Kafka flushes a rolled segment asynchronously) are flushed in a
  worker thread; ``flush.messages`` triggers the same from the append path;
- checkpoints (``log.flush.offset.checkpoint.interval.ms``, 1 min), in a worker thread.

Shutdown (SIGTERM/SIGINT): stop accepting, let in-flight requests finish, flush every log,
close the segments (trims), write the checkpoints, then the clean-shutdown marker.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from .config import BrokerConfig
from .socket_server import BrokerServer
from .state import BrokerState
from .storage.log import Log
from .storage.log_manager import LogManager

__all__ = ["Broker"]

logger = logging.getLogger("broker")


class Broker:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.logs: LogManager | None = None
        self.state: BrokerState | None = None
        self.server: BrokerServer | None = None
        self._periodic: list[asyncio.Task[None]] = []
        self._flushing: set[int] = set()

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.port

    async def start(self) -> None:
        t0 = time.perf_counter()
        cfg = self.config
        self.logs = LogManager(cfg.log_dir, cfg.log_config, node_id=cfg.node_id, flush_scheduler=self._schedule_flush)
        self.logs.startup()
        self.state = BrokerState(cfg, self.logs)
        host, port = cfg.listener
        self.server = BrokerServer(self.state, host, port)
        await self.server.start()
        if self.state.port == 0 or (cfg.props.get("advertised.listeners", "") == "" and port == 0):
            self.state.port = self.server.port
        self._periodic = [
            asyncio.ensure_future(self._every(cfg.int("log.retention.check.interval.ms") / 1000, self._retention)),
            asyncio.ensure_future(self._every(1.0, self._housekeeping)),
            asyncio.ensure_future(self._every(cfg.int("log.flush.offset.checkpoint.interval.ms") / 1000,
                                              self._checkpoint)),
        ]
        logger.info("minibroker listening on %s:%d (advertised %s:%d), data in %s, %d partitions, started in %.3f s",
                    host, self.server.port, self.state.host, self.state.port, self.logs.log_dir,
                    len(self.logs.logs), time.perf_counter() - t0)

    async def _every(self, seconds: float, fn: Callable[[], Any]) -> None:
        while True:
            await asyncio.sleep(seconds)
            try:
                result = fn()
                if asyncio.iscoroutine(result):
                    await result
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - periodic work must keep running
                logger.exception("periodic task %s failed", getattr(fn, "__name__", fn))

    def _retention(self) -> None:
        assert self.logs is not None
        n = self.logs.cleanup_logs()
        if n:
            logger.info("retention deleted %d segments", n)

    def _schedule_flush(self, log: Log, up_to: int | None = None) -> None:
        if id(log) in self._flushing:
            return
        self._flushing.add(id(log))
        loop = asyncio.get_running_loop()
        fut = loop.run_in_executor(None, log.flush, up_to)
        key = id(log)

        def done(f: asyncio.Future[None]) -> None:
            self._flushing.discard(key)
            if f.exception() is not None:
                logger.error("flush of %s failed: %s", log, f.exception())

        fut.add_done_callback(done)

    def _housekeeping(self) -> None:
        assert self.logs is not None
        now = int(time.time() * 1000)
        for log in list(self.logs.logs.values()):
            log.delete_expired_files(now)
            if log.flush_due(now):
                self._schedule_flush(log)
            elif log.recovery_point < log.active_segment.base_offset:
                self._schedule_flush(log, log.active_segment.base_offset)

    async def _checkpoint(self) -> None:
        assert self.logs is not None
        await asyncio.get_running_loop().run_in_executor(None, self.logs.checkpoint_logs)

    async def stop(self) -> None:
        for t in self._periodic:
            t.cancel()
        if self.server is not None:
            await self.server.stop()
        # wait for background flushes to finish before closing the logs
        for _ in range(500):
            if not self._flushing:
                break
            await asyncio.sleep(0.01)
        if self.logs is not None:
            self.logs.shutdown()
        logger.info("minibroker stopped cleanly")
