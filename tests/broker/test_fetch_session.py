"""The fetch session cache (broker/fetch_session.py) on its own: slots, eviction of an idle
session before a small one, epochs wrapping, a session's partition order, and which partitions
a session reads (those a request named or a change marked, and the unsettled)."""

from __future__ import annotations

from broker.fetch_session import MAX_EPOCH, FetchSession, FetchSessionCache, next_epoch


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _open(cache: FetchSessionCache, n: int, offset: int = 0, hw: int = 0) -> FetchSession | None:
    """A session of n partitions of topic t, each answered at high watermark ``hw``."""
    s = cache.create(False, n)
    if s is not None:
        for i in range(n):
            key = s.add("t", None, {"partition": i, "fetch_offset": offset})
            s.answered(key, hw, 0, 0, False)
        cache.watch(s)
    return s


def test_idle_sessions_go_first_then_the_smallest() -> None:
    clock = Clock()
    cache = FetchSessionCache(2, eviction_ms=1000, clock=clock)
    big, small = _open(cache, 5), _open(cache, 2)
    assert big and small and len(cache) == 2 and cache.partitions_cached == 7
    assert _open(cache, 2) is None  # no larger than the smallest, none idle
    clock.now = 0.5
    assert cache.get(small.id) is small  # used: the big one is now the least recently used
    clock.now = 1.2  # big idle for 1.2 s > 1 s: evicted first, even though it is the largest
    third = _open(cache, 1)
    assert third is not None and cache.get(big.id) is None and cache.evictions == 1
    assert _open(cache, 3) is not None  # evicts the smallest (third, 1 partition)
    assert cache.get(third.id) is None and cache.get(small.id) is small
    # an evicted session no longer watches its partitions
    assert all(big not in w and third not in w for w in cache.watchers.values())


def test_no_slots_no_sessions() -> None:
    assert FetchSessionCache(0, 1000).create(False, 1) is None


def test_epochs_wrap_to_one() -> None:
    assert next_epoch(1) == 2 and next_epoch(MAX_EPOCH) == 1


def test_an_idle_session_reads_nothing_until_a_change() -> None:
    cache = FetchSessionCache(1, 1000)
    s = _open(cache, 3, offset=5, hw=5)
    assert s is not None and s.candidates() == []
    v = s.version
    cache.changed("t", 1)  # an append to t-1
    cache.changed("other", 0)  # not held by the session
    assert s.candidates() == [("t", 1)] and s.version == v + 1
    s.answered(("t", 1), 9, 0, 0, True)  # answered with records the client has not consumed yet
    assert s.candidates() == [("t", 1)]  # unsettled: its fetch offset 5 is below 9
    cache.update(s, [("t", None, [{"partition": 1, "fetch_offset": 9}])], [])
    s.answered(("t", 1), 9, 0, 0, False)
    assert s.candidates() == []
    s.answered(("t", 2), -1, -1, 3, False)  # an error: read again every time
    assert s.candidates() == [("t", 2)]


def test_partitions_answered_with_records_move_to_the_end() -> None:
    cache = FetchSessionCache(1, 1000)
    s = _open(cache, 3)
    assert s is not None
    for i in range(3):
        s.mark(("t", i))
    s.answered(("t", 0), 10, 0, 0, True)
    assert s.candidates() == [("t", 1), ("t", 2), ("t", 0)]
    cache.update(s, [("t", None, [{"partition": 5, "fetch_offset": 7}])], [("t", [1])])
    assert s.candidates() == [("t", 2), ("t", 0), ("t", 5)]
    assert ("t", 1) not in cache.watchers and s in cache.watchers[("t", 5)]
