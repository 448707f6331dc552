"""dump-log: Kafka's DumpLogSegments (``kafka.tools.DumpLogSegments``) for minibroker's files.

Every file is announced with ``Dumping <file>`` (the path as given), then dumped by suffix.
The output matches Kafka's line for line:

``.log``::

    Log starting offset: <base offset from the file name>
    baseOffset: 0 lastOffset: 2 count: 3 baseSequence: -1 lastSequence: -1 producerId: -1
      producerEpoch: -1 partitionLeaderEpoch: -1 isTransactional: false isControl: false
      deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000002 size: 98
      magic: 2 compresscodec: none crc: 1234567 isvalid: true            (one line per batch)
    | offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 3 sequence: -1 headerKeys: []
      key: k payload: v1                     (per record with --deep-iteration / --print-data-log)
    Found 7 invalid bytes at the end of 00000000000000000000.log      (a torn or corrupt tail)

  ``CreateTime`` reads ``LogAppendTime`` for batches with that timestamp type; the batch line
  shows ``maxTimestamp``; ``deleteHorizonMs`` is ``OptionalLong[<baseTimestamp>]`` when the
  batch has the delete-horizon flag; ``crc`` is the stored CRC (unsigned decimal) and
  ``isvalid`` whether it matches the bytes. Keys and payloads are decoded as UTF-8 (invalid
  sequences become U+FFFD, as Java's StringDecoder does); control batches show the marker
  (`` endTxnMarker: COMMIT coordinatorEpoch: 5``) instead of key and payload. With
  ``--offsets-decoder`` (``__consumer_offsets``), keys and payloads are printed as JSON
  (broker/tools/offsets_decoder.py); with ``--transaction-log-decoder``
  (``__transaction_state``), as Kafka's transaction log parser prints them
  (broker/tools/transaction_log_decoder.py); with ``--share-state-decoder``
  (``__share_group_state``), as JSON (broker/tools/share_state_decoder.py).

``.index``: ``offset: O position: P`` per entry, or ``<file> is empty.``
``.timeindex``: ``timestamp: T offset: O`` per entry.
``.snapshot`` (producer state)::

    producerId: 1000 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty
      lastTimestamp: 1700000000000 firstSequence: 0 lastSequence: 4 lastOffset: 4 offsetDelta: 4
      timestamp: 1700000000000                                              (one line per producer)

  A snapshot failing its CRC or version check prints the reason to stderr (exit status 1).

``.txnindex`` (the aborted transactions of a segment, one line per entry)::

    version: 0 producerId: 1000 firstOffset: 5 lastOffset: 9 lastStableOffset: 10

  An entry of an unknown version stops the file (reported on stderr, as Kafka fails there);
  trailing bytes that are not a whole 34-byte entry (a torn write) are reported on stderr.

  Both stop at the first entry after the first whose offset equals the base offset: that is
  zero padding (a live segment's index is preallocated and loads as full, see index.py). As in
  Kafka, entry 0 of a padded index that has no real entry is still printed (``offset: <base>
  position: 0``); it is the tell-tale of an untrimmed index, not a bug of the tool.

Verification (as Kafka, against ``<base>.log`` in the same directory when it exists): each
offset-index entry must be the last offset of the batch starting at its position; each
time-index entry must name the last offset of a batch whose largest record timestamp is the
entry's timestamp, and timestamps must increase. Findings go to stderr *after* all files are
dumped, in Kafka's order and wording (``Mismatches in :<abs path>``, ``Found timestamp mismatch
in :…``, ``Found out of order timestamp in :…``, ``The following indexed offsets are not found
in the log.``, ``Non-consecutive offsets in …``). ``--verify-index-only`` suppresses the entry
lines; ``--index-sanity-check`` runs only the indexes' ``sanity_check()`` (Kafka's startup check:
last entry and file length) and prints ``<file> passed sanity check.`` or the error.

Read-only (KAFKA-5104): ``.log`` files are opened with ``FileRecords.open(writable=False)``,
indexes with ``writable=False`` (``O_RDONLY`` and an ``ACCESS_READ`` mmap) and released with
``close_handler()``, never ``close()``, which trims. Running the tool on a live segment
changes no byte, size or mtime of any file.

Exit status: 0 when every file could be dumped (index mismatches are findings, not failures,
as in Kafka); 1 when a file is missing or unreadable, its name carries no base offset, an
index fails ``--index-sanity-check``, or a batch or its records cannot be decoded (Kafka dies
with a stack trace in those cases; we report and go on with the next file).
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import TextIO

from broker.storage.errors import CorruptIndexError, CorruptSnapshotError, StorageError
from broker.storage.file_records import FileRecords
from broker.storage.offset_index import OffsetIndex
from broker.storage.producer_state import SNAPSHOT_FILE_SUFFIX, read_snapshot
from broker.storage.segment import INDEX_FILE_SUFFIX, LOG_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX
from broker.storage.time_index import TimeIndex
from broker.storage.transaction_index import TXN_INDEX_FILE_SUFFIX, parse_entries
from broker.tools.offsets_decoder import describe_offsets_record
from broker.tools.share_state_decoder import describe_share_state_record
from broker.tools.transaction_log_decoder import describe_transaction_log_record
from client.cli import positive_int
from client.records.batch import (
    CONTROL_FLAG_MASK,
    CURRENT_MAGIC,
    DELETE_HORIZON_FLAG_MASK,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    CorruptRecordError,
    RecordBatchHeader,
    RecordError,
    UnsupportedMagicError,
)
from client.records.record import Record, iter_records

__all__ = ["dump_files", "add_arguments", "run", "DEFAULT_MAX_MESSAGE_SIZE"]

DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
_SEQUENCE_MODULUS = 1 << 31  # sequences wrap at Integer.MAX_VALUE (DefaultRecordBatch.incrementSequence)
_CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_CONTROL_TYPES = {  # Kafka's ControlRecordType
    0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS",
}
_CONTROL_KEY = struct.Struct(">hh")  # version, type
_END_TXN_VALUE = struct.Struct(">hi")  # version, coordinatorEpoch
# What a bad file can make the readers raise: CorruptRecordError & co. and decompression
# failures are ValueErrors; StorageError covers the index classes.
_DUMP_ERRORS = (OSError, ValueError, StorageError)
#: A payload decoder: (key, value, offset) -> the `` key: ... payload: ...`` part of a record line.
Decoder = Callable[[bytes | None, bytes | None, int], str]


def _bool(flag: int | bool) -> str:
    return "true" if flag else "false"


def _base_offset_of(path: str) -> int:
    """The base offset in a segment file name: the digits before the first dot."""
    name = os.path.basename(path)
    prefix = name.split(".", 1)[0]
    if not prefix.isdigit():
        raise ValueError(
            f"cannot parse a base offset from the file name {name!r}"
            " (expected <20-digit offset>.log / .index / .timeindex)"
        )
    return int(prefix)


def _sibling(path: str, suffix: str) -> str:
    """The segment file with the same base offset and ``suffix`` in the same directory."""
    directory = os.path.dirname(os.path.abspath(path))
    return os.path.join(directory, os.path.basename(path).split(".", 1)[0] + suffix)


def _batch_line(h: RecordBatchHeader, position: int) -> str:
    (base, length, epoch, magic, crc, attrs, last_delta, base_ts, max_ts,
     producer_id, producer_epoch, base_seq, count) = h.unpack()
    attrs &= 0xFF  # only the low byte carries flags
    codec = _CODEC_NAMES.get(attrs & 0x07, f"unknown({attrs & 0x07})")
    last_seq = -1 if base_seq == -1 else (base_seq + last_delta) % _SEQUENCE_MODULUS
    horizon = f"OptionalLong[{base_ts}]" if attrs & DELETE_HORIZON_FLAG_MASK else "OptionalLong.empty"
    ts_type = "LogAppendTime" if attrs & TIMESTAMP_TYPE_MASK else "CreateTime"
    return (
        f"baseOffset: {base} lastOffset: {base + last_delta} count: {count}"
        f" baseSequence: {base_seq} lastSequence: {last_seq} producerId: {producer_id}"
        f" producerEpoch: {producer_epoch} partitionLeaderEpoch: {epoch}"
        f" isTransactional: {_bool(attrs & TRANSACTIONAL_FLAG_MASK)}"
        f" isControl: {_bool(attrs & CONTROL_FLAG_MASK)} deleteHorizonMs: {horizon}"
        f" position: {position} {ts_type}: {max_ts} size: {length + LOG_OVERHEAD}"
        f" magic: {magic} compresscodec: {codec} crc: {crc} isvalid: {_bool(h.is_valid())}"
    )


def _control_description(rec: Record) -> str:
    """Kafka's rendering of a control record: the transaction marker, else its type."""
    key = rec.key
    if key is None or len(key) < _CONTROL_KEY.size:
        return " controlType: UNKNOWN(-1)"  # Kafka throws InvalidRecordException here
    type_id = _CONTROL_KEY.unpack_from(key)[1]
    name = _CONTROL_TYPES.get(type_id, "UNKNOWN")
    value = rec.value
    if type_id in (0, 1) and value is not None and len(value) >= _END_TXN_VALUE.size:
        return f" endTxnMarker: {name} coordinatorEpoch: {_END_TXN_VALUE.unpack_from(value)[1]}"
    # KRaft's snapshot and voter records (printed as JSON by Kafka) never occur in minibroker.
    return f" controlType: {name}({type_id})"


def _record_line(rec: Record, h: RecordBatchHeader, ts_type: str, print_data: bool, decoder: Decoder | None = None
                 ) -> str:
    base_seq = h.base_sequence
    seq = -1 if base_seq == -1 else (base_seq + rec.offset - h.base_offset) % _SEQUENCE_MODULUS
    key_size = -1 if rec.key is None else len(rec.key)
    value_size = -1 if rec.value is None else len(rec.value)
    header_keys = ",".join(k for k, _ in rec.headers)
    line = (
        f"| offset: {rec.offset} {ts_type}: {rec.timestamp} keySize: {key_size}"
        f" valueSize: {value_size} sequence: {seq} headerKeys: [{header_keys}]"
    )
    if h.is_control:
        line += _control_description(rec)
    elif decoder is not None:
        line += decoder(rec.key, rec.value, rec.offset)
    elif print_data:
        if rec.key is not None:
            line += f" key: {rec.key.decode('utf-8', 'replace')}"
        if rec.value is not None:
            line += f" payload: {rec.value.decode('utf-8', 'replace')}"
    return line


@dataclass
class _Findings:
    """Verification findings, keyed by absolute path, printed after every file (as Kafka)."""

    index_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    timestamp_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    out_of_order: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    offsets_not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    non_consecutive: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    @staticmethod
    def add(table: dict[str, list[tuple[int, int]]], path: str, pairs: list[tuple[int, int]]) -> None:
        if pairs:
            table.setdefault(os.path.abspath(path), []).extend(pairs)

    def lines(self) -> Iterable[str]:
        # Kafka prepends index mismatches and non-consecutive pairs to Scala Lists, so it
        # prints them last-found first; we reverse to print the same lines in the same order.
        for path, pairs in self.index_mismatches.items():
            yield f"Mismatches in :{path}"
            for index_offset, log_offset in reversed(pairs):
                yield f"  Index offset: {index_offset}, log offset: {log_offset}"
        for path, pairs in self.timestamp_mismatches.items():
            yield f"Found timestamp mismatch in :{path}"
            for index_ts, log_ts in pairs:
                yield f"  Index timestamp: {index_ts}, log timestamp: {log_ts}"
        for path, pairs in self.out_of_order.items():
            yield f"Found out of order timestamp in :{path}"
            for index_ts, prev_ts in pairs:
                yield f"  Index timestamp: {index_ts}, Previously indexed timestamp: {prev_ts}"
        for pairs in self.offsets_not_found.values():
            yield "The following indexed offsets are not found in the log."
            for index_offset, log_offset in pairs:
                yield f"Indexed offset: {index_offset}, found log offset: {log_offset}"
        for path, pairs in self.non_consecutive.items():
            yield f"Non-consecutive offsets in {path}"
            for first, second in reversed(pairs):
                yield f"  {first} is followed by {second}"


class _Dumper:
    def __init__(
        self, *, deep_iteration: bool, print_data_log: bool, verify_index_only: bool,
        index_sanity_check: bool, max_message_size: int, max_bytes: int | None,
        out: TextIO, err: TextIO, decoder: Decoder | None = None,
    ) -> None:
        self.decoder = decoder
        self.print_data = print_data_log or decoder is not None  # Kafka: a decoder implies --print-data-log
        self.deep = deep_iteration or self.print_data  # Kafka: --print-data-log implies deep
        self.verify_only = verify_index_only
        self.sanity_only = index_sanity_check
        self.max_message_size = max_message_size
        self.max_bytes = max_bytes
        self.out = out
        self.err = err
        self.findings = _Findings()
        self.status = 0

    def print(self, line: str) -> None:
        self.out.write(line + "\n")

    def error(self, line: str) -> None:
        self.err.write(line + "\n")
        self.status = 1

    def dump(self, path: str) -> None:
        self.print(f"Dumping {path}")
        name = os.path.basename(path)
        dot = name.rfind(".")
        suffix = name[dot:] if dot >= 0 else ""
        dumpers = {
            LOG_FILE_SUFFIX: self.dump_log,
            INDEX_FILE_SUFFIX: self.dump_index,
            TIME_INDEX_FILE_SUFFIX: self.dump_time_index,
            SNAPSHOT_FILE_SUFFIX: self.dump_producer_snapshot,
            TXN_INDEX_FILE_SUFFIX: self.dump_txn_index,
        }
        dumper = dumpers.get(suffix)
        if dumper is None:
            self.err.write(f"Ignoring unknown file {path}\n")
            return
        try:
            dumper(path)
        except BrokenPipeError:
            raise  # our reader went away (`| head`), not a problem with the file
        except _DUMP_ERRORS as e:
            detail = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            self.error(f"Error while dumping {path}: {detail}")

    # -- .snapshot --

    def dump_producer_snapshot(self, path: str) -> None:
        try:
            entries = read_snapshot(path)
        except CorruptSnapshotError as err:
            self.error(str(err))
            return
        for e in entries:
            txn = f"OptionalLong[{e.current_txn_first_offset}]" if e.current_txn_first_offset >= 0 else "OptionalLong.empty"
            line = (f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} coordinatorEpoch:"
                    f" {e.coordinator_epoch} currentTxnFirstOffset: {txn} lastTimestamp: {e.last_timestamp} ")
            if e.batches:
                b = e.batches[0]
                line += (f"firstSequence: {b.first_seq} lastSequence: {b.last_seq} lastOffset: {b.last_offset}"
                         f" offsetDelta: {b.offset_delta} timestamp: {b.timestamp}")
            self.print(line)

    # -- .txnindex --

    def dump_txn_index(self, path: str) -> None:
        _base_offset_of(path)  # Kafka parses it too: a badly named file is an error
        with open(path, "rb") as f:
            parsed = parse_entries(f.read())
        for txn in parsed.entries:
            self.print(f"version: 0 producerId: {txn.producer_id} firstOffset: {txn.first_offset}"
                       f" lastOffset: {txn.last_offset} lastStableOffset: {txn.last_stable_offset}")
        if parsed.unknown_version is not None:
            self.error(f"Unexpected aborted transaction version {parsed.unknown_version} in transaction index"
                       f" {os.path.abspath(path)}, current version is 0")
        elif parsed.trailing_bytes:
            self.error(f"Found {parsed.trailing_bytes} invalid bytes at the end of {os.path.basename(path)}")

    # -- .log --

    def dump_log(self, path: str) -> None:
        self.print(f"Log starting offset: {_base_offset_of(path)}")
        non_consecutive: list[tuple[int, int]] = []
        last_offset = -1
        valid_bytes = 0
        with ExitStack() as stack:
            records = FileRecords.open(path, writable=False)
            stack.callback(records.close_handlers)
            end = records.size if self.max_bytes is None else min(records.size, self.max_bytes)
            try:
                # Reads 4 MiB chunks; stops silently at a partial trailing batch.
                for pos, h in records.iter_batches(0, validate=False, end=end):
                    if h.magic != CURRENT_MAGIC:
                        raise UnsupportedMagicError(
                            f"batch at position {pos} has magic {h.magic}; only RecordBatch v2"
                            " (magic 2) is supported"
                        )
                    self.print(_batch_line(h, pos))
                    if not h.is_valid():
                        self.status = 1  # shown (isvalid: false), and the exit status says so
                    if self.deep:
                        last_offset = self._print_records(path, pos, h, last_offset, non_consecutive)
                    valid_bytes = pos + h.size_in_bytes
            except RecordError as e:  # a size field below the batch overhead, or not magic 2
                self.error(f"Error while dumping {path}: {e}")
            finally:
                self.findings.add(self.findings.non_consecutive, path, non_consecutive)
            # Kafka prints this only when --max-bytes was not given (the limit cuts batches).
            if valid_bytes < end and self.max_bytes is None:
                self.print(f"Found {end - valid_bytes} invalid bytes at the end of {os.path.basename(path)}")
                self.status = 1

    def _print_records(
        self, path: str, pos: int, h: RecordBatchHeader, last_offset: int,
        non_consecutive: list[tuple[int, int]],
    ) -> int:
        ts_type = "LogAppendTime" if h.timestamp_type else "CreateTime"
        try:
            # No CRC check: a batch with isvalid: false is still shown when it decodes.
            for rec in iter_records(h.buf, h.pos, verify_crc=False):
                if last_offset != -1 and rec.offset != last_offset + 1:
                    non_consecutive.append((last_offset, rec.offset))
                last_offset = rec.offset
                self.print(_record_line(rec, h, ts_type, self.print_data, self.decoder))
        except ValueError as e:
            self.error(f"Cannot decode the records of the batch at position {pos} of {path}: {e}")
        return last_offset

    # -- .index --

    def dump_index(self, path: str) -> None:
        base = _base_offset_of(path)
        with ExitStack() as stack:
            index = OffsetIndex(path, base, writable=False)
            stack.callback(index.close_handler)
            if index.entries == 0:
                self.print(f"{path} is empty.")
                return
            if self.sanity_only:
                self._sanity_check(path, index)
                return
            records = self._open_sibling_log(path, stack)
            mismatches: list[tuple[int, int]] = []
            for i in range(index.entries):
                offset, position = index.entry(i)
                if offset == base and i > 0:
                    break  # zero padding of a preallocated (or crashed) index
                if records is not None:
                    found = self._first_batch_last_offset(records, position)
                    if found != offset:
                        mismatches.append((offset, found))
                if not self.verify_only:
                    self.print(f"offset: {offset} position: {position}")
            self.findings.add(self.findings.index_mismatches, path, mismatches)

    def _first_batch_last_offset(self, records: FileRecords, position: int) -> int:
        """Last offset of the batch at ``position`` (within max_message_size bytes), or -1.
        Kafka fails with NoSuchElementException where we return -1."""
        if position < 0:  # a corrupt entry; pread would fail with EINVAL
            return -1
        end = min(records.size, position + self.max_message_size)
        try:
            for _, h in records.batch_headers(position, end):
                return h.last_offset
        except CorruptRecordError:
            pass
        return -1

    # -- .timeindex --

    def dump_time_index(self, path: str) -> None:
        base = _base_offset_of(path)
        with ExitStack() as stack:
            time_index = TimeIndex(path, base, writable=False)
            stack.callback(time_index.close_handler)
            if self.sanity_only:
                self._sanity_check(path, time_index)
                return
            records = self._open_sibling_log(path, stack)
            offset_index: OffsetIndex | None = None
            index_path = _sibling(path, INDEX_FILE_SUFFIX)
            if records is not None and os.path.isfile(index_path):
                offset_index = OffsetIndex(index_path, base, writable=False)
                stack.callback(offset_index.close_handler)
            not_found: list[tuple[int, int]] = []
            mismatches: list[tuple[int, int]] = []
            out_of_order: list[tuple[int, int]] = []
            prev_ts = -1
            for i in range(time_index.entries):
                ts, offset = time_index.entry(i)
                if offset == base and i > 0:
                    break  # zero padding
                if records is not None:
                    # Without an .index we scan from the start: slower, same answer.
                    position = offset_index.lookup(offset).position if offset_index is not None else 0
                    position = max(position, 0)  # a corrupt .index: scanning from 0 still works
                    found = self._batch_with_offset(records, position, offset)
                    if found is None:
                        not_found.append((offset, -1))
                    elif found[1].last_offset != offset:
                        not_found.append((offset, found[1].last_offset))
                    else:
                        log_ts = self._max_record_timestamp(path, records, *found)
                        if log_ts is not None and log_ts != ts:
                            mismatches.append((ts, log_ts))
                        if prev_ts >= ts:
                            out_of_order.append((ts, prev_ts))
                if not self.verify_only:
                    self.print(f"timestamp: {ts} offset: {offset}")
                prev_ts = ts
            self.findings.add(self.findings.offsets_not_found, path, not_found)
            self.findings.add(self.findings.timestamp_mismatches, path, mismatches)
            self.findings.add(self.findings.out_of_order, path, out_of_order)

    @staticmethod
    def _batch_with_offset(
        records: FileRecords, position: int, offset: int
    ) -> tuple[int, RecordBatchHeader] | None:
        """The first batch at or after ``position`` whose last offset >= ``offset``."""
        try:
            for pos, h in records.batch_headers(position):
                if h.last_offset >= offset:
                    return pos, h
        except CorruptRecordError:
            pass
        return None

    def _max_record_timestamp(
        self, path: str, records: FileRecords, pos: int, h: RecordBatchHeader
    ) -> int | None:
        """Largest record timestamp of the batch (decoded, as Kafka does), None if undecodable."""
        data = records.read(pos, h.size_in_bytes)
        try:
            return max((r.timestamp for r in iter_records(data, verify_crc=False)), default=-1)
        except ValueError as e:
            self.error(f"Cannot decode the records of the batch at position {pos} of"
                       f" {_sibling(path, LOG_FILE_SUFFIX)}: {e}")
            return None

    # -- shared --

    def _sanity_check(self, path: str, index: OffsetIndex | TimeIndex) -> None:
        try:
            index.sanity_check()
        except CorruptIndexError as e:
            self.error(str(e))
            return
        self.print(f"{path} passed sanity check.")

    @staticmethod
    def _open_sibling_log(path: str, stack: ExitStack) -> FileRecords | None:
        """The segment's .log, read-only, when it exists (Kafka requires it; we verify if so)."""
        log_path = _sibling(path, LOG_FILE_SUFFIX)
        if not os.path.isfile(log_path):
            return None
        records = FileRecords.open(log_path, writable=False)
        stack.callback(records.close_handlers)
        return records


def dump_files(
    paths: Iterable[str | os.PathLike[str]],
    *,
    deep_iteration: bool = False,
    print_data_log: bool = False,
    verify_index_only: bool = False,
    index_sanity_check: bool = False,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    max_bytes: int | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    offsets_decoder: bool = False,
    transaction_log_decoder: bool = False,
    share_state_decoder: bool = False,
) -> int:
    """Dump each file as Kafka's DumpLogSegments does; return the exit status (see module doc).

    ``out`` and ``err`` default to ``sys.stdout`` and ``sys.stderr`` *at call time*.
    ``max_bytes`` limits how much of each ``.log`` is read (Kafka's ``--max-bytes``).
    ``offsets_decoder`` / ``transaction_log_decoder``: decode ``__consumer_offsets`` /
    ``__transaction_state`` records (the first wins when both are given, as in Kafka);
    ``share_state_decoder``: ``__share_group_state`` records.
    """
    decoder: Decoder | None = None
    if offsets_decoder:
        decoder = describe_offsets_record
    elif transaction_log_decoder:
        decoder = describe_transaction_log_record
    elif share_state_decoder:
        decoder = describe_share_state_record
    dumper = _Dumper(
        deep_iteration=deep_iteration, print_data_log=print_data_log,
        verify_index_only=verify_index_only, index_sanity_check=index_sanity_check,
        max_message_size=max_message_size, max_bytes=max_bytes,
        out=sys.stdout if out is None else out, err=sys.stderr if err is None else err,
        decoder=decoder,
    )
    for path in paths:
        dumper.dump(os.fspath(path))
    for line in dumper.findings.lines():
        dumper.err.write(line + "\n")
    return dumper.status


# -- the ``minibroker dump-log`` subcommand --


HELP = "print segment files (.log, .index, .timeindex, .txnindex, .snapshot) as Kafka's DumpLogSegments does"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="segment files: NNNNNNNNNNNNNNNNNNNN.log, .index, .timeindex, .txnindex or .snapshot")
    parser.add_argument("--deep-iteration", action="store_true",
                        help="also print every record (implied by --print-data-log)")
    parser.add_argument("--print-data-log", action="store_true",
                        help="also print record keys and payloads, decoded as UTF-8")
    parser.add_argument("--verify-index-only", action="store_true",
                        help="verify indexes against the .log without printing their entries")
    parser.add_argument("--index-sanity-check", action="store_true",
                        help="only run the index sanity check done at broker start-up")
    parser.add_argument("--max-message-size", type=positive_int, default=DEFAULT_MAX_MESSAGE_SIZE,
                        metavar="N", help="size of the largest batch, for index verification"
                        " (default %(default)s)")
    parser.add_argument("--max-bytes", type=positive_int, default=None, metavar="N",
                        help="read at most N bytes of each .log")
    parser.add_argument("--offsets-decoder", action="store_true",
                        help="decode __consumer_offsets records (committed offsets, group metadata) as JSON;"
                        " implies --print-data-log")
    parser.add_argument("--transaction-log-decoder", action="store_true",
                        help="decode __transaction_state records (transactional id, producer id and epoch, state,"
                        " partitions); implies --print-data-log")
    parser.add_argument("--share-state-decoder", action="store_true",
                        help="decode __share_group_state records (share-partition snapshots and updates) as JSON;"
                        " implies --print-data-log")


def run(args: argparse.Namespace) -> int:
    return dump_files(
        args.files,
        deep_iteration=args.deep_iteration,
        print_data_log=args.print_data_log,
        verify_index_only=args.verify_index_only,
        index_sanity_check=args.index_sanity_check,
        max_message_size=args.max_message_size,
        max_bytes=args.max_bytes,
        offsets_decoder=args.offsets_decoder,
        transaction_log_decoder=args.transaction_log_decoder,
        share_state_decoder=args.share_state_decoder,
    )
