"""The group coordinator's two seams to the outside world, which the runtime binds to the log
and the event loop (runtime.py) and tests to a manual clock: ``Writer`` (records appended to
``__consumer_offsets``) and ``Timer`` (deadlines); and what a failed write answers.

``write(group_id, records, on_durable, producer=None) -> error code``: appends ``(key, value)``
records (value None: a tombstone) to the group's ``__consumer_offsets`` partition at once and
returns 0, then calls ``on_durable(0)`` once they are fsync'd (or ``on_durable(code)`` if that
failed); a non-zero return means nothing was written and ``on_durable`` is never called.
``producer`` = (id, epoch) writes a transactional batch (TxnOffsetCommit).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable
from typing import Protocol

from client.protocol.api import ErrorCode, error_name

__all__ = ["Record", "Writer", "Timer", "error_after_append", "commit_error_after_append", "failed_commit",
           "log_write_failure"]

logger = logging.getLogger("broker.group")

E = ErrorCode

#: one record of ``__consumer_offsets``: key bytes, value bytes (None: a tombstone)
Record = tuple[bytes, bytes | None]

#: ``write(group_id, records, on_durable, producer=None) -> error code`` (see the module docstring)
Writer = Callable[..., int]


class Timer(Protocol):
    def schedule(self, key: Hashable, delay_ms: int, fn: Callable[[], None]) -> None:
        """Run ``fn`` after ``delay_ms``, replacing any timer under ``key``."""

    def cancel(self, key: Hashable) -> None: ...


def error_after_append(code: int) -> int:
    """Kafka's mapping of a failed coordinator write to what the client is told."""
    if code in (E.UNKNOWN_TOPIC_OR_PARTITION, E.NOT_ENOUGH_REPLICAS, E.REQUEST_TIMED_OUT):
        return int(E.COORDINATOR_NOT_AVAILABLE)
    if code in (E.NOT_LEADER_OR_FOLLOWER, E.KAFKA_STORAGE_ERROR):
        return int(E.NOT_COORDINATOR)
    if code in (E.MESSAGE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE, E.INVALID_FETCH_SIZE):
        return int(E.UNKNOWN_SERVER_ERROR)
    return code


def commit_error_after_append(code: int) -> int:
    """Kafka's mapping of a failed offset commit write: a batch larger than the offsets topic's
    ``max.message.bytes`` is INVALID_COMMIT_OFFSET_SIZE (group writes get UNKNOWN_SERVER_ERROR)."""
    if code in (E.MESSAGE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE, E.INVALID_FETCH_SIZE):
        return int(E.INVALID_COMMIT_OFFSET_SIZE)
    return error_after_append(code)


def failed_commit(code: int, errors: dict[tuple[str, int], int], on_durable: Callable[[int], None]
                  ) -> tuple[int, dict[tuple[str, int], int]]:
    """What a commit whose write failed answers: nothing was written (``on_durable`` is called at
    once, as for a commit with nothing to write); each partition gets its own error
    (OFFSET_METADATA_TOO_LARGE) or the write's, mapped as Kafka maps it."""
    mapped = commit_error_after_append(code)
    on_durable(0)
    return 0, {tp: e or mapped for tp, e in errors.items()}


def log_write_failure(group_id: str, what: str) -> Callable[[int], None]:
    """An ``on_durable`` for a write nobody waits on: logs when it failed."""
    def done(code: int) -> None:
        if code:
            logger.error("group %s: storing %s failed: %s", group_id, what, error_name(code))
    return done
