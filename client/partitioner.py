"""Partitioners: which partition a record goes to.

``murmur2`` is Kafka's ``org.apache.kafka.common.utils.Utils.murmur2`` (MurmurHash2, 32-bit,
seed ``0x9747b28c``, little-endian 4-byte words, the tail bytes mixed in the order 3rd, 2nd,
1st) returning Java's *signed* int, so its results compare equal to the values Kafka's own
tests assert (``UtilsTest.testMurmur2``: ``murmur2(b"21") == -973932308``).

The default partitioner is Kafka's (Java ``BuiltInPartitioner.partitionForKey``, kafka-python's
``DefaultPartitioner`` and librdkafka's ``murmur2_random``)::

    partition = toPositive(murmur2(key_bytes)) % num_partitions     toPositive(x) = x & 0x7fffffff

so a keyed record lands on the same partition whichever of those clients sent it. Records
without a key use *sticky* partitioning (KIP-480): they stick to one partition until the batch
being filled there is sealed, then move to another one (``StickyPartitionCache``).
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable

__all__ = ["murmur2", "to_positive", "partition_for_key", "StickyPartitionCache", "Partitioner"]

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF

#: A user partitioner: ``(topic, key_bytes_or_None, num_partitions) -> partition``.
Partitioner = Callable[[str, "bytes | None", int], int]


def murmur2(data: bytes | bytearray | memoryview) -> int:
    """Kafka's murmur2 of ``data`` as a signed 32-bit int (Java ``int``).

    Cost: one ``struct.unpack_from`` for all whole words, then ~10 integer operations per word
    in Python (about 1 µs for a 16-byte key). A C extension would be 20x faster; not needed
    while the encoding of the record itself costs more.
    """
    length = len(data)
    h = _SEED ^ length
    n4 = length >> 2
    if n4:
        for k in struct.unpack_from(f"<{n4}I", data):
            k = (k * _M) & _MASK
            k ^= k >> 24
            k = (k * _M) & _MASK
            h = ((h * _M) & _MASK) ^ k
    rest = length & 3
    if rest:
        base = length & ~3
        if rest == 3:
            h ^= data[base + 2] << 16
        if rest >= 2:
            h ^= data[base + 1] << 8
        h ^= data[base]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - 0x100000000 if h & 0x80000000 else h


def to_positive(n: int) -> int:
    """Kafka's ``Utils.toPositive``: clear the sign bit (not ``abs``: ``abs(MIN_VALUE)`` < 0)."""
    return n & 0x7FFFFFFF


def partition_for_key(key: bytes | bytearray | memoryview, num_partitions: int) -> int:
    """``toPositive(murmur2(key)) % num_partitions`` — Kafka's default for keyed records."""
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


class StickyPartitionCache:
    """The partition unkeyed records of each topic currently stick to (KIP-480).

    ``partition(topic, n)`` returns the sticky choice (choosing one at random the first time);
    ``next_partition(topic, n, previous)`` is called when the batch on ``previous`` is sealed and
    picks a different partition at random (when there is more than one), as Kafka's
    ``StickyPartitionCache.nextPartition`` does.
    """

    __slots__ = ("_current",)

    def __init__(self) -> None:
        self._current: dict[str, int] = {}

    def partition(self, topic: str, num_partitions: int) -> int:
        p = self._current.get(topic)
        if p is None or p >= num_partitions:
            p = self._current[topic] = random.randrange(num_partitions)
        return p

    def next_partition(self, topic: str, num_partitions: int, previous: int) -> int:
        cur = self._current.get(topic)
        if cur is not None and cur != previous and cur < num_partitions:
            return cur  # someone already moved on
        if num_partitions <= 1:
            p = 0
        else:
            p = random.randrange(num_partitions - 1)
            if p >= previous:
                p += 1
        self._current[topic] = p
        return p
