"""Which batches a cleaning treats as aborted data (broker/storage/cleaner/transactions.py)."""

from __future__ import annotations

from broker.storage.cleaner.transactions import CleanedTransactions
from broker.storage.transaction_index import AbortedTxn


def test_batches_between_an_entry_first_offset_and_its_marker_are_aborted() -> None:
    # Producer 7: aborted transaction at 10..14 (marker 14), a new transaction from 20.
    # Producer 8: aborted transaction at 12..30 (marker 30), interleaved with producer 7's.
    t = CleanedTransactions([AbortedTxn(8, 12, 30, 12), AbortedTxn(7, 10, 14, 12)])
    assert t.has_aborted
    assert t.on_data_batch(7, True, 0, 9) is False         # before the first offset
    assert t.on_data_batch(7, False, 5, 6) is False         # not transactional
    assert t.on_data_batch(7, True, 10, 11) is True
    assert t.on_data_batch(8, True, 12, 12) is True
    assert t.on_data_batch(9, True, 13, 13) is False        # another producer's transaction
    t.on_control_batch(7, 14)                                # producer 7's ABORT marker
    assert t.on_data_batch(7, True, 20, 21) is False        # its next transaction
    t.on_control_batch(8, 25)                                # a marker of producer 8 before its entry's: not the end
    assert t.on_data_batch(8, True, 26, 27) is True
    t.on_control_batch(8, 30)
    assert t.on_data_batch(8, True, 31, 31) is False


def test_entries_whose_marker_precedes_the_reading_are_stale() -> None:
    # Reading starts at 50 (a map built from the first dirty offset): the transaction that
    # aborted at 40 is over, the producer's transactional batch at 50 is a new transaction.
    t = CleanedTransactions([AbortedTxn(7, 30, 40, 41), AbortedTxn(7, 45, 60, 61)])
    assert t.on_data_batch(7, True, 50, 52) is True          # the second entry, in progress
    t.on_control_batch(7, 60)
    assert t.on_data_batch(7, True, 61, 61) is False
    fresh = CleanedTransactions([AbortedTxn(7, 30, 40, 41)])
    assert fresh.on_data_batch(7, True, 50, 52) is False


def test_no_entries() -> None:
    t = CleanedTransactions()
    assert not t.has_aborted
    assert t.on_data_batch(1, True, 0, 0) is False
    t.on_control_batch(1, 1)
