"""The broker's one base of errors a request can fail with, and the one place that maps an
exception to the Kafka error code a response carries.

``ApiError`` carries a Kafka wire ``error_code`` (a class attribute for errors that always mean
one code, as the storage errors, or per instance) and a message for the response's
``error_message`` field where the API has one. Storage, group, transaction and config errors
derive from it; record-level errors (``client.records``: bad CRC, wrong magic) carry their code
the same way. ``error_code_of`` is what every handler and coordinator calls on an exception it
catches: an ``ApiError`` or record error answers its own code, an ``OSError`` is a disk failure
(KAFKA_STORAGE_ERROR), anything else a bug (UNKNOWN_SERVER_ERROR, logged with its traceback).
"""

from __future__ import annotations

import logging

from client.protocol.api import ErrorCode, error_name
from client.records.batch import RecordError

__all__ = ["ApiError", "error_code_of"]

logger = logging.getLogger("broker.errors")


class ApiError(Exception):
    """A request (or one partition, group or resource of it) fails with ``error_code``."""

    error_code: int = ErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(self, message: str = "", *, error_code: int | None = None) -> None:
        if error_code is not None:
            self.error_code = int(error_code)
        super().__init__(message or error_name(self.error_code))


def error_code_of(exc: BaseException) -> int:
    """The Kafka error code that answers ``exc`` (see the module docstring)."""
    if isinstance(exc, (ApiError, RecordError)):
        return int(exc.error_code)
    if isinstance(exc, OSError):
        logger.error("I/O error: %s", exc)
        return int(ErrorCode.KAFKA_STORAGE_ERROR)
    logger.exception("unexpected error", exc_info=exc)
    return int(ErrorCode.UNKNOWN_SERVER_ERROR)
