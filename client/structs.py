"""Small value types shared by the Producer, Consumer and Admin (Kafka's names)."""

from __future__ import annotations

import enum
from typing import NamedTuple

__all__ = ["TopicPartition", "OffsetAndTimestamp", "OffsetAndMetadata", "OffsetSpec"]


class TopicPartition(NamedTuple):
    """A partition of a topic. Hashable; plain ``(topic, partition)`` tuples compare equal."""

    topic: str
    partition: int


class OffsetAndTimestamp(NamedTuple):
    """A ListOffsets answer: the offset found and the timestamp of its record (-1 when the
    broker gives none, as for the earliest/latest offsets of ListOffsets v1+ on minibroker)."""

    offset: int
    timestamp: int


class OffsetAndMetadata(NamedTuple):
    """A committed offset (the next record to read) with the application's metadata string and
    the leader epoch of the record before it (-1: unknown)."""

    offset: int
    metadata: str = ""
    leader_epoch: int = -1


class OffsetSpec(enum.IntEnum):
    """What ListOffsets looks up, as the special timestamps of the wire protocol. Any value
    >= 0 is a timestamp in ms: the first offset whose record timestamp is >= it."""

    LATEST = -1          # the log end offset (the next offset to be written)
    EARLIEST = -2        # the log start offset
    MAX_TIMESTAMP = -3   # the offset of the record with the largest timestamp (KIP-734)
