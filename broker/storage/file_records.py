"""FileRecords: a ``.log`` file, i.e. RecordBatch v2 entries back to back with no file header.

The file is append-only through ``append`` (one ``pwrite`` at the end per call, so the
bytes of an append land in one sequential write), may be truncated to a batch boundary
(recovery, truncation), and is read three ways:

- ``batch_headers(start)``: header views of consecutive batches, read with one 61-byte
  ``pread`` per batch; never reads records. Used to translate offsets and to find timestamps.
- ``iter_batches(start, validate=True)``: whole batches read in large chunks and checked by
  CRC; used by recovery.
- ``slice(position, size)``: ``(fd, position, size)`` for ``os.sendfile``.

Like Kafka's batch iterator, both iterators stop silently at a partial trailing batch (fewer
than 17 bytes left, or a batch running past the end); callers that care (recovery, the dump
tool) compare the position reached with ``size``. A size field below the 61-byte minimum
raises CorruptRecordError (a zero-filled preallocated tail looks like that).

File descriptors: an active segment's ``.log`` stays open. An inactive one (``release``,
called at roll and for the older segments at load) is opened on first use and kept in a
process-wide LRU of at most ``OpenFiles.limit`` such files (set from RLIMIT_NOFILE at start-up),
so thousands of old segments do not need thousands of descriptors. The descriptor belongs to a
small ``FileHandle`` closed when its last reference goes: a ``FileSlice`` being sent with
sendfile keeps its file open even if the LRU evicts it (or the segment is deleted) meanwhile.

A preallocated file (``preallocate=True``, Kafka's ``log.preallocate``) is extended to
``init_file_size`` zero bytes at creation while its logical size starts at 0; ``trim``
cuts it back to the logical size when the segment becomes inactive or is closed.
"""

from __future__ import annotations

import os
import struct
import threading
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any, NamedTuple

from client.records.batch import (
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    RECORDS_OFFSET,
    CorruptRecordError,
    RecordBatchHeader,
    validate_batch,
)
from client.records.record import iter_records

__all__ = ["FileRecords", "FileSlice", "FileHandle", "OpenFiles", "LogOffsetPosition", "TimestampAndOffset"]

_LENGTH = struct.Struct(">i")
_RECOVERY_CHUNK = 4 << 20  # recovery reads 4 MiB at a time (more when one batch is larger)


class FileSlice(NamedTuple):
    """Bytes ``[position, position + size)`` of an open file, ready for ``os.sendfile``;
    ``owner`` (a FileHandle) keeps ``fd`` open while the slice exists."""

    fd: int
    position: int
    size: int
    owner: Any = None


class FileHandle:
    """An open file descriptor, closed when the last reference to it goes (or ``close``)."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def __del__(self) -> None:
        self.close()


class OpenFiles:
    """The LRU of inactive segments' open ``.log`` files (module docstring). Thread-safe: reads
    run on the event loop, flushes in worker threads."""

    limit = 1024
    _lru: OrderedDict[int, FileRecords] = OrderedDict()
    _lock = threading.Lock()

    @classmethod
    def touch(cls, records: FileRecords) -> None:
        with cls._lock:
            cls._lru[id(records)] = records
            cls._lru.move_to_end(id(records))
            while len(cls._lru) > cls.limit:
                _, victim = cls._lru.popitem(last=False)
                victim._handle_ref = None  # closed once no FileSlice refers to it

    @classmethod
    def forget(cls, records: FileRecords) -> None:
        with cls._lock:
            cls._lru.pop(id(records), None)


class LogOffsetPosition(NamedTuple):
    """A batch found by offset: its last offset, file position and size in bytes."""

    offset: int
    position: int
    size: int


class TimestampAndOffset(NamedTuple):
    timestamp: int
    offset: int
    leader_epoch: int | None = None


class FileRecords:
    def __init__(self, path: str, fd: int, size: int, writable: bool) -> None:
        self.path = path
        self._handle_ref: FileHandle | None = FileHandle(fd) if fd >= 0 else None
        self._size = size
        self.writable = writable
        self._released = False  # opened on demand through the LRU (an inactive segment)
        self._closed = fd < 0

    def _handle(self) -> FileHandle:
        h = self._handle_ref
        if h is None:
            if self._closed:
                raise ValueError(f"{self.path} is closed")
            h = self._handle_ref = FileHandle(os.open(self.path, os.O_RDWR if self.writable else os.O_RDONLY))
        if self._released:
            OpenFiles.touch(self)
        return h

    def release(self) -> None:
        """From now on open this file on demand, under the LRU's bound (an inactive segment):
        the descriptor is given back now and reopened by the next read."""
        self._released = True
        self._handle_ref = None
        OpenFiles.forget(self)

    @classmethod
    def open(
        cls,
        path: str,
        *,
        file_already_exists: bool = False,
        init_file_size: int = 0,
        preallocate: bool = False,
        writable: bool = True,
    ) -> FileRecords:
        if not writable:
            fd = os.open(path, os.O_RDONLY)
            return cls(path, fd, os.fstat(fd).st_size, False)
        flags = os.O_RDWR | os.O_CREAT
        fd = os.open(path, flags, 0o644)
        if preallocate and not file_already_exists and os.fstat(fd).st_size == 0:
            os.ftruncate(fd, init_file_size)
            return cls(path, fd, 0, True)
        return cls(path, fd, os.fstat(fd).st_size, True)

    @property
    def fd(self) -> int:
        """The descriptor (opened on demand for a released file). Hold ``slice()``'s result,
        not this number, across anything that may evict it."""
        return self._handle().fd

    @property
    def size(self) -> int:
        """Logical size in bytes: the end of the last appended batch."""
        return self._size

    @property
    def closed(self) -> bool:
        return self._closed

    # -- writing --

    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Write ``data`` at the end of the file with one pwrite; returns the bytes written."""
        view = memoryview(data)
        n = len(view)
        pos = self._size
        fd = self._handle().fd  # an active segment's file: never evicted
        written = os.pwrite(fd, view, pos)
        while written < n:  # a regular file only writes short on errors such as ENOSPC
            more = os.pwrite(fd, view[written:], pos + written)
            if more <= 0:
                raise OSError(f"short write to {self.path}")
            written += more
        self._size = pos + n
        return n

    def truncate_to(self, target_size: int) -> int:
        """Cut the file to ``target_size`` bytes; returns the number of bytes removed."""
        if target_size < 0 or target_size > self._size:
            raise ValueError(
                f"attempt to truncate {self.path} to {target_size} bytes; its size is {self._size}"
            )
        h = self._handle()  # held for the calls: an eviction meanwhile must not close it
        actual = os.fstat(h.fd).st_size
        if target_size < actual:
            os.ftruncate(h.fd, target_size)
        removed = self._size - target_size
        self._size = target_size
        return removed

    def trim(self) -> None:
        """Cut a preallocated file back to its logical size."""
        h = self._handle()
        if self.writable and os.fstat(h.fd).st_size > self._size:
            os.ftruncate(h.fd, self._size)

    def flush(self) -> None:
        """fsync the file (data and metadata: the size changes with every append)."""
        h = self._handle()  # flushes run in worker threads: keep the handle for the call
        os.fsync(h.fd)

    def close(self) -> None:
        if not self._closed:
            if self._handle_ref is not None or not self._released:
                self.trim()
            self.close_handlers()

    def close_handlers(self) -> None:
        """Give the descriptor back (a FileSlice still being sent keeps it open until done)."""
        self._closed = True
        self._handle_ref = None
        OpenFiles.forget(self)

    def rename_to(self, new_path: str) -> None:
        os.rename(self.path, new_path)
        self.path = new_path

    def delete_if_exists(self) -> bool:
        self.close_handlers()
        try:
            os.unlink(self.path)
            return True
        except FileNotFoundError:
            return False

    # -- reading --

    def read(self, position: int, size: int) -> bytes:
        h = self._handle()
        return os.pread(h.fd, size, position)

    def slice(self, position: int, size: int) -> FileSlice:
        end = min(self._size, position + max(size, 0))
        h = self._handle()
        return FileSlice(h.fd, position, max(0, end - position), h)

    def batch_headers(self, start: int = 0, end: int | None = None) -> Iterator[tuple[int, RecordBatchHeader]]:
        """``(position, header)`` of each whole batch in ``[start, end)``; reads headers only."""
        if end is None:
            end = self._size
        pos = start
        h = self._handle()
        fd = h.fd
        while end - pos >= HEADER_SIZE_UP_TO_MAGIC:
            head = os.pread(fd, RECORDS_OFFSET, pos)
            if len(head) < HEADER_SIZE_UP_TO_MAGIC:
                return
            size = _LENGTH.unpack_from(head, 8)[0] + LOG_OVERHEAD
            if size < RECORDS_OFFSET:
                raise CorruptRecordError(
                    f"record size {size} at position {pos} of {self.path} is smaller than the"
                    f" minimum record batch overhead ({RECORDS_OFFSET})"
                )
            if pos + size > end or len(head) < RECORDS_OFFSET:
                return
            yield pos, RecordBatchHeader(head)
            pos += size

    def _whole_batches(self, start: int, end: int) -> Iterator[tuple[int, bytes, int, int]]:
        """``(chunk position, chunk, offset in chunk, size)`` of each whole batch in
        ``[start, end)``, read in 4 MiB chunks (one larger batch is read whole). Stops at a
        partial trailing batch; a size field below 61 bytes raises CorruptRecordError."""
        h = self._handle()
        pos = start
        chunk = _RECOVERY_CHUNK
        while end - pos >= HEADER_SIZE_UP_TO_MAGIC:
            buf = os.pread(h.fd, min(chunk, end - pos), pos)
            off = 0
            n = len(buf)
            need = 0
            while n - off >= HEADER_SIZE_UP_TO_MAGIC:
                size = _LENGTH.unpack_from(buf, off + 8)[0] + LOG_OVERHEAD
                if size < RECORDS_OFFSET:
                    raise CorruptRecordError(
                        f"record size {size} at position {pos + off} of {self.path} is smaller"
                        f" than the minimum record batch overhead ({RECORDS_OFFSET})"
                    )
                if off + size > n:
                    need = size
                    break
                yield pos, buf, off, size
                off += size
            if off == 0:
                if need and pos + need <= end and need > chunk:
                    chunk = need  # one batch larger than the chunk: read it whole
                    continue
                return  # partial trailing batch
            pos += off

    def iter_batches(
        self, start: int = 0, *, validate: bool = True, end: int | None = None
    ) -> Iterator[tuple[int, RecordBatchHeader]]:
        """``(position, header)`` of each whole batch, read in 4 MiB chunks. With ``validate``
        every batch is checked (magic, length, CRC, count) and the first bad one raises."""
        for pos, buf, off, size in self._whole_batches(start, self._size if end is None else end):
            header = validate_batch(buf, off, off + size, allow_empty=True) if validate else RecordBatchHeader(buf, off)
            yield pos + off, header

    def iter_batch_views(self, start: int = 0, end: int | None = None) -> Iterator[tuple[int, memoryview]]:
        """``(position, bytes of the batch)`` of each whole batch in ``[start, end)``, read in
        4 MiB chunks, unchecked (the log cleaner's reads of inactive segments)."""
        for pos, buf, off, size in self._whole_batches(start, self._size if end is None else end):
            yield pos + off, memoryview(buf)[off:off + size]

    def search_for_offset_with_size(self, target_offset: int, start_position: int,
                                    end: int | None = None) -> LogOffsetPosition | None:
        """First batch in ``[start_position, end)`` (default: to the end of the file) whose last
        offset >= target; None when every batch there ends below it.

        A log file holds whole batches only (appends write whole batches, recovery truncates
        torn tails), so a scan that stops before the end of the file met a corrupt size field:
        CorruptRecordError, never None — None would send the reader on to the next segment,
        skipping whatever the damaged batch and the ones after it hold."""
        if end is None:
            end = self._size
        reached = start_position
        for pos, h in self.batch_headers(start_position, end):
            last = h.last_offset
            if last >= target_offset:
                return LogOffsetPosition(last, pos, h.size_in_bytes)
            reached = pos + h.size_in_bytes
        if reached < end:
            raise CorruptRecordError(
                f"the batch at position {reached} of {self.path} is not whole: its size field says"
                f" more than the {self._size - reached} bytes left in the file"
            )
        return None

    def search_for_timestamp(
        self, target_timestamp: int, start_position: int, starting_offset: int
    ) -> TimestampAndOffset | None:
        """First record with timestamp >= target and offset >= starting_offset, scanning
        batches from ``start_position``; only the batch that holds it is decoded."""
        for pos, h in self.batch_headers(start_position):
            if h.max_timestamp >= target_timestamp:
                data = self.read(pos, h.size_in_bytes)
                for rec in iter_records(data):
                    if rec.timestamp >= target_timestamp and rec.offset >= starting_offset:
                        epoch = h.partition_leader_epoch
                        return TimestampAndOffset(rec.timestamp, rec.offset, None if epoch < 0 else epoch)
        return None

    def largest_timestamp_after(self, start_position: int) -> TimestampAndOffset:
        max_ts, offset = -1, -1
        for _, h in self.batch_headers(start_position):
            ts = h.max_timestamp
            if ts > max_ts:
                max_ts, offset = ts, h.last_offset
        return TimestampAndOffset(max_ts, offset)

    def __repr__(self) -> str:
        return f"FileRecords(path={self.path!r}, size={self._size})"
