"""Offset ranges -> Spark input partitions, by the rules of Spark's ``KafkaOffsetRangeCalculator``.

Pure code (no I/O, no pyspark), run on the driver by ``client.spark.reader``.

1. Empty (and backwards) ``[start, end)`` ranges are dropped.
2. ``min_partitions``, when larger than the number of ranges left, splits the big ranges: a
   range gets ``max(round_half_up(size / total * min_partitions), 1)`` pieces. Ranges that get
   one piece are then left out of the sums (SPARK-36576): the others share
   ``max(min_partitions - unsplit, 1)`` by their share of the remaining size. A range is cut by
   integer division, so the later pieces take the remainder.
3. ``max_records_per_partition`` (SPARK-49259) then cuts every piece into
   ``ceil(size / max)`` near-equal pieces, the same way.

``rate_limit`` is the streaming ``maxOffsetsPerTrigger`` rule (``KafkaMicroBatchStream``): the
limit is shared out by each partition's lag, floored, but rounded up below 1 so that a small
partition is not starved, and never past the partition's latest offset.

Scala's ``math.round`` rounds half up; Python's ``round`` rounds half to even, which gets one
case of Spark's own test suite wrong, hence ``_round_half_up``.
Spark also attaches preferred executors (``hash(tp) % executors``) so cached consumers are
reused; the Python Data Source API has no locations, so that part is not ported.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping
from typing import NamedTuple, TypeVar

__all__ = ["OffsetRange", "split_ranges", "rate_limit"]

K = TypeVar("K", bound=Hashable)


class OffsetRange(NamedTuple):
    """The offsets ``[start, end)`` of one topic-partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def _round_half_up(x: float) -> int:
    return math.floor(x + 0.5)


def _part_count(size: int, total: int, min_parts: int) -> int:
    return max(_round_half_up(size / total * min_parts), 1)


def _cut(r: OffsetRange, parts: int) -> list[OffsetRange]:
    """``r`` in ``parts`` pieces; integer division, the later pieces take the remainder."""
    out = []
    remaining = r.size
    start = r.start
    for i in range(parts):
        n = remaining // (parts - i)
        remaining -= n
        end = min(start + n, r.end)
        if end > start:
            out.append(OffsetRange(r.topic, r.partition, start, end))
        start = end
    return out


def split_ranges(ranges: Iterable[OffsetRange], min_partitions: int | None = None,
                 max_records_per_partition: int | None = None) -> list[OffsetRange]:
    """The input partitions for ``ranges`` (order kept: each range's pieces in offset order)."""
    if min_partitions is not None and min_partitions <= 0:
        raise ValueError(f"min_partitions must be positive, not {min_partitions}")
    if max_records_per_partition is not None and max_records_per_partition <= 0:
        raise ValueError(f"max_records_per_partition must be positive, not {max_records_per_partition}")
    out = [r for r in ranges if r.size > 0]
    if min_partitions is not None and len(out) < min_partitions:
        total = sum(r.size for r in out)
        unsplit = {(r.topic, r.partition) for r in out if _part_count(r.size, total, min_partitions) == 1}
        split_total = total - sum(r.size for r in out if (r.topic, r.partition) in unsplit)
        split_min = max(min_partitions - len(unsplit), 1)
        pieces: list[OffsetRange] = []
        for r in out:
            if (r.topic, r.partition) in unsplit:
                pieces.append(r)
            else:
                pieces.extend(_cut(r, _part_count(r.size, split_total, split_min)))
        out = pieces
    if max_records_per_partition is not None:
        out = [p for r in out for p in _cut(r, -(-r.size // max_records_per_partition))]
    return out


def rate_limit(start: Mapping[K, int], latest: Mapping[K, int], limit: int) -> dict[K, int]:
    """End offsets that read at most about ``limit`` records from ``start`` towards ``latest``.

    ``start`` must hold every key of ``latest`` (new partitions at their earliest offset). A
    partition's share is ``limit * lag / total_lag``: floored, or rounded up when below 1, and
    capped at its latest offset; partitions with no lag keep their latest offset.
    """
    lags = {k: end - start[k] for k, end in latest.items() if end - start[k] > 0}
    total = sum(lags.values())
    if total < 1:
        return dict(latest)
    out = {}
    for k, end in latest.items():
        lag = lags.get(k)
        if lag is None:
            out[k] = end
            continue
        share = limit * (lag / total)
        out[k] = min(end, start[k] + (math.ceil(share) if share < 1 else math.floor(share)))
    return out
