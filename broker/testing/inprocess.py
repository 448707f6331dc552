"""A broker in this process: ``Broker`` on its own event loop (uvloop when installed) in a
daemon thread, on a free port of 127.0.0.1. Ready when ``start()`` returns; ``stop()`` shuts it
down cleanly (flush, checkpoints, clean-shutdown marker) and joins the thread.

Its ``.faults`` (a FaultInjector) acts directly on the broker's request path: rules added by
the test thread apply to the next request the broker reads. Its ``.broker`` is the live
``Broker`` (logs, state) — touch it only from the broker's loop (``call(fn)`` runs ``fn``
there and returns its result), as the loop thread owns it.

The broker shares the process with the test: the GIL is shared too, so a test that keeps a
core busy in Python slows the broker down (and the other way round), and a crash of the
interpreter takes both down. Use the subprocess broker (process.py) for load, for kill/restart
tests, or when the code under test is itself CPU-bound.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from ..config import BrokerConfig
from .defaults import TEST_DEFAULTS
from .faults import FaultInjector

__all__ = ["InProcessBroker"]

T = TypeVar("T")


def _runner() -> Callable[..., Any]:
    try:
        import uvloop
    except ImportError:
        return asyncio.run
    return uvloop.run


class _ListHandler(logging.Handler):
    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self.lines = lines
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record) + "\n")


class InProcessBroker:
    def __init__(self, data_dir: str, overrides: Sequence[str] | Mapping[str, str] = (), port: int = 0, *,
                 metrics: bool = False, runner: Callable[..., Any] | None = None) -> None:
        given = dict(overrides) if isinstance(overrides, Mapping) else \
            dict(o.split("=", 1) for o in overrides)
        for key, value in TEST_DEFAULTS.items():
            given.setdefault(key, value)
        given.setdefault("log.dirs", data_dir)
        given.setdefault("listeners", f"PLAINTEXT://127.0.0.1:{port}")
        if metrics:
            given.setdefault("metrics.listeners", "http://127.0.0.1:0")
        self.data_dir = data_dir
        self.config = BrokerConfig.load(extra=given)
        self.faults = FaultInjector()
        self.runner = runner or _runner()
        self.port = -1
        self.broker: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    bootstrap_servers = bootstrap

    @property
    def metrics_url(self) -> str:
        for listener in self.broker.http if self.broker is not None else ():
            if listener.name == "metrics":
                return f"http://127.0.0.1:{listener.port}/metrics"
        raise RuntimeError("this broker has no metrics listener (InProcessBroker(metrics=True))")

    def scrape(self, timeout: float = 60.0) -> str:
        """The metrics text, as a scrape makes it (no HTTP needed)."""
        if self.broker is None or self.broker.metrics is None or self._loop is None:
            raise RuntimeError("this broker has no metrics (InProcessBroker(metrics=True))")
        return asyncio.run_coroutine_threadsafe(self.broker.metrics.scrape(), self._loop).result(timeout).decode()

    def _run(self) -> None:
        from ..broker import Broker

        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            broker = Broker(self.config, faults=self.faults)
            try:
                await broker.start()
            except BaseException:
                await broker.stop()
                raise
            self.broker = broker
            self.port = broker.port
            self._ready.set()
            await self._stop.wait()
            await broker.stop()

        try:
            self.runner(main())
        except BaseException as e:  # noqa: BLE001 - reported to the thread that called start/stop
            self._error = e
        finally:
            self._ready.set()

    def start(self, timeout: float = 20.0) -> InProcessBroker:
        """Start and wait until the broker listens. A failure raises BrokerStartError with the
        error and what the ``broker`` loggers emitted meanwhile (their levels are left as the
        application set them)."""
        from .process import BrokerStartError
        lines: list[str] = []
        capture = _ListHandler(lines)
        log = logging.getLogger("broker")
        log.addHandler(capture)
        try:
            self._thread = threading.Thread(target=self._run, name=f"minibroker-{id(self):x}", daemon=True)
            self._thread.start()
            ready = self._ready.wait(timeout)
        finally:
            log.removeHandler(capture)
        if not ready:
            raise BrokerStartError(f"in-process broker did not start within {timeout} s; its log:\n" + "".join(lines))
        if self._error is not None:
            raise BrokerStartError(f"in-process broker did not start: {self._error!r}; its log:\n"
                                   + "".join(lines)) from self._error
        return self

    def call(self, fn: Callable[[], T], timeout: float = 10.0) -> T:
        """Run ``fn()`` on the broker's event loop thread and return its result."""
        assert self._loop is not None, "not running"
        fut: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                fut.set_result(fn())
            except BaseException as e:  # noqa: BLE001
                fut.set_exception(e)
        self._loop.call_soon_threadsafe(run)
        return fut.result(timeout)

    def stop(self, timeout: float = 30.0) -> int:
        """Shut down cleanly; 0, as a process's exit status would be (raises if it failed)."""
        if self._thread is None:
            return 0
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            try:
                self._loop.call_soon_threadsafe(self._stop.set)
            except RuntimeError:  # the loop already ended
                pass
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise RuntimeError(f"in-process broker did not stop within {timeout} s")
        self._thread = None
        if self._error is not None:
            raise self._error
        return 0

    def __enter__(self) -> InProcessBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
