"""ShareStateRuntime: the share-partition state store (persister.py) bound to the broker — its
records appended to ``__share_group_state`` and answered once fsync'd, and the loading of that
topic at start-up. No handler calls it yet: the share-group coordinator (ShareFetch,
ShareAcknowledge) is its user.

The topic is created on the first write, as Kafka creates it: ``share.coordinator.state.topic.
num.partitions`` partitions, ``cleanup.policy=delete`` with ``retention.ms=-1`` (KIP-932; not
compacted: a share-partition's state is its last snapshot *and every update after it*, all under
one ShareUpdate key, which compaction would reduce to the last), ``segment.bytes=share.
coordinator.state.topic.segment.bytes``, no compression. A share-partition lives in partition
``partition_for`` (state_records.py: the hash of ``"<group>:<topic id>:<partition>"``, as
Kafka's share coordinator places it). The topic only grows: Kafka deletes the records before
the oldest snapshot still needed (DeleteRecords), which is not done here yet.

Writes: ``write_state`` asks the store for the record, appends it as one batch, replays it
(the state follows what was appended; an append that fails changes nothing) and returns once
an fsync covers it, so an acknowledgement answered after ``await write_state`` survives a
crash. Nothing awaits between the store's decision and the append, so two writes of one
share-partition cannot interleave. ``delete_group`` appends the group's tombstones, one batch
per partition, and waits for them likewise.

Loading: at start-up every partition of an existing topic is marked loading; the shared
``CoordinatorLoader`` replays each in ``share.coordinator.load.buffer.size`` chunks (decoding in
a worker thread). A damaged batch is skipped and logged; a record that does not decode is
logged and skipped. Until its partition is replayed, a share-partition's reads and writes raise
ShareStateError(COORDINATOR_LOAD_IN_PROGRESS), which the caller answers and a client retries.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from client.protocol.api import ErrorCode
from client.protocol.primitives import DecodeError
from client.records.record import build_batch

from ..coordinator.internal_topic import CoordinatorHost, InternalTopic
from ..storage.record_reader import LoggedRecord
from .persister import RecordBytes, ShareState, ShareStateError, ShareStateStore
from .state_records import (
    SHARE_GROUP_STATE,
    SharePartitionKey,
    ShareStateValue,
    StateBatch,
    decode_key,
    decode_value,
    partition_for,
)

__all__ = ["ShareStateRuntime"]

logger = logging.getLogger("broker.share")

#: (record type, share-partition, value or None): one decoded record, as the loader replays it
Replayed = tuple[int, SharePartitionKey, ShareStateValue | None]


class ShareStateRuntime:
    """The durable share-partition state on ``host`` (see the module docstring)."""

    def __init__(self, host: CoordinatorHost) -> None:
        cfg = host.config
        self.store = ShareStateStore(cfg.int("share.coordinator.snapshot.update.records.per.snapshot"))
        segment_bytes = cfg.int("share.coordinator.state.topic.segment.bytes")
        self.topic = InternalTopic(host, SHARE_GROUP_STATE, cfg.int("share.coordinator.state.topic.num.partitions"),
                                   segment_bytes, cfg.int("share.coordinator.load.buffer.size"),
                                   "share.coordinator.state.topic.num.partitions",
                                   {"cleanup.policy": "delete", "retention.ms": "-1",
                                    "segment.bytes": str(segment_bytes)})
        #: partitions not replayed yet
        self.loading: set[int] = set()
        self.load_task: asyncio.Task[None] | None = None
        #: seconds the last start-up load took (None while loading)
        self.load_seconds: float | None = None

    def partition_for(self, key: SharePartitionKey) -> int:
        return partition_for(key, self.topic.num_partitions)

    def _check_loaded(self, partition: int) -> None:
        if partition in self.loading:
            raise ShareStateError(f"{SHARE_GROUP_STATE}-{partition} is loading",
                                  error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)

    # -- the API --

    def read_state(self, key: SharePartitionKey) -> ShareState | None:
        """The state of ``key`` (None: never written). Raises ShareStateError while its
        partition loads."""
        self._check_loaded(self.partition_for(key))
        return self.store.read(key)

    async def write_state(self, key: SharePartitionKey, state_epoch: int, leader_epoch: int, start_offset: int,
                          batches: Iterable[StateBatch], delivery_complete_count: int = -1) -> ShareState:
        """Write ``batches`` over ``key``'s state (persister.py), return the new state once the
        record is fsync'd. Raises ShareStateError (fenced, loading), a StorageError or OSError
        when the append or the fsync fails."""
        partition = self.partition_for(key)
        self._check_loaded(partition)
        records = self.store.write(key, state_epoch, leader_epoch, start_offset, batches, delivery_complete_count)
        await self._append(partition, records)
        state = self.store.read(key)
        assert state is not None
        return state

    async def delete_group(self, group_id: str) -> int:
        """Delete every share-partition state of ``group_id``; return how many, once the
        tombstones are fsync'd. Raises ShareStateError while a partition holding one loads."""
        keys = self.store.keys(group_id)
        by_partition: dict[int, list[SharePartitionKey]] = {}
        for key in keys:
            by_partition.setdefault(self.partition_for(key), []).append(key)
        for partition in by_partition:
            self._check_loaded(partition)
        if not keys:
            return 0
        waits = []
        for partition, pkeys in by_partition.items():
            records = [r for k in pkeys for r in self.store.delete_key(k)]
            waits.append(self._append(partition, records))
        await asyncio.gather(*waits)
        return len(keys)

    async def delete_keys(self, keys: Iterable[SharePartitionKey]) -> int:
        """Delete these share-partitions' states (DeleteShareGroupOffsets); how many existed,
        once the tombstones are fsync'd. Raises ShareStateError while a partition loads."""
        by_partition: dict[int, list[SharePartitionKey]] = {}
        for key in keys:
            if self.store.read(key) is not None:
                by_partition.setdefault(self.partition_for(key), []).append(key)
        for partition in by_partition:
            self._check_loaded(partition)
        await asyncio.gather(*(self._append(partition, [r for k in pkeys for r in self.store.delete_key(k)])
                               for partition, pkeys in by_partition.items()))
        return sum(len(k) for k in by_partition.values())

    async def _append(self, partition: int, records: list[RecordBytes]) -> None:
        log, info = self.topic.append(partition, build_batch(records))
        for k, v in records:
            self.store.replay(k, v)
        await self.topic.host.durable(log, info.last_offset + 1)

    # -- loading --

    def start_loading(self) -> asyncio.Task[None] | None:
        """Replay ``__share_group_state`` in the background (if it exists)."""
        partitions = self.topic.adopt_existing()
        if partitions is None:
            self.load_seconds = 0.0
            return None
        self.loading = set(range(partitions))
        self.load_task = asyncio.ensure_future(self._load_all())
        return self.load_task

    async def _load_all(self) -> None:
        summary = await self.topic.load(_decode, self._replay, self.loading.discard)
        self.load_seconds = summary.seconds
        damaged = f"; {summary.skipped_batches} damaged batches skipped" if summary.skipped_batches else ""
        logger.info("loaded %d share-partition states (%d records) from %s in %.3f s%s", len(self.store),
                    summary.records, SHARE_GROUP_STATE, summary.seconds, damaged)

    def _replay(self, _partition: int, items: list[Replayed]) -> None:
        for kind, key, value in items:
            self.store.replay_record(kind, key, value)

    async def close(self) -> None:
        if self.load_task is not None:
            self.load_task.cancel()


def _decode(partition: int, chunk: list[LoggedRecord]) -> list[Replayed]:
    """Decode a chunk's records (in the loader's worker thread); control records and records of
    unknown types are skipped, undecodable ones logged and skipped."""
    out: list[Replayed] = []
    for _, _, is_control, record in chunk:
        if is_control or record.key is None:
            continue
        try:
            decoded = decode_key(record.key)
            if decoded is None:
                continue
            kind, key = decoded
            out.append((kind, key, None if record.value is None else decode_value(kind, record.value)))
        except (DecodeError, ValueError) as e:
            logger.warning("%s-%d: skipping undecodable record at offset %d: %s", SHARE_GROUP_STATE, partition,
                           record.offset, e)
    return out
