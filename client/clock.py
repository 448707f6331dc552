"""The wall clock in Kafka's unit: ``now_ms()`` is milliseconds since the Unix epoch, the unit of
record timestamps, segment ages, retention and transaction timeouts.

One function so that every timestamp the broker and client take comes from the same clock (and a
reader finds them all by one name); code that must be testable with another clock takes a
``Callable[[], int]`` defaulting to ``now_ms``.
"""

from __future__ import annotations

import time

__all__ = ["now_ms"]


def now_ms() -> int:
    """Milliseconds since the Unix epoch (``time.time()``: not monotonic; use it for timestamps,
    not for measuring durations)."""
    return int(time.time() * 1000)
