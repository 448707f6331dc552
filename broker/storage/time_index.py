"""TimeIndex: the ``.timeindex`` file, mapping timestamps to offsets.

Entry (12 bytes, big-endian)::

    int64 timestamp        the max record timestamp seen in the segment up to this entry
    int32 relativeOffset   last offset of the batch that carried that timestamp, minus base

Timestamps strictly increase between entries and offsets never decrease: an append whose
timestamp is not larger than the last entry's writes nothing. The index counts as full at
``max_entries - 1`` so the final entry written when the segment becomes inactive (or is
closed) always fits. ``lookup(t)`` returns the entry with the largest timestamp <= t, or
``(-1, base_offset)`` when there is none. See index.py for the file's life cycle.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from .errors import CorruptIndexError, IndexFullError, InvalidOffsetError
from .index import KEY, VALUE, AbstractIndex

__all__ = ["TimeIndex", "TimestampOffset"]

_ENTRY = struct.Struct(">qi")


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


class TimeIndex(AbstractIndex):
    ENTRY_SIZE = 12
    NAME = "time index"

    _last_entry: TimestampOffset

    def _load_last_entry(self) -> None:
        if self._entries == 0:
            self._last_entry = TimestampOffset(-1, self.base_offset)
        else:
            ts, rel = _ENTRY.unpack(self._read_entry(self._entries - 1))
            self._last_entry = TimestampOffset(ts, self.base_offset + rel)

    @property
    def last_entry(self) -> TimestampOffset:
        """Last entry, or (-1, base_offset) when empty."""
        return self._last_entry

    def is_full(self) -> bool:
        return self._entries >= self._max_entries - 1

    def _search_value(self, slot: int, entity: int) -> int:
        ts, rel = _ENTRY.unpack_from(self._mm, slot * 12)  # type: ignore[arg-type]
        return ts if entity == KEY else self.base_offset + rel

    def entry(self, n: int) -> TimestampOffset:
        if n < 0 or n >= self._entries:
            raise IndexError(f"attempt to fetch entry {n} of {self.path} with {self._entries}")
        ts, rel = _ENTRY.unpack_from(self._mm, n * 12)  # type: ignore[arg-type]
        return TimestampOffset(ts, self.base_offset + rel)

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """Entry with the largest timestamp <= target, or (-1, base_offset)."""
        slot = self._slot_range(target_timestamp, KEY)[0]
        if slot == -1:
            return TimestampOffset(-1, self.base_offset)
        return self.entry(slot)

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Append (timestamp, offset) if timestamp is larger than the last entry's.

        Raises IndexFullError when full (unless ``skip_full_check``: the final entry at roll
        or close), InvalidOffsetError when offset is below the last entry's, and ValueError
        when the timestamp is below the last entry's.
        """
        with self._lock:
            if not skip_full_check and self.is_full():
                raise IndexFullError(f"attempt to append to a full time index (size = {self._entries}): {self.path}")
            last = self._last_entry
            if self._entries > 0 and offset < last.offset:
                raise InvalidOffsetError(
                    f"attempt to append an offset ({offset}) to slot {self._entries} no larger"
                    f" than the last offset appended ({last.offset}) to {self.path}"
                )
            if self._entries > 0 and timestamp < last.timestamp:
                raise ValueError(
                    f"attempt to append a timestamp ({timestamp}) to slot {self._entries} no larger"
                    f" than the last timestamp appended ({last.timestamp}) to {self.path}"
                )
            if timestamp > last.timestamp:
                if self._entries >= self._max_entries:
                    raise IndexFullError(f"no room for a final time index entry in {self.path}")
                self._write_entry(_ENTRY.pack(timestamp, self.relative_offset(offset)))
                self._last_entry = TimestampOffset(timestamp, offset)

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= offset."""
        with self._lock:
            slot = self._slot_range(offset, VALUE)[0]
            if slot < 0:
                n = 0
            elif self._search_value(slot, VALUE) == offset:
                n = slot
            else:
                n = slot + 1
            self.truncate_to_entries(n)

    def sanity_check(self) -> None:
        """Kafka's check: last ts >= first ts, last offset >= base, length a multiple of 12."""
        if self._entries != 0:
            first_ts = self.entry(0).timestamp
            last = self._last_entry
            if last.timestamp < first_ts:
                raise CorruptIndexError(
                    f"Corrupt time index found, time index file ({self.path}) has non-zero size but"
                    f" the last timestamp is {last.timestamp} which is less than the first"
                    f" timestamp {first_ts}"
                )
            if last.offset < self.base_offset:
                raise CorruptIndexError(
                    f"Corrupt time index found, time index file ({self.path}) has non-zero size but"
                    f" the last offset is {last.offset} which is less than the first offset"
                    f" {self.base_offset}"
                )
        if self._length % self.ENTRY_SIZE != 0:
            raise CorruptIndexError(
                f"Time index file {self.path} is corrupt, found {self._length} bytes which is"
                f" neither positive nor a multiple of {self.ENTRY_SIZE}."
            )

    def verify(self) -> None:
        """Stricter than Kafka: timestamps strictly increase, offsets never decrease. O(entries)."""
        self.sanity_check()
        prev = TimestampOffset(-1, -1)
        for n in range(self._entries):
            e = self.entry(n)
            if e.timestamp <= prev.timestamp or e.offset < prev.offset:
                raise CorruptIndexError(f"{self.path}: entry {n} {tuple(e)} does not follow {tuple(prev)}")
            prev = e
