"""Running the KIP-848 assignors off the request path, for large consumer groups.

A heartbeat that bumps a group's epoch (a member joins, leaves or changes its subscription; a
subscribed topic changes) needs a new target assignment. For a group with fewer than
``group.consumer.assignment.offload.min.members`` members (minibroker's own setting, default
100) the assignor runs inside that heartbeat: a few hundred microseconds, and the joining
member gets its partitions in the same round trip. For larger groups the coordinator hands the
assignor a snapshot of the group (members' subscriptions, topics, current target) through an
``Offload`` and answers at once; the group is *Assigning* until the result comes back, its
members keep what they own and come back sooner (``ConsumerGroupCoordinator``'s heartbeat
interval while assigning). At most one run per group is in flight: epoch bumps during a run
are batched into the next run, started as soon as the result of the current one is installed.
Kafka 4.x added the same batching and offload to its coordinator (KIP-1263).

``ThreadOffload`` runs assignors one at a time in a worker thread and delivers results on the
event loop. The assignor is pure Python, so it shares the interpreter with the loop, but the
loop gets the interpreter back at least every ``sys.getswitchinterval()`` (5 ms): a large group
rebalancing no longer stalls every other client for the length of an assignment.

Invariant: the function given to ``submit`` reads only its snapshot (copies made on the loop),
never the live group; ``done`` is always called on the loop, with the result or the exception.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

__all__ = ["Offload", "ThreadOffload"]

#: what ``done`` receives: the function's result, or the exception it raised
Outcome = Any


class Offload(Protocol):
    def submit(self, fn: Callable[[], Any], done: Callable[[Outcome], None]) -> None:
        """Run ``fn`` off the request path; call ``done`` with its result (or exception) later,
        on the event loop."""

    def close(self) -> None: ...


class ThreadOffload:
    """One worker thread for every group's assignor runs (runs queue up in submission order)."""

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="assignor")
        self._closed = False

    def submit(self, fn: Callable[[], Any], done: Callable[[Outcome], None]) -> None:
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self._executor, fn)

        def finished(f: asyncio.Future[Any]) -> None:
            if f.cancelled() or self._closed:
                return
            exc = f.exception()
            done(exc if exc is not None else f.result())

        future.add_done_callback(finished)

    def close(self) -> None:
        self._closed = True
        self._executor.shutdown(wait=False, cancel_futures=True)
