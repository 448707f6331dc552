"""ShareStateStore: the durable state of share-partitions as the share coordinator keeps it, sans
I/O: what ``write`` turns into ``__share_group_state`` records, and the fold (``replay``) of
those records back into the state. Everything that decides the state lives here; the runtime
(runtime.py) only appends the records, waits for their fsync and replays them.

A share-partition's state (``ShareState``): its start offset (offsets below it are all
delivered), its state epoch (bumped when the state is re-initialised, e.g. offsets reset), the
leader epoch of the partition leader that last wrote it, and the in-flight *state batches*
at or above the start offset: non-overlapping, sorted (first, last, delivery_state,
delivery_count) ranges. Offsets in no batch and at or above the start offset were never
delivered.

Records (state_records.py): the first write of a share-partition is a ShareSnapshot (the whole
state); later writes are ShareUpdates carrying only the batches the write names, until
``updates_per_snapshot`` updates have been written since the last snapshot
(``share.coordinator.snapshot.update.records.per.snapshot``, Kafka's default 500; 0: every
write is a snapshot), when the write is a new snapshot of the merged state with the snapshot
epoch + 1. A write that changes the state epoch is a snapshot too: the update record has no
state epoch, and a new state epoch starts the state afresh (the batches the write names, the
old ones dropped).

Folding (``combine``), as Kafka's share coordinator merges state batches: an update's
start_offset of -1 keeps the previous start offset (likewise its leader epoch); every batch
ending below the start offset is dropped and one straddling it is cut to start there; where
batches overlap, each offset takes the batch with the greater (delivery_count,
delivery_state): a delivery count only grows, and at equal count a terminal state (2
Acknowledged, 4 Archived) beats Available (0). Adjacent or overlapping ranges that end up with
the same state and count are coalesced. So the result does not depend on the order in which
overlapping batches arrive, and replaying a snapshot then its updates gives what the writer
held.

Fencing (Kafka's WriteShareGroupState checks): a write whose leader epoch (when not -1) is
below the recorded one fails with FENCED_LEADER_EPOCH, one whose state epoch (when not -1) is
below the recorded one with FENCED_STATE_EPOCH.

Deletion: ``delete(group)`` answers tombstones for both keys (snapshot and update) of each of
the group's share-partitions; replaying the snapshot key's tombstone forgets the state.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from typing import NamedTuple

from client.clock import now_ms
from client.protocol.api import ErrorCode

from ..errors import ApiError
from .state_records import (
    NO_OFFSET,
    SHARE_SNAPSHOT,
    SHARE_UPDATE,
    SharePartitionKey,
    ShareSnapshotValue,
    ShareStateValue,
    ShareUpdateValue,
    StateBatch,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)

__all__ = ["ShareState", "ShareStateStore", "ShareStateError", "combine", "DEFAULT_UPDATES_PER_SNAPSHOT"]

#: Kafka's share.coordinator.snapshot.update.records.per.snapshot default
DEFAULT_UPDATES_PER_SNAPSHOT = 500

#: (key bytes, value bytes or None for a tombstone): one record to append
RecordBytes = tuple[bytes, bytes | None]


class ShareStateError(ApiError):
    """A write refused (FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH, INVALID_REQUEST) or a state
    not readable yet (COORDINATOR_LOAD_IN_PROGRESS, retriable)."""


class ShareState(NamedTuple):
    """One share-partition's durable state (module docstring)."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    create_timestamp: int
    write_timestamp: int
    batches: tuple[StateBatch, ...]
    delivery_complete_count: int = -1


def combine(so_far: Iterable[StateBatch], new: Iterable[StateBatch], start_offset: int) -> tuple[StateBatch, ...]:
    """``so_far`` and ``new`` merged (module docstring): pruned below ``start_offset`` (unless
    -1), each offset the greatest (delivery_count, delivery_state) covering it, equal neighbours
    coalesced. O(n log n) in the number of batches: a sweep over the batch boundaries with a
    heap of the batches covering the current offset (lazily dropped once they end)."""
    batches = sorted(b for b in (*so_far, *new) if b.last_offset >= b.first_offset)
    if start_offset != NO_OFFSET:
        batches = [b if b.first_offset >= start_offset else b._replace(first_offset=start_offset)
                   for b in batches if b.last_offset >= start_offset]
    if not batches:
        return ()
    points = sorted({b.first_offset for b in batches} | {b.last_offset + 1 for b in batches})
    out: list[StateBatch] = []
    active: list[tuple[int, int, int]] = []  # (-count, -state, last offset): the max on top
    i = 0
    for lo, hi in zip(points, points[1:]):  # the elementary range lo..hi-1
        while i < len(batches) and batches[i].first_offset == lo:
            b = batches[i]
            heapq.heappush(active, (-b.delivery_count, -b.delivery_state, b.last_offset))
            i += 1
        while active and active[0][2] < lo:
            heapq.heappop(active)
        if not active:
            continue  # a gap between batches
        count, state = -active[0][0], -active[0][1]
        last = out[-1] if out else None
        if last is not None and last.last_offset == lo - 1 and (last.delivery_count, last.delivery_state) == (count, state):
            out[-1] = last._replace(last_offset=hi - 1)
        else:
            out.append(StateBatch(lo, hi - 1, state, count))
    return tuple(out)


class ShareStateStore:
    """Per share-partition state, the records that change it, and their fold (module docstring).

    ``write`` does not change the state: it answers the records to append, which the caller
    replays once they are appended, so that the state is always the fold of what the log holds
    (an append that fails leaves the state as it was)."""

    def __init__(self, updates_per_snapshot: int = DEFAULT_UPDATES_PER_SNAPSHOT,
                 clock: Callable[[], int] = now_ms) -> None:
        self.updates_per_snapshot = updates_per_snapshot
        self.clock = clock
        self._states: dict[SharePartitionKey, ShareState] = {}
        #: updates replayed since the key's last snapshot
        self._updates: dict[SharePartitionKey, int] = {}

    def __len__(self) -> int:
        return len(self._states)

    def keys(self, group_id: str | None = None) -> list[SharePartitionKey]:
        return [k for k in self._states if group_id is None or k.group_id == group_id]

    def read(self, key: SharePartitionKey) -> ShareState | None:
        """The state of ``key``; None if it was never written (or was deleted)."""
        return self._states.get(key)

    def write(self, key: SharePartitionKey, state_epoch: int, leader_epoch: int, start_offset: int,
              batches: Iterable[StateBatch], delivery_complete_count: int = -1) -> list[RecordBytes]:
        """The record (one) that writes these batches over ``key``'s state: a ShareSnapshot or
        a ShareUpdate (module docstring). -1 for an epoch or the start offset: unchanged.
        Raises ShareStateError when fenced."""
        if not key.group_id or key.partition < 0 or len(key.topic_id) != 16:
            raise ShareStateError(f"invalid share-partition {key!r}", error_code=ErrorCode.INVALID_REQUEST)
        cur = self._states.get(key)
        now = self.clock()
        value: ShareStateValue
        if cur is None:
            value = ShareSnapshotValue(0, state_epoch, leader_epoch, start_offset, now, now,
                                       list(combine((), batches, start_offset)), delivery_complete_count)
            return [(encode_key(SHARE_SNAPSHOT, key), encode_value(value))]
        if leader_epoch != -1 and leader_epoch < cur.leader_epoch:
            raise ShareStateError(f"leader epoch {leader_epoch} < {cur.leader_epoch} of {key!r}",
                                  error_code=ErrorCode.FENCED_LEADER_EPOCH)
        if state_epoch != -1 and state_epoch < cur.state_epoch:
            raise ShareStateError(f"state epoch {state_epoch} < {cur.state_epoch} of {key!r}",
                                  error_code=ErrorCode.FENCED_STATE_EPOCH)
        new_epoch = state_epoch != -1 and state_epoch != cur.state_epoch
        if new_epoch or self._updates.get(key, 0) >= self.updates_per_snapshot:
            start = cur.start_offset if start_offset == NO_OFFSET else start_offset
            merged = combine(() if new_epoch else cur.batches, batches, start)
            value = ShareSnapshotValue(
                cur.snapshot_epoch + 1, state_epoch if new_epoch else cur.state_epoch,
                cur.leader_epoch if leader_epoch == -1 else leader_epoch, start, cur.create_timestamp, now,
                list(merged), cur.delivery_complete_count if delivery_complete_count == -1 else delivery_complete_count)
            return [(encode_key(SHARE_SNAPSHOT, key), encode_value(value))]
        value = ShareUpdateValue(cur.snapshot_epoch, leader_epoch, start_offset,
                                 list(combine((), batches, start_offset)), delivery_complete_count)
        return [(encode_key(SHARE_UPDATE, key), encode_value(value))]

    def delete(self, group_id: str) -> list[RecordBytes]:
        """Tombstones for every share-partition of ``group_id`` (update key, then snapshot key)."""
        return [r for key in self.keys(group_id) for r in self.delete_key(key)]

    def delete_key(self, key: SharePartitionKey) -> list[RecordBytes]:
        """The two tombstones of one share-partition (update key, then snapshot key)."""
        return [(encode_key(SHARE_UPDATE, key), None), (encode_key(SHARE_SNAPSHOT, key), None)]

    # -- the fold --

    def replay(self, key: bytes | memoryview, value: bytes | memoryview | None) -> None:
        """Fold one record (as appended: key and value bytes) into the state. A record of a type
        this module does not know is ignored. Raises DecodeError on malformed bytes."""
        decoded = decode_key(key)
        if decoded is None:
            return
        kind, k = decoded
        self.replay_record(kind, k, None if value is None else decode_value(kind, value))

    def replay_record(self, record_type: int, key: SharePartitionKey, value: ShareStateValue | None) -> None:
        """``replay`` of a decoded record (the loader decodes off the event loop)."""
        if value is None:
            if record_type == SHARE_SNAPSHOT:
                self._states.pop(key, None)
                self._updates.pop(key, None)
            return
        if isinstance(value, ShareSnapshotValue):
            self._states[key] = ShareState(
                value.snapshot_epoch, value.state_epoch, value.leader_epoch, value.start_offset,
                value.create_timestamp, value.write_timestamp, tuple(value.state_batches),
                value.delivery_complete_count)
            self._updates[key] = 0
            return
        cur = self._states.get(key)
        if cur is None:  # an update without its snapshot (deleted, or a truncated log)
            self._states[key] = ShareState(value.snapshot_epoch, 0, value.leader_epoch, value.start_offset, -1, -1,
                                           combine((), value.state_batches, value.start_offset),
                                           value.delivery_complete_count)
            self._updates[key] = 1
            return
        start = cur.start_offset if value.start_offset == NO_OFFSET else value.start_offset
        self._states[key] = cur._replace(
            leader_epoch=cur.leader_epoch if value.leader_epoch == -1 else value.leader_epoch,
            start_offset=start,
            batches=combine(cur.batches, value.state_batches, start),
            delivery_complete_count=(cur.delivery_complete_count if value.delivery_complete_count == -1
                                     else value.delivery_complete_count))
        self._updates[key] = self._updates.get(key, 0) + 1
