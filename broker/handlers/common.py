"""Shared handler vocabulary: reply markers, error-code mapping, and answers that come later."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, NamedTuple

from client.protocol.api import ErrorCode
from client.records.batch import RecordError

from ..storage.errors import StorageError
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


def error_code_of(exc: BaseException) -> int:
    """The Kafka error code for a storage or record exception (UNKNOWN_SERVER_ERROR otherwise)."""
    if isinstance(exc, (RecordError, StorageError)):
        return int(exc.error_code)
    if isinstance(exc, OSError):
        logger.error("I/O error: %s", exc)
        return int(ErrorCode.KAFKA_STORAGE_ERROR)
    logger.exception("unexpected error", exc_info=exc)
    return int(ErrorCode.UNKNOWN_SERVER_ERROR)


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
            fut.set_result(value)

    start(respond)
    if box:
        return box[0]
    fut = asyncio.get_running_loop().create_future()
    return _wait(fut)


async def _wait(fut: asyncio.Future[Any]) -> Any:
    return await fut


async def after_fsync(body: dict[str, Any], state: Any, waits: list[tuple[Any, int, dict[str, Any]]]) -> dict[str, Any]:
    """``body`` once each (log, offset, partition answer) of ``waits`` is fsync'd up to the
    offset (acks=all); a failed flush sets that partition's error code."""
    for log, offset, resp in waits:
        try:
            await state.durable(log, offset)
        except Exception as e:  # noqa: BLE001 - the partition answers with the error's code
            resp["error_code"] = error_code_of(e)
    return body
