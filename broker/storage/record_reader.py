"""Reading a coordinator's topic back at start-up: ``LogReplayReader`` hands out the records of
a log from an offset in chunks of about ``max_bytes``, each record with its batch's producer
id, epoch and control flag. The group and transaction coordinators replay
``__consumer_offsets`` and ``__transaction_state`` with it, calling ``next_chunk`` in a worker
thread so that file reads, CRC checks and record decoding stay off the event loop.

A damaged batch costs only itself: the reader walks each segment with ``scan_segment``, which
skips a batch that fails its checks (or the damaged bytes up to the next valid batch, when its
length field is what broke) and reports each skip in the chunk's ``skipped``. A batch whose CRC
holds but whose records section does not decode is skipped the same way.

The reader works on a snapshot taken when it is made: the segments holding offsets from the
start offset, each segment's size, then the log end offset. Batches appended afterwards are not
read (a coordinator loads a partition before it writes to it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from client.records.batch import CONTROL_FLAG_MASK, RecordError
from client.records.record import Record, iter_records

from .batch_scan import SkippedBatch, ValidBatch, scan_segment
from .log import Log
from .segment import LogSegment

__all__ = ["LoggedRecord", "RecordChunk", "LogReplayReader", "SkippedBatch"]


class LoggedRecord(NamedTuple):
    producer_id: int
    producer_epoch: int
    is_control: bool
    record: Record


class RecordChunk(NamedTuple):
    """The records of one chunk (offsets at or above the reader's start offset), the damaged
    ranges skipped while reading it, and whether the log is read to its end."""
    records: list[LoggedRecord]
    skipped: list[SkippedBatch]
    done: bool


class LogReplayReader:
    def __init__(self, log: Log, start_offset: int | None = None) -> None:
        self.log = log
        self.start_offset = log.log_start_offset if start_offset is None else start_offset
        segments = log.segment_list(self.start_offset)
        sizes = [seg.size for seg in segments]
        self.end_offset = log.log_end_offset  # after the sizes: every batch below it is inside them
        self._batches = self._scan(segments, sizes)

    def _scan(self, segments: list[LogSegment], sizes: list[int]) -> Iterator[tuple[str, ValidBatch | SkippedBatch]]:
        for i, seg in enumerate(segments):
            limit = segments[i + 1].base_offset if i + 1 < len(segments) else self.end_offset
            # an index entry is a batch start at or below the offset wanted: no scan through damage
            start = seg.offset_index.lookup(self.start_offset).position if i == 0 else 0
            for item in scan_segment(seg.log, start, min_offset=seg.base_offset,
                                     max_offset=max(limit, seg.base_offset), end=sizes[i]):
                yield seg.log.path, item

    def next_chunk(self, max_bytes: int) -> RecordChunk:
        """The records of about ``max_bytes`` of batches (at least one batch unless the log is
        read to its end)."""
        records: list[LoggedRecord] = []
        skipped: list[SkippedBatch] = []
        budget = max_bytes
        start = self.start_offset
        for path, item in self._batches:
            if isinstance(item, SkippedBatch):
                skipped.append(item)
                budget -= item.size
            else:
                fields = item.fields
                pid, epoch, control = fields[9], fields[10], bool(fields[5] & CONTROL_FLAG_MASK)
                try:
                    decoded = list(iter_records(item.data, 0, verify_crc=False))
                except RecordError as e:
                    skipped.append(SkippedBatch(path, item.position, len(item.data), item.base_offset,
                                                item.base_offset, f"records section does not decode: {e}"))
                    decoded = []
                records.extend(LoggedRecord(pid, epoch, control, r) for r in decoded if r.offset >= start)
                budget -= len(item.data)
            if budget <= 0:
                return RecordChunk(records, skipped, False)
        return RecordChunk(records, skipped, True)
