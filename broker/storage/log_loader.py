"""LogLoader: a partition's log from its directory, after a clean or an unclean stop (Kafka's
LogLoader, with UnifiedLog's producer-state rebuild).

Input: the partition directory, the topic's LogConfig, and what the LogManager's checkpoints
say of the partition: its log start offset, its recovery point (every offset below it was
fsync'd) and whether the broker stopped cleanly. Output (``LoadedLog``): the segments, in a
SkipListMap keyed by base offset, and the log start offset, recovery point and producer state
a ``Log`` starts from. ``LogLoader.load`` does, in this order:

1. Creates the directory if need be and lists it once (one scandir: existence checks below
   use the listing, no stat calls).
2. Removes temporary files: ``*.deleted`` (segments whose deletion was scheduled), ``*.cleaned``
   (a cleaning that had not reached its swap), index ``*.swap`` files (rebuilt from their log
   swap), and every ``.log.swap`` at or above the smallest ``.cleaned`` base offset (that
   cleaning was not finished). A ``.txnindex.swap`` stays with its ``.log.swap``; without
   one, it is renamed into place when the crash interrupted the last rename of a completed
   swap (its ``.log`` already has its final name), else removed.
3. Opens every segment (``LogSegment.open_with_config``; indexes lazily), deletes index files
   without a ``.log``, recovers a segment whose offset index is missing and starts an empty
   time index where it is missing.
4. Completes swaps: each remaining ``.log.swap`` is recovered (indexes rebuilt), replaces
   every segment whose base offset lies in its offset range, and takes its final name.
5. Recovers: after an unclean stop, every segment from the one holding the recovery point
   on (``LogSegment.recover``: each batch CRC-checked, indexes rebuilt; a damaged batch
   followed by valid ones costs only itself, a damaged tail of the last segment is
   truncated). After a clean stop the files are trusted, except that the active segment's
   framing is walked once (junk or a torn batch at its end is truncated).
6. Finds the log end offset from the active segment's last index entry, recovering that
   segment if the entry does not match its ``.log``. When there is no segment, or the log
   end offset is below the log start offset, every segment is deleted and the log restarts,
   empty, at the log start offset.
7. Sets the recovery point (the log end offset after a clean stop, else
   min(recovery point, log end offset)), the segments' creation time (now, on the log's
   clock), releases the inactive segments' ``.log`` descriptors (reopened on demand, under
   the open-files budget) and sizes the active segment's indexes to ``segment.index.bytes``.
8. Rebuilds the producer state (``rebuild_producer_state``): stray snapshots removed, the
   latest snapshot at or below the log end offset loaded, the producer batches after it
   replayed from the log.

What holds after loading, whatever point a crash interrupted the previous process at:

- There is at least one segment; each holds offsets from its base offset up to the next
  segment's base offset; the last one is the active one. No ``.deleted``, ``.cleaned`` or
  ``.swap`` file of a segment is left, and no index file without its ``.log``.
- The log end offset is the end of the last whole valid batch of the active segment (its
  last offset index entry checked against the ``.log``): appends continue right after the
  data that survived, and first segment's base <= log start offset <= log end offset.
- Every batch at or above the recovery point has been CRC-checked (unclean stop), or the
  active segment's framing walked (clean stop); damaged batches that valid ones follow are
  recorded in their segment (reads of them fail with CORRUPT_MESSAGE) instead of cutting
  the log there.
- A cleaning interrupted at any step of ``Log.replace_segments`` leaves either the segments
  it replaced or the cleaned one, never both and never neither.
- The producer state reflects every producer batch below the log end offset, except
  expired producers and damaged batches (the producer then looks as if that batch had
  expired); after a clean stop with no snapshot at all it starts empty, as in Kafka. An
  ABORT marker replayed from the log whose ``.txnindex`` entry a crash lost gets it back.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable
from typing import NamedTuple

from client.records.batch import CONTROL_FLAG_MASK, TRANSACTIONAL_FLAG_MASK

from .config import LogConfig
from .producer_state import (
    DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    ProducerAppendInfo,
    ProducerStateManager,
    increment_sequence,
)
from .segment import (
    CLEANED_FILE_SUFFIX,
    DELETED_FILE_SUFFIX,
    INDEX_FILE_SUFFIX,
    LOG_FILE_SUFFIX,
    SWAP_FILE_SUFFIX,
    TIME_INDEX_FILE_SUFFIX,
    LogSegment,
)
from .skiplist import SkipListMap
from .transaction_index import TXN_INDEX_FILE_SUFFIX, AbortedTxn

__all__ = ["LogLoader", "LoadedLog", "rebuild_producer_state", "floor_base_offset"]

logger = logging.getLogger(__name__)


class LoadedLog(NamedTuple):
    """What a ``Log`` starts from (Kafka's LoadedLogOffsets, with the segments): at least
    one segment, the last the active one (the log end offset is its ``read_next_offset()``);
    first segment's base <= log start offset <= log end offset; recovery point <= log end
    offset; the producer state's map end offset is the log end offset."""

    segments: SkipListMap[int, LogSegment]
    log_start_offset: int
    recovery_point: int
    producer_state: ProducerStateManager


class LogLoader:
    """Loads one partition directory (``load``, once); see the module docstring."""

    def __init__(
        self,
        directory: str,
        topic: str,
        partition: int,
        config: LogConfig,
        *,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        had_clean_shutdown: bool = False,
        now_ms: Callable[[], int],
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    ) -> None:
        self.dir = directory
        self.topic = topic
        self.partition = partition
        self.config = config
        self.recovery_point = recovery_point
        self.log_start_offset = log_start_offset
        self.had_clean_shutdown = had_clean_shutdown
        self._now_ms = now_ms
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.segments: SkipListMap[int, LogSegment] = SkipListMap()

    def load(self) -> LoadedLog:
        directory, config, segments = self.dir, self.config, self.segments
        os.makedirs(directory, exist_ok=True)
        names = _list_files(directory)
        swaps = _remove_temp_files_and_collect_swaps(directory, names)
        _load_segment_files(directory, config, segments, names)
        _complete_swaps(directory, config, segments, swaps)

        bases = list(segments.keys())
        for base, next_base in zip(bases, bases[1:]):
            segments.get(base).next_segment_base = next_base  # type: ignore[union-attr]
        self._recover_segments()
        leo = self._log_end_offset()
        recovery_point = leo if self.had_clean_shutdown else min(self.recovery_point, leo)
        # Kafka: a segment's wall-clock age (segment.ms for batches without timestamps) counts
        # from when this process opened it, on the log's clock (the injected one in tests).
        created = self._now_ms()
        active = segments.last_value()
        assert active is not None, "_log_end_offset leaves a segment"
        for seg in segments.values():
            seg.created_ms = created
            if seg is not active:
                seg.log.release()  # inactive: opened on demand, under the open-files LRU
        active.resize_indexes(config.segment_index_bytes)
        first_base = segments.first()[0]  # type: ignore[index]
        log_start_offset = max(self.log_start_offset, first_base)
        producer_state = ProducerStateManager(
            directory, producer_id_expiration_ms=self.producer_id_expiration_ms,
            partition=f"{self.topic}-{self.partition}", snapshot_offsets=ProducerStateManager.snapshot_offsets_in(names))
        producer_state.remove_stray_snapshots(segments.keys())
        rebuild_producer_state(producer_state, segments, log_start_offset, leo, self._now_ms(),
                               reload_from_clean_shutdown=self.had_clean_shutdown)
        return LoadedLog(segments, log_start_offset, recovery_point, producer_state)

    def _recover_segments(self) -> None:
        """Step 5: recovery from the recovery point after an unclean stop; the active
        segment's framing walk after a clean one."""
        directory, segments = self.dir, self.segments
        if not self.had_clean_shutdown and len(segments):
            # Kafka's recovery from the recovery point, except that a damaged batch with valid
            # ones after it (in its segment or in later ones) costs only itself: Kafka truncates
            # there and deletes the later segments. Only the active segment's damaged tail (a
            # torn write) is truncated.
            for base, seg in list(segments.items(floor_base_offset(segments, self.recovery_point))):
                truncated = seg.recover()
                if truncated > 0:
                    logger.warning("%s: corruption in segment %d, truncated %d bytes; log now ends at offset %d",
                                   directory, base, truncated, seg.read_next_offset())
        elif len(segments):
            # After a clean shutdown Kafka trusts the files; junk appended to the active segment
            # (a power loss on some file systems) or a damaged batch in it would then stop the
            # broker or make reads fail. One framing walk of the active segment finds both.
            base, seg = segments.last()  # type: ignore[misc]
            truncated = seg.check_framing()
            if truncated > 0:
                logger.warning("%s: the active segment %d ended in %d bytes that are not valid batches; truncated"
                               " them (log now ends at offset %d)", directory, base, truncated, seg.read_next_offset())

    def _log_end_offset(self) -> int:
        """Step 6: the log end offset, once the active segment's last index entry is checked;
        restarts the log empty at the log start offset when it has no segment or ends below
        that offset."""
        directory, segments, log_start_offset = self.dir, self.segments, self.log_start_offset
        leo: int | None = None
        last = segments.last()
        if last is not None:
            # The LEO comes from the active segment's last index entry. Kafka trusts that entry
            # after a clean shutdown (KAFKA-7283); a wrong one (position past the .log, or not the
            # start of a batch ending at its offset) would make the LEO regress and offsets be
            # reused, so check it (one 61-byte read) and rebuild the indexes if it is wrong.
            if not last[1].last_index_entry_is_consistent():
                logger.warning("%s: the last offset index entry of segment %d does not match its .log;"
                               " recovering the segment", directory, last[0])
                last[1].recover()
            leo = last[1].read_next_offset()
        if leo is None or leo < log_start_offset:
            if leo is not None:
                logger.warning("%s: deleting all segments because the log end offset %d is below the log"
                               " start offset %d", directory, leo, log_start_offset)
            for base, seg in list(segments.items()):
                segments.remove(base)
                seg.delete_if_exists()
            seg = LogSegment.open_with_config(directory, log_start_offset, self.config, jitter=True, active=True)
            segments.put(log_start_offset, seg)
            leo = log_start_offset
        return leo


# -------------------------------------------------------------------- producer state

def rebuild_producer_state(psm: ProducerStateManager, segments: SkipListMap[int, LogSegment],
                           log_start_offset: int, last_offset: int, now_ms: int, *,
                           reload_from_clean_shutdown: bool = False) -> None:
    """Make the producer state reflect every batch below ``last_offset`` (Kafka's
    rebuildProducerState; loading runs it, and ``Log.truncate_to``): load the latest snapshot
    at or below it, then re-apply the batches after the snapshot (headers only, no sequence
    checks), taking snapshots at the starts of the last two segments and at ``last_offset``
    so that the next load reads less.

    After a clean shutdown with no snapshot at all (a log written before snapshots existed,
    or without idempotent producers) the scan is skipped: the state is empty, as Kafka
    assumes in that case."""
    bases = list(segments.keys())
    offsets_to_snapshot = {*bases[-2:], last_offset}
    if psm.latest_snapshot_offset is None and reload_from_clean_shutdown:
        for offset in sorted(offsets_to_snapshot):
            psm.update_map_end_offset(offset)
            psm.take_snapshot(sync=False)
        return
    was_empty = psm.is_empty and psm.map_end_offset >= last_offset
    psm.truncate_and_reload(log_start_offset, last_offset, now_ms)
    if last_offset > psm.map_end_offset and not was_empty:
        t0 = time.monotonic()
        replayed, from_offset = 0, psm.map_end_offset
        for base, seg in list(segments.items(floor_base_offset(segments, psm.map_end_offset))):
            if base >= last_offset:
                break
            start = max(base, psm.map_end_offset, log_start_offset)
            psm.update_map_end_offset(start)
            if base in offsets_to_snapshot:
                psm.take_snapshot(sync=False)
            replayed += _replay_producer_batches(psm, seg, start, last_offset)
        logger.info("%s: producer state rebuilt from offset %d to %d (%d producer batches) in %.3f s",
                    psm.dir, from_offset, last_offset, replayed, time.monotonic() - t0)
    psm.update_map_end_offset(last_offset)
    psm.take_snapshot(sync=False)


def _replay_producer_batches(psm: ProducerStateManager, seg: LogSegment, start: int, last_offset: int) -> int:
    """Apply the producer batches of ``seg`` in [start, last_offset) to the producer state
    without checks (they were checked when written); returns how many."""
    infos: dict[int, ProducerAppendInfo] = {}
    n = 0
    # From the index entry at or below ``start`` (a batch boundary). A damaged batch is
    # stepped over (and recorded) rather than ending the load: its producer's state then
    # lacks it, as if it had expired.
    for batch in seg.valid_batches(seg.offset_index.lookup(start).position):
        (base_offset, _, _, _, _, attributes, last_delta, _, max_ts, producer_id, epoch, base_seq,
         _) = batch.fields
        if base_offset + last_delta < start:
            continue
        if base_offset + last_delta >= last_offset:
            break
        if producer_id < 0:
            continue
        info = infos.get(producer_id)
        if info is None:
            info = infos[producer_id] = psm.prepare_update(producer_id, validate=False)
        if attributes & CONTROL_FLAG_MASK:
            done = info.append_control_batch(batch.data, 0, epoch, base_offset, max_ts)
            if done is not None and done.is_aborted and not seg.txn_index.contains_marker(done.last_offset):
                # The marker reached the .log but its entry did not reach the .txnindex (a
                # crash in between): add it. Its last stable offset is taken as the
                # transaction's own first offset, which can only make readers look further.
                seg.txn_index.append(AbortedTxn(producer_id, done.first_offset, done.last_offset,
                                                done.first_offset))
            n += 1
            continue
        info.append_data_batch(epoch, base_seq, increment_sequence(base_seq, last_delta), max_ts,
                               base_offset, base_offset + last_delta, bool(attributes & TRANSACTIONAL_FLAG_MASK))
        n += 1
    for info in infos.values():
        psm.update(info)
    return n


# -------------------------------------------------------------------- directory and segments

def floor_base_offset(segments: SkipListMap[int, LogSegment], offset: int) -> int:
    """The base offset of the segment holding ``offset``: the first segment's when ``offset``
    is below it, 0 when there is no segment (where a walk "from ``offset``" starts)."""
    entry = segments.floor(offset)
    if entry is not None:
        return entry[0]
    first = segments.first()
    return first[0] if first is not None else 0


def _offset_from_name(name: str) -> int | None:
    prefix = name.split(".", 1)[0]
    if len(prefix) != 20 or not prefix.isdigit():
        return None
    return int(prefix)


def _list_files(directory: str) -> list[str]:
    """Names of the regular files in ``directory``, from one scandir (d_type: no stat calls)."""
    with os.scandir(directory) as it:
        return [e.name for e in it if e.is_file()]


def _remove_temp_files_and_collect_swaps(directory: str, names: list[str]) -> list[str]:
    """Delete ``*.deleted`` and ``*.cleaned`` files and invalid swaps (removing them from
    ``names``); finish the rename of a ``.txnindex.swap`` whose segment's own final rename a
    crash interrupted; return the valid ``*.log.swap`` paths."""
    swaps: list[str] = []
    txn_swaps: list[str] = []
    cleaned: list[str] = []
    removed: set[str] = set()
    min_cleaned = None
    for name in names:
        if name.endswith(LOG_FILE_SUFFIX) or name.endswith(INDEX_FILE_SUFFIX) or name.endswith(
                TIME_INDEX_FILE_SUFFIX) or name.endswith(TXN_INDEX_FILE_SUFFIX):
            continue  # the common case, decided without further checks
        path = os.path.join(directory, name)
        if name.endswith(DELETED_FILE_SUFFIX):
            logger.info("%s: removing leftover %s", directory, name)
            os.unlink(path)
            removed.add(name)
        elif name.endswith(CLEANED_FILE_SUFFIX):
            off = _offset_from_name(name)
            if off is not None:
                min_cleaned = off if min_cleaned is None else min(min_cleaned, off)
            cleaned.append(path)
        elif name.endswith(LOG_FILE_SUFFIX + SWAP_FILE_SUFFIX):
            swaps.append(path)
        elif name.endswith(TXN_INDEX_FILE_SUFFIX + SWAP_FILE_SUFFIX):
            # Kept with its log swap: the aborted transactions the cleaner carried over cannot
            # be rebuilt from the cleaned segment alone. Deleted below if its log swap is.
            txn_swaps.append(path)
        elif name.endswith(SWAP_FILE_SUFFIX):
            # Kafka: an index swap is just deleted (rebuilt when its log swap is recovered).
            # Done here, before any log swap is completed: completing one renames its index
            # swaps into place, so deleting them later would fail with FileNotFoundError.
            logger.info("%s: removing index swap %s", directory, name)
            os.unlink(path)
            removed.add(name)
    valid = []
    for path in swaps:
        off = _offset_from_name(os.path.basename(path))
        if min_cleaned is not None and off is not None and off >= min_cleaned:
            logger.info("%s: removing swap %s (>= cleaned offset %d)", directory, path, min_cleaned)
            os.unlink(path)
            removed.add(os.path.basename(path))
        else:
            valid.append(path)
    valid_prefixes = {os.path.basename(p)[:20] for p in valid}
    all_swap_prefixes = {os.path.basename(p)[:20] for p in swaps}
    present = set(names)
    stale_txn_swaps: list[str] = []
    for path in txn_swaps:
        name = os.path.basename(path)
        prefix = name[:20]
        off = _offset_from_name(name)
        if prefix in valid_prefixes:
            continue
        if (prefix not in all_swap_prefixes and prefix + LOG_FILE_SUFFIX in present and off is not None
                and (min_cleaned is None or off < min_cleaned)):
            # A crash inside the last rename of a swap (``.swap`` -> final name, the ``.log``
            # first): the segment is the cleaned one, its old files are already ``.deleted``.
            # Finish the rename of the aborted transactions it carries.
            final = name[: -len(SWAP_FILE_SUFFIX)]
            logger.info("%s: completing the interrupted rename of %s", directory, name)
            os.replace(path, os.path.join(directory, final))
            removed.add(name)
            names.append(final)
        else:
            stale_txn_swaps.append(path)
    # The transaction-index swaps go before the ``.cleaned`` files: a crash in this loop then
    # never leaves one without the ``.cleaned`` file that marks it stale (see above).
    for path in stale_txn_swaps + cleaned:
        logger.info("%s: removing leftover %s", directory, os.path.basename(path))
        os.unlink(path)
        removed.add(os.path.basename(path))
    if removed:
        names[:] = [n for n in names if n not in removed]
    return valid


def _load_segment_files(
    directory: str,
    config: LogConfig,
    segments: SkipListMap[int, LogSegment],
    names: list[str],
) -> None:
    """Open every segment (indexes lazily); delete orphan indexes; rebuild a missing .index.
    Existence checks use the directory listing, not stat calls: a clean start of thousands
    of segments costs one scandir per partition plus one open per .log."""
    present = set(names)
    for name in sorted(names):
        base = _offset_from_name(name)
        if base is None:
            continue
        prefix = name[:20]
        if name.endswith(INDEX_FILE_SUFFIX) or name.endswith(TIME_INDEX_FILE_SUFFIX) or name.endswith(
                TXN_INDEX_FILE_SUFFIX):
            if prefix + LOG_FILE_SUFFIX not in present:
                logger.warning("%s: deleting orphan index file %s", directory, name)
                os.unlink(os.path.join(directory, name))
        elif name.endswith(LOG_FILE_SUFFIX):
            time_index_missing = prefix + TIME_INDEX_FILE_SUFFIX not in present
            index_missing = prefix + INDEX_FILE_SUFFIX not in present
            seg = LogSegment.open_with_config(directory, base, config, jitter=True, file_already_exists=True)
            if index_missing:
                logger.warning("%s: offset index of segment %d is missing; recovering the segment and"
                               " rebuilding its indexes", directory, base)
                seg.recover()
            elif time_index_missing:
                seg.time_index.resize(0)  # Kafka: a newly created time index starts empty
            segments.put(base, seg)


def _complete_swaps(directory: str, config: LogConfig, segments: SkipListMap[int, LogSegment],
                    swaps: Iterable[str]) -> None:
    """Finish an interrupted segment replacement: a ``.log.swap`` replaces the segments its
    offsets cover; swapped index files are deleted and rebuilt."""
    for path in swaps:
        name = os.path.basename(path)
        base = _offset_from_name(name)
        if base is None:
            continue
        if not name.endswith(LOG_FILE_SUFFIX + SWAP_FILE_SUFFIX):
            os.unlink(path)  # index swap: rebuilt by recovering the swapped segment
            continue
        swap = LogSegment.open_with_config(directory, base, config, file_already_exists=True,
                                           file_suffix=SWAP_FILE_SUFFIX)
        swap.recover()
        end = swap.read_next_offset()
        for b, seg in list(segments.items(base)):
            if b >= end:
                break
            segments.remove(b)
            seg.delete_if_exists()
        swap.change_file_suffixes(SWAP_FILE_SUFFIX, "")
        segments.put(base, swap)
        logger.info("%s: completed swap of segment %d", directory, base)
