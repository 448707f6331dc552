"""SchemaStore: the registry's state kept in ``_schemas`` — loaded at start-up, written through
the broker's log, every write answered once fsync'd.

``_schemas`` is an internal topic of the registry (broker/coordinator/internal_topic.py): one
partition, ``cleanup.policy=compact``, created when the registry first starts. At start-up the
shared ``CoordinatorLoader`` replays it from the beginning (records decoded in a worker
thread, applied on the loop); a record that does not decode is logged and skipped.

Writes are serialised by one lock held from the decision to the apply: a request's decision
(``RegistryState``'s methods) sees every earlier write applied, so two concurrent registrations
of new schemas cannot take the same id or version. The records of one decision go in one
batch (a subject's soft delete is atomic); the state applies them only once an fsync covers
the batch, so nothing a client was told can be lost by a crash, and nothing unanswered is
visible. The cost: writes are one at a time, each waiting for its fsync (a registry takes a
few writes a second at most; reads never wait).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TypeVar

from client.records.record import build_batch

from ..coordinator.internal_topic import CoordinatorHost, InternalTopic
from ..storage.record_reader import LoggedRecord
from .errors import RegistryError
from .records import StoreRecord, decode
from .state import Plan, RegistryState

__all__ = ["SCHEMAS_TOPIC", "SchemaStore"]

logger = logging.getLogger("broker.schema_registry")

SCHEMAS_TOPIC = "_schemas"
#: the segment size ``_schemas`` is created with: Kafka's default (a registry's records are few;
#: the cleaner compacts only rolled segments, so a smaller one would bound the dead records kept)
SEGMENT_BYTES = 1024 * 1024 * 1024
T = TypeVar("T")


class SchemaStore:
    def __init__(self, host: CoordinatorHost) -> None:
        cfg = host.config
        self.host = host
        self.state = RegistryState()
        self.topic = InternalTopic(host, SCHEMAS_TOPIC, 1, SEGMENT_BYTES,
                                   cfg.int("offsets.load.buffer.size"), "the registry's single partition")
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        """Create ``_schemas`` unless it exists, then replay it."""
        self.topic.adopt_existing()
        self.topic.ensure()
        summary = await self.topic.load(_decode, self._replay)
        damaged = f"; {summary.skipped_batches} damaged batches skipped" if summary.skipped_batches else ""
        logger.info("schema registry: loaded %d subjects, %d schema ids (%d records) from %s in %.3f s%s",
                    len(self.state.subjects), len(self.state.id_holders), summary.records, SCHEMAS_TOPIC,
                    summary.seconds, damaged)

    def _replay(self, partition: int, records: list[StoreRecord]) -> None:
        for rec in records:
            self.state.apply(rec)

    async def write(self, decide: Callable[[RegistryState], tuple[Plan, T]]) -> T:
        """Run ``decide`` on the state; append the records it returns, wait for their fsync,
        apply them; return its answer. A failed append or fsync is a 50001 store error."""
        async with self._lock:
            plan, answer = decide(self.state)
            if not plan:
                return answer
            try:
                await self.topic.append_durable(0, build_batch(plan))
            except Exception as e:  # re-raised as Confluent's store error
                logger.error("schema registry: cannot write to %s: %s", SCHEMAS_TOPIC, e)
                raise RegistryError.store_error(str(e)) from e
            self.host.notify_append(SCHEMAS_TOPIC, 0)
            for key, value in plan:
                rec = decode(key, value)
                if rec is not None:
                    self.state.apply(rec)
            return answer


def _decode(partition: int, chunk: list[LoggedRecord]) -> list[StoreRecord]:
    """The registry's records of a chunk (in the loader's worker thread)."""
    out = []
    for _, _, is_control, record in chunk:
        if is_control or record.key is None:
            continue
        try:
            rec = decode(record.key, record.value)
        except (ValueError, KeyError, TypeError) as e:
            logger.warning("%s-%d: skipping undecodable record at offset %d: %s", SCHEMAS_TOPIC, partition,
                           record.offset, e)
            continue
        if rec is not None:
            out.append(rec)
    return out
