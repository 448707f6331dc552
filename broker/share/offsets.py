"""Share-group offsets as the admin APIs see them (DescribeShareGroupOffsets,
AlterShareGroupOffsets, DeleteShareGroupOffsets) and the deletion of a whole share group
(DeleteGroups), over the two places a share-partition's state lives:

- in memory, ``SharePartitionManager.partitions`` (manager.py): the share-partitions members
  fetched from since the broker started; the freshest view (acquisitions are not written);
- durable, ``ShareStateRuntime`` (runtime.py, ``__share_group_state``): what was last written,
  all a group never fetched from since the start has.

A read prefers memory and falls back to the store; a change (alter, delete) is written to the
store first and then drops the in-memory share-partition, which the next ShareFetch loads again
from what was written. That is safe because both need the group empty (NON_EMPTY_GROUP): no
member can acquire records between the write and the drop.

**Lag** (KIP-1226): the records from the start offset up to the high watermark that are not done
with: ``high_watermark - start_offset - (acknowledged and archived offsets above the start)``,
-1 when the share-partition has no state yet.

A share group *exists* while it has members or any stored or in-memory share-partition (its
membership is not persisted: after a restart a group is known by its state alone).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any, NamedTuple

from client.protocol.api import ErrorCode

from ..errors import error_code_of
from .partition import RecordState
from .persister import ShareStateError
from .state_records import ACKNOWLEDGED, ARCHIVED, SHARE_GROUP_STATE, SharePartitionKey

__all__ = ["SharePartitionOffset", "group_exists", "group_has_members", "describe_offsets", "alter_offsets",
           "delete_offsets", "delete_share_group", "UNINITIALIZED"]

E = ErrorCode

#: the start offset (and lag) answered for a share-partition with no state
UNINITIALIZED = -1


class SharePartitionOffset(NamedTuple):
    start_offset: int
    leader_epoch: int
    lag: int
    error_code: int = 0
    error_message: str | None = None


def _group_keys(state: Any, group_id: str) -> set[tuple[uuid.UUID, int]]:
    """(topic id, partition) of every share-partition of the group, in memory or stored."""
    keys = {(k[1], k[2]) for k in state.shares.partitions if k[0] == group_id}
    keys |= {(uuid.UUID(bytes=bytes(k.topic_id)), k.partition) for k in state.share_state.store.keys(group_id)}
    return keys


def group_has_members(state: Any, group_id: str) -> bool:
    g = state.share_groups.groups.get(group_id)
    return g is not None and bool(g.members)


def group_exists(state: Any, group_id: str) -> bool:
    """A share group with members or share-partition state (module docstring). Raises
    ShareStateError(COORDINATOR_LOAD_IN_PROGRESS) while ``__share_group_state`` loads and the
    group has no members: its state may not be known yet."""
    if group_id in state.share_groups.groups:
        return True
    if state.share_state.loading:
        raise ShareStateError(f"{SHARE_GROUP_STATE} is loading", error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    return bool(_group_keys(state, group_id))


def _done(records: Iterable[Any], start: int) -> int:
    return sum(1 for o, r in records if o >= start and r.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED))


def partition_offset(state: Any, group_id: str, topic_id: uuid.UUID, partition: int) -> SharePartitionOffset:
    """The start offset, leader epoch and lag of one share-partition (module docstring)."""
    topic = state.logs.topic_name(topic_id)
    log = None if topic is None else state.logs.logs.get((topic, partition))
    if log is None:
        return SharePartitionOffset(UNINITIALIZED, -1, UNINITIALIZED, int(E.UNKNOWN_TOPIC_OR_PARTITION),
                                    "This server does not host this topic-partition.")
    sp = state.shares.partitions.get((group_id, topic_id, partition))
    if sp is not None:
        done = _done(sp.records.items(), sp.start_offset)
        return SharePartitionOffset(sp.start_offset, 0, max(0, log.high_watermark - sp.start_offset - done))
    try:
        st = state.share_state.read_state(SharePartitionKey(group_id, topic_id.bytes, partition))
    except ShareStateError as e:
        return SharePartitionOffset(UNINITIALIZED, -1, UNINITIALIZED, e.error_code, str(e))
    if st is None:
        return SharePartitionOffset(UNINITIALIZED, -1, UNINITIALIZED)
    start = max(st.start_offset, log.log_start_offset)
    done = sum(max(0, b.last_offset - max(b.first_offset, start) + 1) for b in st.batches
               if b.delivery_state in (ACKNOWLEDGED, ARCHIVED))
    return SharePartitionOffset(start, st.leader_epoch, max(0, log.high_watermark - start - done))


def describe_offsets(state: Any, group_id: str, wanted: list[tuple[str, list[int]]] | None
                     ) -> tuple[int, str | None, list[tuple[str, uuid.UUID, list[tuple[int, SharePartitionOffset]]]]]:
    """(group error code, message, [(topic, topic id, [(partition, offset)])]). ``wanted`` None:
    every share-partition of the group, sorted."""
    try:
        if not group_exists(state, group_id):
            return int(E.GROUP_ID_NOT_FOUND), f"Group {group_id} not found.", []
    except ShareStateError as e:
        return e.error_code, str(e), []
    out: list[tuple[str, uuid.UUID, list[tuple[int, SharePartitionOffset]]]] = []
    if wanted is None:
        by_topic: dict[uuid.UUID, list[int]] = {}
        for tid, p in sorted(_group_keys(state, group_id)):
            by_topic.setdefault(tid, []).append(p)
        for tid, parts in by_topic.items():
            name = state.logs.topic_name(tid)
            if name is None:
                continue  # a topic deleted since: its state names no topic
            out.append((name, tid, [(p, partition_offset(state, group_id, tid, p)) for p in parts]))
        out.sort(key=lambda t: t[0])
        return 0, None, out
    for topic, parts in wanted:
        tid = state.logs.topic_id(topic)
        if tid is None:
            unknown = SharePartitionOffset(UNINITIALIZED, -1, UNINITIALIZED, int(E.UNKNOWN_TOPIC_OR_PARTITION),
                                           "This server does not host this topic-partition.")
            out.append((topic, uuid.UUID(int=0), [(p, unknown) for p in parts]))
            continue
        out.append((topic, tid, [(p, partition_offset(state, group_id, tid, p)) for p in parts]))
    return 0, None, out


def _current_epoch(state: Any, group_id: str, topic_id: uuid.UUID, partition: int) -> int:
    epochs = [-1]
    sp = state.shares.partitions.get((group_id, topic_id, partition))
    if sp is not None:
        epochs.append(sp.state_epoch)
    st = state.share_state.read_state(SharePartitionKey(group_id, topic_id.bytes, partition))
    if st is not None:
        epochs.append(st.state_epoch)
    return max(epochs)


def _check_group(state: Any, group_id: str, *, must_exist: bool) -> tuple[int, str | None]:
    if not group_id:
        return int(E.INVALID_GROUP_ID), "The group id is empty."
    if state.share_groups.is_other_group(group_id):
        return int(E.GROUP_ID_NOT_FOUND), f"Group {group_id} is not a share group."
    if state.share_state.loading:
        return int(E.COORDINATOR_LOAD_IN_PROGRESS), f"{SHARE_GROUP_STATE} is loading"
    if must_exist and not group_exists(state, group_id):
        return int(E.GROUP_ID_NOT_FOUND), f"Group {group_id} not found."
    if group_has_members(state, group_id):
        return int(E.NON_EMPTY_GROUP), "The group is not empty."
    return 0, None


async def alter_offsets(state: Any, group_id: str, offsets: list[tuple[str, list[tuple[int, int]]]]
                        ) -> tuple[int, str | None, list[tuple[str, uuid.UUID, list[tuple[int, int, str | None]]]]]:
    """Set start offsets: (group error, message, [(topic, id, [(partition, error, message)])]).
    Each share-partition starts again at its new offset with nothing in flight, its state epoch
    one above the last (a group that does not exist yet is created by its state, as Kafka does:
    offsets may be set before the first consumer starts)."""
    code, message = _check_group(state, group_id, must_exist=False)
    if code:
        return code, message, []
    out: list[tuple[str, uuid.UUID, list[tuple[int, int, str | None]]]] = []
    dropped: list[tuple[str, uuid.UUID, int]] = []
    for topic, parts in offsets:
        tid = state.logs.topic_id(topic)
        results: list[tuple[int, int, str | None]] = []
        for p, start in parts:
            if tid is None or (topic, p) not in state.logs.logs:
                results.append((p, int(E.UNKNOWN_TOPIC_OR_PARTITION), "This server does not host this topic-partition."))
                continue
            if start < 0:
                results.append((p, int(E.INVALID_REQUEST), f"Invalid start offset {start}."))
                continue
            try:
                epoch = _current_epoch(state, group_id, tid, p) + 1
                await state.share_state.write_state(SharePartitionKey(group_id, tid.bytes, p), epoch, 0, start, [])
            except Exception as e:  # noqa: BLE001 - answered per partition (fenced, loading, I/O)
                results.append((p, error_code_of(e), str(e)))
                continue
            dropped.append((group_id, tid, p))
            results.append((p, 0, None))
        out.append((topic, tid or uuid.UUID(int=0), results))
    state.shares.drop_share_partitions(dropped)
    return 0, None, out


async def delete_offsets(state: Any, group_id: str, topics: list[str]
                         ) -> tuple[int, str | None, list[tuple[str, uuid.UUID, int, str | None]]]:
    """Forget the group's state of whole topics: (group error, message, [(topic, id, error,
    message)]). A topic the group has no state of is UNKNOWN_TOPIC_OR_PARTITION, as Kafka
    answers for topics its share group never initialized."""
    code, message = _check_group(state, group_id, must_exist=True)
    if code:
        return code, message, []
    have = _group_keys(state, group_id)
    out: list[tuple[str, uuid.UUID, int, str | None]] = []
    for topic in topics:
        tid = state.logs.topic_id(topic)
        parts = sorted(p for t, p in have if t == tid) if tid is not None else []
        if tid is None or not parts:
            out.append((topic, tid or uuid.UUID(int=0), int(E.UNKNOWN_TOPIC_OR_PARTITION),
                        "There is no share-partition state of this topic in the group."))
            continue
        keys = [SharePartitionKey(group_id, tid.bytes, p) for p in parts]
        try:
            await state.share_state.delete_keys(keys)
        except Exception as e:  # noqa: BLE001 - answered per topic (loading, I/O)
            out.append((topic, tid, error_code_of(e), str(e)))
            continue
        state.shares.drop_share_partitions([(group_id, tid, p) for p in parts])
        out.append((topic, tid, 0, None))
    return 0, None, out


def is_share_group(state: Any, group_id: str) -> bool:
    """DeleteGroups/DescribeGroups: whether ``group_id`` names a share group (not a classic or
    consumer group of the group coordinator). While ``__share_group_state`` loads, only a
    group with members is known as one."""
    if state.share_groups.is_other_group(group_id):
        return False
    try:
        return group_exists(state, group_id)
    except ShareStateError:
        return False


async def delete_share_group(state: Any, group_id: str) -> int:
    """DeleteGroups for a share group: NON_EMPTY_GROUP with members, else its membership and
    every share-partition state are removed (answered once the tombstones are durable)."""
    if group_has_members(state, group_id):
        return int(E.NON_EMPTY_GROUP)
    try:
        await state.share_state.delete_group(group_id)
    except Exception as e:  # noqa: BLE001 - answered as the group's error (loading, I/O)
        return error_code_of(e)
    state.share_groups.groups.pop(group_id, None)
    state.shares.forget_group(group_id)
    return 0
