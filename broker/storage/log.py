"""Log: one partition — its segments in a SkipListMap keyed by base offset (Kafka's
UnifiedLog + LocalLog, for a single-replica broker). ``Log.load`` opens one from its directory
through log_loader.py (Kafka's LogLoader: temporary files, swaps, recovery, producer state).

Offsets: ``log_start_offset`` <= every readable offset < ``log_end_offset`` (LEO). With one
replica the high watermark equals the LEO. ``recovery_point``: every offset below it has been
fsync'd (``.log`` fsync + index msync); after an unclean stop only segments from
floor(recovery_point) on are re-validated.

Append: ``log_validator`` checks each producer batch (header, CRC-32C, sizes, every record
parses) and, under the lock, gives it its offsets by overwriting bytes 0-7 in place (the CRC
does not cover them, so nothing is re-encoded); the segment is handed what validation learned
(positions, offsets, timestamps) and writes the request's batches with one sequential write.
A request whose batches are not all valid writes nothing.

Threading: every method runs on the owner's thread (the broker's event loop) except
``flush``, which is designed to run in a worker thread concurrently with appends: it
snapshots the segments to flush under ``_lock`` and fsyncs outside it, so appends never wait
for the disk. One fsync per file covers every append made before it (group commit). The log
cleaner (cleaner/) reads from its own thread only what ``segment_list``,
``last_records_of_active_producers``, ``last_stable_offset_locked`` and
``aborted_transactions_locked`` hand out under ``_lock`` (inactive segments never change; a
cleaner worker process gets that as plain data and reads the segment files with its own
descriptors) and asks the owner's thread to run ``replace_segments``, the one step that
changes the map.
"""

from __future__ import annotations

import logging
import os
import struct
import threading
from collections.abc import Callable, Iterable
from typing import NamedTuple

from client.clock import now_ms
from client.records.batch import CorruptRecordError

from .config import LogConfig
from .errors import (
    KafkaStorageError,
    LogCleaningAbortedError,
    OffsetOutOfRangeError,
)
from .file_records import FileSlice, TimestampAndOffset
from .fileutil import fsync_path
from .inflation import RequestInflation
from .log_loader import LogLoader, floor_base_offset, rebuild_producer_state
from .log_validator import BatchMetadata, offsets_as_given, recompress, validate_batches
from .log_validator import assign_offsets as assign_offsets_to
from .producer_state import (
    DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    CompletedTxn,
    ProducerAppendInfo,
    ProducerStateManager,
    flush_snapshot_files,
    increment_sequence,
)
from .producer_state import BatchMetadata as ProducerBatch
from .segment import (
    CLEANED_FILE_SUFFIX,
    DELETED_FILE_SUFFIX,
    SWAP_FILE_SUFFIX,
    LogSegment,
    log_file_name,
    offset_index_file_name,
    time_index_file_name,
)
from .skiplist import SkipListMap
from .transaction_index import AbortedTxn, txn_index_file_name

__all__ = ["Log", "LogAppendInfo", "FetchResult", "EARLIEST_TIMESTAMP", "LATEST_TIMESTAMP", "MAX_TIMESTAMP",
           "EARLIEST_LOCAL_TIMESTAMP", "LATEST_TIERED_TIMESTAMP", "EARLIEST_PENDING_UPLOAD_TIMESTAMP"]

logger = logging.getLogger(__name__)
_new = tuple.__new__  # NamedTuple construction without its Python-level __new__ (log_validator._new)

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3  # KIP-734
EARLIEST_LOCAL_TIMESTAMP = -4  # KIP-405: the first offset still on local disk
LATEST_TIERED_TIMESTAMP = -5  # KIP-1005: the last offset in remote storage
EARLIEST_PENDING_UPLOAD_TIMESTAMP = -6  # KIP-1023: the first offset not yet in remote storage

_LEN_FIELDS = struct.Struct(">qi")
_I32 = struct.Struct(">i")
_Q = struct.Struct(">q")


class LogAppendInfo(NamedTuple):
    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int  # -1 unless LogAppendTime
    log_start_offset: int
    num_records: int
    valid_bytes: int


class FetchResult(NamedTuple):
    """A read: slices for sendfile (possibly from consecutive segments) and the log's offsets."""

    slices: list[FileSlice]
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    first_entry_incomplete: bool = False

    @property
    def size(self) -> int:
        return sum(s.size for s in self.slices)


class Log:
    def __init__(
        self,
        directory: str,
        topic: str,
        partition: int,
        config: LogConfig,
        segments: SkipListMap[int, LogSegment],
        *,
        log_start_offset: int,
        recovery_point: int,
        now_ms: Callable[[], int] = now_ms,
        flush_scheduler: Callable[[Log], None] | None = None,
        producer_state: ProducerStateManager | None = None,
    ) -> None:
        self.dir = directory
        self.topic = topic
        self.partition = partition
        self.config = config
        self.segments = segments
        self.log_start_offset = log_start_offset
        self.recovery_point = recovery_point
        self._now_ms = now_ms
        self._lock = threading.RLock()
        last = segments.last()
        assert last is not None, "a loaded log always has a segment"
        self._leo = last[1].read_next_offset()
        self.last_flush_ms = now_ms()
        # True at first: the directory entries of segments created before this object (a new
        # log's first segment, the ones loading created or deleted) are not known to be durable.
        # Kafka fsyncs the directory when a flushed segment's base is >= the recovery point,
        # which covers them; costs one extra directory fsync per log per process at most.
        self._dir_needs_fsync = True
        self._pending_deletes: list[tuple[int, LogSegment]] = []
        self._closed = False
        #: Called (from the append path) when the flush.messages policy asks for a flush; the
        #: broker's schedules ``flush`` in a worker thread. None = flush inline (tools, tests).
        self.flush_scheduler = flush_scheduler
        #: idempotent producers' sequences and epochs (see producer_state.py)
        self.producer_state = producer_state or ProducerStateManager(directory, partition=f"{topic}-{partition}")
        if producer_state is None:
            self.producer_state.update_map_end_offset(self._leo)

    # ---------------------------------------------------------------- loading

    @classmethod
    def load(
        cls,
        directory: str,
        topic: str,
        partition: int,
        config: LogConfig,
        *,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        had_clean_shutdown: bool = False,
        now_ms: Callable[[], int] = now_ms,
        flush_scheduler: Callable[[Log], None] | None = None,
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    ) -> Log:
        """Open (or create) the partition's log from its directory: ``log_loader.LogLoader``
        removes temporary files, completes swaps, opens the segments, recovers from the
        recovery point after an unclean shutdown and rebuilds the producer state."""
        loaded = LogLoader(directory, topic, partition, config, recovery_point=recovery_point,
                           log_start_offset=log_start_offset, had_clean_shutdown=had_clean_shutdown, now_ms=now_ms,
                           producer_id_expiration_ms=producer_id_expiration_ms).load()
        return cls(directory, topic, partition, config, loaded.segments, log_start_offset=loaded.log_start_offset,
                   recovery_point=loaded.recovery_point, now_ms=now_ms, flush_scheduler=flush_scheduler,
                   producer_state=loaded.producer_state)

    # ---------------------------------------------------------------- offsets

    @property
    def log_end_offset(self) -> int:
        return self._leo

    @property
    def high_watermark(self) -> int:
        """Single replica: everything appended is committed."""
        return self._leo

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest transaction still open here, or None."""
        return self.producer_state.first_unstable_offset

    @property
    def last_stable_offset(self) -> int:
        """Kafka's LSO: min(first unstable offset, high watermark). read_committed consumers
        read below it; it never moves back (transactions close, none opens below it)."""
        fuo = self.producer_state.first_unstable_offset
        hw = self._leo
        return hw if fuo is None or fuo > hw else fuo

    def collect_aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions with data in [fetch_offset, upper_bound), from the
        ``.txnindex`` of the segment holding ``fetch_offset`` and the ones after it (see
        transaction_index.py for the stopping rule)."""
        out: list[AbortedTxn] = []
        for _, seg in self.segments.items(floor_base_offset(self.segments, fetch_offset)):
            if seg.txn_index.collect(fetch_offset, upper_bound, out):
                break
        return out

    @property
    def active_segment(self) -> LogSegment:
        return self.segments.last_value()  # type: ignore[return-value]  # a log always has a segment

    @property
    def num_segments(self) -> int:
        return len(self.segments)

    @property
    def size(self) -> int:
        return sum(s.size for s in self.segments.values())

    @property
    def unflushed_messages(self) -> int:
        return self._leo - self.recovery_point

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise KafkaStorageError(f"log {self.topic}-{self.partition} is closed")

    # ---------------------------------------------------------------- append

    def append(self, records: bytes | bytearray | memoryview, *, assign_offsets: bool = True,
               from_coordinator: bool = False, inflation: RequestInflation | None = None) -> LogAppendInfo:
        """Validate the producer batches in ``records`` (``log_validator``), assign offsets from
        the LEO, roll if needed and append them with one write. Raises a RecordError /
        StorageError (with the Kafka error code) and writes nothing if any batch is invalid.

        ``assign_offsets=False`` is Kafka's append-as-follower: the batches keep the offsets they
        carry (at or above the LEO, increasing, gaps allowed), as a replica or a rewritten log
        holds them; it is how tests reach offset gaps and relative-offset overflow.

        ``from_coordinator``: batches the broker's coordinators write (transaction markers,
        transactional offset commits): control batches allowed, no sequence checks (Kafka's
        AppendOrigin.COORDINATOR). A marker ends its producer's open transaction here; an
        ABORT marker of a transaction that wrote data gets a ``.txnindex`` entry.

        ``append`` is ``validate_append`` (no lock, no state: a worker thread may run it, as
        the Produce handler does for compressed batches) then ``append_validated``."""
        from_client = assign_offsets and not from_coordinator
        buf, batches = self.validate_append(records, from_client=from_client, inflation=inflation)
        return self.append_validated(buf, batches, assign_offsets=assign_offsets, from_client=from_client)

    def validate_append(self, records: bytes | bytearray | memoryview, *, from_client: bool = True,
                        inflation: RequestInflation | None = None) -> tuple[bytearray | memoryview, list[BatchMetadata]]:
        """The validation half of ``append`` (``log_validator.validate_batches``, then
        ``recompress`` for a topic with its own ``compression.type``): the buffer to write and
        its batches. Reads only the config and the clock: safe off the event loop."""
        # Offsets are patched in place: a bytearray or writable memoryview (the request frame)
        # is used as is; read-only bytes are copied once.
        if isinstance(records, bytearray) or (isinstance(records, memoryview) and not records.readonly):
            buf = records
        else:
            buf = bytearray(records)
        cfg = self.config
        # The clock is read for validation only when timestamps are bounded (it is unused
        # otherwise); the append itself reads it again under the lock.
        bounded = cfg.timestamps_bounded
        batches = validate_batches(buf, cfg, from_producer=from_client, now_ms=self._now_ms() if bounded else 0,
                                   inflation=inflation, topic_partition=f"{self.topic}-{self.partition}")
        if from_client and cfg.compression_type != "producer":  # recompress would keep them as they are
            rewritten = recompress(buf, batches, cfg)
            if rewritten is not None:
                buf = rewritten
                batches = validate_batches(buf, cfg, now_ms=self._now_ms() if bounded else 0,
                                           topic_partition=f"{self.topic}-{self.partition}")
        return buf, batches

    def append_validated(self, buf: bytearray | memoryview, batches: list[BatchMetadata], *,
                         assign_offsets: bool = True, from_client: bool = True) -> LogAppendInfo:
        """The writing half of ``append``: ``buf`` and ``batches`` from ``validate_append``."""
        cfg = self.config
        has_producer = False  # a loop, not any(<generator>): most appends are one batch
        for b in batches:
            if b.producer_id >= 0:
                has_producer = True
                break
        with self._lock:
            if self._closed:
                self._check_open()
            now = self._now_ms()
            log_append_time = now if cfg.log_append_time else None
            if assign_offsets:
                appended = assign_offsets_to(buf, batches, self._leo, log_append_time)
            else:
                appended = offsets_as_given(batches, self._leo)
            assigned, first_offset, last_offset, max_timestamp, offset_of_max_timestamp = appended
            updates: Iterable[ProducerAppendInfo] = ()
            completed: list[CompletedTxn] = []
            if has_producer:
                checked = self._analyze_producer_state(assigned, validate=from_client, buf=buf, completed=completed)
                if isinstance(checked, ProducerBatch):  # a retry of a batch already written
                    return LogAppendInfo(checked.first_offset, checked.last_offset, checked.timestamp,
                                         checked.last_offset, checked.timestamp if log_append_time is not None else -1,
                                         self.log_start_offset, 0, 0)
                updates = checked
            n = len(buf)
            segment: LogSegment = self.segments.last_value()  # type: ignore[assignment]  # the active one
            if segment.roll_needed(cfg.segment_bytes, cfg.segment_ms, n, max_timestamp, last_offset, now):
                segment = self.roll(first_offset)
            segment.append(buf, assigned)
            self._leo = leo = last_offset + 1
            psm = self.producer_state
            for c in completed:
                if c.is_aborted:
                    segment.txn_index.append(AbortedTxn(c.producer_id, c.first_offset, c.last_offset,
                                                        psm.stable_offset_after(c)))
            for update in updates:
                psm.update(update)
            psm.last_map_offset = leo
            info = _new(LogAppendInfo, (first_offset, last_offset, max_timestamp, offset_of_max_timestamp,
                                        now if log_append_time is not None else -1, self.log_start_offset,
                                        leo - first_offset, n))
        if self._leo - self.recovery_point >= cfg.flush_messages:
            if self.flush_scheduler is not None:
                self.flush_scheduler(self)
            else:
                self.flush()
        return info

    def _analyze_producer_state(self, batches: list[BatchMetadata], *, validate: bool,
                                buf: bytes | bytearray | memoryview = b"",
                                completed: list[CompletedTxn] | None = None,
                                ) -> ProducerBatch | Iterable[ProducerAppendInfo]:
        """Check the producer batches of an append against the producer state (Kafka's
        analyzeAndValidateProducerState): the retained batch a client's retry duplicates, or
        the state updates to apply once the append is written. Raises OutOfOrderSequenceError,
        InvalidProducerEpochError or InvalidTxnStateError (nothing is written then)."""
        psm = self.producer_state
        infos: dict[int, ProducerAppendInfo] = {}
        for b in batches:
            pid = b.producer_id
            if pid < 0:
                continue
            last_seq = increment_sequence(b.base_sequence, b.last_offset_delta)
            if validate:
                entry = psm.producers.get(pid)
                if entry is not None:
                    duplicate = entry.find_duplicate_batch(b.producer_epoch, b.base_sequence, last_seq)
                    if duplicate is not None:
                        return duplicate
            info = infos.get(pid)
            if info is None:
                info = infos[pid] = psm.prepare_update(pid, validate=validate)
            if b.is_control:
                done = info.append_control_batch(buf, b.position, b.producer_epoch, b.base_offset, b.max_timestamp)
                if done is not None and completed is not None:
                    completed.append(done)
                continue
            info.append_data_batch(b.producer_epoch, b.base_sequence, last_seq, b.max_timestamp, b.base_offset,
                                   b.last_offset, b.is_transactional)
        return infos.values()

    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Start a new active segment at max(expected_next_offset, LEO). An empty active
        segment at that offset is replaced, not duplicated (KAFKA-6388)."""
        with self._lock:
            self._check_open()
            new_offset = max(expected_next_offset or 0, self._leo)
            active = self.active_segment
            if new_offset in self.segments:
                if active.base_offset == new_offset and active.size == 0:
                    logger.warning("%s: replacing empty active segment %d", self.dir, new_offset)
                    self.segments.remove(new_offset)
                    active.delete_if_exists()
                else:
                    raise KafkaStorageError(
                        f"trying to roll a new segment for {self.topic}-{self.partition} at offset"
                        f" {new_offset} while it already exists"
                    )
            elif new_offset < active.base_offset:
                raise KafkaStorageError(
                    f"trying to roll a new segment at offset {new_offset} below the active segment"
                    f" {active.base_offset}"
                )
            else:
                for path in (log_file_name(self.dir, new_offset), offset_index_file_name(self.dir, new_offset),
                             time_index_file_name(self.dir, new_offset), txn_index_file_name(self.dir, new_offset)):
                    if os.path.exists(path):
                        logger.warning("%s: deleting stale file %s before rolling", self.dir, path)
                        os.unlink(path)
                active.on_become_inactive_segment()
                active.next_segment_base = new_offset
            seg = self._open_segment(new_offset)
            self.segments.put(new_offset, seg)
            self._dir_needs_fsync = True
            # The producer state as of the new segment's start: loading after a crash then
            # replays at most the batches of this segment (fsync'd by the next flush).
            self.producer_state.update_map_end_offset(new_offset)
            self.producer_state.take_snapshot(sync=False)
            return seg

    def _open_segment(self, base_offset: int) -> LogSegment:
        seg = LogSegment.open_with_config(self.dir, base_offset, self.config, jitter=True, active=True)
        seg.created_ms = self._now_ms()  # same clock as should_roll's now_ms
        return seg

    # ---------------------------------------------------------------- read

    def read(
        self,
        offset: int,
        max_bytes: int,
        min_one_batch: bool = True,
        upper_bound: int | None = None,
    ) -> FetchResult:
        """Slices starting at the batch that holds ``offset``, at most ``max_bytes`` (the first
        batch always whole with ``min_one_batch``), never past ``upper_bound`` (default: the high
        watermark). Raises OffsetOutOfRangeError below the log start or above the LEO; the LEO
        itself returns no slices. When a segment's slice reaches its end exactly, the read
        continues into the next segment(s) while bytes remain."""
        self._check_open()
        leo = self._leo
        start_offset = self.log_start_offset
        if offset < start_offset or offset > leo:
            raise OffsetOutOfRangeError(
                f"offset {offset} is out of range for {self.topic}-{self.partition}: log start"
                f" offset {start_offset}, log end offset {leo}"
            )
        bound = leo if upper_bound is None else min(upper_bound, leo)
        result = FetchResult([], leo, start_offset, leo)
        if offset >= bound:
            return result
        entry = self.segments.floor(offset)
        if entry is None:
            raise OffsetOutOfRangeError(f"no segment holds offset {offset} in {self.topic}-{self.partition}")
        try:
            # Byte position of the upper bound in its segment (the start of the batch holding it).
            bound_entry = self.segments.floor(bound)
            bound_position: int | None = None
            if bound < leo and bound_entry is not None:
                found = bound_entry[1].translate_offset(bound)
                bound_position = found.position if found is not None else bound_entry[1].size
            return self._read_segments(entry, offset, max_bytes, min_one_batch, bound_entry, bound_position, result)
        except CorruptRecordError as e:
            # An error to this fetch (CORRUPT_MESSAGE), never a silent jump past the damage.
            logger.error("%s-%d: corrupt data while reading offset %d: %s", self.topic, self.partition, offset, e)
            raise

    def _read_segments(self, entry: tuple[int, LogSegment] | None, offset: int, max_bytes: int, min_one_batch: bool,
                       bound_entry: tuple[int, LogSegment] | None, bound_position: int | None,
                       result: FetchResult) -> FetchResult:
        bound_base = bound_entry[0] if bound_entry is not None else -1
        slices: list[FileSlice] = []
        remaining = max_bytes
        incomplete = False
        first = True
        while entry is not None and (first or remaining > 0):
            base, seg = entry
            if base > bound_base and bound_entry is not None and bound_position is not None:
                break
            max_position = bound_position if (base == bound_base and bound_position is not None) else seg.size
            if first:
                info = seg.read(offset, max(remaining, 0), max_position, min_one_batch)
            else:
                info = seg.read(base, remaining, max_position, False)
            if info is None:
                if not first:
                    break
                entry = self.segments.higher(base)
                continue
            if info.slice.size > 0:
                slices.append(info.slice)
            if first:
                incomplete = info.first_entry_incomplete
            first = False
            remaining -= info.slice.size
            if info.slice.position + info.slice.size != seg.size or (base == bound_base and bound_position is not None):
                break  # ended mid-segment (mid-batch or at the bound): stop here
            entry = self.segments.higher(base)
        return result._replace(slices=slices, first_entry_incomplete=incomplete)

    def read_bytes(self, offset: int, max_bytes: int, min_one_batch: bool = True) -> bytes:
        """``read`` materialised with pread (tests, tools; the server uses sendfile)."""
        return b"".join(os.pread(s.fd, s.size, s.position) for s in self.read(offset, max_bytes, min_one_batch).slices)

    def offset_for_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets: -2 earliest, -1 latest, -3 max timestamp, else the first record with
        timestamp >= ``timestamp`` (None when there is none). Without tiered storage, as in
        Kafka: -4 (earliest local) is the earliest offset, -5 (latest tiered) and -6 (earliest
        pending upload) offset -1."""
        self._check_open()
        if timestamp in (LATEST_TIERED_TIMESTAMP, EARLIEST_PENDING_UPLOAD_TIMESTAMP):
            return TimestampAndOffset(-1, -1, -1)
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            return TimestampAndOffset(-1, self.log_start_offset)
        if timestamp == LATEST_TIMESTAMP:
            return TimestampAndOffset(-1, self._leo)
        if timestamp == MAX_TIMESTAMP:  # the first segment holding the largest timestamp
            latest: LogSegment | None = None
            for seg in self.segments.values():
                if seg.max_timestamp_so_far > (latest.max_timestamp_so_far if latest is not None else -1):
                    latest = seg
            return latest.offset_of_max_timestamp() if latest is not None else None
        for seg in self.segments.values():
            if seg.largest_timestamp() >= timestamp:
                found = seg.find_offset_by_timestamp(timestamp, self.log_start_offset)
                if found is not None:
                    return found
        return None

    def legacy_offsets_before(self, timestamp: int, max_num_offsets: int) -> list[int]:
        """ListOffsets v0's old-style answer (Kafka's legacyFetchOffsetsBefore): candidate
        offsets are each segment's base offset (at least the log start offset), dated by the
        segment file's modification time, plus the log end offset dated now when the active
        segment holds data. -1 (latest) starts from the last candidate, -2 (earliest) from the
        first, another timestamp from the last candidate dated at or before it; from there at
        most ``max_num_offsets`` candidates going back, in descending order (empty when none is
        dated early enough, or for a ``max_num_offsets`` below 1)."""
        self._check_open()
        segments = list(self.segments.values())
        candidates = [(max(seg.base_offset, self.log_start_offset), seg.last_modified_ms) for seg in segments]
        if segments[-1].size > 0:
            candidates.append((self._leo, self._now_ms()))
        if timestamp == LATEST_TIMESTAMP:
            start = len(candidates) - 1
        elif timestamp == EARLIEST_TIMESTAMP:
            start = 0
        else:
            start = len(candidates) - 1
            while start >= 0 and candidates[start][1] > timestamp:
                start -= 1
        n = max(min(max_num_offsets, start + 1), 0)
        return sorted((candidates[start - j][0] for j in range(n)), reverse=True)

    # ---------------------------------------------------------------- cleaner support

    def segment_list(self, from_offset: int | None = None, to_offset: int | None = None) -> list[LogSegment]:
        """The segments holding offsets in ``[from_offset, to_offset)`` (all by default), oldest
        first, as one consistent snapshot (Kafka's logSegments(from, to)); any thread."""
        with self._lock:
            start = self.segments.first()[0] if from_offset is None else floor_base_offset(self.segments, from_offset)  # type: ignore[index]
            return [seg for base, seg in self.segments.items(start) if to_offset is None or base < to_offset]

    def last_stable_offset_locked(self) -> int:
        """``last_stable_offset`` for another thread (the cleaner's bound): read under the lock,
        while no append changes the open transactions."""
        with self._lock:
            return self.last_stable_offset

    def aborted_transactions_locked(self, start: int, end: int) -> list[AbortedTxn]:
        """``collect_aborted_transactions`` for another thread (the cleaner): under the lock, so
        that no append to the active segment's ``.txnindex`` and no segment change runs
        meanwhile. The entries are cached by the indexes: this costs no I/O after the first call."""
        with self._lock:
            return self.collect_aborted_transactions(start, end)

    def last_records_of_active_producers(self) -> dict[int, int]:
        """producer id -> offset of its last data batch, for every producer the state knows
        (Kafka's lastRecordsOfActiveProducers): the cleaner keeps those batches, emptied if
        need be, so that a producer's next sequence is still checked after cleaning."""
        with self._lock:
            return {pid: e.last_data_offset for pid, e in self.producer_state.producers.items()
                    if e.last_data_offset >= 0}

    def replace_segments(self, new: LogSegment, old: list[LogSegment], old_sizes: list[int],
                         on_step: Callable[[str], None] | None = None) -> None:
        """Swap the cleaned segment ``new`` (files ``*.cleaned``, flushed) in for ``old``, in
        the order that makes a crash at any point recoverable by ``load`` (Kafka's
        replaceSegments): rename ``new`` to ``*.swap``; put it in the map; take every old
        segment out of the map, rename its files ``*.deleted`` (removed after
        ``file.delete.delay.ms``: reads holding them finish) and drop its producer snapshot;
        rename ``new`` to its final name. A crash before the ``.swap`` rename leaves the old
        segments (``.cleaned`` files are deleted at load); after it, load deletes every
        segment in the swap's offset range and completes the renames.

        Runs on the owner's thread. Raises LogCleaningAbortedError (nothing renamed) when the
        log is closed or an old segment is no longer in the map, became active or changed
        size (retention, truncation) since the cleaner read it. The caller fsyncs the directory.
        ``on_step`` (crash tests) is called after the ``.swap`` rename and after the first old
        segment's ``.deleted`` rename."""
        with self._lock:
            if self._closed:
                raise LogCleaningAbortedError(f"log {self.topic}-{self.partition} is closed")
            active = self.active_segment
            for seg, size in zip(old, old_sizes, strict=True):
                if self.segments.get(seg.base_offset) is not seg or seg is active or seg.size != size:
                    raise LogCleaningAbortedError(
                        f"segment {seg.base_offset} of {self.topic}-{self.partition} changed during cleaning")
            new.change_file_suffixes(CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX)
            if on_step is not None:
                on_step("swap-renamed")
            self.segments.put(new.base_offset, new)
            delete_at = self._now_ms() + self.config.file_delete_delay_ms
            for i, seg in enumerate(old):
                if seg.base_offset != new.base_offset:
                    self.segments.remove(seg.base_offset)
                    self.producer_state.delete_snapshot(seg.base_offset)
                seg.change_file_suffixes("", DELETED_FILE_SUFFIX)
                self._pending_deletes.append((delete_at, seg))
                if i == 0 and on_step is not None:
                    on_step("old-renamed")
            new.change_file_suffixes(SWAP_FILE_SUFFIX, "")
            self._dir_needs_fsync = True

    # ---------------------------------------------------------------- retention

    def delete_old_segments(self) -> int:
        """One retention pass (Kafka's order): log-start-offset breach, then size, then time.
        Returns the number of segments deleted."""
        deleted = self.delete_segments_below_log_start()
        if not self.config.delete_enabled:
            return deleted
        cfg = self.config
        if cfg.retention_bytes >= 0:
            total = self.size
            if total >= cfg.retention_bytes:
                diff = [total - cfg.retention_bytes]

                def size_breach(seg: LogSegment, nxt: LogSegment | None) -> bool:
                    if diff[0] - seg.size >= 0:
                        diff[0] -= seg.size
                        return True
                    return False

                deleted += self._delete_segments_where(size_breach, f"retention size {cfg.retention_bytes} breach")
        if cfg.retention_ms >= 0:
            now = self._now_ms()
            deleted += self._delete_segments_where(
                lambda seg, nxt: now - seg.largest_timestamp() > cfg.retention_ms,
                f"retention time {cfg.retention_ms}ms breach")
        return deleted

    def _delete_segments_where(self, predicate: Callable[[LogSegment, LogSegment | None], bool], reason: str) -> int:
        with self._lock:
            self._check_open()
            hw = self.high_watermark
            deletable: list[LogSegment] = []
            items = list(self.segments.values())
            for i, seg in enumerate(items):
                nxt = items[i + 1] if i + 1 < len(items) else None
                upper = nxt.base_offset if nxt is not None else self._leo
                if nxt is None and seg.size == 0:
                    break  # an empty last segment is never deleted
                if hw >= upper and predicate(seg, nxt):
                    deletable.append(seg)
                else:
                    break
            if not deletable:
                return 0
            to_delete = deletable
            if len(deletable) == len(self.segments):
                new_seg = self.roll()
                if deletable[-1].base_offset == new_seg.base_offset:
                    to_delete = deletable[:-1]
            for seg in to_delete:
                self._remove_and_schedule_delete(seg, reason)
            self._maybe_increment_log_start_offset(self.segments.first()[0])  # type: ignore[index]
            return len(to_delete)

    def _remove_and_schedule_delete(self, seg: LogSegment, reason: str) -> None:
        """Take the segment out of the map now; rename its files ``.deleted`` and remove them
        after ``file.delete.delay.ms`` (reads already holding its fd finish meanwhile)."""
        self.segments.remove(seg.base_offset)
        self.producer_state.delete_snapshot(seg.base_offset)
        logger.info("%s: deleting segment %d (%s)", self.dir, seg.base_offset, reason)
        try:
            seg.change_file_suffixes("", DELETED_FILE_SUFFIX)
        except FileNotFoundError:
            pass
        self._pending_deletes.append((self._now_ms() + self.config.file_delete_delay_ms, seg))

    def pop_expired_files(self, now_ms: int | None = None) -> list[LogSegment]:
        """Take out the ``.deleted`` segments whose delay has passed (owner's thread). Their files
        may then be removed from any thread (``seg.delete_if_exists()``): nothing reaches them
        any more. The broker does it in a worker thread: unlinking a large file frees its blocks
        in the syscall, which would stall the event loop."""
        if not self._pending_deletes:
            return []
        now = self._now_ms() if now_ms is None else now_ms
        due = [s for t, s in self._pending_deletes if t <= now]
        self._pending_deletes = [(t, s) for t, s in self._pending_deletes if t > now]
        return due

    def delete_expired_files(self, now_ms: int | None = None) -> int:
        """Remove ``.deleted`` segments whose delay has passed, here; returns how many."""
        due = self.pop_expired_files(now_ms)
        for seg in due:
            seg.delete_if_exists()
        return len(due)

    def _maybe_increment_log_start_offset(self, new_start: int) -> None:
        if new_start > self.log_start_offset:
            self.log_start_offset = new_start
            self.producer_state.on_log_start_offset_incremented(new_start)

    def delete_segments_below_log_start(self) -> int:
        """Delete the segments that hold only offsets below the log start offset (the first step
        of every retention pass; DeleteRecords runs it at once). Returns how many."""
        return self._delete_segments_where(
            lambda seg, nxt: nxt is not None and nxt.base_offset <= self.log_start_offset,
            "log start offset breach")

    def delete_records_before(self, offset: int) -> int:
        """Raise the log start offset to ``offset`` (DeleteRecords; never lowers it): reads below
        it fail with OFFSET_OUT_OF_RANGE from now on. Segments wholly below it are removed by
        ``delete_segments_below_log_start``. Returns the new log start offset."""
        with self._lock:
            self._check_open()
            if offset > self.high_watermark or offset < 0:
                raise OffsetOutOfRangeError(
                    f"cannot delete records before {offset}: high watermark is {self.high_watermark}"
                )
            self._maybe_increment_log_start_offset(offset)
            return self.log_start_offset

    def truncate_to(self, offset: int) -> bool:
        """Remove every batch at or above ``offset`` (whole batches). True if anything changed."""
        with self._lock:
            self._check_open()
            if offset >= self._leo:
                return False
            if offset < self.log_start_offset:
                offset = self.log_start_offset
            for base, seg in list(self.segments.items()):
                if base >= offset and base != self.segments.first()[0]:  # type: ignore[index]
                    self.segments.remove(base)
                    seg.delete_if_exists()
            active = self.active_segment
            active.truncate_to(offset)
            self._leo = active.read_next_offset()
            if self._leo < self.log_start_offset:
                # The batch holding ``offset`` started below the log start offset: keeping its
                # head would leave LEO < log start. Start over, empty, at the log start offset
                # (Kafka's truncateFullyAndStartAt).
                for base, seg in list(self.segments.items()):
                    self.segments.remove(base)
                    seg.delete_if_exists()
                self.segments.put(self.log_start_offset, self._open_segment(self.log_start_offset))
                self._dir_needs_fsync = True
                self._leo = self.log_start_offset
                self.producer_state.truncate_fully_and_start_at(self._leo)
            else:
                rebuild_producer_state(self.producer_state, self.segments, self.log_start_offset, self._leo,
                                       self._now_ms())
            self.recovery_point = min(self.recovery_point, self._leo)
            return True

    # ---------------------------------------------------------------- flush

    def flush(self, up_to: int | None = None) -> int:
        """fsync every segment holding offsets in [recovery_point, up_to) (default: the LEO at
        call time), msync their indexes, fsync the directory if segments were created, then
        advance the recovery point. Safe to run in a worker thread while appends continue:
        one fsync covers every append made before it. Returns the new recovery point."""
        with self._lock:
            if self._closed:
                return self.recovery_point
            target = self._leo if up_to is None else min(up_to, self._leo)
            if target <= self.recovery_point:
                return self.recovery_point
            start = floor_base_offset(self.segments, self.recovery_point)
            to_flush = [s for b, s in self.segments.items(start) if b < target]
            dir_fsync = self._dir_needs_fsync
            self._dir_needs_fsync = False
            snapshots = self.producer_state.take_unflushed_snapshots()
        for seg in to_flush:
            seg.flush()
        flush_snapshot_files(snapshots)
        if dir_fsync:
            fsync_path(self.dir)
        with self._lock:
            if target > self.recovery_point:
                self.recovery_point = target
            self.last_flush_ms = self._now_ms()
            return self.recovery_point

    def flush_due(self, now_ms: int) -> bool:
        """Kafka's flush policy: ``flush.ms`` since the last flush, with unflushed data."""
        return self._leo > self.recovery_point and now_ms - self.last_flush_ms >= self.config.flush_ms

    # ---------------------------------------------------------------- close

    def close(self) -> None:
        """Close every segment (writes final time-index entries, trims indexes and .log)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            # Kafka writes the producer state at the log end offset on close: the next start
            # loads it instead of reading the log (fsync'd: a clean-shutdown marker follows).
            self.producer_state.update_map_end_offset(self._leo)
            try:
                self.producer_state.take_snapshot(sync=True)
            except OSError as e:
                logger.error("%s: cannot write the producer state snapshot: %s", self.dir, e)
            for seg in self.segments.values():
                seg.close()
            for _, seg in self._pending_deletes:
                seg.close_handlers()

    def delete(self) -> None:
        """Close and remove every file of this log (the directory itself is the caller's)."""
        with self._lock:
            self._closed = True
            for seg in self.segments.values():
                seg.delete_if_exists()
            for _, seg in self._pending_deletes:
                seg.delete_if_exists()
            self._pending_deletes = []
            self.producer_state.truncate_fully_and_start_at(0)

    def __repr__(self) -> str:
        return (f"Log({self.topic}-{self.partition}, start={self.log_start_offset}, end={self._leo},"
                f" segments={len(self.segments)}, recovery_point={self.recovery_point})")
