"""CleanedTransactions: which batches of a cleaning belong to aborted transactions (Kafka's
CleanedTransactionMetadata), so that the offset map ignores them and the cleaner drops them.

Input: the aborted transactions overlapping the range being read (``Log.collect_aborted_
transactions``, from the ``.txnindex`` files: producer id, first data offset, offset of the
ABORT marker). The batches are then fed in offset order:

- an entry becomes *ongoing* for its producer once a batch reaches its first offset
  (batch last offset >= first offset), unless its marker lies before that batch (a stale entry:
  the reading started after that transaction ended);
- a transactional data batch of a producer with an ongoing aborted entry is aborted data;
- the control batch at the entry's last offset (its ABORT marker) ends the entry; the
  producer's later transactional batches belong to a new transaction, committed or not yet
  decided. The entry names its marker's offset, so markers need not be parsed here.

Between its first offset and its ABORT marker a producer writes only the aborted
transaction's batches (one transaction at a time per producer), so this is exact.

Markers themselves are always kept by this cleaner (Kafka deletes a marker once no data of
its transaction is left and ``delete.retention.ms`` has passed). Keeping them costs one small
batch per transaction and partition; in exchange a marker can never go while data of its
transaction remains, and the ``.txnindex`` of a cleaned segment is simply the entries of the
markers it holds (the old segments' entries, unchanged).

Memory: the entries (already held by the segments' transaction indexes) plus one per
producer with an aborted transaction in progress at the current batch.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..transaction_index import AbortedTxn

__all__ = ["CleanedTransactions"]


class CleanedTransactions:
    __slots__ = ("_pending", "_next", "_ongoing")

    def __init__(self, aborted: Iterable[AbortedTxn] = ()) -> None:
        self._pending = sorted(aborted, key=lambda e: e.first_offset)
        self._next = 0
        self._ongoing: dict[int, AbortedTxn] = {}  # producer id -> its aborted transaction in progress

    def _consume_up_to(self, base_offset: int, last_offset: int) -> None:
        pending = self._pending
        i = self._next
        n = len(pending)
        while i < n and pending[i].first_offset <= last_offset:
            e = pending[i]
            i += 1
            if e.last_offset >= base_offset:  # its marker is this batch or later: in progress
                self._ongoing.setdefault(e.producer_id, e)
        self._next = i

    def on_data_batch(self, producer_id: int, is_transactional: bool, base_offset: int, last_offset: int) -> bool:
        """Feed a data batch; True when it belongs to an aborted transaction."""
        if self._next < len(self._pending):
            self._consume_up_to(base_offset, last_offset)
        return is_transactional and producer_id in self._ongoing

    def on_control_batch(self, producer_id: int, offset: int) -> None:
        """Feed a control batch: the ABORT marker of an ongoing entry ends it."""
        if self._next < len(self._pending):
            self._consume_up_to(offset, offset)
        e = self._ongoing.get(producer_id)
        if e is not None and e.last_offset <= offset:
            del self._ongoing[producer_id]

    @property
    def has_aborted(self) -> bool:
        """False when no batch can be aborted data (no entries at all): callers skip feeding."""
        return bool(self._pending)
