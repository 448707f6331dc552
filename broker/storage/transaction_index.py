"""TransactionIndex: a segment's ``.txnindex`` — the transactions aborted in it (Kafka's
TransactionIndex and AbortedTxn).

One entry is appended when an ABORT marker is written for a transaction that wrote data to
the partition (an aborted transaction with no data in this partition has no entry), in the
segment that holds the marker. Entries are 34 bytes, big-endian, in marker order::

    int16 version = 0
    int64 producer_id
    int64 first_offset        the transaction's first data offset in this partition
    int64 last_offset         the offset of its ABORT marker
    int64 last_stable_offset  the partition's last stable offset once this abort completed

A read_committed fetch from offset F that returns data up to (not including) offset U asks
every segment from the one holding F onwards for the entries with ``last_offset >= F`` and
``first_offset < U``, and stops at the first entry whose ``last_stable_offset >= U``: every
transaction still open below U ended before that entry's abort. The client drops the records
of those producers between each entry's first offset and its marker.

The file is created with the first entry (most segments have none), written with ``write``
at the end and fsync'd with the segment. Entries are kept in memory once read: they are few.
A crash can leave an entry missing (the marker written, the entry not) or an entry past the
log's end; recovery truncates the index to the log and re-adds the entries of the markers
it replays (``log_loader.rebuild_producer_state``).
"""

from __future__ import annotations

import logging
import os
import struct
from typing import NamedTuple

__all__ = ["AbortedTxn", "TransactionIndex", "TXN_INDEX_FILE_SUFFIX", "txn_index_file_name", "ParsedEntries",
           "parse_entries"]

logger = logging.getLogger(__name__)

TXN_INDEX_FILE_SUFFIX = ".txnindex"
_ENTRY = struct.Struct(">hqqqq")  # 34 bytes
ENTRY_SIZE = _ENTRY.size
CURRENT_VERSION = 0


def txn_index_file_name(directory: str, base_offset: int, suffix: str = "") -> str:
    return os.path.join(directory, f"{base_offset:020d}{TXN_INDEX_FILE_SUFFIX}{suffix}")


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return _ENTRY.pack(CURRENT_VERSION, *self)


class ParsedEntries(NamedTuple):
    """What a ``.txnindex`` file's bytes hold: its entries up to the first of an unknown
    version (``unknown_version``, None if none), and how many bytes at the end are not a
    whole entry (a torn write)."""

    entries: list[AbortedTxn]
    unknown_version: int | None
    trailing_bytes: int


def parse_entries(data: bytes) -> ParsedEntries:
    whole = len(data) - len(data) % ENTRY_SIZE
    out: list[AbortedTxn] = []
    for version, pid, first, last, lso in _ENTRY.iter_unpack(data[:whole]):
        if version != CURRENT_VERSION:
            return ParsedEntries(out, version, len(data) - whole)
        out.append(AbortedTxn(pid, first, last, lso))
    return ParsedEntries(out, None, len(data) - whole)


class TransactionIndex:
    """The aborted transactions of one segment. Not thread-safe: its Log serialises use."""

    def __init__(self, path: str, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._entries: list[AbortedTxn] | None = None  # None: not read yet
        self._fd: int | None = None
        self._dirty = False

    # -- reading --

    @property
    def entries(self) -> list[AbortedTxn]:
        if self._entries is None:
            self._entries = self._read()
        return self._entries

    def _read(self) -> list[AbortedTxn]:
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return []
        parsed = parse_entries(data)
        if parsed.trailing_bytes:
            logger.warning("%s: %d trailing bytes are not a whole entry; ignoring them", self.path,
                           parsed.trailing_bytes)
        if parsed.unknown_version is not None:
            logger.warning("%s: entry of unknown version %d; ignoring the rest of the file", self.path,
                           parsed.unknown_version)
        return parsed.entries

    def collect(self, fetch_offset: int, upper_bound: int, out: list[AbortedTxn]) -> bool:
        """Append to ``out`` the entries overlapping [fetch_offset, upper_bound); True when an
        entry shows that no later segment can hold more (its last stable offset >= upper_bound)."""
        for e in self.entries:
            if e.last_offset >= fetch_offset and e.first_offset < upper_bound:
                out.append(e)
            if e.last_stable_offset >= upper_bound:
                return True
        return False

    # -- writing --

    def append(self, entry: AbortedTxn) -> None:
        entries = self.entries
        if entries and entry.last_offset <= entries[-1].last_offset:
            raise ValueError(f"{self.path}: aborted transaction at {entry.last_offset} is not after the last"
                             f" one at {entries[-1].last_offset}")
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.write(self._fd, entry.encode())
        entries.append(entry)
        self._dirty = True

    def contains_marker(self, last_offset: int) -> bool:
        return any(e.last_offset == last_offset for e in self.entries)

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or after ``offset``."""
        entries = self.entries
        keep = [e for e in entries if e.last_offset < offset]
        if len(keep) == len(entries) and (keep or not os.path.exists(self.path)):
            return
        self._entries = keep
        self._close_fd()
        if not keep:
            self._delete_file()
            return
        with open(self.path, "r+b") as f:
            f.truncate(len(keep) * ENTRY_SIZE)
        self._dirty = True

    def reset(self) -> None:
        self.truncate_to(-1)

    def flush(self) -> None:
        if self._dirty and self._fd is not None:
            os.fsync(self._fd)
        elif self._dirty and os.path.exists(self.path):
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self._dirty = False

    # -- files --

    def _close_fd(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def close(self) -> None:
        self._close_fd()

    def _delete_file(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def delete_if_exists(self) -> None:
        self._close_fd()
        self._delete_file()

    def rename_to(self, new_path: str) -> None:
        self._close_fd()
        try:
            os.rename(self.path, new_path)
        except FileNotFoundError:
            pass
        self.path = new_path
