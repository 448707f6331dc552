"""SkipListMap (broker/storage/skiplist.py) against a sorted reference model."""

from __future__ import annotations

import bisect

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from broker.storage.skiplist import SkipListMap


def test_empty_map_navigation_returns_none() -> None:
    """Every lookup on an empty map is None; iteration is empty."""
    m: SkipListMap[int, str] = SkipListMap(seed=1)
    assert len(m) == 0 and not m
    for f in (m.floor, m.ceiling, m.lower, m.higher):
        assert f(5) is None
    assert m.first() is None and m.last() is None
    assert list(m.items()) == [] and list(m.items(3)) == []
    assert m.remove(5) is None
    assert m.get(5, "d") == "d"
    with pytest.raises(KeyError):
        m[5]


def test_segments_by_base_offset() -> None:
    """The partition use: floor(offset) is the segment holding it, higher(base) the next."""
    m: SkipListMap[int, str] = SkipListMap(seed=7)
    for base in (0, 100, 250, 1000):
        m[base] = f"seg{base}"
    assert m.floor(0) == (0, "seg0")
    assert m.floor(99) == (0, "seg0")
    assert m.floor(100) == (100, "seg100")
    assert m.floor(999) == (250, "seg250")
    assert m.floor(10**12) == (1000, "seg1000")
    assert m.floor(-1) is None
    assert m.higher(100) == (250, "seg250")
    assert m.higher(1000) is None
    assert m.lower(100) == (0, "seg0")
    assert m.ceiling(101) == (250, "seg250")
    assert list(m.items(101)) == [(250, "seg250"), (1000, "seg1000")]
    assert list(m) == [0, 100, 250, 1000]
    assert list(m.values()) == ["seg0", "seg100", "seg250", "seg1000"]


def test_put_replaces_and_returns_previous_value() -> None:
    """put on an existing key replaces the value in place; the size is unchanged."""
    m: SkipListMap[int, str] = SkipListMap(seed=3)
    assert m.put(1, "a") is None
    assert m.put(1, "b") == "a"
    assert len(m) == 1 and m[1] == "b" and 1 in m and 2 not in m


def test_clear_empties_the_map() -> None:
    """clear() drops every entry and the map is usable afterwards."""
    m: SkipListMap[int, int] = SkipListMap(seed=3)
    for k in range(50):
        m[k] = k
    m.clear()
    assert len(m) == 0 and m.first() is None and list(m.items()) == []
    m[5] = 5
    assert list(m.items()) == [(5, 5)]


def test_many_keys_keep_order_after_removals() -> None:
    """10 000 keys inserted in random order iterate sorted; removing half keeps the order."""
    import random

    rng = random.Random(42)
    keys = list(range(0, 20_000, 2))
    rng.shuffle(keys)
    m: SkipListMap[int, int] = SkipListMap(seed=5)
    for k in keys:
        m[k] = -k
    assert list(m) == sorted(keys)
    for k in keys[::2]:
        assert m.remove(k) == -k
    rest = sorted(keys[1::2])
    assert list(m) == rest and len(m) == len(rest)
    assert m.floor(rest[100] + 1) == (rest[100], -rest[100])


# -- reference model --------------------------------------------------------------------


class _Model:
    def __init__(self) -> None:
        self.d: dict[int, int] = {}
        self.keys: list[int] = []

    def put(self, k: int, v: int) -> int | None:
        old = self.d.get(k)
        if k not in self.d:
            bisect.insort(self.keys, k)
        self.d[k] = v
        return old

    def remove(self, k: int) -> int | None:
        if k not in self.d:
            return None
        self.keys.remove(k)
        return self.d.pop(k)

    def _pair(self, i: int) -> tuple[int, int] | None:
        if 0 <= i < len(self.keys):
            return self.keys[i], self.d[self.keys[i]]
        return None

    def floor(self, k: int):
        return self._pair(bisect.bisect_right(self.keys, k) - 1)

    def lower(self, k: int):
        return self._pair(bisect.bisect_left(self.keys, k) - 1)

    def ceiling(self, k: int):
        return self._pair(bisect.bisect_left(self.keys, k))

    def higher(self, k: int):
        return self._pair(bisect.bisect_right(self.keys, k))

    def items(self, from_key: int | None):
        i = 0 if from_key is None else bisect.bisect_left(self.keys, from_key)
        return [(k, self.d[k]) for k in self.keys[i:]]


_keys = st.integers(-50, 50)
_ops = st.lists(
    st.one_of(
        st.tuples(st.just("put"), _keys, st.integers()),
        st.tuples(st.just("remove"), _keys),
        st.tuples(st.sampled_from(["floor", "ceiling", "lower", "higher", "get", "contains"]), _keys),
        st.tuples(st.sampled_from(["first", "last", "len"])),
        st.tuples(st.just("items"), st.one_of(st.none(), _keys)),
    ),
    max_size=200,
)


@settings(max_examples=200, deadline=None)
@given(ops=_ops, seed=st.integers(0, 2**32 - 1))
def test_operation_sequences_match_sorted_model(ops, seed) -> None:
    """Random put/remove/navigation/iteration sequences agree with dict + sorted keys."""
    m: SkipListMap[int, int] = SkipListMap(seed=seed)
    model = _Model()
    for op in ops:
        name = op[0]
        if name == "put":
            assert m.put(op[1], op[2]) == model.put(op[1], op[2])
        elif name == "remove":
            assert m.remove(op[1]) == model.remove(op[1])
        elif name in ("floor", "ceiling", "lower", "higher"):
            assert getattr(m, name)(op[1]) == getattr(model, name)(op[1]), op
        elif name == "get":
            assert m.get(op[1]) == model.d.get(op[1])
        elif name == "contains":
            assert (op[1] in m) == (op[1] in model.d)
        elif name == "first":
            assert m.first() == model._pair(0)
        elif name == "last":
            assert m.last() == model._pair(len(model.keys) - 1)
        elif name == "len":
            assert len(m) == len(model.keys) and bool(m) == bool(model.keys)
        elif name == "items":
            assert list(m.items(op[1])) == model.items(op[1])
    assert list(m.items()) == model.items(None)


class SkipListMachine(RuleBasedStateMachine):
    """Stateful version: after every step the whole map equals the model, and the skip
    list's level-0 chain is sorted with every higher level a subsequence of it."""

    def __init__(self) -> None:
        super().__init__()
        self.m: SkipListMap[int, int] = SkipListMap(seed=0)
        self.model = _Model()

    @rule(k=_keys, v=st.integers())
    def put(self, k, v):
        assert self.m.put(k, v) == self.model.put(k, v)

    @precondition(lambda self: self.model.keys)
    @rule(data=st.data())
    def remove_present(self, data):
        k = data.draw(st.sampled_from(self.model.keys))
        assert self.m.remove(k) == self.model.remove(k)

    @rule(k=_keys)
    def remove_any(self, k):
        assert self.m.remove(k) == self.model.remove(k)

    @rule(k=_keys, name=st.sampled_from(["floor", "ceiling", "lower", "higher"]))
    def navigate(self, k, name):
        assert getattr(self.m, name)(k) == getattr(self.model, name)(k)

    @rule(k=st.one_of(st.none(), _keys))
    def items_from(self, k):
        assert list(self.m.items(k)) == self.model.items(k)

    @invariant()
    def same_contents(self):
        assert len(self.m) == len(self.model.keys)
        assert self.m.first() == self.model._pair(0)
        assert self.m.last() == self.model._pair(len(self.model.keys) - 1)

    @invariant()
    def levels_are_sorted_subsequences(self):
        head = self.m._head
        level0 = []
        node = head.forward[0]
        while node is not None:
            level0.append(node.key)
            node = node.forward[0]
        assert level0 == self.model.keys
        for i in range(1, len(head.forward)):
            keys = []
            node = head.forward[i]
            while node is not None:
                keys.append(node.key)
                node = node.forward[i]
            assert keys == sorted(set(keys)) and set(keys) <= set(level0)


TestSkipListMachine = SkipListMachine.TestCase
TestSkipListMachine.settings = settings(max_examples=100, stateful_step_count=60, deadline=None)
