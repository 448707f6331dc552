"""LogSegment: one ``.log`` file with its ``.index`` and ``.timeindex`` (Kafka's LogSegment).

Files, in the partition directory, named by the segment's base offset zero-padded to 20 digits:
``00000000000000000000.log``, ``.index``, ``.timeindex`` (formats: file_records.py,
offset_index.py, time_index.py). Temporary suffixes are appended to the whole name:
``.deleted`` (a segment removed from its log, unlinked after ``file.delete.delay.ms``),
``.cleaned`` (a segment the log cleaner is writing) and ``.swap`` (a cleaned segment being
swapped in for the ones it replaces); log_loader.py says what loading does with each.

``LogSegment.open_with_config`` is how the log, its loader and the cleaner open a segment:
sizes and intervals come from the topic's LogConfig. ``LogSegment.open`` takes them one by
one (tools, benchmarks, tests of a segment alone).

Invariants:
- Every offset in the segment is >= ``base_offset`` and offset - base_offset fits in an int32.
- Index entries are sparse: one is added *per batch* when more than ``index.interval.bytes``
  were written since the last entry (so the first batch is never indexed). An entry maps the
  batch's **last** offset to the batch's **start** position. This is Kafka's recovery rule
  (and its append rule since KAFKA-806); because append and recovery follow the same rule, an
  index rebuilt by recovery equals the one written by appends.
- The time index holds the running max timestamp; the final entry (segment max timestamp,
  last offset of the batch carrying it) is written when the segment becomes inactive or is
  closed.

Not thread-safe: the owning Log serialises appends, reads and truncations.
"""

from __future__ import annotations

import logging
import os
import random
import struct
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from client.clock import now_ms
from client.records.batch import (
    LAST_OFFSET_DELTA_OFFSET,
    LOG_OVERHEAD,
    MAX_TIMESTAMP_OFFSET,
    RECORDS_COUNT_OFFSET,
    RECORDS_OFFSET,
    CorruptRecordError,
)
from client.records.record import iter_records

from .batch_scan import SkippedBatch, ValidBatch, framing_holds, scan_segment
from .config import LogConfig
from .errors import LogSegmentOffsetOverflowError
from .file_records import FileRecords, FileSlice, LogOffsetPosition, TimestampAndOffset
from .index import LazyIndex
from .log_validator import BatchMetadata
from .offset_index import OffsetIndex, OffsetPosition
from .time_index import TimeIndex, TimestampOffset
from .transaction_index import TransactionIndex, txn_index_file_name

__all__ = [
    "LogSegment", "FetchDataInfo", "log_file_name", "offset_index_file_name",
    "time_index_file_name", "filename_prefix_from_offset", "LOG_FILE_SUFFIX",
    "INDEX_FILE_SUFFIX", "TIME_INDEX_FILE_SUFFIX", "DELETED_FILE_SUFFIX", "CLEANED_FILE_SUFFIX",
    "SWAP_FILE_SUFFIX",
]

log = logging.getLogger(__name__)

LOG_FILE_SUFFIX = ".log"
INDEX_FILE_SUFFIX = ".index"
TIME_INDEX_FILE_SUFFIX = ".timeindex"
DELETED_FILE_SUFFIX = ".deleted"
CLEANED_FILE_SUFFIX = ".cleaned"
SWAP_FILE_SUFFIX = ".swap"
_JITTER_RNG = random.Random()  # segment jitter draws; seeding one per log costs ~10 us at startup
_INT32_MAX = 0x7FFFFFFF
_UNKNOWN = TimestampOffset(-1, -1)
_BATCH_FIELDS = struct.Struct(">qi")  # baseOffset, batchLength
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_new = tuple.__new__  # NamedTuple construction without its Python-level __new__ (per append)


class DamagedRange(NamedTuple):
    """Bytes ``[position, end)`` of a segment's ``.log`` that are not valid batches, with valid
    batches after them; the offsets ``[first_offset, next_offset)`` were due there. Reads stop
    before it and a read of an offset in it gets CorruptRecordError (CORRUPT_MESSAGE)."""
    position: int
    end: int
    first_offset: int
    next_offset: int


def filename_prefix_from_offset(offset: int) -> str:
    return f"{offset:020d}"


def log_file_name(directory: str, base_offset: int, suffix: str = "") -> str:
    return os.path.join(directory, filename_prefix_from_offset(base_offset) + LOG_FILE_SUFFIX + suffix)


def offset_index_file_name(directory: str, base_offset: int, suffix: str = "") -> str:
    return os.path.join(directory, filename_prefix_from_offset(base_offset) + INDEX_FILE_SUFFIX + suffix)


def time_index_file_name(directory: str, base_offset: int, suffix: str = "") -> str:
    return os.path.join(directory, filename_prefix_from_offset(base_offset) + TIME_INDEX_FILE_SUFFIX + suffix)


class FetchDataInfo(NamedTuple):
    """Result of a segment read: where the batch holding ``fetch_offset`` starts, and the slice."""

    fetch_offset: int
    segment_base_offset: int
    position: int
    slice: FileSlice
    first_entry_incomplete: bool = False


class LogSegment:
    def __init__(
        self,
        log_file: FileRecords,
        offset_index: LazyIndex[OffsetIndex],
        time_index: LazyIndex[TimeIndex],
        base_offset: int,
        index_interval_bytes: int = 4096,
        rolling_jitter_ms: int = 0,
        created_ms: int | None = None,
        txn_index: TransactionIndex | None = None,
    ) -> None:
        self.log = log_file
        self._offset_index = offset_index
        self._time_index = time_index
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.rolling_jitter_ms = rolling_jitter_ms
        self.created_ms = now_ms() if created_ms is None else created_ms
        self.bytes_since_last_index_entry = 0
        self._rolling_based_timestamp: int | None = None
        self._max_ts_and_offset = _UNKNOWN  # loaded lazily from the time index
        #: damaged ranges found by recovery, the start-up framing walk or a read (position order)
        self.damaged: list[DamagedRange] = []
        self._damage_logged: set[int] = set()
        #: the transactions aborted in this segment (``.txnindex``, created with its first entry)
        self.txn_index = txn_index if txn_index is not None else TransactionIndex(
            txn_index_file_name(os.path.dirname(log_file.path), base_offset), base_offset)

    @classmethod
    def open(
        cls,
        directory: str,
        base_offset: int,
        *,
        index_interval_bytes: int = 4096,
        max_index_size: int = 10 * 1024 * 1024,
        rolling_jitter_ms: int = 0,
        file_already_exists: bool = False,
        init_file_size: int = 0,
        preallocate: bool = False,
        file_suffix: str = "",
    ) -> LogSegment:
        records = FileRecords.open(
            log_file_name(directory, base_offset, file_suffix),
            file_already_exists=file_already_exists,
            init_file_size=init_file_size,
            preallocate=preallocate,
        )
        return cls(
            records,
            LazyIndex(offset_index_file_name(directory, base_offset, file_suffix),
                      lambda p: OffsetIndex(p, base_offset, max_index_size)),
            LazyIndex(time_index_file_name(directory, base_offset, file_suffix),
                      lambda p: TimeIndex(p, base_offset, max_index_size)),
            base_offset,
            index_interval_bytes,
            rolling_jitter_ms,
            txn_index=TransactionIndex(txn_index_file_name(directory, base_offset, file_suffix), base_offset),
        )

    @classmethod
    def open_with_config(
        cls,
        directory: str,
        base_offset: int,
        config: LogConfig,
        *,
        jitter: bool = False,
        file_already_exists: bool = False,
        active: bool = False,
        file_suffix: str = "",
    ) -> LogSegment:
        """Open (or create) the segment at ``base_offset`` of a log with ``config``: index
        entries every ``index.interval.bytes``, indexes of at most ``segment.index.bytes``.

        ``jitter``: draw the segment's rolling jitter from ``segment.jitter.ms`` (a segment of
        the log that is, or may become at load, the active one; cleaned and swapped segments
        get none). ``active``: a new active segment, whose ``.log`` is created at
        ``segment.bytes`` when ``preallocate`` is set. ``file_suffix``: a temporary suffix
        (``.cleaned``, ``.swap``) appended to every file name."""
        return cls.open(
            directory, base_offset,
            index_interval_bytes=config.index_interval_bytes,
            max_index_size=config.segment_index_bytes,
            rolling_jitter_ms=config.random_segment_jitter(_JITTER_RNG.random) if jitter else 0,
            file_already_exists=file_already_exists,
            init_file_size=config.segment_bytes if active else 0,
            preallocate=config.preallocate if active else False,
            file_suffix=file_suffix,
        )

    # -- accessors --

    @property
    def offset_index(self) -> OffsetIndex:
        return self._offset_index.get()

    @property
    def time_index(self) -> TimeIndex:
        return self._time_index.get()

    @property
    def size(self) -> int:
        return self.log.size

    def _max_ts(self) -> TimestampOffset:
        if self._max_ts_and_offset is _UNKNOWN:
            self._max_ts_and_offset = self.time_index.last_entry
        return self._max_ts_and_offset

    @property
    def max_timestamp_so_far(self) -> int:
        return self._max_ts().timestamp

    @property
    def offset_of_max_timestamp_so_far(self) -> int:
        return self._max_ts().offset

    def offset_of_max_timestamp(self) -> TimestampAndOffset | None:
        """ListOffsets MAX_TIMESTAMP (-3) within this segment, as Kafka 3.8+ answers it
        (KAFKA-16310): the offset of the first *record* carrying the segment's largest
        timestamp, found in the first batch whose maxTimestamp equals it (the time index keeps
        only that batch's last offset). A LogAppendTime batch gives its base offset."""
        best = self._max_ts()
        if best.timestamp < 0:
            return None
        position = self.offset_index.lookup(best.offset).position
        for pos, h in self.log.batch_headers(position):
            if h.max_timestamp != best.timestamp:
                continue
            epoch = h.partition_leader_epoch
            for record in iter_records(self.log.read(pos, h.size_in_bytes), verify_crc=False):
                if record.timestamp == best.timestamp:
                    return TimestampAndOffset(best.timestamp, record.offset, epoch if epoch >= 0 else None)
            return None
        return None

    # -- append --

    def append(self, records: bytes | bytearray | memoryview,
               batches: Sequence[BatchMetadata] | None = None) -> None:
        """Append whole, already validated batches with one sequential write.

        ``batches`` is what the log's validation learned about them (``log_validator``:
        positions relative to ``records``, offsets, max timestamps), so nothing is parsed
        again; without it (tools, tests, the cleaner's rewritten batches) the headers are
        walked here. Offsets must already be assigned and increasing. Adds sparse index entries
        per batch. Raises LogSegmentOffsetOverflowError (writing nothing) if an offset does
        not fit.
        """
        view = memoryview(records)
        if len(view) == 0:
            return
        if batches is None:
            batches = _walk_headers(view)
        first, last = batches[0], batches[-1]
        last_offset = last.base_offset + last.last_offset_delta
        base = self.base_offset
        if not 0 <= last_offset - base <= _INT32_MAX or \
                not 0 <= first.base_offset + first.last_offset_delta - base <= _INT32_MAX:
            raise LogSegmentOffsetOverflowError(
                f"offset {last_offset} cannot be stored in segment with base offset {base}"
            )
        offset_index = self._offset_index.get()
        time_index = self._time_index.get()
        # Index blocks first: a full disk fails here, before the .log holds a byte of the append.
        # (The comparisons are reserve's own early return, without its call per append.)
        n = len(batches)
        if (offset_index._entries + n) * offset_index.ENTRY_SIZE > offset_index._allocated:
            offset_index.reserve(n)
        if (time_index._entries + n) * time_index.ENTRY_SIZE > time_index._allocated:
            time_index.reserve(n)
        log_file = self.log
        physical = log_file._size
        if physical == 0:
            self._rolling_based_timestamp = max(b.max_timestamp for b in batches)
        log_file.append(view)
        max_ts = self._max_ts()
        max_timestamp = max_ts.timestamp
        interval = self.index_interval_bytes
        since_entry = self.bytes_since_last_index_entry
        for b in batches:
            if b.max_timestamp > max_timestamp:
                max_timestamp = b.max_timestamp
                max_ts = _new(TimestampOffset, (max_timestamp, b.base_offset + b.last_offset_delta))
            if since_entry > interval:
                offset_index.append(b.base_offset + b.last_offset_delta, physical + b.position)
                time_index.maybe_append(max_timestamp, max_ts.offset)
                since_entry = 0
            since_entry += b.size
        self.bytes_since_last_index_entry = since_entry
        self._max_ts_and_offset = max_ts

    # -- read --

    def translate_offset(self, offset: int, starting_file_position: int = 0) -> LogOffsetPosition | None:
        """The first batch whose last offset >= ``offset``: index lookup, then a header scan.

        The scan steps over known damaged ranges: an offset due inside one raises
        CorruptRecordError, a later one is found in the valid batches after it. A scan that
        meets damage not known yet records it (``_find_damage``) and looks again."""
        start = max(self.offset_index.lookup(offset).position, starting_file_position)
        try:
            return self._search(offset, start)
        except CorruptRecordError:
            if not self._find_damage(start):
                raise
        return self._search(offset, start)

    def _search(self, offset: int, start: int) -> LogOffsetPosition | None:
        pos = start
        for d in self.damaged:
            if d.end <= pos:
                continue
            if d.position > pos:
                found = self.log.search_for_offset_with_size(offset, pos, d.position)
                if found is not None:
                    return found
            if offset < d.next_offset:
                raise CorruptRecordError(
                    f"offset {offset} of {self.log.path} lies in damaged bytes at positions {d.position}-{d.end}"
                    f" (offsets {d.first_offset}..{d.next_offset - 1} were due there)")
            pos = d.end
        return self.log.search_for_offset_with_size(offset, pos)

    def _find_damage(self, start: int) -> bool:
        """Walk the framing from ``start`` (a batch boundary) to the end; record each damaged
        range found that is not known yet. True when one was added."""
        before = len(self.damaged)
        tail: list[SkippedBatch] = []
        for _ in self._walk(start, self.log.size, tail):
            pass
        if tail:  # damage with no valid batch after it in this segment: up to the file's end
            self._add_damage(tail, self.log.size, self.next_segment_base)
        return len(self.damaged) > before

    def damage_after(self, position: int) -> DamagedRange | None:
        """The first known damaged range starting at or after ``position``."""
        for d in self.damaged:
            if d.position >= position:
                return d
        return None

    def read(
        self,
        start_offset: int,
        max_size: int,
        max_position: int | None = None,
        min_one_batch: bool = False,
    ) -> FetchDataInfo | None:
        """A slice starting at the batch that holds ``start_offset`` (or the next one).

        At most ``max_size`` bytes (raised to the whole first batch with ``min_one_batch``),
        ending before ``max_position`` (default: the segment size). None when no batch at or
        above ``start_offset`` exists in this segment. The slice may end mid-batch.
        """
        if max_size < 0:
            raise ValueError(f"invalid max size {max_size} for log read from segment {self.log.path}")
        found = self.translate_offset(start_offset)
        if found is None:
            return None
        start = found.position
        adjusted = max(max_size, found.size) if min_one_batch else max_size
        if max_position is None:
            max_position = self.log.size
        if self.damaged:  # the slice ends where damage starts: the batches before it stay readable
            d = self.damage_after(start)
            if d is not None:
                max_position = min(max_position, d.position)
        if adjusted == 0:
            return FetchDataInfo(start_offset, self.base_offset, start, FileSlice(self.log.fd, start, 0))
        fetch_size = min(max_position - start, adjusted)
        return FetchDataInfo(
            start_offset, self.base_offset, start, self.log.slice(start, fetch_size), adjusted < found.size
        )

    def fetch_upper_bound_offset(self, start: OffsetPosition, fetch_size: int) -> int | None:
        found = self.offset_index.fetch_upper_bound_offset(start, fetch_size)
        return None if found is None else found.offset

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int | None = None) -> TimestampAndOffset | None:
        """First record with timestamp >= ``timestamp`` and offset >= ``starting_offset``."""
        if starting_offset is None:
            starting_offset = self.base_offset
        entry = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(entry.offset, starting_offset)).position
        return self.log.search_for_timestamp(timestamp, position, starting_offset)

    def read_next_offset(self) -> int:
        """The offset after the last valid batch (base offset when empty); scans from the last
        index entry, stepping over damage."""
        start = self.offset_index.lookup(self.offset_index.last_offset).position
        next_offset = self.base_offset
        for batch in self._walk(start, self.log.size, []):
            next_offset = batch.last_offset + 1
        return next_offset

    def last_index_entry_is_consistent(self) -> bool:
        """Whether the last offset index entry points inside the .log at a batch whose last
        offset is the entry's key (True for an empty index)."""
        idx = self.offset_index
        if idx.entries == 0:
            return True
        offset, position = idx.entry(idx.entries - 1)
        if position < 0 or position >= self.log.size:
            return False
        for _, h in self.log.batch_headers(position):
            return h.last_offset == offset
        return False

    # -- recovery and truncation --

    #: the next segment's base offset, set by the Log for every segment but the active one (0):
    #: the offset after a damaged range that reaches the end of an inactive segment's file
    #: (such a range in the active segment is a torn tail, truncated instead)
    next_segment_base = 0

    def valid_batches(self, start: int = 0, end: int | None = None) -> Iterator[ValidBatch]:
        """The batches in ``[start, end)`` (``start`` a batch boundary) whose framing holds,
        stepping over damage (recorded in ``damaged``); no CRC check."""
        return self._walk(start, self.log.size if end is None else end, [], end)

    def _walk(self, start: int, verify_from: int, tail: list[SkippedBatch],
              end: int | None = None) -> Iterator[ValidBatch]:
        """The valid batches from ``start`` (``scan_segment``; CRC-checked from ``verify_from``).
        Damaged bytes followed by a valid batch are recorded in ``damaged``; damaged bytes at
        the end of the file are left in ``tail`` for the caller to truncate or record."""
        pending: list[SkippedBatch] = []
        for item in scan_segment(self.log, start, min_offset=self.base_offset, end=end,
                                 max_offset=self.base_offset + _INT32_MAX + 1, verify_from=verify_from):
            if isinstance(item, SkippedBatch):
                pending.append(item)
                continue
            if pending:
                self._add_damage(pending, item.position, item.base_offset)
                pending = []
            yield item
        tail.extend(pending)

    def _add_damage(self, skipped: list[SkippedBatch], end: int, next_offset: int) -> None:
        first = skipped[0]
        if any(d.position == first.position for d in self.damaged):
            return
        d = DamagedRange(first.position, end, first.expected_offset, max(next_offset, first.expected_offset))
        self.damaged.append(d)
        self.damaged.sort()
        if d.position in self._damage_logged:  # found again by a rebuild (recover after check_framing)
            return
        self._damage_logged.add(d.position)
        log.error("Damaged batches in %s: %d bytes at position %d, where offsets %d..%d were due, are skipped by"
                  " readers (%s)", self.log.path, d.end - d.position, d.position, d.first_offset, d.next_offset - 1,
                  "; ".join(s.reason for s in skipped[:3]))

    def check_framing(self, verify_from: int | None = None) -> int:
        """The start-up check of an active segment after a clean shutdown, which Kafka skips
        (it trusts the files then): walk every batch's framing (one header read per batch, in
        large reads), CRC-check the batches from ``verify_from`` (default: the last offset
        index entry, the part written since the last flush a power loss can damage), record
        damaged ranges, and truncate a damaged tail (junk or zeros appended, a torn last batch)
        as recovery does. Returns the number of bytes truncated; the indexes are rebuilt when
        any damage was found."""
        if verify_from is None:
            idx = self.offset_index
            verify_from = idx.entry(idx.entries - 1)[1] if idx.entries else 0
        # The common case, nothing damaged, costs one length read per batch before verify_from
        # (about 0.4 us a batch); the CRC-checked walk of the tail starts at a batch boundary
        # (an index entry). Damage anywhere sends the segment to recover(), which finds it.
        size = self.log.size
        if verify_from <= size and framing_holds(self.log, 0, verify_from, self.base_offset):
            tail: list[SkippedBatch] = []
            before = len(self.damaged)
            for _ in self._walk(verify_from, verify_from, tail):
                pass
            if not tail and len(self.damaged) == before:
                return 0
        return self.recover()

    def recover(self) -> int:
        """Rebuild both indexes from the ``.log``, validating every batch by CRC (Kafka's
        recovery), with one difference: a damaged batch followed by valid ones costs only
        itself (it is recorded in ``damaged`` and the batches after it are kept, where Kafka
        truncates there). Damaged bytes at the end of the file (a torn write, junk appended)
        are truncated, unless ``next_segment_base`` says later segments follow: then
        they are recorded too. Returns the number of bytes truncated."""
        offset_index = self.offset_index
        time_index = self.time_index
        offset_index.reset()
        time_index.reset()
        self.damaged = []
        valid_bytes = 0
        last_index_entry = 0
        max_ts = _UNKNOWN
        interval = self.index_interval_bytes
        tail: list[SkippedBatch] = []
        for batch in self._walk(0, 0, tail):
            pos, last, ts = batch.position, batch.last_offset, batch.fields[8]
            if ts > max_ts.timestamp:
                max_ts = TimestampOffset(ts, last)
            if pos - last_index_entry > interval:
                offset_index.append(last, pos)
                time_index.maybe_append(max_ts.timestamp, max_ts.offset)
                last_index_entry = pos
            valid_bytes = pos + len(batch.data)
        if tail and self.next_segment_base > self.base_offset:
            self._add_damage(tail, self.log.size, self.next_segment_base)
            valid_bytes = self.log.size
        elif tail:
            log.warning("Found invalid messages in log segment %s at byte offset %d: %s",
                        self.log.path, tail[0].position, tail[0].reason)
        truncated = self.log.size - valid_bytes
        if truncated > 0:
            log.warning("Truncated %d invalid bytes at the end of segment %s during recovery",
                        truncated, self.log.path)
        self.log.truncate_to(valid_bytes)
        self.log.trim()
        # Entries past the valid data go; missing ones are re-added by the producer-state replay.
        self.txn_index.truncate_to(self.read_next_offset() if valid_bytes else self.base_offset)
        self._max_ts_and_offset = max_ts if max_ts is not _UNKNOWN else TimestampOffset(-1, self.base_offset)
        offset_index.trim_to_valid_size()
        if max_ts is not _UNKNOWN:
            time_index.maybe_append(max_ts.timestamp, max_ts.offset, skip_full_check=True)
        time_index.trim_to_valid_size()
        self.bytes_since_last_index_entry = valid_bytes - last_index_entry
        return truncated

    def truncate_to(self, offset: int) -> int:
        """Remove every batch with offsets >= ``offset`` (a batch is kept or dropped whole:
        the log is cut at the start of the first batch whose last offset >= offset).
        Returns the number of log bytes removed."""
        mapping = self.translate_offset(offset)
        offset_index = self.offset_index
        time_index = self.time_index
        offset_index.truncate_to(offset)
        time_index.truncate_to(offset)
        offset_index.resize(offset_index.max_index_size)
        time_index.resize(time_index.max_index_size)
        truncated = 0 if mapping is None else self.log.truncate_to(mapping.position)
        self.txn_index.truncate_to(offset)
        if self.log.size == 0:
            self.created_ms = now_ms()
            self._rolling_based_timestamp = None
        self.bytes_since_last_index_entry = 0
        if self.max_timestamp_so_far >= 0:
            self._max_ts_and_offset = self._read_largest_timestamp()
        return truncated

    def _read_largest_timestamp(self) -> TimestampOffset:
        last = self.time_index.last_entry
        position = self.offset_index.lookup(last.offset).position
        after = self.log.largest_timestamp_after(position)
        if after.timestamp > last.timestamp:
            return TimestampOffset(after.timestamp, after.offset)
        return last

    # -- roll, flush, close --

    def _load_first_batch_timestamp(self) -> None:
        if self._rolling_based_timestamp is None:
            for _, h in self.log.batch_headers(0):
                self._rolling_based_timestamp = h.max_timestamp
                break

    def time_waited_for_roll(self, now_ms: int, message_timestamp: int) -> int:
        """Record-time age of the segment (first batch's timestamp), else wall-clock age."""
        self._load_first_batch_timestamp()
        ts = self._rolling_based_timestamp
        if ts is not None and ts >= 0:
            return message_timestamp - ts
        return now_ms - self.created_ms

    def roll_needed(self, max_segment_bytes: int, max_segment_ms: int, messages_size: int,
                    max_timestamp_in_messages: int, max_offset_in_messages: int, now_ms: int) -> bool:
        """Kafka's roll conditions (shouldRoll), cheapest first: size, age, full indexes,
        relative offset overflow."""
        size = self.log._size
        if size > max_segment_bytes - messages_size:
            return True
        if size > 0 and self.time_waited_for_roll(now_ms, max_timestamp_in_messages) \
                > max_segment_ms - self.rolling_jitter_ms:
            return True
        if self._offset_index.get().is_full() or self._time_index.get().is_full():
            return True
        return not 0 <= max_offset_in_messages - self.base_offset <= _INT32_MAX

    def on_become_inactive_segment(self) -> None:
        """Write the final time-index entry and trim the indexes and the log file."""
        ts = self._max_ts()
        if ts.timestamp >= 0:
            self.time_index.maybe_append(ts.timestamp, ts.offset, skip_full_check=True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()
        self.log.trim()
        # Release the inactive indexes' mappings and descriptors (each mmap holds a dup of its
        # fd): a broker with thousands of segments would otherwise keep 3 fds per segment.
        # They reopen lazily, read-write at their trimmed size, when a read reaches them.
        self._offset_index.close()
        self._time_index.close()
        self.log.release()  # its .log reopens on demand, under the open-files LRU

    def resize_indexes(self, size: int) -> None:
        self.offset_index.resize(size)
        self.time_index.resize(size)

    def sanity_check(self) -> None:
        if not os.path.exists(self._offset_index.path):
            raise FileNotFoundError(f"offset index file {self._offset_index.path} does not exist")
        self.offset_index.sanity_check()
        self.time_index.sanity_check()

    def flush(self) -> None:
        """fsync the .log and msync both index mappings."""
        self.log.flush()
        self._offset_index.flush()
        self._time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        """Final time-index entry, then close indexes (trimming them) and the log."""
        if not self.log.closed:
            try:
                if self._max_ts_and_offset is not _UNKNOWN and self._max_ts_and_offset.timestamp >= 0:
                    ts = self._max_ts_and_offset
                    self.time_index.maybe_append(ts.timestamp, ts.offset, skip_full_check=True)
            except Exception as e:  # noqa: BLE001 - Kafka swallows this too: closing must not fail on it
                log.warning("could not write the final time index entry of %s: %s", self.log.path, e)
        self._offset_index.close()
        self._time_index.close()
        self.txn_index.close()
        self.log.close()

    def close_handlers(self) -> None:
        self._offset_index.close_handler()
        self._time_index.close_handler()
        self.txn_index.close()
        self.log.close_handlers()

    def delete_if_exists(self) -> None:
        self._offset_index.delete_if_exists()
        self._time_index.delete_if_exists()
        self.txn_index.delete_if_exists()
        self.log.delete_if_exists()

    def change_file_suffixes(self, old_suffix: str, new_suffix: str) -> None:
        def replace(path: str) -> str:
            if not path.endswith(old_suffix):
                raise ValueError(f"{path} does not end with {old_suffix!r}")
            return path[: len(path) - len(old_suffix)] + new_suffix

        self.log.rename_to(replace(self.log.path))
        self._offset_index.rename_to(replace(self._offset_index.path))
        self._time_index.rename_to(replace(self._time_index.path))
        self.txn_index.rename_to(replace(self.txn_index.path))

    @property
    def last_modified_ms(self) -> int:
        return int(os.stat(self.log.path).st_mtime * 1000)

    def largest_timestamp(self) -> int:
        """Max record timestamp, falling back to the .log file's mtime (retention.ms)."""
        ts = self.max_timestamp_so_far
        return ts if ts >= 0 else self.last_modified_ms

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.log.size})"


def _walk_headers(view: memoryview) -> list[BatchMetadata]:
    """Describe the batches of an append buffer from their headers (no CRC check, no record
    decoding). A short tail or a size field below the header size is refused (it would
    otherwise raise struct.error or, for a size of 0, loop forever)."""
    n = len(view)
    batches: list[BatchMetadata] = []
    pos = 0
    while pos < n:
        if n - pos < RECORDS_OFFSET:
            raise CorruptRecordError("append buffer does not end on a batch boundary")
        base, length = _BATCH_FIELDS.unpack_from(view, pos)
        size = length + LOG_OVERHEAD
        if size < RECORDS_OFFSET or pos + size > n:
            raise CorruptRecordError(f"append buffer has a batch of {size} bytes at {pos}; {n - pos} bytes left")
        last_delta = _I32.unpack_from(view, pos + LAST_OFFSET_DELTA_OFFSET)[0]
        max_ts = _I64.unpack_from(view, pos + MAX_TIMESTAMP_OFFSET)[0]
        count = _I32.unpack_from(view, pos + RECORDS_COUNT_OFFSET)[0]
        batches.append(BatchMetadata(pos, size, base, last_delta, count, max_ts, 0, -1, -1, -1))
        pos += size
    return batches
