"""Cleaner: one cleaning of one log (Kafka's Cleaner), run by a cleaner thread or by its worker
process (manager.py, worker.py), from a ``CleaningInput`` taken from the log when it begins.

A log is split at the **first dirty offset** (the cleaner checkpoint: everything below was
cleaned before) and the **first uncleanable offset** (the base of the segment holding the
smallest of: the active segment's base, the last stable offset — so no open transaction is
ever rewritten — and the first segment whose largest timestamp is younger than
``min.compaction.lag.ms``; manager.py). It is always a segment's base offset. A cleaning:

1. builds the offset map (offset_map.py): key -> last offset over the dirty segments in
   ``[first dirty, first uncleanable)``, headers and keys only, until the map is full; the map
   then covers ``[.., map.latest_offset]`` and the cleaning ends at ``end = latest + 1``.
   Records of aborted transactions are not mapped (transactions.py): an aborted record must
   never make an older committed one of its key look superseded;
2. groups the segments below ``end`` (from the log's first segment: the clean part is recopied
   too, so that records superseded by the new dirty ones go) into runs whose ``.log`` and
   index sizes stay within ``segment.bytes`` / ``segment.index.bytes`` and whose offsets fit
   one segment (Kafka's groupSegmentsBySize);
3. for each group, writes the kept batches (batch_filter.py; batches of aborted
   transactions lose all their records) into a new segment with the group's first base
   offset and files ``*.cleaned`` (``.log``, ``.index``, ``.timeindex``, and ``.txnindex``
   holding the old segments' aborted-transaction entries: every marker is kept), flushes
   it, gives it the last old segment's modification time, removes older ``.deleted`` files
   with the names the old segments are about to take, and has it swapped in (``SwapFn``; the
   broker runs ``Log.replace_segments`` on its event loop: ``.cleaned`` -> ``.swap`` -> final
   name, old segments -> ``.deleted``), then fsyncs the directory;
4. returns ``end``: the manager writes it to ``cleaner-offset-checkpoint`` (the next first
   dirty offset).

Reads of the old segments go through descriptors of the cleaner's own (opened read-only per
segment): a retention pass renaming or deleting a segment meanwhile makes the swap refuse
(``LogCleaningAbortedError``), never a torn read. Read and written bytes pass the throttler.
``check_done`` is called between batches and raises LogCleaningAbortedError when the log was
closed or deleted, or the cleaner stops.
"""

from __future__ import annotations

import logging
import os
import time
from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from client.records.batch import CONTROL_FLAG_MASK, HEADER_STRUCT, RECORDS_OFFSET, TRANSACTIONAL_FLAG_MASK
from client.records.codec import decode_lists
from client.records.compression import decompress

from ..config import LogConfig
from ..errors import LogCleaningAbortedError
from ..file_records import FileRecords
from ..fileutil import fsync_path
from ..log import Log
from ..segment import (
    CLEANED_FILE_SUFFIX,
    DELETED_FILE_SUFFIX,
    LogSegment,
    log_file_name,
    offset_index_file_name,
    time_index_file_name,
)
from ..transaction_index import AbortedTxn, txn_index_file_name
from .batch_filter import BatchContext, filter_batch
from .offset_map import OffsetMap
from .throttler import Throttler
from .transactions import CleanedTransactions

__all__ = ["Cleaner", "CleanerStats", "CleaningInput", "LogToClean", "SegmentFile", "SwapFn", "run_inline",
           "swap_into", "take_input"]

logger = logging.getLogger(__name__)
_INT32_MAX = 2**31 - 1


def run_inline(fn: Callable[[], Any]) -> Any:
    """The default way to run the swap: in the calling thread (tools, tests, a process with
    no event loop). The broker passes one that runs it on its event loop."""
    return fn()


class LogToClean(NamedTuple):
    """A log the manager chose, with its dirty range and how dirty it is."""

    topic_partition: tuple[str, int]
    log: Log
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool = False

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


class CleanerStats:
    """What one cleaning did (logged by the manager, as Kafka's recordStats)."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.map_done = self.start
        self.end = self.start
        self.bytes_read = 0
        self.bytes_written = 0
        self.map_bytes_read = 0
        self.map_messages_read = 0
        self.messages_read = 0
        self.messages_written = 0
        self.invalid_messages = 0
        self.buffer_utilization = 0.0
        self.segments_swapped = 0

    @property
    def elapsed_s(self) -> float:
        return self.end - self.start

    def summary(self) -> str:
        mb = 1024 * 1024
        secs = max(self.elapsed_s, 1e-9)
        reduction = 100.0 * (1 - self.bytes_written / self.bytes_read) if self.bytes_read else 0.0
        return (f"{self.bytes_read / mb:.1f} MB of log processed in {secs:.2f} s ({self.bytes_read / mb / secs:.1f}"
                f" MB/s); map: {self.map_bytes_read / mb:.1f} MB in {self.map_done - self.start:.2f} s, buffer"
                f" utilization {100 * self.buffer_utilization:.1f}%; {self.messages_read} -> {self.messages_written}"
                f" messages, {reduction:.1f}% size reduction; {self.segments_swapped} segments swapped in")


class SegmentFile(NamedTuple):
    """One old segment as a cleaning sees it: its ``.log`` path and the size to read (the
    segment's size when the cleaning began; an inactive segment never grows)."""

    base_offset: int
    path: str
    size: int


class CleaningInput(NamedTuple):
    """Everything one cleaning reads from the log, taken when it begins (``take_input``):
    plain, picklable data, so that a cleaner worker process (worker.py) gets it as it is.
    ``segments``: from the log's first segment to the one at ``first_uncleanable_offset``
    (which only ends the last group). ``map_aborted`` / ``aborted``: the aborted
    transactions with data in [first dirty, first uncleanable) and in [first segment, first
    uncleanable): one set for the map, one for the whole cleaning, as Kafka."""

    directory: str
    config: LogConfig
    segments: list[SegmentFile]
    first_dirty_offset: int
    first_uncleanable_offset: int
    active_producers: dict[int, int]
    map_aborted: list[AbortedTxn]
    aborted: list[AbortedTxn]
    now_ms: int


#: Hands a written, flushed ``.cleaned`` segment over to be swapped in for the old segments
#: of its group; raises LogCleaningAbortedError (nothing swapped) when the log refuses it.
SwapFn = Callable[[LogSegment, list[SegmentFile]], None]


def take_input(ltc: LogToClean, now_ms: int) -> tuple[CleaningInput, dict[int, LogSegment]]:
    """``ltc``'s cleaning input, and its old segments by base offset (the live objects the
    swap checks against the log's map). Each read takes the log's lock; the segments are
    inactive and never change, so the pieces agree (a retention or truncation meanwhile makes
    the swap refuse)."""
    log, upper = ltc.log, ltc.first_uncleanable_offset
    live = log.segment_list(None, upper + 1)
    files = [SegmentFile(s.base_offset, s.log.path, s.size) for s in live]
    first = files[0].base_offset if files else upper
    map_aborted = log.aborted_transactions_locked(ltc.first_dirty_offset, upper) if files else []
    aborted = log.aborted_transactions_locked(first, upper) if files else []
    inp = CleaningInput(log.dir, log.config, files, ltc.first_dirty_offset, upper,
                        log.last_records_of_active_producers(), map_aborted, aborted, now_ms)
    return inp, {s.base_offset: s for s in live}


def swap_into(log: Log, live: dict[int, LogSegment], run_swap: Callable[[Callable[[], Any]], Any],
              pause_at: Callable[[str], None] | None) -> SwapFn:
    """The swap of one group, run where ``run_swap`` runs it (the broker: its event loop; the
    log line is written here, not there)."""
    def swap(cleaned: LogSegment, group: list[SegmentFile]) -> None:
        old = [live[f.base_offset] for f in group]
        run_swap(lambda: log.replace_segments(cleaned, old, [f.size for f in group], pause_at))
        logger.info("%s: swapped in cleaned segment %d (%d bytes) for segments %s", log.dir, cleaned.base_offset,
                    cleaned.size, [f.base_offset for f in group])
    return swap


class Cleaner:
    """One cleaning at a time over a ``CleaningInput``; the same code runs in a cleaner thread
    (the log's objects at hand) and in a worker process (worker.py: only the files)."""

    def __init__(self, offset_map: OffsetMap, throttler: Throttler, *,
                 check_done: Callable[[], None] = lambda: None,
                 io_buffer_size: int = 512 * 1024,
                 pause_at: Callable[[str], None] | None = None) -> None:
        self.offset_map = offset_map
        self.throttler = throttler
        self.check_done = check_done
        self.io_buffer_size = io_buffer_size
        #: crash tests: called at each step of a clean ("cleaned-writing", "swapped"; the swap
        #: itself calls it at "swap-renamed" and "old-renamed"); None in the broker
        self.pause_at = pause_at

    def _pause(self, step: str) -> None:
        if self.pause_at is not None:
            self.pause_at(step)

    # ------------------------------------------------------------------ the cleaning

    def clean(self, inp: CleaningInput, swap: SwapFn) -> tuple[int, CleanerStats]:
        """Clean the log ``inp`` describes (module docstring), handing each group's cleaned
        segment to ``swap``; returns the first offset not cleaned."""
        stats = CleanerStats()
        upper = inp.first_uncleanable_offset
        self.build_offset_map(inp, stats)
        end = self.offset_map.latest_offset + 1
        stats.map_done = time.monotonic()
        cfg = inp.config
        ctx = BatchContext(self.offset_map, inp.now_ms, cfg.delete_retention_ms, inp.active_producers,
                           64 * max(cfg.max_message_bytes, 1 << 20))
        # The segments up to the first uncleanable one: the ones below ``end`` are cleaned, the
        # next one's base ends the last group (``upper`` is a segment's base).
        following = {s.base_offset: n.base_offset for s, n in zip(inp.segments, inp.segments[1:])}
        segments = [s for s in inp.segments if s.base_offset < end]
        txns = CleanedTransactions(inp.aborted if segments else ())
        for group in group_segments_by_size(segments, cfg.segment_bytes, cfg.segment_index_bytes, upper):
            lo, hi = group[0].base_offset, following.get(group[-1].base_offset, upper)
            self.clean_segments(inp, group, ctx, stats, txns, [e for e in inp.aborted if lo <= e.last_offset < hi],
                                swap)
        stats.buffer_utilization = self.offset_map.utilization
        stats.end = time.monotonic()
        return end, stats

    def build_offset_map(self, inp: CleaningInput, stats: CleanerStats) -> None:
        """Map the keys of the batches in ``[first dirty, first uncleanable)`` (Kafka's
        buildOffsetMap)."""
        m = self.offset_map
        m.clear()
        start, end = inp.first_dirty_offset, inp.first_uncleanable_offset
        dirty = segments_in(inp.segments, start, end)
        txns = CleanedTransactions(inp.map_aborted if dirty else ())
        for i, seg in enumerate(dirty):
            next_start = dirty[i + 1].base_offset if i + 1 < len(dirty) else end
            if self._map_segment(inp, seg, start, next_start, stats, txns):
                logger.debug("%s: offset map full in segment %d", inp.directory, seg.base_offset)
                return

    def _map_segment(self, inp: CleaningInput, seg: SegmentFile, start: int, next_start: int, stats: CleanerStats,
                     txns: CleanedTransactions) -> bool:
        """Add ``seg``'s keys at or above ``start``, except aborted transactions' (Kafka's
        buildOffsetMapForSegment); True when the map filled up."""
        m = self.offset_map
        max_decompressed = 64 * max(inp.config.max_message_bytes, 1 << 20)
        with _open_for_cleaning(seg) as records:
            read = 0
            for _pos, batch in records.iter_batch_views(0, seg.size):
                self.check_done()
                fields = HEADER_STRUCT.unpack_from(batch, 0)
                base, attributes, last_delta, count = fields[0], fields[5], fields[6], fields[12]
                last = base + last_delta
                read += len(batch)
                if last < start:
                    continue
                if base >= next_start:
                    break  # past the range to map (only when next_start is not a segment's base)
                if txns.has_aborted and _is_aborted(txns, fields):
                    stats.map_messages_read += count
                elif not attributes & CONTROL_FLAG_MASK and count:  # not a control batch, not empty
                    codec = attributes & 0x07
                    section = batch[RECORDS_OFFSET:]
                    data = decompress(codec, section, max_decompressed) if codec else bytes(section)
                    offsets, _, keys, _, _ = decode_lists(data, count, base, fields[7])
                    for off, key in zip(offsets, keys, strict=True):
                        if key is not None and off >= start and not m.put(key, off):
                            stats.map_bytes_read += read
                            return True
                    stats.map_messages_read += count
                m.update_latest_offset(last)
                if read >= self.io_buffer_size:
                    self.throttler.maybe_throttle(read)
                    stats.map_bytes_read += read
                    read = 0
            stats.map_bytes_read += read
            self.throttler.maybe_throttle(read)
        m.update_latest_offset(next_start - 1)  # offset gaps: the segment ends where the next starts
        return False

    def clean_segments(self, inp: CleaningInput, group: list[SegmentFile], ctx: BatchContext, stats: CleanerStats,
                       txns: CleanedTransactions, txn_entries: Sequence[AbortedTxn], swap: SwapFn) -> None:
        """Write ``group``'s kept batches into one ``.cleaned`` segment and have it swapped in.
        ``txns``: the cleaning's aborted transactions, fed in offset order across groups;
        ``txn_entries``: those whose ABORT marker lies in ``group``: every marker is kept, so
        they make the new segment's ``.txnindex``, unchanged."""
        cfg = inp.config
        directory = inp.directory
        base = group[0].base_offset
        for path in (log_file_name(directory, base, CLEANED_FILE_SUFFIX),
                     offset_index_file_name(directory, base, CLEANED_FILE_SUFFIX),
                     time_index_file_name(directory, base, CLEANED_FILE_SUFFIX),
                     txn_index_file_name(directory, base, CLEANED_FILE_SUFFIX)):
            if os.path.exists(path):
                os.unlink(path)  # left by an aborted cleaning
        cleaned = LogSegment.open_with_config(directory, base, cfg, file_suffix=CLEANED_FILE_SUFFIX)
        upper = inp.first_uncleanable_offset
        try:
            for i, seg in enumerate(group):
                self._clean_into(seg, cleaned, ctx, upper, i == len(group) - 1, stats, txns)
            for e in txn_entries:
                cleaned.txn_index.append(e)
            cleaned.on_become_inactive_segment()
            cleaned.flush()
            mtime = os.stat(group[-1].path).st_mtime
            os.utime(cleaned.log.path, (mtime, mtime))
            self.check_done()
            _clear_deleted_names(group)
            swap(cleaned, group)
        except BaseException:
            cleaned.delete_if_exists()
            raise
        fsync_path(directory)
        stats.segments_swapped += len(group)
        self._pause("swapped")

    def _clean_into(self, seg: SegmentFile, dest: LogSegment, ctx: BatchContext, upper: int,
                    last_of_group: bool, stats: CleanerStats, txns: CleanedTransactions) -> None:
        out = bytearray()
        written_any = False
        read = 0
        feed = txns.has_aborted
        size = seg.size
        with _open_for_cleaning(seg) as records:
            for pos, batch in records.iter_batch_views(0, size):
                self.check_done()
                fields = HEADER_STRUCT.unpack_from(batch, 0)
                nxt = fields[0] + fields[6] + 1
                retain_empty = nxt == upper or (last_of_group and pos + len(batch) == size)
                result = filter_batch(batch, ctx, retain_empty=retain_empty,
                                      aborted=feed and _is_aborted(txns, fields))
                read += len(batch)
                stats.bytes_read += len(batch)
                stats.messages_read += result.records_read
                stats.messages_written += result.records_kept
                stats.invalid_messages += result.invalid
                if result.output is not None:
                    out += result.output
                if len(out) >= self.io_buffer_size or read >= self.io_buffer_size:
                    written_any |= self._flush_out(dest, out, stats)
                    self.throttler.maybe_throttle(read)
                    read = 0
                    if written_any:
                        self._pause("cleaned-writing")
            written_any |= self._flush_out(dest, out, stats)
            self.throttler.maybe_throttle(read)
        if written_any:
            self._pause("cleaned-writing")

    def _flush_out(self, dest: LogSegment, out: bytearray, stats: CleanerStats) -> bool:
        if not out:
            return False
        dest.append(bytes(out))
        stats.bytes_written += len(out)
        self.throttler.maybe_throttle(len(out))
        out.clear()
        return True


# -------------------------------------------------------------------- helpers

def _is_aborted(txns: CleanedTransactions, fields: tuple[int, ...]) -> bool:
    """Feed the batch with header ``fields`` to ``txns``: True for data of an aborted transaction."""
    base, attributes, pid = fields[0], fields[5], fields[9]
    if attributes & CONTROL_FLAG_MASK:
        txns.on_control_batch(pid, base + fields[6])
        return False
    return txns.on_data_batch(pid, bool(attributes & TRANSACTIONAL_FLAG_MASK), base, base + fields[6])


class _open_for_cleaning:  # a context manager used as a function
    """A read-only descriptor of the cleaner's own on ``seg``'s ``.log``: closed at exit. A
    file renamed or removed since the cleaning began aborts it."""

    def __init__(self, seg: SegmentFile) -> None:
        self.seg = seg
        self.records: FileRecords | None = None

    def __enter__(self) -> FileRecords:
        try:
            self.records = FileRecords.open(self.seg.path, writable=False)
        except FileNotFoundError:
            raise LogCleaningAbortedError(f"segment {self.seg.path} went away during cleaning") from None
        return self.records

    def __exit__(self, *exc: object) -> None:
        if self.records is not None:
            self.records.close_handlers()


def _clear_deleted_names(group: list[SegmentFile]) -> None:
    """Remove the ``.deleted`` files (an earlier swap's or retention's, still waiting for
    ``file.delete.delay.ms``) that have the names the swap is about to give ``group``'s
    files. A rename onto an existing file frees that file's blocks inside the rename, and the
    swap runs on the event loop: the loop would wait for the filesystem to free a whole
    segment, here a cleaner thread or process does. Readers still sending from those files
    hold descriptors, which outlive the unlink;
    the log's delayed delete of that older segment then finds its name gone (or, as a rename
    onto it would have made it, taken by the newer one)."""
    for f in group:
        directory = os.path.dirname(f.path)
        for path in (log_file_name(directory, f.base_offset, DELETED_FILE_SUFFIX),
                     offset_index_file_name(directory, f.base_offset, DELETED_FILE_SUFFIX),
                     time_index_file_name(directory, f.base_offset, DELETED_FILE_SUFFIX),
                     txn_index_file_name(directory, f.base_offset, DELETED_FILE_SUFFIX)):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


def segments_in(segments: list[SegmentFile], start: int, end: int) -> list[SegmentFile]:
    """The ones of ``segments`` (ordered) holding offsets in ``[start, end)``: from the one
    whose base is the floor of ``start`` (the first one when none is), while base < ``end``
    (Log.segment_list over a snapshot)."""
    first = max(0, bisect_right([s.base_offset for s in segments], start) - 1)
    return [s for s in segments[first:] if s.base_offset < end]


def group_segments_by_size(segments: list[SegmentFile], max_size: int, max_index_size: int,
                           first_uncleanable_offset: int) -> list[list[SegmentFile]]:
    """Consecutive runs of ``segments`` whose ``.log`` sizes add up to at most ``max_size``,
    whose index file sizes each add up to at most ``max_index_size``, and whose offsets stay
    within 2^31 - 1 of the run's first base offset (an empty segment is always taken)."""
    def index_sizes(seg: SegmentFile) -> tuple[int, int]:
        try:
            return (os.path.getsize(offset_index_file_name(os.path.dirname(seg.path), seg.base_offset)),
                    os.path.getsize(time_index_file_name(os.path.dirname(seg.path), seg.base_offset)))
        except OSError:
            return 0, 0

    groups: list[list[SegmentFile]] = []
    i = 0
    n = len(segments)
    while i < n:
        group = [segments[i]]
        log_size = segments[i].size
        idx, tidx = index_sizes(segments[i])
        i += 1
        while i < n:
            seg = segments[i]
            s_idx, s_tidx = index_sizes(seg)
            last_offset = (segments[i + 1].base_offset if i + 1 < n else first_uncleanable_offset) - 1
            if (log_size + seg.size > max_size or idx + s_idx > max_index_size or tidx + s_tidx > max_index_size
                    or (seg.size > 0 and last_offset - group[0].base_offset > _INT32_MAX)):
                break
            group.append(seg)
            log_size += seg.size
            idx += s_idx
            tidx += s_tidx
            i += 1
        groups.append(group)
    return groups
