"""OffsetMap: key -> offset of its last record in the dirty range of one cleaning (Kafka's
OffsetMap / SkimpyOffsetMap), bounded by a memory budget (``log.cleaner.dedupe.buffer.size``
shared by the cleaner threads).

Kafka keeps a 16-byte MD5 of each key and an 8-byte offset in a preallocated open-addressing
table. Here a dict is keyed by the key itself when it is at most 16 bytes long (exact: no
collision is possible) and by its MD5 plus one marker byte otherwise (17 bytes, so a digest
never equals a short key; two long keys collide only if MD5 does, Kafka's own assumption).

Memory: every entry is charged what it really costs here (``ENTRY_COST`` bytes: the dict slot,
the key and offset objects, plus the stored key's length), not Kafka's 24 bytes, so the budget
bounds the process's memory. The cost of that honesty: one round maps about a fifth of the
keys Kafka's table would for the same setting, so a log with very many distinct dirty keys
takes more rounds. The map is full when the next new key would take it past
``memory * load_factor`` (Kafka's ``log.cleaner.io.buffer.load.factor``, 0.9); the cleaner
then stops mapping and cleans up to the last offset mapped.
"""

from __future__ import annotations

import hashlib

__all__ = ["OffsetMap", "ENTRY_COST"]

#: Bytes one entry costs in CPython beyond its key's bytes: a dict slot and index (~36), a
#: bytes object header (33) and an int object (32), rounded up.
ENTRY_COST = 104
_SHORT_KEY = 16


class OffsetMap:
    __slots__ = ("_map", "_limit", "_used", "latest_offset", "memory", "load_factor")

    def __init__(self, memory: int, load_factor: float = 0.9) -> None:
        if memory * load_factor < ENTRY_COST + _SHORT_KEY + 1:
            raise ValueError(f"offset map of {memory} bytes cannot hold a single key: raise"
                             " log.cleaner.dedupe.buffer.size or lower log.cleaner.threads")
        self.memory = memory
        self.load_factor = load_factor
        self._limit = int(memory * load_factor)
        self._map: dict[bytes, int] = {}
        self._used = 0
        #: the last offset the map covers (-1: none); records above it are kept unconditionally
        self.latest_offset = -1

    @staticmethod
    def _stored(key: bytes) -> bytes:
        if len(key) <= _SHORT_KEY:
            return key
        return hashlib.md5(key, usedforsecurity=False).digest() + b"\x01"

    def put(self, key: bytes, offset: int) -> bool:
        """Map ``key`` to ``offset`` (offsets are put in increasing order: the last one wins).
        False, with nothing changed, when ``key`` is new and the map is full."""
        stored = self._stored(key)
        m = self._map
        if stored not in m:
            cost = ENTRY_COST + len(stored)
            if self._used + cost > self._limit:
                return False
            self._used += cost
        m[stored] = offset
        return True

    def get(self, key: bytes) -> int:
        """The last offset of ``key``, or -1 when the dirty range does not hold it."""
        return self._map.get(self._stored(key), -1)

    def update_latest_offset(self, offset: int) -> None:
        if offset > self.latest_offset:
            self.latest_offset = offset

    def clear(self) -> None:
        self._map.clear()
        self._used = 0
        self.latest_offset = -1

    def __len__(self) -> int:
        return len(self._map)

    @property
    def utilization(self) -> float:
        """Share of the memory budget in use (Kafka's buffer utilization)."""
        return self._used / self.memory
