"""Shared handler vocabulary: reply markers, error-code mapping, and answers that come later."""

from __future__ import annotations

import asyncio
import collections
import logging
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

from ..errors import error_code_of
from ..state import BrokerState
from ..storage.file_records import FileSlice

logger = logging.getLogger("broker.handlers")


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


NO_RESPONSE = _Marker("NO_RESPONSE")
CLOSE = _Marker("CLOSE")


class FetchReply(NamedTuple):
    """A response written in pieces: ``bytes`` parts as they are, ``FileSlice`` parts with
    ``os.sendfile``. ``size`` is the total number of bytes after the frame's size field."""

    parts: list[bytes | FileSlice]
    size: int


def reply_when_ready(start: Callable[[Callable[[Any], None]], None]) -> Any:
    """Call ``start(respond)``: the handler's result is what ``respond`` receives — returned
    as is when ``start`` answered at once, else a coroutine the server awaits (a JoinGroup
    parked until the rebalance completes, an OffsetCommit until its record is durable)."""
    box: list[Any] = []
    fut: asyncio.Future[Any] | None = None

    def respond(value: Any) -> None:
        if fut is None:
            box.append(value)
        elif not fut.done():
            _pacer(fut.get_loop()).resolve(fut, value)

    start(respond)
    if box:
        return box[0]
    fut = asyncio.get_running_loop().create_future()
    return _wait(fut)


class _Pacer:
    """Resolves parked replies at most ``SLICE`` per loop iteration. One coordinator event can
    answer thousands of parked requests at once (a join phase completing for a group of 10,000
    members): resolving them all in one turn, with the replies' encoding and writes they set
    off, would make every other client wait for all of them. A reply waits one iteration more
    than it would otherwise (microseconds)."""

    SLICE = 256

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.queue: collections.deque[tuple[asyncio.Future[Any], Any]] = collections.deque()
        self.scheduled = False

    def resolve(self, fut: asyncio.Future[Any], value: Any) -> None:
        self.queue.append((fut, value))
        if not self.scheduled:
            self.scheduled = True
            self.loop.call_soon(self._drain)

    def _drain(self) -> None:
        q = self.queue
        for _ in range(min(self.SLICE, len(q))):
            fut, value = q.popleft()
            if not fut.done():
                fut.set_result(value)
        if q:
            self.loop.call_soon(self._drain)  # the next slice after the loop has polled its sockets
        else:
            self.scheduled = False


_pacers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Pacer] = weakref.WeakKeyDictionary()


def _pacer(loop: asyncio.AbstractEventLoop) -> _Pacer:
    p = _pacers.get(loop)
    if p is None:
        p = _pacers[loop] = _Pacer(loop)
    return p


async def _wait(fut: asyncio.Future[Any]) -> Any:
    return await fut


async def after_fsync(body: dict[str, Any], state: BrokerState, waits: list[tuple[Any, int, dict[str, Any]]]) -> dict[str, Any]:
    """``body`` once each (log, offset, partition answer) of ``waits`` is fsync'd up to the
    offset (acks=all); a failed flush sets that partition's error code."""
    for log, offset, resp in waits:
        try:
            await state.durable(log, offset)
        except Exception as e:  # noqa: BLE001 - the partition answers with the error's code
            resp["error_code"] = error_code_of(e)
    return body
