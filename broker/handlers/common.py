"""Shared handler vocabulary: reply markers and error-code mapping."""

from __future__ import annotations

import logging
from typing import NamedTuple

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
