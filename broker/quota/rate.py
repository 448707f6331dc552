"""Kafka's quota measures, sans-IO (times in milliseconds, given by the caller).

``Rate`` is Kafka's ``Rate`` over a ``WindowedSum`` (``SampledStat``): values are summed into
at most ``samples + 1`` samples of ``window_ms`` each (the extra one is the sample overlapping
the oldest edge); a sample is recycled once it is complete (``window_ms`` old), and any sample
with no event in the last ``samples * window_ms`` is reset. The rate is the sum divided by the
elapsed time since the oldest sample's start, counted as at least ``samples - 1`` whole windows
(a rate measured one second after start-up is not a burst divided by one second) and at least
1 ms. With Kafka's defaults (``quota.window.num`` 11, ``quota.window.size.seconds`` 1) a rate is
measured over 10 to 11 seconds.

``TokenBucket`` is Kafka's (KIP-599): credits refill at the quota's rate up to a burst of
``samples * window * quota``; it starts full and is exhausted when below zero.

``throttle_time`` is Kafka's ``QuotaUtils.throttleTime``: the delay X that brings an observed
rate O back to the quota T over the window W it was measured on, O * W / (W + X) = T, so
X = (O - T) / T * W, rounded as Java's ``Math.round``.
"""

from __future__ import annotations

import math

__all__ = ["Rate", "TokenBucket", "java_round"]


def java_round(x: float) -> int:
    """Java's ``Math.round`` (half up, towards positive infinity)."""
    return math.floor(x + 0.5)


class _Sample:
    __slots__ = ("value", "start", "last")

    def __init__(self, now: int) -> None:
        self.value = 0.0
        self.start = now
        self.last = now

    def reset(self, now: int) -> None:
        self.value = 0.0
        self.start = now
        self.last = now


class Rate:
    """The sum of the values recorded per second over the sampled window (see the module
    docstring); ``samples`` and ``window_ms`` are the quota's ``quota.window.num`` and
    ``quota.window.size.seconds`` (in ms)."""

    __slots__ = ("samples", "window_ms", "_samples", "_current", "last_recorded")

    def __init__(self, samples: int, window_ms: int) -> None:
        self.samples = samples
        self.window_ms = window_ms
        self._samples: list[_Sample] = []
        self._current = 0
        #: when a value was last recorded (a sensor idle for long is dropped)
        self.last_recorded = 0

    def record(self, value: float, now: int) -> None:
        samples = self._samples
        if not samples:
            samples.append(_Sample(now))
        sample = samples[self._current]
        if now - sample.start >= self.window_ms:  # complete: the next one (Kafka's eventWindow never is)
            self._current = (self._current + 1) % (self.samples + 1)
            if self._current >= len(samples):
                sample = _Sample(now)
                samples.append(sample)
            else:
                sample = samples[self._current]
                sample.reset(now)
        sample.value += value
        sample.last = now
        self.last_recorded = now

    def _purge(self, now: int) -> None:
        expire = self.samples * self.window_ms
        for s in self._samples:
            if now - s.last >= expire:
                s.reset(now)

    def window_size(self, now: int) -> int:
        """The time, in ms, the rate is measured over (Kafka's ``Rate.windowSize``)."""
        self._purge(now)
        if not self._samples:
            self._samples.append(_Sample(now))
        elapsed = now - min(s.start for s in self._samples)
        full = elapsed // self.window_ms
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return max(elapsed, 1)

    def measure(self, now: int) -> float:
        """The rate per second at ``now``."""
        self._purge(now)
        total = 0.0
        for s in self._samples:
            total += s.value
        return total / (self.window_size(now) / 1000)

    def throttle_time(self, bound: float, now: int) -> int:
        """0 if the rate is within ``bound``, else the ms that bring it back (QuotaUtils.throttleTime)."""
        value = self.measure(now)
        if value <= bound:
            return 0
        return java_round((value - bound) / bound * self.window_size(now))


class TokenBucket:
    """Kafka's TokenBucket (KIP-599): ``tokens`` refill at ``quota`` per second up to
    ``samples * window * quota``; a full bucket at first use."""

    __slots__ = ("samples", "window_ms", "tokens", "_last", "last_recorded")

    def __init__(self, samples: int, window_ms: int) -> None:
        self.samples = samples
        self.window_ms = window_ms
        self.tokens = math.inf
        self._last: int | None = None
        self.last_recorded = 0

    def _refill(self, quota: float, now: int) -> None:
        burst = self.samples * self.window_ms / 1000 * quota
        if self._last is None:
            self.tokens = burst
        else:
            self.tokens = min(burst, self.tokens + quota * (now - self._last) / 1000)
        self._last = now

    def measure(self, quota: float, now: int) -> float:
        """The credits left at ``now`` (negative: exhausted)."""
        self._refill(quota, now)
        return self.tokens

    def record(self, value: float, quota: float, now: int) -> None:
        self._refill(quota, now)
        self.tokens = min(self.samples * self.window_ms / 1000 * quota, self.tokens - value)
        self.last_recorded = now

    @staticmethod
    def throttle_time(tokens: float, quota: float) -> int:
        """The ms until an exhausted bucket is back at zero (ControllerMutationQuotaManager.throttleTimeMs)."""
        return java_round(-tokens / quota * 1000)
