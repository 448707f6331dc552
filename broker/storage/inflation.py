"""What inflating producers' compressed batches may cost: bounds no topic config can raise.

A compressed batch is decompressed to walk its records (``client.records.validate``). Its
inflated size is bounded per batch by 64 x the topic's ``max.message.bytes``, but a client can
set that topic config (CreateTopics, AlterConfigs) up to 2^31 - 1, and a request may carry many
partitions. Three broker properties (static, read at start) bound it whatever the topics say:

- ``message.max.decompressed.bytes`` (64 MiB): one batch's records section inflates to at most
  min(64 x ``max.message.bytes``, this) bytes; above it MESSAGE_TOO_LARGE, as above the
  topic's bound.
- ``request.max.decompressed.bytes`` (128 MiB): the batches of one Produce request inflate to
  at most this in all (what they actually inflate to is counted); a partition whose batch
  would take the request past it gets MESSAGE_TOO_LARGE (Kafka's error for "too large for the
  server", on which a Java producer splits the batch and retries smaller; RECORD_LIST_TOO_LARGE
  names a segment.bytes overflow and is not retried) and nothing is written for it.
- ``broker.max.decompressed.bytes`` (256 MiB): the buffers of every request being inflated
  at once, broker-wide (``InflationPool``). A batch waits up to ``POOL_WAIT_SECONDS`` for its
  buffer; then its partition gets REQUEST_TIMED_OUT (retriable, nothing written).

A batch's bound is therefore min(64 x ``max.message.bytes``, ``message.max.decompressed.bytes``,
what the request has left, ``broker.max.decompressed.bytes``). Its buffers are anonymous
mappings acquired from the pool before they are mapped (``compression.inflated``: 256 KiB
first, then 4x per attempt up to the bound) and released once its records are walked.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from client.protocol.api import ErrorCode
from client.records.compression import DecompressionRefusedError

from .errors import StorageError

__all__ = ["InflationLimits", "InflationPool", "RequestInflation", "DecompressionBusyError", "POOL_WAIT_SECONDS",
           "DEFAULTS"]

#: How long a batch waits for the pool before its partition is refused.
POOL_WAIT_SECONDS = 1.0

#: The properties and their defaults (bytes).
DEFAULTS = {
    "message.max.decompressed.bytes": 64 << 20,
    "request.max.decompressed.bytes": 128 << 20,
    "broker.max.decompressed.bytes": 256 << 20,
}


class DecompressionBusyError(DecompressionRefusedError, StorageError):
    """The broker-wide pool had no room for a batch's buffer within ``POOL_WAIT_SECONDS``."""

    error_code = ErrorCode.REQUEST_TIMED_OUT


class InflationPool:
    """The broker-wide budget of inflated bytes held at once; thread-safe (batches are
    inflated in worker threads)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.in_use = 0
        self._cond = threading.Condition()

    def acquire(self, n: int, timeout: float = POOL_WAIT_SECONDS) -> None:
        """Take ``n`` bytes, waiting up to ``timeout`` for them (DecompressionBusyError)."""
        with self._cond:
            if not self._cond.wait_for(lambda: self.in_use + n <= self.capacity, timeout):
                raise DecompressionBusyError(
                    f"no room to inflate {n} bytes: {self.in_use} of broker.max.decompressed.bytes"
                    f" ({self.capacity}) in use")
            self.in_use += n

    def release(self, n: int) -> None:
        with self._cond:
            self.in_use -= n
            self._cond.notify_all()


@dataclass(frozen=True)
class InflationLimits:
    """The three bounds (see the module docstring) and the broker's pool."""

    message_max: int
    request_max: int
    pool: InflationPool

    @classmethod
    def of(cls, message_max: int = DEFAULTS["message.max.decompressed.bytes"],
           request_max: int = DEFAULTS["request.max.decompressed.bytes"],
           broker_max: int = DEFAULTS["broker.max.decompressed.bytes"]) -> InflationLimits:
        return cls(message_max, request_max, InflationPool(broker_max))

    def request(self) -> RequestInflation:
        return RequestInflation(self)


class RequestInflation:
    """One Produce request's share: what its batches have left to inflate to, and the pool
    that pays for their buffers (``client.records.compression.InflateMemory``). Used by one
    thread at a time."""

    def __init__(self, limits: InflationLimits) -> None:
        self.limits = limits
        self.remaining = limits.request_max

    def bound(self, topic_bound: int) -> int:
        """The bound of the next batch, given the topic's (64 x max.message.bytes)."""
        return max(0, min(topic_bound, self.limits.message_max, self.remaining, self.limits.pool.capacity))

    def describe(self, bound: int, topic_bound: int) -> str:
        """Which limit ``bound`` is, for the error message."""
        if bound >= topic_bound:
            return "64 x max.message.bytes"
        if bound == self.limits.message_max:
            return "message.max.decompressed.bytes"
        if bound == self.remaining:
            return f"what is left of request.max.decompressed.bytes ({self.limits.request_max}) for this request"
        return "broker.max.decompressed.bytes"

    def acquire(self, n: int) -> None:
        self.limits.pool.acquire(n)

    def release(self, n: int) -> None:
        self.limits.pool.release(n)

    def inflated(self, n: int) -> None:
        self.remaining -= n
