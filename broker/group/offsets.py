"""OffsetMetadataManager: the committed offsets of the groups (Kafka's OffsetMetadataManager),
sans-IO like the group coordinator that owns it (coordinator.py): OffsetCommit,
TxnOffsetCommit and its transaction markers, OffsetFetch, OffsetDelete, the expiry of offsets
past their retention and the replay of offset records at start-up.

The offsets live on the groups (``ClassicGroup.offsets``, ``pending_txn_offsets``); the
membership checks a commit needs (member id, generation, state) are the group's. What the
manager needs of the coordinator is ``GroupStore``: the groups by id, loading state, and the
member's session timer a commit restarts.

Rules (Kafka's):
- OffsetCommit: generation -1 with no member on a missing or Empty group is a *simple* commit
  (kcat, admin tools, ``assign()`` consumers) and creates the group; otherwise the member and
  generation must match (ILLEGAL_GENERATION; GROUP_ID_NOT_FOUND from v9 for a missing group),
  and CompletingRebalance answers REBALANCE_IN_PROGRESS. Metadata longer than
  ``offset.metadata.max.bytes``: OFFSET_METADATA_TOO_LARGE for that partition. The commit's
  records are one batch; a batch the log refuses as too large answers INVALID_COMMIT_OFFSET_SIZE
  for every other partition. An offset is visible once appended and answered once durable.
- TxnOffsetCommit: written as a transactional batch of the producer and held pending until
  the transaction's marker reaches the partition (``complete_txn``); OffsetFetch with
  ``require_stable`` answers UNSTABLE_OFFSET_COMMIT for a partition with a pending offset.
- OffsetFetch of an unknown group or partition: offset -1 and no error.
- OffsetDelete: an Empty group, or topics an active consumer group is not subscribed to.
- Expiry: ``offsets.retention.minutes`` after the group became Empty (for a group that never had
  members: after the commit), or at the explicit expiry a commit asked for (v2-v4); an Empty
  group with no offsets left is deleted.
- A deleted topic (DeleteTopics): every group's offsets of its partitions, committed or pending
  in an open transaction, are removed with a tombstone each (Kafka's ``onPartitionsDeleted``),
  so neither a restart nor a re-created topic of the same name brings them back: a group then
  starts from its ``auto.offset.reset``. The group itself stays (Kafka's expiry removes an
  Empty group left with no offsets later).
- A tombstone, written or replayed, also drops the group's offsets of that partition pending in
  open transactions (Kafka's replay): the transaction's marker no longer commits them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from typing import Any, Protocol

from client.protocol.api import ErrorCode, error_name
from client.protocol.primitives import DecodeError, Reader

from .config import GroupConfig
from .consumer_coordinator import ConsumerGroupCoordinator
from .effects import Record, Writer, error_after_append, failed_commit, log_write_failure
from .group import ClassicGroup, GroupError, GroupState
from .records import OffsetAndMetadata, encode_group_metadata_key, encode_offset_commit_key, encode_offset_commit_value

__all__ = ["OffsetMetadataManager", "GroupStore", "subscribed_topics"]

logger = logging.getLogger("broker.group")

E = ErrorCode
EMPTY, PREPARING, COMPLETING, STABLE, DEAD = (GroupState.EMPTY, GroupState.PREPARING_REBALANCE,
                                             GroupState.COMPLETING_REBALANCE, GroupState.STABLE,
                                             GroupState.DEAD)


class GroupStore(Protocol):
    """What the offsets manager uses of the group coordinator."""

    groups: dict[str, ClassicGroup]
    config: GroupConfig
    #: the KIP-848 rules for the groups of type consumer (their commits' member epochs)
    consumer: ConsumerGroupCoordinator

    def partition_for(self, group_id: str) -> int: ...

    def check_loaded(self, group_id: str) -> None:
        """GroupError COORDINATOR_LOAD_IN_PROGRESS while the group's partition loads."""

    def is_loading(self, group_id: str) -> bool: ...

    def get_or_create(self, group_id: str) -> ClassicGroup: ...

    def member_active(self, g: ClassicGroup, member_id: str) -> None:
        """A member's request arrived: restart its session timer (in Stable or PreparingRebalance)."""


def subscribed_topics(protocol_type: str | None, metadata: bytes) -> set[str] | None:
    """The topics of a consumer's subscription (ConsumerProtocolSubscription: int16 version,
    then an array of topic names); None when it does not parse as one."""
    if protocol_type != "consumer":
        return None
    try:
        r = Reader(metadata)
        r.int16()
        n = r.array_length()
        return {r.string() for _ in range(n)}
    except DecodeError:
        return None


class OffsetMetadataManager:
    """The groups' committed offsets (see the module docstring). ``write`` and ``clock`` are the
    coordinator's, and so is its config (``groups.config``)."""

    def __init__(self, groups: GroupStore, write: Writer, clock: Callable[[], int]) -> None:
        self.groups = groups
        self.write = write
        self.clock = clock

    def commit_offsets(self, req: dict[str, Any], version: int, on_durable: Callable[[int], None]
                       ) -> tuple[int, dict[tuple[str, int], int]]:
        """OffsetCommit: (error for every partition, or 0; per-partition errors). When the first
        is 0, ``on_durable`` is called once the records are durable — or has been called
        already, when nothing was written (no valid partition, or the write failed: a batch
        above the offsets topic's ``max.message.bytes`` answers INVALID_COMMIT_OFFSET_SIZE for
        every partition, as Kafka's classic coordinator does)."""
        group_id = req["group_id"]
        generation = req.get("generation_id_or_member_epoch", -1)
        member_id = req.get("member_id", "")
        instance_id = req.get("group_instance_id")
        try:
            self.groups.check_loaded(group_id)
            g = self.groups.groups.get(group_id)
            if g is None:
                if generation >= 0:
                    raise GroupError(E.GROUP_ID_NOT_FOUND if version >= 9 else E.ILLEGAL_GENERATION)
                g = self.groups.get_or_create(group_id)
            self._validate_commit(g, member_id, instance_id, generation)
        except GroupError as e:
            return e.error_code, {}
        self.groups.member_active(g, member_id)
        errors, records, updates = self._offset_records(group_id, req)
        if not records:
            on_durable(0)
            return 0, errors
        code = self.write(group_id, records, on_durable)
        if code:
            return failed_commit(code, errors, on_durable)
        for tp, om in updates:
            g.offsets[tp] = om
        return 0, errors

    def _offset_records(self, group_id: str, req: dict[str, Any]) -> tuple[
            dict[tuple[str, int], int], list[Record], list[tuple[tuple[str, int], OffsetAndMetadata]]]:
        """An OffsetCommit's or TxnOffsetCommit's partitions: their errors (metadata longer than
        ``offset.metadata.max.bytes``: OFFSET_METADATA_TOO_LARGE), the records to write and the
        offsets they set. Commit time: the request's (OffsetCommit v1) or now; an expiry only
        with a retention (OffsetCommit v2-v4)."""
        now = self.clock()
        retention = req.get("retention_time_ms", -1)
        errors: dict[tuple[str, int], int] = {}
        records: list[Record] = []
        updates: list[tuple[tuple[str, int], OffsetAndMetadata]] = []
        for t in req["topics"]:
            for p in t["partitions"]:
                tp = (t["name"], p["partition_index"])
                metadata = p.get("committed_metadata") or ""
                if len(metadata.encode()) > self.groups.config.offset_metadata_max_bytes:
                    errors[tp] = int(E.OFFSET_METADATA_TOO_LARGE)
                    continue
                errors[tp] = 0
                ts = p.get("commit_timestamp", -1)
                commit_ts = ts if ts is not None and ts >= 0 else now
                om = OffsetAndMetadata(p["committed_offset"], p.get("committed_leader_epoch", -1), metadata,
                                       commit_ts, commit_ts + retention if retention is not None and retention >= 0
                                       else -1)
                records.append((encode_offset_commit_key(group_id, *tp), encode_offset_commit_value(om)))
                updates.append((tp, om))
        return errors, records, updates

    def commit_txn_offsets(self, req: dict[str, Any], on_durable: Callable[[int], None]
                           ) -> tuple[int, dict[tuple[str, int], int]]:
        """TxnOffsetCommit: the offsets are written in a transactional batch of the producer
        and held as pending until its transaction's marker reaches this partition
        (``complete_txn``). The member checks are OffsetCommit's, except that a commit with no
        member and generation -1 (clients before v3) is accepted whatever the group's state."""
        group_id = req["group_id"]
        generation = req.get("generation_id", -1)
        member_id = req.get("member_id", "")
        instance_id = req.get("group_instance_id")
        pid, epoch = req["producer_id"], req["producer_epoch"]
        try:
            self.groups.check_loaded(group_id)
            g = self.groups.groups.get(group_id)
            if g is None:
                if generation >= 0:
                    raise GroupError(E.ILLEGAL_GENERATION)
                g = self.groups.get_or_create(group_id)
            if g.is_in(DEAD):
                raise GroupError(E.COORDINATOR_NOT_AVAILABLE)
            if generation >= 0 or member_id or instance_id is not None:
                g.validate_member(member_id, instance_id)
                if generation != g.generation_id:
                    raise GroupError(E.ILLEGAL_GENERATION)
        except GroupError as e:
            return e.error_code, {}
        errors, records, updates = self._offset_records(group_id, req)
        if not records:
            on_durable(0)
            return 0, errors
        code = self.write(group_id, records, on_durable, producer=(pid, epoch))
        if code:
            return failed_commit(code, errors, on_durable)
        pending = g.pending_txn_offsets.setdefault(pid, {})
        for tp, om in updates:
            pending[tp] = om
        return 0, errors

    def complete_txn(self, partition: int, producer_id: int, commit: bool) -> None:
        """A COMMIT or ABORT marker of ``producer_id`` reached ``__consumer_offsets`` partition
        ``partition``: its pending offsets there become the groups' offsets, or are dropped."""
        for g in self.groups.groups.values():
            if g.pending_txn_offsets and self.groups.partition_for(g.group_id) == partition:
                pending = g.pending_txn_offsets.pop(producer_id, None)
                if pending and commit:
                    g.offsets.update(pending)

    def has_pending_offset(self, group_id: str, topic: str, partition: int) -> bool:
        """Whether an open transaction holds an offset of ``group_id`` for this partition
        (OffsetFetch's ``require_stable`` answers UNSTABLE_OFFSET_COMMIT then)."""
        g = self.groups.groups.get(group_id)
        return g is not None and any((topic, partition) in p for p in g.pending_txn_offsets.values())

    def _validate_commit(self, g: ClassicGroup, member_id: str, instance_id: str | None, generation: int) -> None:
        if g.is_in(DEAD):
            raise GroupError(E.COORDINATOR_NOT_AVAILABLE)
        if g.consumer is not None:  # KIP-848: the generation field carries the member epoch
            self.groups.consumer.validate_offset_commit(g.consumer, member_id, generation)
            return
        if generation < 0 and g.is_in(EMPTY):
            return
        if generation >= 0 or member_id or instance_id is not None:
            g.validate_member(member_id, instance_id)
            if generation != g.generation_id:
                raise GroupError(E.ILLEGAL_GENERATION)
        elif not g.is_in(EMPTY):
            raise GroupError(E.UNKNOWN_MEMBER_ID)
        if g.is_in(COMPLETING):
            raise GroupError(E.REBALANCE_IN_PROGRESS)

    def check_fetching_member(self, group_id: str, member_id: str | None, member_epoch: int) -> int:
        """OffsetFetch v9+: the member and epoch sent, checked against a KIP-848 group's."""
        g = self.groups.groups.get(group_id)
        if g is None or g.consumer is None:
            return 0
        try:
            self.groups.consumer.validate_offset_fetch(g.consumer, member_id, member_epoch)
        except GroupError as e:
            return e.error_code
        return 0

    def fetch_offsets(self, group_id: str, topics: list[tuple[str, list[int]]] | None
                      ) -> tuple[int, list[tuple[str, list[tuple[int, OffsetAndMetadata | None]]]]]:
        """OffsetFetch of one group: (group error, [(topic, [(partition, offset or None)])]);
        ``topics`` None means every committed offset of the group."""
        try:
            self.groups.check_loaded(group_id)
        except GroupError as e:
            return e.error_code, []
        g = self.groups.groups.get(group_id)
        offsets = g.offsets if g is not None and not g.is_in(DEAD) else {}
        if topics is None:
            by_topic: dict[str, list[tuple[int, OffsetAndMetadata | None]]] = {}
            for (topic, partition), om in sorted(offsets.items()):
                by_topic.setdefault(topic, []).append((partition, om))
            return 0, list(by_topic.items())
        return 0, [(topic, [(p, offsets.get((topic, p))) for p in parts]) for topic, parts in topics]

    def delete_offsets(self, group_id: str, topics: list[tuple[str, list[int]]]
                       ) -> tuple[int, list[tuple[str, list[tuple[int, int]]]]]:
        """OffsetDelete: allowed on an Empty group, or for topics an active consumer group is
        not subscribed to (GROUP_SUBSCRIBED_TO_TOPIC otherwise)."""
        try:
            self.groups.check_loaded(group_id)
        except GroupError as e:
            return e.error_code, []
        g = self.groups.groups.get(group_id)
        if g is None or g.is_in(DEAD):
            return int(E.GROUP_ID_NOT_FOUND), []
        subscribed: set[str] = set()
        if g.consumer is not None:
            subscribed = g.consumer.subscribed_topic_names() if g.consumer.members else set()
        elif not g.is_in(EMPTY):
            if g.protocol_type != "consumer":
                return int(E.NON_EMPTY_GROUP), []
            for m in g.members.values():
                subscribed |= subscribed_topics(g.protocol_type, m.metadata(g.protocol_name)) or set()
        gone: list[tuple[str, int]] = []
        result = []
        for topic, parts in topics:
            if topic in subscribed:
                result.append((topic, [(p, int(E.GROUP_SUBSCRIBED_TO_TOPIC)) for p in parts]))
                continue
            gone += [(topic, p) for p in parts if (topic, p) in g.offsets]
            result.append((topic, [(p, 0) for p in parts]))
        if gone:
            records: list[Record] = [(encode_offset_commit_key(group_id, t, p), None) for t, p in gone]
            code = self.write(group_id, records, log_write_failure(group_id, "offset deletions"))
            if code:
                return error_after_append(code), []
            _drop_offsets(g, gone)
        return 0, result

    def delete_topic_offsets(self, topics: Collection[str], on_durable: Callable[[int], None],
                             partition: int | None = None) -> int:
        """Topics were deleted: write a tombstone for each offset any group holds of their
        partitions, committed or pending in an open transaction (Kafka's
        ``OffsetMetadataManager.onPartitionsDeleted``), and drop them. One batch per group;
        groups whose ``__consumer_offsets`` partition is still loading are left alone (the
        coordinator applies the deletion once it has loaded, ``GroupCoordinator.on_loaded``);
        ``partition``: only the groups of that partition. ``on_durable(code)`` is called once
        every tombstone is durable (at once when there is none; with the first failure's
        code). Returns how many offsets went."""
        wanted = set(topics)
        writes: list[tuple[ClassicGroup, list[tuple[str, int]]]] = []
        for g in self.groups.groups.values():
            if (partition is not None and self.groups.partition_for(g.group_id) != partition) \
                    or self.groups.is_loading(g.group_id):
                continue
            found = {tp for tp in g.offsets if tp[0] in wanted}
            for pending in g.pending_txn_offsets.values():
                found.update(tp for tp in pending if tp[0] in wanted)
            if found:
                writes.append((g, sorted(found)))
        waiting = [len(writes) + 1, 0]  # writes not durable yet (+1 until all are issued), first error

        def durable(code: int) -> None:
            if code and not waiting[1]:
                waiting[1] = code
            waiting[0] -= 1
            if waiting[0] == 0:
                on_durable(waiting[1])

        removed = 0
        for g, tps in writes:
            records: list[Record] = [(encode_offset_commit_key(g.group_id, t, p), None) for t, p in tps]
            code = self.write(g.group_id, records, durable)
            if code:
                logger.error("group %s: cannot remove the offsets of deleted topics: %s", g.group_id,
                             error_name(code))
                durable(code)
                continue
            _drop_offsets(g, tps)
            removed += len(tps)
            logger.info("group %s: removed %d offsets of deleted topics %s", g.group_id, len(tps),
                        ", ".join(sorted({t for t, _ in tps})))
        durable(0)
        return removed


    # ------------------------------------------------------------------ expiry

    def expire_offsets(self) -> int:
        """Remove offsets past their retention (tombstones written), and Empty groups left with
        none. Returns how many offsets expired."""
        now = self.clock()
        retention = self.groups.config.offsets_retention_ms
        expired = 0
        for g in list(self.groups.groups.values()):
            if self.groups.is_loading(g.group_id):
                continue
            if (g.protocol_type is not None and not g.is_in(EMPTY)) or (g.consumer is not None and g.consumer.members):
                continue  # a group with members keeps its offsets
            if g.pending_txn_offsets:
                continue  # an open transaction will commit or drop offsets here
            gone = []
            for tp, om in g.offsets.items():
                if om.expire_timestamp >= 0:
                    due = om.expire_timestamp
                else:
                    base = g.state_timestamp if g.protocol_type is not None else om.commit_timestamp
                    due = base + retention
                if now >= due:
                    gone.append(tp)
            records: list[Record] = [(encode_offset_commit_key(g.group_id, t, p), None) for t, p in gone]
            delete_group = g.is_in(EMPTY) and len(gone) == len(g.offsets) and not g.members
            if delete_group:
                if g.consumer is not None:
                    records += self.groups.consumer.delete_records(g.consumer)
                records.append((encode_group_metadata_key(g.group_id), None))
            if not records:
                continue
            if self.write(g.group_id, records, log_write_failure(g.group_id, "expired offsets")):
                continue
            for tp in gone:
                del g.offsets[tp]
            expired += len(gone)
            if delete_group:
                g.transition_to(DEAD, now)
                del self.groups.groups[g.group_id]
        if expired:
            logger.info("expired %d committed offsets (offsets.retention.minutes)", expired)
        return expired


    # ------------------------------------------------------------------ loading

    def replay_offset(self, group_id: str, topic: str, partition: int, om: OffsetAndMetadata | None,
                      producer_id: int = -1) -> None:
        """One offset record of ``__consumer_offsets`` (None: a tombstone); ``producer_id`` >= 0
        for a TxnOffsetCommit's, pending until its transaction's marker."""
        if producer_id >= 0 and om is not None:  # a TxnOffsetCommit: pending until its marker
            self.groups.get_or_create(group_id).pending_txn_offsets.setdefault(producer_id, {})[(topic, partition)] = om
            return
        g = self.groups.groups.get(group_id)
        if om is None:
            if g is not None:
                _drop_offsets(g, [(topic, partition)])
            return
        if g is None:
            g = self.groups.get_or_create(group_id)
        g.offsets[(topic, partition)] = om


def _drop_offsets(g: ClassicGroup, tps: Collection[tuple[str, int]]) -> None:
    """What a tombstone of each of ``tps`` does to the group, as Kafka's replay: its committed
    offset goes, and so do the offsets of that partition pending in open transactions."""
    for tp in tps:
        g.offsets.pop(tp, None)
    for pending in g.pending_txn_offsets.values():
        for tp in tps:
            pending.pop(tp, None)
