"""AbortedTransactions: which batches of a read_committed Fetch answer belong to aborted
transactions (the consumer's half of Kafka's transactions; Java's CompletedFetch does the same).

With ``isolation_level=read_committed`` the broker answers only records below the partition's
last stable offset (every transaction there has ended), plus ``aborted_transactions``: a
``(producer_id, first_offset)`` pair for each aborted transaction with records in the range
answered. A transaction's records are the *transactional* batches of its producer from its
first offset up to the ABORT marker (a control batch of the same producer whose one record has
key type 0, ``client/records/control.py``). So, walking the batches in offset order:

- pairs whose first offset is <= the last offset of the current batch move from a min-heap
  (ordered by first offset) into the set of aborted producers;
- an ABORT marker removes its producer from the set (its transaction ends there);
- a transactional batch of a producer in the set is aborted data: dropped, never decoded;
- control batches carry no application data and are skipped by the decoder anyway.

Batches without a producer id (-1: not idempotent, not transactional) are never touched, and
an answer without aborted transactions builds no ``AbortedTransactions`` at all, so
read_committed costs nothing per batch unless aborted data is present. The state lives for one
answer (a chunk): the broker lists, for each answer, every aborted transaction overlapping it,
including ones that began before the fetch offset.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from client.records.batch import (
    CONTROL_FLAG_MASK,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    RECORDS_OFFSET,
    TRANSACTIONAL_FLAG_MASK,
    CorruptRecordError,
    validate_batch,
)
from client.records.codec import decode_lists
from client.records.compression import decompress
from client.records.control import ABORT, parse_control_key

__all__ = ["AbortedTransactions"]


class AbortedTransactions:
    """The aborted transactions of one Fetch answer for one partition, consumed in offset order."""

    __slots__ = ("_heap", "_producers", "check_crc")

    def __init__(self, aborted: Iterable[tuple[int, int]], check_crc: bool = True) -> None:
        """``aborted``: ``(producer_id, first_offset)`` pairs as the Fetch answer lists them."""
        self._heap = [(first, pid) for pid, first in aborted]
        heapq.heapify(self._heap)
        self._producers: set[int] = set()
        self.check_crc = check_crc

    def is_aborted(self, buf: memoryview | bytes, pos: int) -> bool:
        """Whether the batch at ``buf[pos]`` (a whole batch) is aborted data to drop. Call it
        for every batch of the answer, in order (ABORT markers update the state)."""
        h = HEADER_STRUCT.unpack_from(buf, pos)
        producer_id = h[9]
        if producer_id < 0:
            return False
        last_offset = h[0] + h[6]
        heap = self._heap
        while heap and heap[0][0] <= last_offset:
            self._producers.add(heapq.heappop(heap)[1])
        if producer_id not in self._producers:
            return False
        attributes = h[5]
        if attributes & CONTROL_FLAG_MASK:
            if self._is_abort_marker(buf, pos, h):
                self._producers.discard(producer_id)
            return False
        if not attributes & TRANSACTIONAL_FLAG_MASK:
            return False
        if self.check_crc:  # the header decides what is dropped: trust it only if intact
            validate_batch(buf, pos, allow_empty=True)
        return True

    def _is_abort_marker(self, buf: memoryview | bytes, pos: int, h: tuple[int, ...]) -> bool:
        if self.check_crc:
            validate_batch(buf, pos, allow_empty=True)
        count = h[12]
        if count < 1:
            return False
        end = pos + h[1] + LOG_OVERHEAD
        section: bytes | memoryview = buf[pos + RECORDS_OFFSET:end]
        codec = h[5] & 7
        try:
            if codec:  # Kafka writes markers uncompressed; accept a compressed one all the same
                section = decompress(codec, section, 1 << 20)
            keys = decode_lists(bytes(section), count, h[0], h[7])[2]
            return parse_control_key(keys[0]).type == ABORT
        except (ValueError, CorruptRecordError) as e:
            raise CorruptRecordError(f"control batch at offset {h[0]}: {e}") from e
