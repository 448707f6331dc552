"""The fetch session cache (broker/fetch_session.py) on its own: slots, eviction of an idle
session before a small one, epochs wrapping, and a session's partition order."""

from __future__ import annotations

from broker.fetch_session import MAX_EPOCH, CachedPartition, FetchSessionCache, next_epoch


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _parts(n: int) -> dict:
    return {("t", i): CachedPartition("t", None, {"partition": i, "fetch_offset": 0}) for i in range(n)}


def test_idle_sessions_go_first_then_the_smallest() -> None:
    clock = Clock()
    cache = FetchSessionCache(2, eviction_ms=1000, clock=clock)
    big = cache.create(False, _parts(5))
    small = cache.create(False, _parts(2))
    assert big and small and len(cache) == 2 and cache.partitions_cached == 7
    assert cache.create(False, _parts(2)) is None  # no larger than the smallest, none idle
    clock.now = 0.5
    assert cache.get(small.id) is small  # used: the big one is now the least recently used
    clock.now = 1.2  # big idle for 1.2 s > 1 s: evicted first, even though it is the largest
    third = cache.create(False, _parts(1))
    assert third is not None and cache.get(big.id) is None and cache.evictions == 1
    assert cache.create(False, _parts(3)) is not None  # evicts the smallest (third, 1 partition)
    assert cache.get(third.id) is None and cache.get(small.id) is small


def test_no_slots_no_sessions() -> None:
    assert FetchSessionCache(0, 1000).create(False, _parts(1)) is None


def test_epochs_wrap_to_one() -> None:
    assert next_epoch(1) == 2 and next_epoch(MAX_EPOCH) == 1


def test_partitions_answered_with_records_move_to_the_end() -> None:
    s = FetchSessionCache(1, 1000).create(False, _parts(3))
    assert s is not None
    s.answered(("t", 0), 10, 0, 0, True)
    s.answered(("t", 1), 10, 0, 0, False)
    assert [k[1] for k in s.partitions] == [1, 2, 0]
    s.answered(("t", 2), 10, 0, 3, False)  # an error: answered again next time
    assert (s.partitions[("t", 2)].high_watermark, s.partitions[("t", 1)].high_watermark) == (-1, 10)
    s.update([("t", None, [{"partition": 5, "fetch_offset": 7}])], [("t", [1])])
    assert [k[1] for k in s.partitions] == [2, 0, 5]
