"""LogLimiter: repeated log lines of one peer and cause, rate-limited with a count.

One misbehaving client (a library retrying a version we do not support, a port scanner, a
connection storm) can make the broker log a line per request or connection: thousands a second,
until the disk is full, which is an outage of its own. Lines that a remote peer can trigger go
through a LogLimiter instead of straight to the logger.

Per key (the peer's host and a short cause, e.g. ``("10.0.0.7", "unsupported version")``):
- the first line is logged at once, and starts a window of ``interval`` seconds;
- the lines of the same key within that window are counted, not logged;
- when the window ends with lines counted, the last of them is logged once, followed by
  `` (N more like this from HOST in the last S s)`` (N counts it too), and a new window starts.
  The end of the window is a timer on the running event loop (``loop.call_later``); with no
  loop running (a plain thread), the count goes out with the key's next line after the window.

Memory is bounded: at most ``max_keys`` keys are kept; a new one evicts the least recently
logged key, which first logs its pending count, if any (a count is never lost, only late).
Not thread-safe: call it from one thread (the event loop's).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Callable

__all__ = ["LogLimiter"]


class _Window:
    """One key's state: when its window started, the lines counted in it, the last of them."""

    __slots__ = ("started", "suppressed", "logger", "level", "msg", "args", "timer")

    def __init__(self, started: float) -> None:
        self.started = started
        self.suppressed = 0
        self.logger: logging.Logger | None = None
        self.level = logging.WARNING
        self.msg = ""
        self.args: tuple[object, ...] = ()
        self.timer: asyncio.TimerHandle | None = None


class LogLimiter:
    def __init__(self, logger: logging.Logger, interval: float = 10.0, max_keys: int = 1024,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger = logger
        self.interval = interval
        self.max_keys = max_keys
        self.clock = clock
        #: key -> its window, least recently logged first
        self._windows: collections.OrderedDict[tuple[str, str], _Window] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._windows)

    def warning(self, host: str, cause: str, msg: str, *args: object, exc_info: bool = False,
                logger: logging.Logger | None = None) -> None:
        self.log(logging.WARNING, host, cause, msg, *args, exc_info=exc_info, logger=logger)

    def info(self, host: str, cause: str, msg: str, *args: object, logger: logging.Logger | None = None) -> None:
        self.log(logging.INFO, host, cause, msg, *args, logger=logger)

    def log(self, level: int, host: str, cause: str, msg: str, *args: object, exc_info: bool = False,
            logger: logging.Logger | None = None) -> None:
        """Log ``msg % args`` at ``level`` to ``logger`` (the limiter's by default) now, or count
        it against ``(host, cause)``. ``host`` is who caused it, as the count's line names it
        ("10.0.0.7", "producers to t-0"). A line logged at once keeps ``exc_info`` (its
        traceback); a counted one is logged later without."""
        logger = logger or self.logger
        if not logger.isEnabledFor(level):
            return
        key = (host, cause)
        now = self.clock()
        window = self._windows.get(key)
        if window is not None and now - window.started < self.interval:
            window.suppressed += 1
            window.logger, window.level, window.msg, window.args = logger, level, msg, args
            if window.timer is None:
                window.timer = _call_later(window.started + self.interval - now, self._window_ended, key)
            return
        if window is not None and window.suppressed:  # the window ended without its timer (no loop)
            self._emit(key, window, now)
        if window is None:
            window = self._windows[key] = _Window(now)
            if len(self._windows) > self.max_keys:
                old_key, old = self._windows.popitem(last=False)
                self._close(old_key, old, now)
        else:
            window.started = now
            self._windows.move_to_end(key)
        logger.log(level, msg, *args, exc_info=exc_info)

    def _window_ended(self, key: tuple[str, str]) -> None:
        window = self._windows.get(key)
        if window is None:
            return
        window.timer = None
        if window.suppressed:
            now = self.clock()
            self._emit(key, window, now)
            window.started = now  # the summary line opens a new window
            self._windows.move_to_end(key)

    def _emit(self, key: tuple[str, str], window: _Window, now: float) -> None:
        """Log the window's last counted line with the count, and reset the count."""
        n, window.suppressed = window.suppressed, 0
        (window.logger or self.logger).log(window.level, window.msg + " (%d more like this from %s in the last %d s)",
                                           *window.args, n, key[0], max(1, round(now - window.started)))

    def _close(self, key: tuple[str, str], window: _Window, now: float) -> None:
        if window.timer is not None:
            window.timer.cancel()
        if window.suppressed:
            self._emit(key, window, now)

    def flush(self) -> None:
        """Log every pending count now, and forget every key (shutdown)."""
        now = self.clock()
        while self._windows:
            key, window = self._windows.popitem(last=False)
            self._close(key, window, now)


def _call_later(delay: float, fn: Callable[[tuple[str, str]], None], key: tuple[str, str]) -> asyncio.TimerHandle | None:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return loop.call_later(max(0.0, delay), fn, key)
