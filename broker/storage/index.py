"""AbstractIndex: an mmap'd file of fixed-size entries sorted by key (Kafka's AbstractIndex).

File: ``entries`` fixed-size big-endian entries, nothing else (no header, no checksum). No
attempt is made to checksum the contents; after an unclean shutdown the indexes of every
segment past the recovery point are rebuilt from the ``.log``.

Life cycle:
- A *new* index file is preallocated to ``max_index_size`` rounded down to the entry size, all
  zero bytes, and starts with 0 entries. An *existing* file is taken at face value:
  ``entries = length // entry_size`` (so an untrimmed file after a crash looks full of entries
  at offset ``base``; recovery resets it).
- The active segment's indexes stay at their max size; on roll and on close they are trimmed
  to exactly ``entries * entry_size`` bytes (``trim_to_valid_size``), and resized back to the
  max size when a log is loaded and the segment becomes active again.
- Read-only mode (KAFKA-5104): the file is opened ``O_RDONLY`` and mapped ``ACCESS_READ``;
  nothing ever trims, resizes or writes it, so tools can inspect a live segment safely.

Search (``_slot_range``, KAFKA-6432): lookups near the tail first binary-search only the *warm
section*, the last 8192 bytes of valid entries (1024 offset entries, 682 time entries), and fall
back to the cold part below it. Appends and tail lookups therefore keep touching the same few
pages however large the index grows, instead of binary search's path through pages all over
the file. Binary-search edges follow Kafka: ``mid = (lo + hi + 1) >> 1``; greater → ``hi =
mid - 1``; less → ``lo = mid``; equal → found.

Writes go through the file descriptor (``os.pwrite`` of the entry), reads through the shared
mapping, which sees them at once (one page cache). The mapping is read-only: on this VM's ext4
the first write fault on a page of a sparse file costs 1.5-5 ms (block allocation in the fault
path, on the event loop) and the first read fault on a hole ~0.8 ms, against ~2 us for a
``pwrite`` or ``pread`` of the same bytes; so the last entry of a file is also read with
``pread`` when the file is opened.

Disk space: the preallocated file is sparse (``ftruncate``), as Kafka's; its blocks are
allocated for real (``posix_fallocate``) one 4 KiB page ahead of the entries (``reserve``,
called by the segment before it writes the ``.log``). A full filesystem then surfaces as
KafkaStorageError from that call, before any byte of the append is written, never as a SIGBUS
from a mapped page. Cost: one system call per 4 KiB of index (512 offset entries).

Python notes: ``mmap`` cannot map a zero-length file, so an empty file has no mapping; the map
is closed before ``ftruncate`` and remade after.
"""

from __future__ import annotations

import abc
import mmap
import os
import threading
from collections.abc import Callable
from typing import ClassVar, Generic, TypeVar

from .errors import IndexOffsetOverflowError, KafkaStorageError
from .fileutil import fsync_path

__all__ = ["AbstractIndex", "LazyIndex", "KEY", "VALUE", "WARM_SECTION_BYTES"]

WARM_SECTION_BYTES = 8192
KEY = 0    # IndexSearchType.KEY: search on the entry's key (offset / timestamp)
VALUE = 1  # IndexSearchType.VALUE: search on the entry's value (position / offset)
_INT32_MAX = 0x7FFFFFFF
_ALLOCATE_STEP = 4096


class AbstractIndex(abc.ABC):
    """Base of OffsetIndex and TimeIndex; subclasses define ENTRY_SIZE and ``_search_value``."""

    ENTRY_SIZE: ClassVar[int] = 0
    NAME: ClassVar[str] = "index"

    def __init__(
        self, path: str, base_offset: int, max_index_size: int = -1, writable: bool = True
    ) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self.writable = writable
        self._lock = threading.RLock()
        self._fd = -1
        self._mapping: mmap.mmap | None = None  # made on the first lookup (see _mm)
        self._length = 0
        self._entries = 0
        self._max_entries = 0
        self._allocated = 0  # bytes from the start known to have real blocks (see reserve)
        self._open()

    # -- opening, sizing, closing --

    def _round_down(self, n: int) -> int:
        return n - n % self.ENTRY_SIZE

    def _open(self) -> None:
        newly_created = False
        if self.writable:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
                newly_created = True
            except FileExistsError:
                fd = os.open(self.path, os.O_RDWR)
            if newly_created:
                if self.max_index_size < self.ENTRY_SIZE:
                    os.close(fd)
                    os.unlink(self.path)
                    raise ValueError(f"invalid max index size {self.max_index_size}")
                os.ftruncate(fd, self._round_down(self.max_index_size))
        else:
            fd = os.open(self.path, os.O_RDONLY)
        self._fd = fd
        self._length = os.fstat(fd).st_size
        self._map()
        self._entries = 0 if newly_created else self._length // self.ENTRY_SIZE
        self._max_entries = self._length // self.ENTRY_SIZE
        self._load_last_entry()

    def _map(self) -> None:
        """Forget the mapping; the next lookup maps the file at its current length."""
        if self._mapping is not None:
            self._mapping.close()
            self._mapping = None

    @property
    def _mm(self) -> mmap.mmap | None:
        """The file mapped read-only (entries are written with pwrite), made on first use: an
        index never searched (an idle partition's, most time indexes) costs no mapping and no
        second file descriptor (Python's mmap keeps a dup of the fd)."""
        m = self._mapping
        if m is None and self._length > 0 and self._fd >= 0:
            m = self._mapping = mmap.mmap(self._fd, self._length, access=mmap.ACCESS_READ)
        return m

    @abc.abstractmethod
    def _load_last_entry(self) -> None:
        """Refresh the cached last entry after entries changed."""

    def _read_entry(self, n: int) -> bytes:
        """Entry ``n``'s bytes with ``pread`` (no page fault on a hole of an untrimmed file)."""
        return os.pread(self._fd, self.ENTRY_SIZE, n * self.ENTRY_SIZE)

    def _write_entry(self, entry: bytes) -> None:
        """Write ``entry`` as entry number ``entries`` (then counted) with ``pwrite``."""
        self.reserve(1)
        try:
            os.pwrite(self._fd, entry, self._entries * self.ENTRY_SIZE)
        except OSError as e:
            raise KafkaStorageError(f"cannot write to {self.path}: {e.strerror}") from e
        self._entries += 1

    @property
    def entries(self) -> int:
        return self._entries

    @property
    def max_entries(self) -> int:
        return self._max_entries

    @property
    def length(self) -> int:
        """Current file length in bytes (max size while active, valid size when trimmed)."""
        return self._length

    @property
    def valid_bytes(self) -> int:
        return self._entries * self.ENTRY_SIZE

    def is_full(self) -> bool:
        return self._entries >= self._max_entries

    def reserve(self, n: int) -> None:
        """Make sure the blocks for ``n`` more entries are allocated on disk (module docstring).
        Raises KafkaStorageError when the filesystem has no room."""
        end = min(self._length, (self._entries + n) * self.ENTRY_SIZE)
        if end <= self._allocated or not self.writable:
            return
        with self._lock:
            start = self._allocated
            stop = min(self._length, max(end, start + _ALLOCATE_STEP))
            try:
                os.posix_fallocate(self._fd, start, stop - start)
            except OSError as e:
                raise KafkaStorageError(f"cannot allocate index space in {self.path}: {e.strerror}") from e
            self._allocated = stop

    def resize(self, new_size: int) -> bool:
        """Set the file length to ``new_size`` rounded down to the entry size and remap.

        Returns False when the length was already that. Entries beyond the new size are lost.
        """
        with self._lock:
            if not self.writable:
                raise PermissionError(f"{self.path} is open read-only; it is never resized")
            rounded = self._round_down(max(new_size, 0))
            if rounded == self._length:
                return False
            self._map()
            os.ftruncate(self._fd, rounded)
            self._length = rounded
            self._allocated = min(self._allocated, self._entries * self.ENTRY_SIZE, rounded)
            self._map()
            self._max_entries = rounded // self.ENTRY_SIZE
            if self._entries > self._max_entries:
                self._entries = self._max_entries
                self._load_last_entry()
            return True

    def trim_to_valid_size(self) -> bool:
        """Shrink the file to exactly ``entries * ENTRY_SIZE`` bytes (on roll and close)."""
        return self.resize(self._entries * self.ENTRY_SIZE)

    def reset(self) -> None:
        """Drop every entry and grow back to the max size (before a rebuild)."""
        if not self.writable:  # refuse before dropping the entries, not halfway through
            raise PermissionError(f"{self.path} is open read-only; it is never reset")
        self.truncate_to_entries(0)
        self.resize(self.max_index_size)

    def truncate_to_entries(self, n: int) -> None:
        with self._lock:
            self._entries = max(0, min(n, self._entries))
            self._load_last_entry()

    def flush(self) -> None:
        """fsync the file (the entries written so far reach the disk)."""
        with self._lock:
            if self._fd >= 0 and self.writable:
                os.fsync(self._fd)

    def close(self) -> None:
        """Trim to the valid size (writable indexes only), then unmap and close."""
        with self._lock:
            if self._fd < 0:
                return
            if self.writable:
                self.trim_to_valid_size()
            self.close_handler()

    def close_handler(self) -> None:
        """Unmap and close without touching the file (read-only tools, deleted segments)."""
        with self._lock:
            self._map()
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def rename_to(self, new_path: str) -> None:
        os.rename(self.path, new_path)
        self.path = new_path

    def delete_if_exists(self) -> bool:
        self.close_handler()
        try:
            os.unlink(self.path)
            return True
        except FileNotFoundError:
            return False

    # -- offsets --

    def relative_offset(self, offset: int) -> int:
        rel = offset - self.base_offset
        if rel < 0 or rel > _INT32_MAX:
            raise IndexOffsetOverflowError(
                f"offset {offset} cannot be stored relative to base offset {self.base_offset}"
                f" in {self.path}"
            )
        return rel

    def can_append_offset(self, offset: int) -> bool:
        rel = offset - self.base_offset
        return 0 <= rel <= _INT32_MAX

    # -- search --

    @abc.abstractmethod
    def _search_value(self, slot: int, entity: int) -> int:
        """The absolute key (entity KEY) or value (entity VALUE) of entry ``slot``."""

    def _binary_search(self, begin: int, end: int, target: int, entity: int) -> tuple[int, int]:
        lo, hi = begin, end
        value = self._search_value
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            found = value(mid, entity)
            if found > target:
                hi = mid - 1
            elif found < target:
                lo = mid
            else:
                return mid, mid
        return lo, (-1 if lo == self._entries - 1 else lo + 1)

    def _slot_range(self, target: int, entity: int) -> tuple[int, int]:
        """(largest slot <= target, smallest slot >= target), -1 where none exists."""
        entries = self._entries
        if entries == 0:
            return -1, -1
        warm_entries = WARM_SECTION_BYTES // self.ENTRY_SIZE
        first_hot = max(0, entries - 1 - warm_entries)
        if self._search_value(first_hot, entity) < target:
            return self._binary_search(first_hot, entries - 1, target, entity)
        first = self._search_value(0, entity)
        if first > target:
            return -1, 0
        if first == target:
            # _binary_search never compares its first slot, so it would answer (0, 1), or
            # (0, -1) with one entry (Kafka does); the smallest slot >= target is 0.
            return 0, 0
        return self._binary_search(0, first_hot, target, entity)

    def largest_lower_bound_slot_for(self, target: int, entity: int = KEY) -> int:
        return self._slot_range(target, entity)[0]

    def smallest_upper_bound_slot_for(self, target: int, entity: int = KEY) -> int:
        return self._slot_range(target, entity)[1]

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(path={self.path!r}, base_offset={self.base_offset},"
            f" entries={self._entries}, max_entries={self._max_entries},"
            f" writable={self.writable})"
        )


T = TypeVar("T", bound=AbstractIndex)


class LazyIndex(Generic[T]):
    """Defers opening (and mmap'ing) an index until first use (Kafka's LazyIndex).

    A clean start of a log with many segments then touches only the files it needs: the
    inactive segments' indexes are opened when a read or retention check reaches them.
    """

    __slots__ = ("_path", "_factory", "_index", "_unsynced")

    def __init__(self, path: str, factory: Callable[[str], T]) -> None:
        self._path = path
        self._factory = factory
        self._index: T | None = None
        self._unsynced = False  # closed after writes that no flush has fsync'd yet

    @property
    def path(self) -> str:
        return self._path

    @property
    def is_loaded(self) -> bool:
        return self._index is not None

    def get(self) -> T:
        idx = self._index
        if idx is None:
            idx = self._index = self._factory(self._path)
        return idx

    def rename_to(self, new_path: str) -> None:
        if self._index is not None:
            self._index.rename_to(new_path)
        elif os.path.exists(self._path):
            os.rename(self._path, new_path)
        self._path = new_path

    def delete_if_exists(self) -> bool:
        if self._index is not None:
            self._index.close_handler()
            self._index = None
        try:
            os.unlink(self._path)
            return True
        except FileNotFoundError:
            return False

    def flush(self) -> None:
        """msync a loaded index; fsync the file of one closed since its last flush."""
        idx = self._index
        if idx is not None:
            idx.flush()
        elif self._unsynced:
            fsync_path(self._path)
        self._unsynced = False

    def close(self) -> None:
        """Close (trimming) and unload; a later ``get`` reopens it."""
        if self._index is not None:
            if self._index.writable:
                self._unsynced = True
            self._index.close()
            self._index = None

    def close_handler(self) -> None:
        if self._index is not None:
            self._index.close_handler()
            self._index = None
