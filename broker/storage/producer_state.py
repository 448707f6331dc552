"""ProducerStateManager: per partition, what each idempotent producer last wrote (Kafka's
ProducerStateManager, ProducerStateEntry, ProducerAppendInfo and BatchMetadata).

An idempotent producer (InitProducerId gave it a producer id) numbers the records it sends to
each partition: a batch carries ``producerId``, ``producerEpoch`` and ``baseSequence``, and its
records have sequences ``baseSequence .. baseSequence + lastOffsetDelta`` (wrapping from
2^31-1 to 0). For every producer id the partition keeps the epoch and the **last 5 batches**
(``NUM_BATCHES_TO_RETAIN``: why clients cap in-flight requests at 5 with idempotence): their
first and last sequence, last offset and max timestamp.

Rules for a batch from a client (``ProducerAppendInfo``), in Kafka's order:

1. *duplicate*: same epoch and exactly the (first, last) sequence of one retained batch — the
   log does not write it again and answers with the offsets it got the first time, no error
   (``ProducerStateEntry.find_duplicate_batch``; the caller checks this first);
2. an epoch below the current one: INVALID_PRODUCER_EPOCH (Kafka >= 2.7 on the produce path);
3. a new epoch must start at sequence 0, unless the producer is unknown here;
4. the same epoch must continue at last sequence + 1 (0 after 2^31-1), else
   OUT_OF_ORDER_SEQUENCE_NUMBER;
5. an unknown producer (no entry: never seen, expired, or its data removed) may start at any
   sequence — which is why Kafka no longer answers UNKNOWN_PRODUCER_ID to Produce;
6. a non-transactional batch while the producer has a transaction open: INVALID_TXN_STATE.

Transactions. A producer's first transactional batch in the partition opens its transaction
here (``current_txn_first_offset``); the COMMIT or ABORT marker the transaction coordinator
writes closes it (``append_end_txn_marker``: a marker may carry a newer epoch — the
coordinator fencing a producer — which then becomes the producer's epoch). ``ongoing_txns``
maps each producer with an open transaction to its first offset; the smallest is the
partition's *first unstable offset*, below which the log is stable (Kafka's last stable
offset = min(first unstable offset, high watermark)).

Batches appended without client checks (``origin=REPLICATION``: rebuilding from the log after
an unclean stop, batches that carry their offsets) only update the state.

Snapshots. ``<offset>.snapshot`` in the partition directory (offset: 20 digits, zero-padded,
the map end offset, i.e. the next offset the state has not seen) holds the state at that
offset, in Kafka's layout (big-endian)::

    int16  version = 1
    uint32 crc            CRC-32C of every byte after this field (offset 6 to the end)
    int32  count
    count x 46 bytes:
      int64 producerId
      int16 producerEpoch
      int32 lastSequence
      int64 lastOffset            -1: no batch retained (only the epoch is known)
      int32 offsetDelta           lastSequence - firstSequence of that batch
      int64 timestamp             max timestamp of that batch
      int32 coordinatorEpoch
      int64 currentTxnFirstOffset -1: no open transaction

Only the last batch of each producer is written (the other four are rebuilt from the log
when needed). A snapshot with a bad CRC or an unknown version is deleted and the next older
one tried. Snapshots are taken when a segment rolls (at the new segment's base offset), at
a clean shutdown (at the log end offset) and after recovery; each is deleted with the
segment it starts. Loading (``log_loader.rebuild_producer_state``): the latest snapshot at or
below the log end offset, then the batches after it.

Expiry: a producer without an open transaction whose last batch is older than
``producer.id.expiration.ms`` (1 day) is forgotten (``remove_expired_producers``, run
periodically and when a snapshot is loaded).
"""

from __future__ import annotations

import logging
import os
import struct
from collections import deque
from collections.abc import Iterable
from typing import NamedTuple

from client.records.batch import crc32c
from client.records.control import ABORT, COMMIT, parse_control_key, parse_control_value
from client.records.record import iter_records

from .errors import CorruptSnapshotError, InvalidProducerEpochError, InvalidTxnStateError, OutOfOrderSequenceError
from .fileutil import fsync_path

__all__ = [
    "NUM_BATCHES_TO_RETAIN", "NO_PRODUCER_ID", "NO_PRODUCER_EPOCH", "NO_SEQUENCE", "SNAPSHOT_FILE_SUFFIX",
    "DEFAULT_PRODUCER_ID_EXPIRATION_MS", "BatchMetadata", "ProducerStateEntry", "ProducerAppendInfo",
    "ProducerStateManager", "CorruptSnapshotError", "OutOfOrderSequenceError", "InvalidProducerEpochError",
    "InvalidTxnStateError", "CompletedTxn", "increment_sequence", "decrement_sequence", "snapshot_file_name",
    "read_snapshot", "write_snapshot", "flush_snapshot_files",
]

logger = logging.getLogger(__name__)

NUM_BATCHES_TO_RETAIN = 5
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
INT32_MAX = 2**31 - 1
SNAPSHOT_FILE_SUFFIX = ".snapshot"
PRODUCER_SNAPSHOT_VERSION = 1
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000  # producer.id.expiration.ms: 1 day

_HEADER = struct.Struct(">hIi")  # version, crc, count
_ENTRY = struct.Struct(">qhiqiqiq")  # 46 bytes
_CRC_OFFSET = 2
_ENTRIES_OFFSET = 6


def increment_sequence(sequence: int, increment: int) -> int:
    """``sequence + increment`` in the producer's sequence space, which wraps 2^31-1 -> 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def snapshot_file_name(directory: str, offset: int) -> str:
    return os.path.join(directory, f"{offset:020d}{SNAPSHOT_FILE_SUFFIX}")


class CompletedTxn(NamedTuple):
    """A transaction a marker ended in this partition: its first data offset here, the
    marker's offset, and whether it was aborted (which gives it a ``.txnindex`` entry)."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


class BatchMetadata(NamedTuple):
    """One retained batch of a producer: its last sequence and last offset, how many records
    it spans minus one (``offset_delta``, the same in offsets and sequences) and its max
    timestamp."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


class ProducerStateEntry:
    """The state of one producer id in one partition: epoch, up to 5 batches (oldest first),
    the coordinator epoch of its last transaction marker, the timestamp of its last batch and
    the first offset of its open transaction (-1: none)."""

    __slots__ = ("producer_id", "producer_epoch", "coordinator_epoch", "last_timestamp",
                 "current_txn_first_offset", "batches")

    def __init__(self, producer_id: int, producer_epoch: int = NO_PRODUCER_EPOCH, coordinator_epoch: int = -1,
                 last_timestamp: int = -1, current_txn_first_offset: int = -1,
                 batches: Iterable[BatchMetadata] = ()) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = last_timestamp
        self.current_txn_first_offset = current_txn_first_offset
        self.batches: deque[BatchMetadata] = deque(batches, NUM_BATCHES_TO_RETAIN)

    @property
    def is_empty(self) -> bool:
        return not self.batches

    @property
    def first_seq(self) -> int:
        return self.batches[0].first_seq if self.batches else NO_SEQUENCE

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def first_data_offset(self) -> int:
        return self.batches[0].first_offset if self.batches else -1

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batches[-1].offset_delta if self.batches else 0

    def maybe_update_producer_epoch(self, epoch: int) -> bool:
        """A new epoch starts a new sequence space: the retained batches are dropped."""
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch
            return True
        return False

    def add_batch(self, epoch: int, last_seq: int, last_offset: int, offset_delta: int, timestamp: int) -> None:
        self.maybe_update_producer_epoch(epoch)
        self.batches.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))  # maxlen drops the oldest
        self.last_timestamp = timestamp

    def update(self, other: ProducerStateEntry) -> None:
        """Take ``other``'s epoch, batches, coordinator epoch, timestamp and transaction."""
        self.maybe_update_producer_epoch(other.producer_epoch)
        self.batches.extend(other.batches)
        self.coordinator_epoch = other.coordinator_epoch
        self.current_txn_first_offset = other.current_txn_first_offset
        self.last_timestamp = other.last_timestamp

    def find_duplicate_batch(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        """The retained batch with exactly this sequence range in this epoch, if any."""
        if epoch != self.producer_epoch:
            return None
        for b in self.batches:
            if b.last_seq == last_seq and b.first_seq == first_seq:
                return b
        return None

    def __repr__(self) -> str:
        return (f"ProducerStateEntry(producer_id={self.producer_id}, epoch={self.producer_epoch},"
                f" txn_first_offset={self.current_txn_first_offset}, coordinator_epoch={self.coordinator_epoch},"
                f" last_timestamp={self.last_timestamp}, batches={list(self.batches)})")


class ProducerAppendInfo:
    """The checks and the new state of one producer's batches in one append. Built from the
    producer's current entry (left untouched: ``ProducerStateManager.update`` applies
    ``updated`` only once the append is written)."""

    __slots__ = ("producer_id", "current", "updated", "validate", "partition")

    def __init__(self, producer_id: int, current: ProducerStateEntry, *, validate: bool, partition: str = "") -> None:
        self.producer_id = producer_id
        self.current = current
        self.validate = validate
        self.partition = partition
        self.updated = ProducerStateEntry(producer_id, current.producer_epoch, current.coordinator_epoch,
                                          current.last_timestamp, current.current_txn_first_offset)

    def append_data_batch(self, epoch: int, first_seq: int, last_seq: int, max_timestamp: int,
                          first_offset: int, last_offset: int, is_transactional: bool) -> None:
        """Check (when validating) and record one data batch; raises the Kafka error."""
        if self.validate:
            self._check_producer_epoch(epoch, first_offset)
            self._check_sequence(epoch, first_seq, first_offset)
        updated = self.updated
        updated.add_batch(epoch, last_seq, last_offset, last_offset - first_offset, max_timestamp)
        if updated.current_txn_first_offset >= 0 and not is_transactional:
            raise InvalidTxnStateError(
                f"expected a transactional write from producer {self.producer_id} at offset {first_offset}"
                f" in {self.partition}: it has a transaction open")
        if updated.current_txn_first_offset < 0 and is_transactional:
            updated.current_txn_first_offset = first_offset

    def append_end_txn_marker(self, epoch: int, coordinator_epoch: int, marker_offset: int, commit: bool,
                              timestamp: int) -> CompletedTxn | None:
        """Record a COMMIT/ABORT marker; the completed transaction, or None when the producer
        had none open here (it wrote no data to this partition, or the marker is a repeat)."""
        if self.validate:
            self._check_producer_epoch(epoch, marker_offset)
        updated = self.updated
        updated.maybe_update_producer_epoch(epoch)
        updated.coordinator_epoch = coordinator_epoch
        updated.last_timestamp = timestamp
        first = updated.current_txn_first_offset
        updated.current_txn_first_offset = -1
        if first < 0:
            return None
        return CompletedTxn(self.producer_id, first, marker_offset, not commit)

    def append_control_batch(self, buf: bytes | bytearray | memoryview, pos: int, epoch: int, marker_offset: int,
                             timestamp: int) -> CompletedTxn | None:
        """Record the control batch at ``buf[pos]`` (its one record: an end-transaction marker);
        the transaction it completed, if any (``append_end_txn_marker``). Control records
        other than COMMIT/ABORT are skipped, as Kafka skips unknown types; so is a control
        batch whose record cannot be read."""
        try:
            record = next(iter_records(buf, pos, verify_crc=False))
            marker = parse_control_key(record.key)
            coordinator_epoch = parse_control_value(record.value)
        except (StopIteration, ValueError):  # RecordError is a ValueError
            logger.warning("skipping an unreadable control batch at offset %d", marker_offset)
            return None
        if marker.type not in (ABORT, COMMIT):
            return None
        return self.append_end_txn_marker(epoch, coordinator_epoch, marker_offset, marker.type == COMMIT, timestamp)

    def _check_producer_epoch(self, epoch: int, offset: int) -> None:
        if epoch < self.updated.producer_epoch:
            raise InvalidProducerEpochError(
                f"epoch of producer {self.producer_id} at offset {offset} in {self.partition} is {epoch},"
                f" which is smaller than the last seen epoch {self.updated.producer_epoch}")

    def _check_sequence(self, epoch: int, first_seq: int, offset: int) -> None:
        updated, current = self.updated, self.current
        if epoch != updated.producer_epoch:
            if first_seq != 0 and updated.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"invalid sequence number for new epoch of producer {self.producer_id} at offset {offset}"
                    f" in {self.partition}: {epoch} (request epoch), {first_seq} (seq. number),"
                    f" {updated.producer_epoch} (current producer epoch)")
            return
        if not updated.is_empty:
            last_seq = updated.last_seq
        elif epoch == current.producer_epoch:
            last_seq = current.last_seq
        else:
            last_seq = NO_SEQUENCE
        # No epoch known (all of its data removed, or never seen): any sequence is accepted.
        if current.producer_epoch != NO_PRODUCER_EPOCH and not (
                first_seq == last_seq + 1 or (first_seq == 0 and last_seq == INT32_MAX)):
            raise OutOfOrderSequenceError(
                f"out of order sequence number for producer {self.producer_id} at offset {offset} in"
                f" {self.partition}: {first_seq} (incoming seq. number), {last_seq} (current end sequence number)")


class ProducerStateManager:
    """The producer entries of one partition, the map end offset (the state reflects every
    batch below it) and the partition's snapshot files. Runs on the log's owner thread under
    the log's lock; ``flush_snapshot_files`` may run in a worker thread."""

    def __init__(self, directory: str, *, producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
                 partition: str = "", snapshot_offsets: Iterable[int] = ()) -> None:
        self.dir = directory
        self.partition = partition
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.producers: dict[int, ProducerStateEntry] = {}
        #: producer id -> first offset of its open transaction, for every open transaction
        self.ongoing_txns: dict[int, int] = {}
        self.last_map_offset = 0
        self.last_snap_offset = 0
        self._snapshots: list[int] = sorted(snapshot_offsets)  # offsets of the snapshot files, ascending
        self._unflushed: list[str] = []  # snapshot files written without fsync

    @staticmethod
    def snapshot_offsets_in(names: Iterable[str]) -> list[int]:
        """Offsets of the ``<20 digits>.snapshot`` names among ``names``."""
        out = []
        for name in names:
            if name.endswith(SNAPSHOT_FILE_SUFFIX) and len(name) == 20 + len(SNAPSHOT_FILE_SUFFIX) and name[:20].isdigit():
                out.append(int(name[:20]))
        return out

    # ------------------------------------------------------------------ state

    @property
    def map_end_offset(self) -> int:
        return self.last_map_offset

    @property
    def is_empty(self) -> bool:
        return not self.producers

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    def prepare_update(self, producer_id: int, *, validate: bool) -> ProducerAppendInfo:
        current = self.producers.get(producer_id) or ProducerStateEntry(producer_id)
        return ProducerAppendInfo(producer_id, current, validate=validate, partition=self.partition)

    def update(self, info: ProducerAppendInfo) -> None:
        pid = info.producer_id
        entry = self.producers.get(pid)
        if entry is None:
            entry = self.producers[pid] = info.updated
        else:
            entry.update(info.updated)
        if entry.current_txn_first_offset >= 0:
            self.ongoing_txns[pid] = entry.current_txn_first_offset
        elif self.ongoing_txns:
            self.ongoing_txns.pop(pid, None)

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest open transaction, or None when none is open."""
        return min(self.ongoing_txns.values()) if self.ongoing_txns else None

    def stable_offset_after(self, completed: CompletedTxn) -> int:
        """The partition's last stable offset once ``completed`` is no longer open (what its
        ``.txnindex`` entry records): the oldest other open transaction's first offset, else
        the offset after the marker."""
        others = [o for pid, o in self.ongoing_txns.items() if pid != completed.producer_id]
        return min(others) if others else completed.last_offset + 1

    def _reindex_ongoing(self) -> None:
        self.ongoing_txns = {pid: e.current_txn_first_offset for pid, e in self.producers.items()
                             if e.current_txn_first_offset >= 0}

    def update_map_end_offset(self, offset: int) -> None:
        self.last_map_offset = offset

    def _is_expired(self, now_ms: int, entry: ProducerStateEntry) -> bool:
        return entry.current_txn_first_offset < 0 and now_ms - entry.last_timestamp >= self.producer_id_expiration_ms

    def remove_expired_producers(self, now_ms: int) -> int:
        """Forget producers idle for ``producer.id.expiration.ms``; returns how many."""
        expired = [pid for pid, e in self.producers.items() if self._is_expired(now_ms, e)]
        for pid in expired:
            del self.producers[pid]
        return len(expired)

    # ------------------------------------------------------------------ snapshots

    @property
    def latest_snapshot_offset(self) -> int | None:
        return self._snapshots[-1] if self._snapshots else None

    @property
    def snapshot_offsets(self) -> list[int]:
        return list(self._snapshots)

    def take_snapshot(self, *, sync: bool = True) -> str | None:
        """Write ``<map end offset>.snapshot`` unless one at or past that offset exists.
        Without ``sync`` the file is fsync'd by the log's next flush."""
        if self.last_map_offset <= self.last_snap_offset:
            return None
        path = snapshot_file_name(self.dir, self.last_map_offset)
        write_snapshot(path, self.producers.values(), sync=sync)
        if not sync:
            self._unflushed.append(path)
        offset = self.last_map_offset
        if offset not in self._snapshots:
            self._snapshots.append(offset)
            self._snapshots.sort()
        self.last_snap_offset = offset
        return path

    def take_unflushed_snapshots(self) -> list[str]:
        """The snapshot files written without ``sync`` since the last call (under the log's
        lock); ``flush_snapshot_files`` fsyncs them, in any thread."""
        pending, self._unflushed = self._unflushed, []
        return pending

    def _delete_snapshot(self, offset: int) -> None:
        try:
            self._snapshots.remove(offset)
        except ValueError:
            return
        try:
            os.unlink(snapshot_file_name(self.dir, offset))
        except FileNotFoundError:
            pass

    def delete_snapshot(self, offset: int) -> None:
        """Delete the snapshot at ``offset`` (its segment is being deleted), if there is one."""
        self._delete_snapshot(offset)

    def remove_stray_snapshots(self, segment_base_offsets: Iterable[int]) -> None:
        """Keep the snapshots at segment base offsets plus the latest other one when it lies past
        the last segment's base (a clean shutdown's snapshot at the log end offset)."""
        bases = set(segment_base_offsets)
        max_base = max(bases) if bases else None
        stray = [o for o in self._snapshots if o not in bases]
        for o in stray[:-1]:
            self._delete_snapshot(o)
        if stray and max_base is not None and stray[-1] < max_base:
            self._delete_snapshot(stray[-1])

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int, now_ms: int) -> None:
        """Drop snapshots outside (log start, log end]; unless the state already ends at the log
        end offset, reload it from the latest remaining snapshot (expired producers dropped)."""
        for o in [o for o in self._snapshots if o > log_end_offset or o <= log_start_offset]:
            self._delete_snapshot(o)
        if log_end_offset != self.last_map_offset:
            self.producers.clear()
            self.ongoing_txns.clear()
            self._load_from_snapshot(log_start_offset, now_ms)
        else:
            self.on_log_start_offset_incremented(log_start_offset)

    def _load_from_snapshot(self, log_start_offset: int, now_ms: int) -> None:
        while self._snapshots:
            offset = self._snapshots[-1]
            path = snapshot_file_name(self.dir, offset)
            try:
                entries = read_snapshot(path)
            except (CorruptSnapshotError, FileNotFoundError) as e:
                logger.warning("%s: cannot load producer snapshot %s (%s); deleting it", self.dir, path, e)
                self._delete_snapshot(offset)
                continue
            for entry in entries:
                if not self._is_expired(now_ms, entry):
                    self.producers[entry.producer_id] = entry
            self._reindex_ongoing()
            self.last_snap_offset = self.last_map_offset = offset
            return
        self._reindex_ongoing()
        self.last_snap_offset = self.last_map_offset = log_start_offset

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        if self.last_map_offset < log_start_offset:
            self.last_map_offset = log_start_offset
        latest = self.latest_snapshot_offset
        self.last_snap_offset = latest if latest is not None else log_start_offset

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self.producers.clear()
        self.ongoing_txns.clear()
        for o in list(self._snapshots):
            self._delete_snapshot(o)
        self.last_snap_offset = 0
        self.last_map_offset = offset


# ---------------------------------------------------------------------- file format

def flush_snapshot_files(paths: Iterable[str]) -> None:
    for path in paths:
        try:
            fsync_path(path)
        except FileNotFoundError:
            pass  # deleted with its segment meanwhile


def write_snapshot(path: str, entries: Iterable[ProducerStateEntry], *, sync: bool = True) -> None:
    """Write ``entries`` in the snapshot layout of the module docstring (each entry's last
    batch only). Written to ``path`` directly, as Kafka does: a torn file fails its CRC when
    loaded and the next older snapshot is used."""
    items = list(entries)
    buf = bytearray(_HEADER.size + _ENTRY.size * len(items))
    _HEADER.pack_into(buf, 0, PRODUCER_SNAPSHOT_VERSION, 0, len(items))
    pos = _HEADER.size
    for e in items:
        _ENTRY.pack_into(buf, pos, e.producer_id, e.producer_epoch, e.last_seq, e.last_data_offset,
                         e.last_offset_delta, e.last_timestamp, e.coordinator_epoch, e.current_txn_first_offset)
        pos += _ENTRY.size
    struct.pack_into(">I", buf, _CRC_OFFSET, crc32c(memoryview(buf)[_ENTRIES_OFFSET:]))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, buf)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def read_snapshot(path: str) -> list[ProducerStateEntry]:
    """The entries of a snapshot file; CorruptSnapshotError for a bad version, CRC or size."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < _HEADER.size:
        raise CorruptSnapshotError(f"snapshot {path} is {len(data)} bytes, shorter than its header")
    version, crc, count = _HEADER.unpack_from(data, 0)
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"snapshot {path} has unknown version {version}")
    computed = crc32c(memoryview(data)[_ENTRIES_OFFSET:])
    if crc != computed:
        raise CorruptSnapshotError(f"snapshot {path} is corrupt: stored crc {crc}, computed crc {computed}")
    if count < 0 or len(data) != _HEADER.size + count * _ENTRY.size:
        raise CorruptSnapshotError(f"snapshot {path}: {count} entries do not fit its {len(data)} bytes")
    entries = []
    for pid, epoch, seq, offset, delta, ts, coordinator_epoch, txn_first in _ENTRY.iter_unpack(data[_HEADER.size:]):
        batches = (BatchMetadata(seq, offset, delta, ts),) if offset >= 0 else ()
        entries.append(ProducerStateEntry(pid, epoch, coordinator_epoch, ts, txn_first, batches))
    return entries
