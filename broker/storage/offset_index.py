"""OffsetIndex: the ``.index`` file, mapping offsets to byte positions in the ``.log``.

Entry (8 bytes, big-endian)::

    int32 relativeOffset   offset - segment base offset
    int32 position         byte position in the .log of the batch that starts there

The index is sparse: an entry is added when more than ``index.interval.bytes`` have been
appended since the last one. The key is the **last** offset of the batch written at
``position``; keys strictly increase. ``lookup(o)`` returns the entry with the largest key
<= o, or ``(base_offset, 0)`` when there is none, and the reader scans batch headers forward
from that position. See index.py for the file's life cycle and the warm/cold search.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from .errors import CorruptIndexError, IndexFullError, InvalidOffsetError
from .index import KEY, VALUE, AbstractIndex

__all__ = ["OffsetIndex", "OffsetPosition"]

_ENTRY = struct.Struct(">ii")
_I32 = struct.Struct(">i")


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class OffsetIndex(AbstractIndex):
    ENTRY_SIZE = 8
    NAME = "offset index"

    _last_offset: int

    def _load_last_entry(self) -> None:
        if self._entries == 0:
            self._last_offset = self.base_offset
        else:
            self._last_offset = self.base_offset + _I32.unpack(self._read_entry(self._entries - 1)[:4])[0]

    @property
    def last_offset(self) -> int:
        """Key of the last entry, or the base offset when empty."""
        return self._last_offset

    def _search_value(self, slot: int, entity: int) -> int:
        rel, pos = _ENTRY.unpack_from(self._mm, slot * 8)  # type: ignore[arg-type]
        return self.base_offset + rel if entity == KEY else pos

    def entry(self, n: int) -> OffsetPosition:
        if n < 0 or n >= self._entries:
            raise IndexError(f"attempt to fetch entry {n} of {self.path} with {self._entries}")
        rel, pos = _ENTRY.unpack_from(self._mm, n * 8)  # type: ignore[arg-type]
        return OffsetPosition(self.base_offset + rel, pos)

    def lookup(self, target_offset: int) -> OffsetPosition:
        """Largest entry with offset <= target, or (base_offset, 0)."""
        slot = self._slot_range(target_offset, KEY)[0]
        if slot == -1:
            return OffsetPosition(self.base_offset, 0)
        rel, pos = _ENTRY.unpack_from(self._mm, slot * 8)  # type: ignore[arg-type]
        return OffsetPosition(self.base_offset + rel, pos)

    def fetch_upper_bound_offset(self, start: OffsetPosition, fetch_size: int) -> OffsetPosition | None:
        """First entry whose position >= start.position + fetch_size."""
        slot = self._slot_range(start.position + fetch_size, VALUE)[1]
        return None if slot == -1 else self.entry(slot)

    def append(self, offset: int, position: int) -> None:
        """Add (offset, position); offsets must strictly increase."""
        with self._lock:
            if self._entries >= self._max_entries:
                raise IndexFullError(f"attempt to append to a full index (size = {self._entries}): {self.path}")
            if self._entries == 0 or offset > self._last_offset:
                self._write_entry(_ENTRY.pack(self.relative_offset(offset), position))
                self._last_offset = offset
            else:
                raise InvalidOffsetError(
                    f"attempt to append an offset ({offset}) to position {self._entries} no larger"
                    f" than the last offset appended ({self._last_offset}) to {self.path}"
                )

    def truncate_to(self, offset: int) -> None:
        """Remove every entry with a key >= offset."""
        with self._lock:
            slot = self._slot_range(offset, KEY)[0]
            if slot < 0:
                n = 0
            elif self._search_value(slot, KEY) == offset:
                n = slot
            else:
                n = slot + 1
            self.truncate_to_entries(n)

    def sanity_check(self) -> None:
        """Kafka's check: last offset >= base offset and length a multiple of 8."""
        if self._entries != 0 and self._last_offset < self.base_offset:
            raise CorruptIndexError(
                f"Corrupt index found, index file ({self.path}) has non-zero size but the last"
                f" offset is {self._last_offset} which is less than the base offset {self.base_offset}."
            )
        if self._length % self.ENTRY_SIZE != 0:
            raise CorruptIndexError(
                f"Index file {self.path} is corrupt, found {self._length} bytes which is neither"
                f" positive nor a multiple of {self.ENTRY_SIZE}."
            )

    def verify(self, log_size: int | None = None) -> None:
        """A stricter check than Kafka's: every key increases and every position increases and
        lies inside the ``.log`` (when ``log_size`` is given). O(entries)."""
        self.sanity_check()
        prev_off, prev_pos = -1, -1
        for n in range(self._entries):
            off, pos = self.entry(n)
            if off <= prev_off or (n > 0 and pos <= prev_pos):
                raise CorruptIndexError(
                    f"{self.path}: entry {n} ({off}, {pos}) does not follow ({prev_off}, {prev_pos})"
                )
            if log_size is not None and pos >= log_size:
                raise CorruptIndexError(
                    f"{self.path}: entry {n} points at position {pos}, past the log size {log_size}"
                )
            prev_off, prev_pos = off, pos
