"""The idempotent producer's state: its producer id and epoch, and each partition's next
sequence and unresolved batches, held by ``TransactionManager`` (Kafka's Java client's name
for the holder; this is its idempotence half). The transactional half is
``client/transactions.py``, which drives this one: it sets the producer id and epoch from its
own InitProducerId and marks batches transactional.

With idempotence the producer asks the broker for a producer id (InitProducerId, at start),
and numbers the records it sends to each partition from 0: every batch carries the producer
id, its epoch and the sequence of its first record (``stamp``, called as the batch is sealed;
batches of a partition are sealed and sent in creation order). The broker keeps the last 5
batches of each producer per partition, so a retried batch that was already written (its
answer lost with the connection) is answered with its original offsets instead of being
written twice, and a batch that would leave a gap is refused with OUT_OF_ORDER_SEQUENCE_NUMBER.

What the sender asks here:

- ``resolved(b)``: ``b`` was acknowledged (or failed): its sequence range is settled.
- ``is_retry_of_earlier(b)``: an OUT_OF_ORDER_SEQUENCE_NUMBER answer for ``b`` is expected
  (and ``b`` is retried) while an earlier batch of its partition is unresolved: that one
  failed with a retriable error and ``b``, pipelined behind it, arrived before its retry.
- ``needs_reset``: a batch with a sequence failed for good (or was split after
  MESSAGE_TOO_LARGE), which leaves a gap the broker would refuse every later batch for. The
  sender stops sending until nothing is in flight, then ``reset`` takes a new producer id
  (an unknown producer may start at any sequence) and renumbers every unsent batch from 0,
  as Kafka's producer resets its producer id when it cannot bump the epoch. A transactional
  producer never resets in the middle of a transaction: the failed batch makes the
  transaction abortable, and the abort bumps the epoch (``set_producer``), which restarts
  every partition's sequence at 0.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable

from client.cluster import Cluster
from client.errors import KafkaError, KafkaTimeoutError, error_for_code
from client.producer_batch import ProducerBatch
from client.protocol.api import ApiKey

__all__ = ["TransactionManager", "increment_sequence"]

logger = logging.getLogger("client.producer")

_INT32_MAX = 2**31 - 1


def increment_sequence(sequence: int, increment: int) -> int:
    """``sequence + increment`` in the sequence space, which wraps from 2^31-1 to 0."""
    if sequence > _INT32_MAX - increment:
        return increment - (_INT32_MAX - sequence) - 1
    return sequence + increment


class TransactionManager:
    """The idempotent producer's id, epoch and per-partition sequences (see the module)."""

    def __init__(self, cluster: Cluster, *, max_block: float, retry_backoff: float) -> None:
        self._cluster = cluster
        self.max_block = max_block
        self.retry_backoff = retry_backoff
        self.producer_id = -1
        self.producer_epoch = -1
        self._next_sequence: dict[tuple[str, int], int] = {}
        #: per partition, the batches given a sequence and not yet resolved, in sequence order
        self._unresolved: dict[tuple[str, int], dict[ProducerBatch, None]] = {}
        self.needs_reset = False
        self.resetting = False
        #: attribute bits given to every batch (``TRANSACTIONAL_FLAG_MASK`` for a transactional producer)
        self.batch_flags = 0

    def set_producer(self, producer_id: int, producer_epoch: int) -> None:
        """A producer id and epoch from a transactional InitProducerId: sequences restart at 0.
        Only while no batch is unresolved (after init_transactions or an abort)."""
        self.producer_id, self.producer_epoch = producer_id, producer_epoch
        self._next_sequence.clear()
        self._unresolved.clear()
        self.needs_reset = False

    async def init_producer_id(self) -> None:
        """InitProducerId (no transactional id): a fresh producer id, epoch 0. Retriable
        errors are retried for up to ``max_block`` seconds (KafkaTimeoutError then)."""
        deadline = time.monotonic() + self.max_block
        while True:
            try:
                conn = await self._cluster.any_connection()
                version = conn.pick_version(ApiKey.INIT_PRODUCER_ID)
                resp = await conn.request(ApiKey.INIT_PRODUCER_ID, version, {
                    "transactional_id": None, "transaction_timeout_ms": 2147483647,
                    "producer_id": -1, "producer_epoch": -1})
                code = resp["error_code"]
                if code:
                    raise error_for_code(code, f"InitProducerId failed on {conn.host}:{conn.port}")
                self.producer_id, self.producer_epoch = resp["producer_id"], resp["producer_epoch"]
                logger.debug("idempotent producer: producer id %d, epoch %d", self.producer_id, self.producer_epoch)
                return
            except KafkaError as e:
                if not e.retriable or time.monotonic() + self.retry_backoff > deadline:
                    if e.retriable:
                        raise KafkaTimeoutError(f"no producer id within {self.max_block} s: {e}") from e
                    raise
                await asyncio.sleep(self.retry_backoff)

    # ------------------------------------------------------------------ sequences

    def stamp(self, b: ProducerBatch) -> None:
        """Give ``b`` (about to be sealed) the producer id and its partition's next sequence."""
        tp = (b.topic, b.partition)
        seq = self._next_sequence.get(tp, 0)
        b.producer_id, b.producer_epoch, b.base_sequence = self.producer_id, self.producer_epoch, seq
        b.flags = self.batch_flags
        self._next_sequence[tp] = increment_sequence(seq, b.count)
        unresolved = self._unresolved.get(tp)
        if unresolved is None:
            unresolved = self._unresolved[tp] = {}
        unresolved[b] = None

    def resolved(self, b: ProducerBatch) -> None:
        unresolved = self._unresolved.get((b.topic, b.partition))
        if unresolved is not None:
            unresolved.pop(b, None)

    def failed(self, b: ProducerBatch) -> None:
        """``b`` will never be written: its sequences are a gap; reset before sending more."""
        unresolved = self._unresolved.get((b.topic, b.partition))
        if unresolved is not None and b in unresolved:
            del unresolved[b]
            self.needs_reset = True

    def is_retry_of_earlier(self, b: ProducerBatch) -> bool:
        """Is an earlier batch of ``b``'s partition still unresolved?"""
        unresolved = self._unresolved.get((b.topic, b.partition))
        if not unresolved:
            return False
        return next(iter(unresolved)) is not b

    async def reset(self, queues: Iterable[Iterable[ProducerBatch]]) -> None:
        """A new producer id, and every batch of ``queues`` (the unsent ones, per partition in
        order) renumbered from sequence 0. Call only when nothing is in flight."""
        self.resetting = True
        try:
            old = self.producer_id
            await self.init_producer_id()
            self._next_sequence.clear()
            self._unresolved.clear()
            n = 0
            for q in queues:
                for b in q:
                    tp = (b.topic, b.partition)
                    seq = self._next_sequence.get(tp, 0)
                    b.set_producer_state(self.producer_id, self.producer_epoch, seq)
                    self._next_sequence[tp] = increment_sequence(seq, b.count)
                    self._unresolved.setdefault(tp, {})[b] = None
                    n += 1
            self.needs_reset = False
            logger.info("idempotent producer: producer id %d replaced by %d after a failed batch; %d batches"
                        " renumbered", old, self.producer_id, n)
        finally:
            self.resetting = False
