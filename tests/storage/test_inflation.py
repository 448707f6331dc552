"""The broker-wide pool of inflated bytes (storage/inflation.py): a buffer that does not fit
waits for room, and is refused (REQUEST_TIMED_OUT) when none comes within the wait."""

from __future__ import annotations

import threading
import time

import pytest

from broker.handlers.common import error_code_of
from broker.storage.inflation import DecompressionBusyError, InflationLimits, InflationPool
from client.protocol.api import ErrorCode


def test_a_buffer_that_does_not_fit_waits_for_a_release() -> None:
    pool = InflationPool(10)
    pool.acquire(8)
    got = threading.Event()

    def take() -> None:
        pool.acquire(5, timeout=30)
        got.set()

    t = threading.Thread(target=take)
    t.start()
    assert not got.wait(0.1)  # 8 + 5 > 10: waiting
    pool.release(8)
    assert got.wait(30)
    t.join()
    assert pool.in_use == 5


def test_no_room_within_the_wait_is_request_timed_out() -> None:
    pool = InflationPool(10)
    pool.acquire(10)
    t0 = time.monotonic()
    with pytest.raises(DecompressionBusyError, match="broker.max.decompressed.bytes") as e:
        pool.acquire(1, timeout=0.05)
    assert time.monotonic() - t0 >= 0.05
    assert error_code_of(e.value) == ErrorCode.REQUEST_TIMED_OUT
    assert pool.in_use == 10


def test_a_batch_bound_is_the_smallest_of_the_limits() -> None:
    limits = InflationLimits.of(message_max=64, request_max=100, broker_max=50)
    req = limits.request()
    assert req.bound(1000) == 50  # the pool's capacity
    assert req.bound(30) == 30  # the topic's 64 x max.message.bytes
    req.inflated(80)
    assert req.bound(1000) == 20  # what the request has left
    assert "request.max.decompressed.bytes" in req.describe(20, 1000)
