"""client/aborted_transactions.py without a broker: which batches of a read_committed answer
are dropped, for interleaved producers, transactions begun before the answer, COMMIT markers,
non-transactional batches of the same producer id, and damaged headers — checked against a
direct model of the rule (a transaction's batches from its first offset to its ABORT marker)."""

from __future__ import annotations

import random

import pytest

from client.aborted_transactions import AbortedTransactions
from client.records.batch import CorruptRecordError, set_base_offset
from client.records.control import build_control_batch
from client.records.record import RecordBatchBuilder


def _data(pid: int, offset: int, n: int = 2, transactional: bool = True) -> bytearray:
    b = RecordBatchBuilder(producer_id=pid, producer_epoch=0, base_sequence=0, is_transactional=transactional)
    for i in range(n):
        b.append(b"v%d" % i, None, (), 1000)
    out = b.build()
    set_base_offset(out, offset)
    return out


def _marker(pid: int, offset: int, commit: bool) -> bytearray:
    out = build_control_batch(pid, 0, commit, 0, 1000)
    set_base_offset(out, offset)
    return out


def _walk(batches: list[bytearray], aborted: list[tuple[int, int]]) -> list[bool]:
    buf = memoryview(b"".join(batches))
    f = AbortedTransactions(aborted)
    out, pos = [], 0
    for b in batches:
        out.append(f.is_aborted(buf, pos))
        pos += len(b)
    return out


def test_interleaved_producers_and_markers() -> None:
    batches = [
        _data(1, 0),                        # 0-1   p1, aborted transaction A
        _data(2, 2),                        # 2-3   p2, committed
        _data(1, 4),                        # 4-5   p1, A
        _data(7, 6, transactional=False),   # 6-7   idempotent, not transactional: kept
        _marker(2, 8, commit=True),         # 8     p2 COMMIT
        _marker(1, 9, commit=False),        # 9     p1 ABORT: A ends
        _data(1, 10),                       # 10-11 p1, a new transaction, committed
        _marker(1, 12, commit=True),        # 12
    ]
    assert _walk(batches, [(1, 0)]) == [True, False, True, False, False, False, False, False]
    assert _walk(batches, []) == [False] * len(batches)


def test_transaction_begun_before_the_answer_and_pairs_out_of_order() -> None:
    batches = [_data(3, 100), _data(4, 102), _marker(3, 104, commit=False), _data(4, 105),
               _marker(4, 107, commit=False), _data(3, 108)]
    # p3's aborted transaction began at 90 (before this answer); p4's at 102; listed unordered
    assert _walk(batches, [(4, 102), (3, 90)]) == [True, True, False, True, False, False]


def test_a_producer_id_is_aborted_only_from_its_first_offset() -> None:
    batches = [_data(5, 0), _data(5, 2), _marker(5, 4, commit=False)]
    assert _walk(batches, [(5, 2)]) == [False, True, False]


def test_random_interleavings_match_the_model() -> None:
    rng = random.Random(3)
    for _ in range(200):
        batches: list[bytearray] = []
        expected: list[bool] = []
        aborted: list[tuple[int, int]] = []
        open_txn: dict[int, tuple[int, bool]] = {}  # pid -> (first offset, aborts)
        offset = 0
        for _ in range(rng.randrange(1, 25)):
            pid = rng.randrange(4)
            if pid in open_txn and rng.random() < 0.35:
                first, aborts = open_txn.pop(pid)
                batches.append(_marker(pid, offset, commit=not aborts))
                expected.append(False)
                if aborts:
                    aborted.append((pid, first))
                offset += 1
                continue
            if pid not in open_txn:
                open_txn[pid] = (offset, rng.random() < 0.5)
            n = rng.randrange(1, 4)
            batches.append(_data(pid, offset, n))
            expected.append(open_txn[pid][1])
            offset += n
        # the answer stops at the last stable offset: the first offset of a transaction still open
        lso = min((first for first, _ in open_txn.values()), default=offset)
        keep = [i for i, b in enumerate(batches) if int.from_bytes(b[:8], "big") < lso]
        got = _walk([batches[i] for i in keep], [a for a in aborted if a[1] < lso])
        assert got == [expected[i] for i in keep]


def test_a_damaged_aborted_batch_is_corrupt_not_dropped_silently() -> None:
    b = _data(1, 0)
    b[-1] ^= 0xFF  # inside the records: the CRC no longer matches
    with pytest.raises(CorruptRecordError):
        AbortedTransactions([(1, 0)]).is_aborted(memoryview(b), 0)
    assert AbortedTransactions([(1, 0)], check_crc=False).is_aborted(memoryview(b), 0)
