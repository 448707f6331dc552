"""Throttler: holds the cleaner threads to ``log.cleaner.io.max.bytes.per.second`` (read plus
written bytes, shared by every cleaner thread, as Kafka's Throttler).

Every ``check_interval_s`` the rate observed since the last check is compared with the
desired one; when above it, the caller sleeps as long as it takes for the bytes seen to fit
the rate. Unlimited by default (Kafka's default is Double.MAX_VALUE).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["Throttler"]


class Throttler:
    def __init__(self, desired_rate_per_sec: float, check_interval_s: float = 0.3,
                 sleep: Callable[[float], None] = time.sleep,
                 now: Callable[[], float] = time.monotonic) -> None:
        self.desired_rate = desired_rate_per_sec
        self.check_interval_s = check_interval_s
        self._sleep = sleep
        self._now = now
        self._lock = threading.Lock()
        self._period_start = now()
        self._observed = 0.0
        #: total seconds slept (stats, tests)
        self.slept_s = 0.0

    def maybe_throttle(self, observed: float) -> None:
        if self.desired_rate >= 1e300:
            return
        with self._lock:
            self._observed += observed
            now = self._now()
            elapsed = now - self._period_start
            if elapsed < self.check_interval_s:
                return
            pause = self._observed / self.desired_rate - elapsed
            self._period_start = now + max(pause, 0.0)
            self._observed = 0.0
        if pause > 0:
            self.slept_s += pause
            self._sleep(pause)
