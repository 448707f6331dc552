"""Small value types shared by the Producer, Consumer and Admin (Kafka's names)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import NamedTuple

__all__ = ["TopicPartition", "OffsetAndTimestamp", "OffsetAndMetadata", "OffsetSpec", "ConsumerGroupMetadata",
           "offsets_and_metadata"]


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


def offsets_and_metadata(offsets: Mapping[tuple[str, int], int | tuple[int, str] | OffsetAndMetadata]
                         ) -> dict[TopicPartition, OffsetAndMetadata]:
    """Offsets to commit as given by an application (an offset, ``(offset, metadata)`` or an
    OffsetAndMetadata per partition) as OffsetAndMetadata; ValueError for a negative offset."""
    out = {}
    for tp, o in offsets.items():
        if isinstance(o, int):
            om = OffsetAndMetadata(o)
        elif isinstance(o, OffsetAndMetadata):
            om = o
        else:
            om = OffsetAndMetadata(int(o[0]), str(o[1]))
        if om.offset < 0:
            raise ValueError(f"offset must be >= 0, not {om.offset}")
        out[TopicPartition(*tp)] = om
    return out


class ConsumerGroupMetadata(NamedTuple):
    """What a transactional producer needs of a consumer to commit its offsets
    (``Consumer.group_metadata()``, Kafka's ConsumerGroupMetadata): TxnOffsetCommit carries the
    generation and member id so that the group coordinator refuses a zombie member's commit."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


class OffsetSpec(enum.IntEnum):
    """What ListOffsets looks up, as the special timestamps of the wire protocol. Any value
    >= 0 is a timestamp in ms: the first offset whose record timestamp is >= it."""

    LATEST = -1          # the log end offset (the next offset to be written)
    EARLIEST = -2        # the log start offset
    MAX_TIMESTAMP = -3   # the offset of the record with the largest timestamp (KIP-734)
