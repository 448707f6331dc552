"""GroupRuntime: the group coordinator bound to the broker — its timers on the event loop, its
records appended to ``__consumer_offsets`` and answered once fsync'd, and the loading of that
topic at start-up.

``__consumer_offsets`` is created when a client first looks for a group coordinator (or a
group record must be written), as Kafka does: ``offsets.topic.num.partitions`` partitions,
``cleanup.policy=compact``, ``segment.bytes=offsets.topic.segment.bytes``, no compression.
Records are ordinary magic-v2 batches (producer id -1), one batch per coordinator write.

Durability: a write returns once the batch is appended (the in-memory state then follows it);
``on_durable`` is called once an fsync covers the batch, by the same group commit as
acks=all produce requests (one fsync per file covers every waiter). OffsetCommit, SyncGroup
and DeleteGroups answer only then, so an answered commit survives a crash.

Loading: at start-up every partition of the topic is marked loading; a background task (the
shared ``CoordinatorLoader``) reads each partition in ``offsets.load.buffer.size`` chunks in a
worker thread (file reads, CRC checks and record decoding off the event loop) and replays them
on the loop: the last value of a key wins, a tombstone deletes. A damaged batch is skipped and
logged, and the commits after it load. Until a partition is replayed its groups answer
COORDINATOR_LOAD_IN_PROGRESS, which clients retry. Then each loaded member's session timer
starts: a member that does not come back within its session timeout is removed. KIP-848
consumer-group records (group/consumer_records.py) rebuild those groups at their epochs
(``ConsumerGroupCoordinator.replay``); share- and streams-group records are skipped.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from client.clock import now_ms
from client.protocol.primitives import DecodeError
from client.records.control import ABORT, COMMIT, ControlRecord, parse_control_key
from client.records.record import build_batch

from ..coordinator.internal_topic import CoordinatorHost, InternalTopic
from ..errors import error_code_of
from ..storage.record_reader import LoggedRecord
from . import consumer_records as cr
from .assignment_offload import ThreadOffload
from .config import group_config
from .consumer_records import ConsumerGroupValue
from .consumer_records import decode_value as decode_consumer_group_value
from .coordinator import GroupCoordinator
from .effects import Record
from .records import (
    CONSUMER_OFFSETS,
    GroupMetadata,
    GroupMetadataKey,
    OffsetAndMetadata,
    OffsetCommitKey,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
)

__all__ = ["GroupRuntime", "AsyncioTimer"]

logger = logging.getLogger("broker.group")


class AsyncioTimer:
    """``Timer`` on the running event loop: one deadline per key, all of them in one heap
    behind a single ``call_at`` handle for the earliest.

    A group of N members reschedules N heartbeat deadlines at every rebalance; a loop handle
    per key costs a TimerHandle, a cancel and a heap push in the loop's scheduler each time
    (about 10 us), the heap here a tuple and a ``heappush`` (about 1 us). A rescheduled or
    cancelled key leaves its old heap entry behind, recognised as stale by its sequence
    number when it comes up (at most one live entry per key plus the stale ones, which are
    dropped as they come due; the heap is rebuilt when stale entries outnumber live ones)."""

    def __init__(self) -> None:
        self._live: dict[Hashable, tuple[int, Callable[[], None]]] = {}  # key -> (sequence, fn)
        self._heap: list[tuple[float, int, Hashable]] = []  # (deadline, sequence, key)
        self._seq = 0
        self._handle: asyncio.TimerHandle | None = None
        self._armed_at = 0.0

    def schedule(self, key: Hashable, delay_ms: int, fn: Callable[[], None]) -> None:
        loop = asyncio.get_running_loop()
        self._seq += 1
        deadline = loop.time() + max(delay_ms, 0) / 1000
        self._live[key] = (self._seq, fn)
        heapq.heappush(self._heap, (deadline, self._seq, key))
        if self._handle is None or deadline < self._armed_at:
            self._arm(loop, deadline)
        elif len(self._heap) > 2 * len(self._live) + 64:
            self._compact()

    def _arm(self, loop: asyncio.AbstractEventLoop, deadline: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._armed_at = deadline
        self._handle = loop.call_at(deadline, self._fire)

    def _compact(self) -> None:
        live = self._live
        self._heap = [e for e in self._heap if live.get(e[2], (None,))[0] == e[1]]
        heapq.heapify(self._heap)

    def _fire(self) -> None:
        self._handle = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        heap, live = self._heap, self._live
        while heap and heap[0][0] <= now:
            _, seq, key = heapq.heappop(heap)
            entry = live.get(key)
            if entry is None or entry[0] != seq:
                continue  # rescheduled or cancelled since
            del live[key]
            try:
                entry[1]()
            except Exception:  # one group's bug must not stop the others' timers
                logger.exception("group timer %s failed", key)
        while heap and live.get(heap[0][2], (None,))[0] != heap[0][1]:
            heapq.heappop(heap)  # stale heads: do not wake up for them
        if heap and (self._handle is None or heap[0][0] < self._armed_at):  # a callback may have armed later
            self._arm(loop, heap[0][0])

    def cancel(self, key: Hashable) -> None:
        self._live.pop(key, None)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._live.clear()
        self._heap.clear()


class GroupRuntime:
    """The group coordinator on ``host``: its timers, its writes to ``__consumer_offsets`` and
    their fsyncs, the topic's loading."""

    def __init__(self, host: CoordinatorHost) -> None:
        cfg = host.config
        self.timer = AsyncioTimer()
        self.coordinator = GroupCoordinator(group_config(cfg), self.timer, self._write, now_ms, host.logs)
        self.coordinator.consumer.offload = ThreadOffload()
        self.topic = InternalTopic(host, CONSUMER_OFFSETS, self.coordinator.config.num_partitions,
                                   cfg.int("offsets.topic.segment.bytes"), cfg.int("offsets.load.buffer.size"),
                                   "offsets.topic.num.partitions")
        self._durable_tasks: set[asyncio.Future[Any]] = set()
        self.load_task: asyncio.Task[None] | None = None
        #: seconds the last start-up load took (None while loading or with nothing to load)
        self.load_seconds: float | None = None

    # -- the topic --

    @property
    def num_partitions(self) -> int:
        return self.coordinator.config.num_partitions

    def ensure_topic(self) -> None:
        """Create ``__consumer_offsets`` unless it exists (raises a StorageError if it cannot)."""
        self.topic.ensure()

    def _write(self, group_id: str, records: list[Record], on_durable: Callable[[int], None],
               producer: tuple[int, int] | None = None) -> int:
        partition = self.coordinator.partition_for(group_id)
        try:
            if producer is None:
                log, info = self.topic.append(partition, build_batch(records))
            else:  # TxnOffsetCommit: a transactional batch of the producer, no sequence
                log, info = self.topic.append(partition, build_batch(
                    records, producer_id=producer[0], producer_epoch=producer[1], is_transactional=True),
                    from_coordinator=True)
        except Exception as e:  # noqa: BLE001 - the caller answers with the error code
            return error_code_of(e)
        fut = asyncio.ensure_future(self.topic.host.durable(log, info.last_offset + 1))
        self._durable_tasks.add(fut)

        def done(f: asyncio.Future[Any]) -> None:
            self._durable_tasks.discard(f)
            if f.cancelled():
                return
            exc = f.exception()
            on_durable(error_code_of(exc) if exc is not None else 0)

        fut.add_done_callback(done)
        return 0

    # -- loading --

    def start_loading(self) -> None:
        """Replay ``__consumer_offsets`` in the background (if it exists)."""
        partitions = self.topic.adopt_existing()
        if partitions is None:
            self.load_seconds = 0.0
            return
        self.coordinator.config = self.coordinator.config._replace(num_partitions=partitions)
        self.coordinator.loading = set(range(partitions))
        self.load_task = asyncio.ensure_future(self._load_all())

    async def _load_all(self) -> None:
        summary = await self.topic.load(_decode, self._replay, self.coordinator.on_loaded)
        self.load_seconds = summary.seconds
        damaged = f"; {summary.skipped_batches} damaged batches skipped" if summary.skipped_batches else ""
        logger.info("loaded %d groups (%d records) from %s in %.3f s%s", len(self.coordinator.groups),
                    summary.records, CONSUMER_OFFSETS, summary.seconds, damaged)

    def _replay(self, partition: int, parsed: list[Replayed]) -> None:
        c = self.coordinator
        for key, value, producer_id in parsed:
            if isinstance(key, ControlRecord):
                if key.type in (ABORT, COMMIT):
                    c.offsets.complete_txn(partition, producer_id, key.type == COMMIT)
            elif isinstance(key, OffsetCommitKey):
                c.offsets.replay_offset(key.group, key.topic, key.partition, value, producer_id)
            elif isinstance(key, GroupMetadataKey):
                c.replay_group(key.group, value)
            elif not isinstance(key, cr.ConsumerGroupPartitionMetadataKey):  # type 4: no longer used
                c.consumer.replay(key, value)  # a KIP-848 record (value None: a tombstone)

    # -- periodic work and shutdown --

    def expire_offsets(self) -> int:
        return self.coordinator.offsets.expire_offsets()

    def group_offsets(self) -> list[tuple[str, Mapping[tuple[str, int], OffsetAndMetadata]]]:
        """(group, its committed offsets by (topic, partition)) for the metrics' lag families:
        the live mappings, which the caller copies before it yields to the loop."""
        return [(g.group_id, g.offsets) for g in self.coordinator.groups.values()]

    def group_members(self) -> dict[str, int]:
        return {g.group_id: len(g.members) for g in self.coordinator.groups.values()}

    async def close(self) -> None:
        if self.load_task is not None:
            self.load_task.cancel()
        self.timer.close()
        if self.coordinator.consumer.offload is not None:
            self.coordinator.consumer.offload.close()
        if self._durable_tasks:
            await asyncio.wait(list(self._durable_tasks), timeout=5)


#: (key, value, producer id) of one record of ``__consumer_offsets``, as ``_replay`` takes it
Replayed = tuple[Any, Any, int]


def _decode(partition: int, chunk: list[LoggedRecord]) -> list[Replayed]:
    """Decode a chunk's records (in the loader's worker thread): (key, value, producer id)
    triples, values None for tombstones; transaction markers as (their ControlRecord, None,
    producer id). Records of unknown types (share and streams groups) are skipped."""
    out: list[Replayed] = []
    for pid, _, is_control, record in chunk:
        if record.key is None:
            continue
        try:
            if is_control:
                out.append((parse_control_key(record.key), None, pid))
                continue
            key = decode_key(record.key)
            if key is None:
                continue
            value: GroupMetadata | OffsetAndMetadata | ConsumerGroupValue | None
            if record.value is None:
                value = None
            elif isinstance(key, GroupMetadataKey):
                value = decode_group_metadata_value(record.value)
            elif isinstance(key, OffsetCommitKey):
                value = decode_offset_commit_value(record.value)
            else:
                value = decode_consumer_group_value(key, record.value)
        except (DecodeError, ValueError) as e:
            logger.warning("%s-%d: skipping undecodable record at offset %d: %s", CONSUMER_OFFSETS,
                           partition, record.offset, e)
            continue
        out.append((key, value, pid))
    return out
