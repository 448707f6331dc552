"""client/spark/ranges.py against the cases of Spark's KafkaOffsetRangeCalculatorSuite (the
executor-location cases have no equivalent: the Python Data Source API has no locations)."""

from __future__ import annotations

import pytest

from client.spark.ranges import OffsetRange, split_ranges


def r1(s: int, e: int) -> OffsetRange:
    return OffsetRange("t1", 1, s, e)


def r2(s: int, e: int) -> OffsetRange:
    return OffsetRange("t2", 1, s, e)


def r3(s: int, e: int) -> OffsetRange:
    return OffsetRange("t3", 1, s, e)


CASES = [
    # (name, minPartitions, input, expected)
    ("no minPartitions: N partitions to N ranges", None, [r1(1, 2)], [r1(1, 2)]),
    ("no minPartitions: empty ranges ignored", None, [r1(1, 2), r2(1, 1)], [r1(1, 2)]),
    ("N partitions to N ranges", 3, [r1(1, 2), r2(1, 2), r3(1, 2)], [r1(1, 2), r2(1, 2), r3(1, 2)]),
    ("1 partition to N ranges", 4, [r1(1, 5)], [r1(1, 2), r1(2, 3), r1(3, 4), r1(4, 5)]),
    ("N skewed partitions to M ranges", 4, [r1(1, 5), r2(1, 21)],
     [r1(1, 5), r2(1, 7), r2(7, 14), r2(14, 21)]),
    ("SPARK-30656: ignore empty ranges and split the rest", 4, [r1(1, 1), r2(1, 21)],
     [r2(1, 6), r2(6, 11), r2(11, 16), r2(16, 21)]),
    ("SPARK-30656: N very skewed partitions to M ranges", 4, [r1(1, 2), r2(1, 1001)],
     [r1(1, 2), r2(1, 334), r2(334, 667), r2(667, 1001)]),
    ("SPARK-30656: minPartitions below the number of partitions", 1, [r1(1, 5), r2(1, 21)],
     [r1(1, 5), r2(1, 21)]),
    ("range an inexact multiple of minPartitions", 3, [r1(1, 11)], [r1(1, 4), r1(4, 7), r1(7, 11)]),
    ("empty ranges ignored", 4, [r1(1, 5), r2(1, 21), r3(1, 1)], [r1(1, 5), r2(1, 7), r2(7, 14), r2(14, 21)]),
    ("SPARK-28489: never drop offsets", 6, [r1(0, 10), r2(0, 10), r3(0, 1)],
     [r1(0, 3), r1(3, 6), r1(6, 10), r2(0, 3), r2(3, 6), r2(6, 10), r3(0, 1)]),
    ("SPARK-36576: 0 small unsplit ranges and 3 large split ranges", 9, [r1(0, 10000), r2(0, 15000), r3(0, 20000)],
     [r1(0, 5000), r1(5000, 10000), r2(0, 5000), r2(5000, 10000), r2(10000, 15000),
      r3(0, 5000), r3(5000, 10000), r3(10000, 15000), r3(15000, 20000)]),
    ("SPARK-36576: 1 small unsplit range and 2 large split ranges", 6, [r1(0, 500), r2(0, 12000), r3(0, 15001)],
     [r1(0, 500), r2(0, 6000), r2(6000, 12000), r3(0, 5000), r3(5000, 10000), r3(10000, 15001)]),
    ("SPARK-36576: 2 small unsplit ranges and 1 large split range", 6, [r1(0, 1), r2(0, 1), r3(0, 10000)],
     [r1(0, 1), r2(0, 1), r3(0, 2500), r3(2500, 5000), r3(5000, 7500), r3(7500, 10000)]),
    ("SPARK-46798: unsplit ranges", 3, [r1(0, 1), r2(0, 1), r3(0, 1)], [r1(0, 1), r2(0, 1), r3(0, 1)]),
    ("SPARK-46798: split ranges", 4, [r1(0, 1), r2(0, 1), r3(0, 2)], [r1(0, 1), r2(0, 1), r3(0, 1), r3(1, 2)]),
]


@pytest.mark.parametrize("name,min_partitions,ranges,expected", CASES, ids=[c[0] for c in CASES])
def test_spark_suite(name: str, min_partitions: int | None, ranges: list[OffsetRange],
                     expected: list[OffsetRange]) -> None:
    assert split_ranges(ranges, min_partitions) == expected


def test_max_records_per_partition() -> None:
    assert split_ranges([r1(0, 10), r2(0, 3), r3(5, 5)], max_records_per_partition=4) == [
        r1(0, 3), r1(3, 6), r1(6, 10), r2(0, 3)]
    assert split_ranges([r1(0, 8)], max_records_per_partition=4) == [r1(0, 4), r1(4, 8)]


def test_max_records_after_min_partitions() -> None:
    # minPartitions first (2 pieces of 50), then each piece in ceil(50 / 20) = 3
    assert split_ranges([r1(0, 100)], min_partitions=2, max_records_per_partition=20) == [
        r1(0, 16), r1(16, 33), r1(33, 50), r1(50, 66), r1(66, 83), r1(83, 100)]


def test_never_loses_or_duplicates_offsets() -> None:
    ranges = [r1(3, 1000), r2(0, 7), r3(10, 10)]
    for mp in (None, 1, 2, 5, 17, 200):
        for mr in (None, 1, 3, 100, 5000):
            got = split_ranges(ranges, mp, mr)
            for tp in ("t1", "t2"):
                pieces = [g for g in got if g.topic == tp]
                assert pieces[0].start == next(r.start for r in ranges if r.topic == tp)
                assert all(a.end == b.start for a, b in zip(pieces, pieces[1:]))
                assert pieces[-1].end == next(r.end for r in ranges if r.topic == tp)
            assert all(g.size > 0 for g in got)


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError):
        split_ranges([r1(0, 1)], 0)
    with pytest.raises(ValueError):
        split_ranges([r1(0, 1)], None, -1)


# ---------------------------------------------------------------- rate_limit (maxOffsetsPerTrigger)

def test_rate_limit_shares_by_lag() -> None:
    from client.spark.ranges import rate_limit

    start = {"a": 0, "b": 0, "c": 10}
    latest = {"a": 900, "b": 100, "c": 10}
    assert rate_limit(start, latest, 100) == {"a": 90, "b": 10, "c": 10}
    # below 1 rounds up (no starving), never past latest, no lag keeps latest
    assert rate_limit({"a": 0, "b": 0}, {"a": 1000, "b": 1}, 10) == {"a": 9, "b": 1}
    assert rate_limit({"a": 0}, {"a": 5}, 100) == {"a": 5}
    assert rate_limit({"a": 7}, {"a": 7}, 100) == {"a": 7}
    assert rate_limit({"a": 9}, {"a": 3}, 100) == {"a": 3}  # went backwards: left to the caller to report
