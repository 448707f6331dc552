"""SkipListMap: an ordered map with floor/ceiling/lower/higher lookups (a probabilistic skip list).

A partition's segments live in one, keyed by base offset, as in Kafka's ``LogSegments``
(a ``ConcurrentSkipListMap``): ``floor(offset)`` finds the segment holding an offset,
``higher(base)`` the next segment, and ordered iteration drives retention.

Structure: node 0 is a head sentinel with ``MAX_LEVEL`` forward pointers; each inserted node
gets a level drawn geometrically with p = 1/4 (as Redis's zset and Java's CSLM), so searches
take O(log n) expected steps. Not thread-safe: the broker mutates a log from its event loop
thread only; flushes running in a worker thread take a snapshot list (``values()``) first.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Generic, TypeVar

__all__ = ["SkipListMap"]

K = TypeVar("K")
V = TypeVar("V")

MAX_LEVEL = 24  # enough for 4^24 entries; a partition has thousands of segments at most
_P = 0.25


class _Node(Generic[K, V]):
    __slots__ = ("key", "value", "forward")

    def __init__(self, key: K, value: V, level: int) -> None:
        self.key = key
        self.value = value
        self.forward: list[_Node[K, V] | None] = [None] * level


class SkipListMap(Generic[K, V]):
    """Ordered map. Lookups return ``(key, value)`` pairs or ``None``."""

    def __init__(self, seed: int | None = None) -> None:
        self._head: _Node[K, V] = _Node(None, None, MAX_LEVEL)  # type: ignore[arg-type]
        self._level = 1
        self._len = 0
        self._tail: _Node[K, V] = self._head  # the last node (the head when empty): last() in O(1)
        self._rng = random.Random(seed)

    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        return self._len > 0

    def _random_level(self) -> int:
        level = 1
        rnd = self._rng.random
        while level < MAX_LEVEL and rnd() < _P:
            level += 1
        return level

    def _find_less(self, key: K, update: list[_Node[K, V]] | None = None) -> _Node[K, V]:
        """Last node with node.key < key (the head when none); fills ``update`` per level."""
        x = self._head
        for i in range(self._level - 1, -1, -1):
            nxt = x.forward[i]
            while nxt is not None and nxt.key < key:  # type: ignore[operator]
                x = nxt
                nxt = x.forward[i]
            if update is not None:
                update[i] = x
        return x

    def put(self, key: K, value: V) -> V | None:
        """Insert or replace; returns the previous value or None."""
        update: list[_Node[K, V]] = [self._head] * MAX_LEVEL
        x = self._find_less(key, update)
        nxt = x.forward[0]
        if nxt is not None and nxt.key == key:
            old = nxt.value
            nxt.value = value
            return old
        level = self._random_level()
        if level > self._level:
            for i in range(self._level, level):
                update[i] = self._head
            self._level = level
        node = _Node(key, value, level)
        for i in range(level):
            node.forward[i] = update[i].forward[i]
            update[i].forward[i] = node
        if node.forward[0] is None:
            self._tail = node
        self._len += 1
        return None

    __setitem__ = put

    def remove(self, key: K) -> V | None:
        """Remove ``key``; returns its value, or None if absent."""
        update: list[_Node[K, V]] = [self._head] * MAX_LEVEL
        x = self._find_less(key, update)
        node = x.forward[0]
        if node is None or node.key != key:
            return None
        for i in range(len(node.forward)):
            if update[i].forward[i] is node:
                update[i].forward[i] = node.forward[i]
        if node is self._tail:
            self._tail = update[0]  # its predecessor (the head when it was the only node)
        while self._level > 1 and self._head.forward[self._level - 1] is None:
            self._level -= 1
        self._len -= 1
        return node.value

    def get(self, key: K, default: V | None = None) -> V | None:
        node = self._find_less(key).forward[0]
        if node is not None and node.key == key:
            return node.value
        return default

    def __getitem__(self, key: K) -> V:
        node = self._find_less(key).forward[0]
        if node is not None and node.key == key:
            return node.value
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        node = self._find_less(key).forward[0]  # type: ignore[arg-type]
        return node is not None and node.key == key

    def clear(self) -> None:
        self.__init__()  # type: ignore[misc]

    # -- navigation (Java's NavigableMap names: floorEntry, ceilingEntry, ...) --

    def floor(self, key: K) -> tuple[K, V] | None:
        """Greatest entry with entry.key <= key."""
        x = self._find_less(key)
        nxt = x.forward[0]
        if nxt is not None and nxt.key == key:
            return nxt.key, nxt.value
        return None if x is self._head else (x.key, x.value)

    def lower(self, key: K) -> tuple[K, V] | None:
        """Greatest entry with entry.key < key."""
        x = self._find_less(key)
        return None if x is self._head else (x.key, x.value)

    def ceiling(self, key: K) -> tuple[K, V] | None:
        """Least entry with entry.key >= key."""
        nxt = self._find_less(key).forward[0]
        return None if nxt is None else (nxt.key, nxt.value)

    def higher(self, key: K) -> tuple[K, V] | None:
        """Least entry with entry.key > key."""
        nxt = self._find_less(key).forward[0]
        if nxt is not None and nxt.key == key:
            nxt = nxt.forward[0]
        return None if nxt is None else (nxt.key, nxt.value)

    def first(self) -> tuple[K, V] | None:
        nxt = self._head.forward[0]
        return None if nxt is None else (nxt.key, nxt.value)

    def last(self) -> tuple[K, V] | None:
        x = self._tail
        return None if x is self._head else (x.key, x.value)

    def last_value(self) -> V | None:
        """The value of the last entry (None when empty), without a pair."""
        x = self._tail
        return None if x is self._head else x.value

    # -- ordered iteration --

    def items(self, from_key: K | None = None) -> Iterator[tuple[K, V]]:
        """Entries in key order, starting at the first key >= ``from_key`` when given."""
        node = self._head.forward[0] if from_key is None else self._find_less(from_key).forward[0]
        while node is not None:
            yield node.key, node.value
            node = node.forward[0]

    def keys(self) -> Iterator[K]:
        for k, _ in self.items():
            yield k

    def values(self) -> Iterator[V]:
        for _, v in self.items():
            yield v

    __iter__ = keys

    def __repr__(self) -> str:
        return f"SkipListMap({dict(self.items())!r})"
