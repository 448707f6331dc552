"""Reading a coordinator's topic back at start-up: the records of about ``max_bytes`` of a
log from an offset, each with its batch's producer id and control flag (the group and
transaction coordinators replay ``__consumer_offsets`` and ``__transaction_state`` with it,
in a worker thread: file reads, CRC checks and record decoding stay off the event loop)."""

from __future__ import annotations

from typing import NamedTuple

from client.records.batch import RecordError, iter_batch_headers
from client.records.record import Record, iter_records

from .log import Log

__all__ = ["LoggedRecord", "read_record_chunk"]


class LoggedRecord(NamedTuple):
    producer_id: int
    producer_epoch: int
    is_control: bool
    record: Record


def read_record_chunk(log: Log, offset: int, max_bytes: int) -> tuple[list[LoggedRecord], int]:
    """The records from ``offset`` in about ``max_bytes`` (at least one batch) and the offset
    to continue from. RecordError when no whole batch is there."""
    data = log.read_bytes(offset, max_bytes, min_one_batch=True)
    out: list[LoggedRecord] = []
    next_offset = offset
    for header in iter_batch_headers(data):
        next_offset = header.last_offset + 1
        pid, epoch, control = header.producer_id, header.producer_epoch, header.is_control
        for record in iter_records(data, header.pos):
            if record.offset >= offset:
                out.append(LoggedRecord(pid, epoch, control, record))
    if next_offset == offset:  # nothing readable: stop rather than spin
        raise RecordError(f"no complete batch at offset {offset}")
    return out, next_offset
