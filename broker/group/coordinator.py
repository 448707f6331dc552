"""GroupCoordinator: Kafka's classic group protocol as a state machine. Everything that changes
a group's state lives here (h11's rule: one module owns the state machine).

Inputs are requests (``join_group``, ``sync_group``, ``heartbeat``, ``leave_group``, the
admin ones) and timer expiries; outputs are responses (returned, or handed to a
``Responder`` later for the requests that wait: JoinGroup and SyncGroup), records for
``__consumer_offsets`` (handed to ``write``) and timers (``Timer.schedule``/``cancel``). No
sockets, no asyncio: the broker binds ``write`` and ``Timer`` to the log and the event loop
(``runtime.py``); tests drive it with a manual clock.

``write`` and ``Timer`` are described in effects.py. In-memory state follows the log: an offset
commit is visible once appended and answered once durable; a SyncGroup's assignment is handed
out once durable.

The rules, in the order Kafka applies them:

JoinGroup
  - ``session_timeout_ms`` outside [group.min.session.timeout.ms, group.max.session.timeout.ms]:
    INVALID_SESSION_TIMEOUT; empty group id: INVALID_GROUP_ID; a known member id for a group
    that does not exist: UNKNOWN_MEMBER_ID; a full group: GROUP_MAX_SIZE_REACHED.
  - Empty member id, static member (``group_instance_id``): a new member id
    ``<instance id>-<uuid>``; if the instance was already a member, the old id is fenced and,
    when the group is Stable and the protocol does not change, the member gets its old
    assignment back without a rebalance.
  - Empty member id, dynamic member, version >= 4 (KIP-394): MEMBER_ID_REQUIRED with a new id
    ``<client id>-<uuid>`` the client must rejoin with, within the session timeout.
  - Otherwise the member is added or updated, and the group rebalances: PreparingRebalance
    until every member has rejoined (or the rebalance timeout, after which members that did not
    rejoin are dropped), then a new generation, the protocol chosen by vote, the leader gets
    every member's metadata, state CompletingRebalance. A group leaving Empty waits
    ``group.initial.rebalance.delay.ms`` first (extended while new members arrive).
  - In Stable, a follower rejoining with unchanged metadata just gets the current generation;
    the leader rejoining always rebalances (it is how a consumer asks for one).

SyncGroup
  - Member and generation checked (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION,
    INCONSISTENT_GROUP_PROTOCOL for v5's protocol fields); PreparingRebalance:
    REBALANCE_IN_PROGRESS.
  - CompletingRebalance: parked; the leader's SyncGroup carries the assignment, which is
    written as the group's record; once durable every parked SyncGroup gets its member's
    assignment and the group is Stable. Every member must SyncGroup within the rebalance
    timeout or it is removed and the group rebalances.
  - Stable: the member's assignment.

Heartbeat: member and generation checked; PreparingRebalance answers REBALANCE_IN_PROGRESS
(the client rejoins); otherwise NONE. Each one (and each JoinGroup, SyncGroup, and OffsetCommit
in Stable/PreparingRebalance) restarts the member's session timer; when it fires the member is
removed and the group rebalances.

DescribeGroups of an unknown group: state "Dead" and no error. DeleteGroups: only Empty groups
(NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND); it writes a tombstone for every offset and for the group.
DeleteTopics: every group's offsets of the deleted topics get a tombstone (``on_topics_deleted``).

The committed offsets (OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete, their expiry)
are the offsets manager's (offsets.py, ``GroupCoordinator.offsets``): it holds no state of its
own, only rules over the groups' offsets.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Hashable, Iterable
from typing import Any

from client.protocol.api import ErrorCode

from .config import GroupConfig
from .consumer_coordinator import ConsumerGroupCoordinator, NoTopics, TopicsImage
from .effects import Record, Timer, Writer, error_after_append, log_write_failure
from .group import ClassicGroup, GroupError, GroupState, Member, Responder
from .offsets import OffsetMetadataManager
from .records import (
    GroupMetadata,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    partition_for,
)

__all__ = ["GroupCoordinator"]

logger = logging.getLogger(__name__)

E = ErrorCode
EMPTY, PREPARING, COMPLETING, STABLE, DEAD = (GroupState.EMPTY, GroupState.PREPARING_REBALANCE,
                                             GroupState.COMPLETING_REBALANCE, GroupState.STABLE,
                                             GroupState.DEAD)


def _join_error(code: int, member_id: str = "") -> dict[str, Any]:
    return {"error_code": int(code), "generation_id": -1, "protocol_type": None, "protocol_name": None,
            "leader": "", "member_id": member_id, "members": []}


def _sync_error(code: int) -> dict[str, Any]:
    return {"error_code": int(code), "protocol_type": None, "protocol_name": None, "assignment": b""}


class GroupCoordinator:
    def __init__(self, config: GroupConfig, timer: Timer, write: Writer, clock: Callable[[], int],
                 topics: TopicsImage | None = None) -> None:
        self.config = config
        self.timer = timer
        self.write = write
        self.clock = clock
        self.groups: dict[str, ClassicGroup] = {}
        #: ``__consumer_offsets`` partitions still being replayed: their groups answer
        #: COORDINATOR_LOAD_IN_PROGRESS
        self.loading: set[int] = set()
        #: the groups' committed offsets: OffsetCommit, TxnOffsetCommit, OffsetFetch,
        #: OffsetDelete, their expiry and replay (offsets.py)
        self.offsets = OffsetMetadataManager(self, write, clock)
        #: KIP-848 consumer groups (consumer_coordinator.py), over the same groups
        self.consumer = ConsumerGroupCoordinator(self, topics if topics is not None else NoTopics())
        #: topics deleted while a partition was loading: their offsets there go once it has loaded
        self._deleted_while_loading: dict[int, set[str]] = {}

    # ------------------------------------------------------------------ helpers

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.config.num_partitions)

    def check_loaded(self, group_id: str) -> None:
        if self.loading and self.partition_for(group_id) in self.loading:
            raise GroupError(E.COORDINATOR_LOAD_IN_PROGRESS)

    def is_loading(self, group_id: str) -> bool:
        return bool(self.loading) and self.partition_for(group_id) in self.loading

    def member_active(self, g: ClassicGroup, member_id: str) -> None:
        """A member's request arrived: restart its session timer (in Stable or PreparingRebalance)."""
        if g.is_in(STABLE, PREPARING) and member_id in g.members:
            self._reschedule_heartbeat(g, g.members[member_id])

    def get_or_create(self, group_id: str) -> ClassicGroup:
        g = self.groups.get(group_id)
        if g is None:
            g = self.groups[group_id] = ClassicGroup(group_id, self.clock())
        return g

    def _hb_key(self, g: ClassicGroup, member_id: str) -> Hashable:
        return ("heartbeat", g.group_id, member_id)

    def _reschedule_heartbeat(self, g: ClassicGroup, m: Member, timeout_ms: int | None = None) -> None:
        gid, mid = g.group_id, m.member_id
        self.timer.schedule(self._hb_key(g, mid), m.session_timeout_ms if timeout_ms is None else timeout_ms,
                            lambda: self._expire_heartbeat(gid, mid))

    def _write_group(self, g: ClassicGroup, assignment: dict[str, bytes] | None,
                     on_durable: Callable[[int], None]) -> int:
        record = (encode_group_metadata_key(g.group_id), encode_group_metadata_value(g.to_record(assignment)))
        return self.write(g.group_id, [record], on_durable)

    # ------------------------------------------------------------------ JoinGroup

    def join_group(self, req: dict[str, Any], version: int, client_id: str, client_host: str,
                   respond: Responder) -> None:
        """JoinGroup: answers through ``respond`` now or when the join phase completes."""
        group_id, member_id = req["group_id"], req["member_id"]
        session = req["session_timeout_ms"]
        cfg = self.config
        if not group_id:
            return respond(_join_error(E.INVALID_GROUP_ID, member_id))
        if not cfg.min_session_timeout_ms <= session <= cfg.max_session_timeout_ms:
            return respond(_join_error(E.INVALID_SESSION_TIMEOUT, member_id))
        try:
            self.check_loaded(group_id)
        except GroupError as e:
            return respond(_join_error(e.error_code, member_id))
        rebalance = req["rebalance_timeout_ms"]
        req = {**req, "rebalance_timeout_ms": session if rebalance < 0 else rebalance,
               "protocols": [(p["name"], bytes(p["metadata"])) for p in req["protocols"]],
               "_client_id": client_id, "_client_host": client_host}
        unknown = member_id == ""
        is_new_group = group_id not in self.groups
        if is_new_group and not unknown:
            return respond(_join_error(E.UNKNOWN_MEMBER_ID, member_id))
        g = self.get_or_create(group_id)
        if g.consumer is not None:
            if g.consumer.members:  # KIP-848 group: the member joins it as a classic member
                if self.config.migration_policy == "disabled":
                    return respond(_join_error(E.INCONSISTENT_GROUP_PROTOCOL, member_id))
                return self.consumer.classic_join(g, req, version, respond)
            self._downgrade_empty_consumer_group(g)
        if not self._accept_joining_member(g, member_id):
            if not unknown and member_id in g.members:
                self._remove_member(g, member_id)
            respond(_join_error(E.GROUP_MAX_SIZE_REACHED, ""))
        elif unknown:
            self._join_new_member(g, req, version, client_id, client_host, respond)
        else:
            self._join_existing_member(g, req, respond)
        if is_new_group:
            # A new group's first record: protocol type "", generation 0, no members.
            empty = (encode_group_metadata_key(g.group_id), encode_group_metadata_value(
                GroupMetadata("", 0, None, None, g.state_timestamp, [])))
            self.write(group_id, [empty], log_write_failure(g.group_id, "the new group"))

    def _downgrade_empty_consumer_group(self, g: ClassicGroup) -> None:
        """A classic member joins an empty consumer group: it becomes a classic group (its
        consumer-group records are deleted), as Kafka converts it."""
        assert g.consumer is not None
        records = self.consumer.delete_records(g.consumer)
        g.consumer = None
        g.protocol_type = None
        self.write(g.group_id, records, log_write_failure(g.group_id, "the consumer group's conversion"))

    def after_downgrade(self, g: ClassicGroup) -> None:
        """A consumer group became this classic group (migration.py): its members' session
        timers start and it rebalances, so that they rejoin under the classic protocol."""
        for m in g.members.values():
            self._reschedule_heartbeat(g, m)
        self._prepare_rebalance(g, "the group was downgraded from the consumer protocol")

    def _accept_joining_member(self, g: ClassicGroup, member_id: str) -> bool:
        limit = self.config.max_size
        if g.is_in(EMPTY, DEAD):
            return True
        if g.is_in(PREPARING):
            m = g.members.get(member_id)
            return (m is not None and m.awaiting_join is not None) or g.num_awaiting_join < limit
        return member_id in g.members or len(g.members) < limit

    def _join_new_member(self, g: ClassicGroup, req: dict[str, Any], version: int, client_id: str,
                         client_host: str, respond: Responder) -> None:
        if g.is_in(DEAD):
            return respond(_join_error(E.COORDINATOR_NOT_AVAILABLE))
        if not g.supports_protocols(req["protocol_type"], [n for n, _ in req["protocols"]]):
            return respond(_join_error(E.INCONSISTENT_GROUP_PROTOCOL))
        instance_id = req.get("group_instance_id")
        new_id = g.generate_member_id(client_id, instance_id)
        if instance_id is not None:
            old_id = g.static_members.get(instance_id)
            if old_id is not None:
                return self._rejoin_static_member(g, req, old_id, new_id, respond)
            return self._add_member(g, req, new_id, client_id, client_host, respond)
        if version >= 4:
            g.pending_members.add(new_id)
            gid = g.group_id
            self.timer.schedule(("heartbeat", gid, new_id), req["session_timeout_ms"],
                                lambda: self._expire_heartbeat(gid, new_id))
            return respond({**_join_error(E.MEMBER_ID_REQUIRED, new_id)})
        self._add_member(g, req, new_id, client_id, client_host, respond)

    def _join_existing_member(self, g: ClassicGroup, req: dict[str, Any], respond: Responder) -> None:
        member_id = req["member_id"]
        if g.is_in(DEAD):
            return respond(_join_error(E.COORDINATOR_NOT_AVAILABLE, member_id))
        if not g.supports_protocols(req["protocol_type"], [n for n, _ in req["protocols"]]):
            return respond(_join_error(E.INCONSISTENT_GROUP_PROTOCOL, member_id))
        if member_id in g.pending_members:
            if req.get("group_instance_id") is not None:
                return respond(_join_error(E.UNKNOWN_MEMBER_ID, member_id))
            return self._add_member(g, req, member_id, req["_client_id"], req["_client_host"], respond)
        try:
            m = g.validate_member(member_id, req.get("group_instance_id"))
        except GroupError as e:
            return respond(_join_error(e.error_code, member_id))
        if g.is_in(PREPARING):
            return self._update_member(g, m, req, respond)
        if g.is_in(COMPLETING):
            if m.matches(req["protocols"]):
                return respond(self._join_response(g, m, with_members=g.leader_id == member_id))
            return self._update_member(g, m, req, respond)
        if g.is_in(STABLE):
            if g.leader_id == member_id or not m.matches(req["protocols"]):
                return self._update_member(g, m, req, respond)
            return respond(self._join_response(g, m, with_members=False))
        respond(_join_error(E.UNKNOWN_MEMBER_ID, member_id))

    def _join_response(self, g: ClassicGroup, m: Member, *, with_members: bool) -> dict[str, Any]:
        return {"error_code": 0, "generation_id": g.generation_id, "protocol_type": g.protocol_type,
                "protocol_name": g.protocol_name, "leader": g.leader_id or "", "skip_assignment": False,
                "member_id": m.member_id, "members": g.join_members() if with_members else []}

    def _add_member(self, g: ClassicGroup, req: dict[str, Any], member_id: str, client_id: str,
                    client_host: str, respond: Responder) -> None:
        m = Member(member_id, req.get("group_instance_id"), client_id, client_host, req["rebalance_timeout_ms"],
                   req["session_timeout_ms"], req["protocol_type"], req["protocols"])
        m.is_new = True
        if g.is_in(PREPARING) and g.previous_state is EMPTY:
            g.new_member_added = True
        g.add(m, respond)
        self._reschedule_heartbeat(g, m, self.config.new_member_join_timeout_ms)
        self._maybe_prepare_rebalance_or_complete_join(g, f"new member {member_id} joined")

    def _update_member(self, g: ClassicGroup, m: Member, req: dict[str, Any], respond: Responder) -> None:
        m.protocols = req["protocols"]
        m.rebalance_timeout_ms = req["rebalance_timeout_ms"]
        m.session_timeout_ms = req["session_timeout_ms"]
        if m.awaiting_join is not None:  # a second JoinGroup replaces the first: answer that one
            m.complete_join(_join_error(E.REBALANCE_IN_PROGRESS, m.member_id))
        m.awaiting_join = respond
        self._maybe_prepare_rebalance_or_complete_join(g, f"member {m.member_id} rejoined")

    def _rejoin_static_member(self, g: ClassicGroup, req: dict[str, Any], old_id: str, new_id: str,
                              respond: Responder) -> None:
        m = g.replace_static_member(req["group_instance_id"], old_id, new_id)
        self.timer.cancel(self._hb_key(g, old_id))
        self._reschedule_heartbeat(g, m)
        old = (m.protocols, m.rebalance_timeout_ms, m.session_timeout_ms)
        leader_before = g.leader_id if g.leader_id != new_id else old_id
        m.protocols, m.rebalance_timeout_ms, m.session_timeout_ms = (
            req["protocols"], req["rebalance_timeout_ms"], req["session_timeout_ms"])
        if g.is_in(STABLE):
            if g.select_protocol() == g.protocol_name:
                # Same protocol: no rebalance. The member id change is stored, then the member
                # gets the current generation; as not the leader (leader = the old id) it syncs
                # and receives its previous assignment.
                def stored(code: int) -> None:
                    if code:
                        m.protocols, m.rebalance_timeout_ms, m.session_timeout_ms = old
                        g.replace_static_member(req["group_instance_id"], new_id, old_id)
                        self._reschedule_heartbeat(g, m)
                        respond(_join_error(error_after_append(code), ""))
                        return
                    respond({"error_code": 0, "generation_id": g.generation_id, "protocol_type": g.protocol_type,
                             "protocol_name": g.protocol_name, "leader": leader_before or "",
                             "skip_assignment": False, "member_id": new_id, "members": []})
                code = self._write_group(g, None, stored)
                if code:
                    stored(code)
                return
            m.awaiting_join = respond
            return self._maybe_prepare_rebalance_or_complete_join(g, f"static member {new_id} changed protocols")
        m.awaiting_join = respond
        if g.is_in(COMPLETING):
            return self._prepare_rebalance(g, f"static member {new_id} rejoined")
        self._maybe_complete_join_phase(g)

    # -- the join phase --

    def _maybe_prepare_rebalance_or_complete_join(self, g: ClassicGroup, reason: str) -> None:
        if g.can_rebalance():
            self._prepare_rebalance(g, reason)
        else:
            self._maybe_complete_join_phase(g)

    def _maybe_complete_join_phase(self, g: ClassicGroup) -> None:
        if g.is_in(PREPARING) and g.has_all_members_joined() and g.previous_state is not EMPTY:
            self._complete_join(g)

    def _prepare_rebalance(self, g: ClassicGroup, reason: str) -> None:
        if g.is_in(COMPLETING):
            for m in g.members.values():
                m.assignment = b""
            self._propagate_assignment(g, E.REBALANCE_IN_PROGRESS)
        g.pending_sync.clear()
        self.timer.cancel(("sync", g.group_id))
        initial = g.is_in(EMPTY)
        g.transition_to(PREPARING, self.clock())
        logger.info("group %s: preparing to rebalance (generation %d): %s", g.group_id, g.generation_id, reason)
        gid = g.group_id
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(g.rebalance_timeout_ms() - delay, 0)
            self.timer.schedule(("join", gid), delay, lambda: self._initial_rebalance_due(gid, delay, remaining))
        elif g.has_all_members_joined():
            self._complete_join(g)
        else:
            self.timer.schedule(("join", gid), g.rebalance_timeout_ms(), lambda: self._join_due(gid))

    def _initial_rebalance_due(self, group_id: str, delay: int, remaining: int) -> None:
        g = self.groups.get(group_id)
        if g is None or not g.is_in(PREPARING):
            return
        if g.new_member_added and remaining > 0:
            g.new_member_added = False
            next_delay = min(self.config.initial_rebalance_delay_ms, remaining)
            next_remaining = max(remaining - delay, 0)
            self.timer.schedule(("join", group_id), next_delay,
                                lambda: self._initial_rebalance_due(group_id, next_delay, next_remaining))
        else:
            self._complete_join(g)

    def _join_due(self, group_id: str) -> None:
        g = self.groups.get(group_id)
        if g is not None and g.is_in(PREPARING):
            self._complete_join(g)

    def _complete_join(self, g: ClassicGroup) -> None:
        self.timer.cancel(("join", g.group_id))
        for m in [m for m in g.members.values() if m.awaiting_join is None and m.group_instance_id is None]:
            logger.info("group %s: member %s did not rejoin in time; removed", g.group_id, m.member_id)
            g.remove(m.member_id)
            self.timer.cancel(self._hb_key(g, m.member_id))
        if g.is_in(DEAD):
            return
        if not g.maybe_elect_new_joined_leader() and g.members:
            logger.error("group %s: no member rejoined; waiting another rebalance timeout", g.group_id)
            gid = g.group_id
            self.timer.schedule(("join", gid), g.rebalance_timeout_ms(), lambda: self._join_due(gid))
            return
        g.init_next_generation(self.clock())
        if g.is_in(EMPTY):
            self._write_group(g, {}, log_write_failure(g.group_id, "the empty group"))
            return
        logger.info("group %s: generation %d with %d members, protocol %s", g.group_id, g.generation_id,
                    len(g.members), g.protocol_name)
        for m in list(g.members.values()):
            m.complete_join(self._join_response(g, m, with_members=g.leader_id == m.member_id))
            self._reschedule_heartbeat(g, m)
            m.is_new = False
            g.pending_sync.add(m.member_id)
        gid, generation = g.group_id, g.generation_id
        self.timer.schedule(("sync", gid), g.rebalance_timeout_ms(), lambda: self._sync_due(gid, generation))

    def _sync_due(self, group_id: str, generation: int) -> None:
        g = self.groups.get(group_id)
        if g is None or g.generation_id != generation or not g.is_in(COMPLETING, STABLE) or not g.pending_sync:
            return
        late = sorted(g.pending_sync)
        for mid in late:
            g.remove(mid)
            self.timer.cancel(self._hb_key(g, mid))
        logger.info("group %s: members %s did not SyncGroup in time; removed", group_id, late)
        self._prepare_rebalance(g, f"no SyncGroup from {late}")

    # -- expiry and removal --

    def _expire_heartbeat(self, group_id: str, member_id: str) -> None:
        g = self.groups.get(group_id)
        if g is None or g.is_in(DEAD):
            return
        if member_id in g.pending_members:
            logger.info("group %s: pending member %s did not join with its member id in time; removed",
                        group_id, member_id)
            g.remove(member_id)
            if g.is_in(PREPARING) and g.has_all_members_joined():
                self._complete_join(g)
            return
        m = g.members.get(member_id)
        if m is not None and not m.has_satisfied_heartbeat():
            logger.info("group %s: member %s's session timed out; removed", group_id, member_id)
            self._remove_member_and_update(g, m)

    def _remove_member_and_update(self, g: ClassicGroup, m: Member) -> None:
        m.complete_join(_join_error(E.UNKNOWN_MEMBER_ID))
        g.remove(m.member_id)
        if g.is_in(STABLE, COMPLETING):
            self._maybe_prepare_rebalance_or_complete_join(g, f"member {m.member_id} left")
        elif g.is_in(PREPARING) and g.has_all_members_joined():
            self._complete_join(g)

    def _remove_member(self, g: ClassicGroup, member_id: str) -> None:
        self.timer.cancel(self._hb_key(g, member_id))
        m = g.members.get(member_id)
        if m is not None:
            m.complete_join(_join_error(E.UNKNOWN_MEMBER_ID))
        g.remove(member_id)

    # ------------------------------------------------------------------ SyncGroup

    def sync_group(self, req: dict[str, Any], respond: Responder) -> None:
        group_id, member_id = req["group_id"], req["member_id"]
        try:
            self.check_loaded(group_id)
        except GroupError as e:
            return respond(_sync_error(e.error_code))
        g = self.groups.get(group_id)
        if g is not None and g.consumer is not None and g.consumer.members:
            return respond(self.consumer.classic_sync(g, req))
        if g is None or g.is_in(EMPTY):
            return respond(_sync_error(E.UNKNOWN_MEMBER_ID))
        if g.is_in(DEAD):
            return respond(_sync_error(E.COORDINATOR_NOT_AVAILABLE))
        try:
            m = g.validate_member(member_id, req.get("group_instance_id"))
        except GroupError as e:
            return respond(_sync_error(e.error_code))
        if req["generation_id"] != g.generation_id:
            return respond(_sync_error(E.ILLEGAL_GENERATION))
        ptype, pname = req.get("protocol_type"), req.get("protocol_name")
        if (ptype is not None and ptype != g.protocol_type) or (pname is not None and pname != g.protocol_name):
            return respond(_sync_error(E.INCONSISTENT_GROUP_PROTOCOL))
        if g.is_in(PREPARING):
            return respond(_sync_error(E.REBALANCE_IN_PROGRESS))
        if g.is_in(STABLE):
            self._remove_pending_sync(g, member_id)
            return respond({"error_code": 0, "protocol_type": g.protocol_type, "protocol_name": g.protocol_name,
                            "assignment": m.assignment})
        # CompletingRebalance: park until the leader's assignment is stored
        m.awaiting_sync = respond
        self._remove_pending_sync(g, member_id)
        if g.leader_id != member_id:
            return
        assignment = {a["member_id"]: bytes(a["assignment"]) for a in req["assignments"]}
        for mid in g.members:
            assignment.setdefault(mid, b"")
        generation = g.generation_id

        def stored(code: int) -> None:
            if not g.is_in(COMPLETING) or g.generation_id != generation:
                return
            if code:
                for mm in g.members.values():
                    mm.assignment = b""
                self._propagate_assignment(g, error_after_append(code))
                self._maybe_prepare_rebalance_or_complete_join(g, "storing the assignment failed")
                return
            for mm in g.members.values():
                mm.assignment = assignment.get(mm.member_id, b"")
            self._propagate_assignment(g, E.NONE)
            g.transition_to(STABLE, self.clock())
            logger.info("group %s: stable at generation %d", g.group_id, g.generation_id)

        code = self._write_group(g, assignment, stored)
        if code:
            stored(code)

    def _remove_pending_sync(self, g: ClassicGroup, member_id: str) -> None:
        g.pending_sync.discard(member_id)
        if not g.pending_sync:
            self.timer.cancel(("sync", g.group_id))

    def _propagate_assignment(self, g: ClassicGroup, error: int) -> None:
        ok = error == E.NONE
        for m in g.members.values():
            if m.complete_sync({"error_code": int(error), "protocol_type": g.protocol_type if ok else None,
                                "protocol_name": g.protocol_name if ok else None, "assignment": m.assignment}):
                self._reschedule_heartbeat(g, m)

    # ------------------------------------------------------------------ Heartbeat, LeaveGroup

    def heartbeat(self, req: dict[str, Any]) -> int:
        try:
            self.check_loaded(req["group_id"])
            g = self.groups.get(req["group_id"])
            if g is None:
                return int(E.UNKNOWN_MEMBER_ID)
            if g.consumer is not None and g.consumer.members:
                return self.consumer.classic_heartbeat(g, req)
            if g.is_in(DEAD):
                return int(E.COORDINATOR_NOT_AVAILABLE)
            m = g.validate_member(req["member_id"], req.get("group_instance_id"))
            if req["generation_id"] != g.generation_id:
                return int(E.ILLEGAL_GENERATION)
        except GroupError as e:
            return e.error_code
        if g.is_in(EMPTY):
            return int(E.UNKNOWN_MEMBER_ID)
        self._reschedule_heartbeat(g, m)
        return int(E.REBALANCE_IN_PROGRESS) if g.is_in(PREPARING) else 0

    def leave_group(self, group_id: str, members: list[dict[str, Any]]) -> tuple[int, list[dict[str, Any]]]:
        """(top-level error, per-member results) for members given as ``member_id`` and
        ``group_instance_id`` (a static member may leave by instance id alone)."""
        try:
            self.check_loaded(group_id)
        except GroupError as e:
            return e.error_code, []
        g = self.groups.get(group_id)
        if g is None:
            return int(E.UNKNOWN_MEMBER_ID), []
        if g.consumer is not None and g.consumer.members:
            return 0, self.consumer.classic_leave(g, members)
        if g.is_in(DEAD):
            return int(E.COORDINATOR_NOT_AVAILABLE), []
        results = []
        left = []
        for ident in members:
            mid, iid = ident["member_id"], ident.get("group_instance_id")
            result = {"member_id": mid, "group_instance_id": iid, "error_code": 0}
            if mid == "":
                if iid is not None and iid in g.static_members:
                    real = g.static_members[iid]
                    self._remove_member(g, real)
                    left.append(real)
                else:
                    result["error_code"] = int(E.UNKNOWN_MEMBER_ID)
            elif mid in g.pending_members:
                g.remove(mid)
                self.timer.cancel(self._hb_key(g, mid))
                left.append(mid)
            else:
                try:
                    g.validate_member(mid, iid)
                    self._remove_member(g, mid)
                    left.append(mid)
                except GroupError as e:
                    result["error_code"] = e.error_code
            results.append(result)
        if left:
            logger.info("group %s: members %s left", group_id, left)
            if g.is_in(STABLE, COMPLETING):
                self._maybe_prepare_rebalance_or_complete_join(g, f"members {left} left")
            elif g.is_in(PREPARING):
                self._maybe_complete_join_phase(g)
        return 0, results

    # ------------------------------------------------------------------ admin

    def list_groups(self, states: Iterable[str] = (), types: Iterable[str] = ()) -> list[dict[str, Any]]:
        wanted_states = {s.lower() for s in states}
        wanted_types = {t.lower() for t in types}
        out = []
        for g in self.groups.values():
            if g.is_in(DEAD) or (self.is_loading(g.group_id)):
                continue
            kind, state = ("consumer", g.consumer.state.value) if g.consumer is not None else ("classic", g.state.value)
            if wanted_states and state.lower() not in wanted_states:
                continue
            if wanted_types and kind not in wanted_types:
                continue
            out.append({"group_id": g.group_id, "protocol_type": g.protocol_type or "",
                        "group_state": state, "group_type": kind})
        return out

    def describe_group(self, group_id: str) -> dict[str, Any]:
        base = {"group_id": group_id, "error_code": 0, "group_state": "Dead", "protocol_type": "",
                "protocol_data": "", "members": [], "authorized_operations": -2**31}
        try:
            self.check_loaded(group_id)
        except GroupError as e:
            return {**base, "error_code": e.error_code}
        g = self.groups.get(group_id)
        if g is None:
            return base
        if g.consumer is not None:
            return {**base, "error_code": int(E.GROUP_ID_NOT_FOUND),
                    "error_message": f"Group {group_id} is not a classic group."}
        stable = g.is_in(STABLE)
        members = [{"member_id": m.member_id, "group_instance_id": m.group_instance_id, "client_id": m.client_id,
                    "client_host": m.client_host,
                    "member_metadata": m.metadata(g.protocol_name) if stable else b"",
                    "member_assignment": m.assignment if stable else b""}
                   for m in g.members.values()]
        return {**base, "group_state": g.state.value, "protocol_type": g.protocol_type or "",
                "protocol_data": (g.protocol_name or "") if stable else "", "members": members}

    def delete_group(self, group_id: str, on_durable: Callable[[int], None]) -> int:
        """DeleteGroups for one group: 0 once its tombstones are appended (``on_durable`` is
        then called), else the error."""
        try:
            self.check_loaded(group_id)
        except GroupError as e:
            return e.error_code
        g = self.groups.get(group_id)
        if g is None or g.is_in(DEAD):
            return int(E.GROUP_ID_NOT_FOUND)
        if not g.is_in(EMPTY) or (g.consumer is not None and g.consumer.members):
            return int(E.NON_EMPTY_GROUP)
        records: list[Record] = [(encode_offset_commit_key(group_id, t, p), None) for t, p in g.offsets]
        if g.consumer is not None:
            records += self.consumer.delete_records(g.consumer)
        records.append((encode_group_metadata_key(group_id), None))
        code = self.write(group_id, records, on_durable)
        if code:
            return error_after_append(code)
        g.transition_to(DEAD, self.clock())
        del self.groups[group_id]
        logger.info("group %s deleted (%d offsets)", group_id, len(records) - 1)
        return 0

    # ------------------------------------------------------------------ loading

    def replay_group(self, group_id: str, record: GroupMetadata | None) -> None:
        if record is None:
            self.groups.pop(group_id, None)
            return
        g = self.get_or_create(group_id)
        g.replay(record, self.clock())

    def on_topics_deleted(self, topics: Collection[str], on_durable: Callable[[int], None]) -> int:
        """DeleteTopics removed ``topics``: every group's offsets of them go, with tombstones
        (``OffsetMetadataManager.delete_topic_offsets``; ``on_durable`` once they are durable).
        Partitions still loading get theirs once loaded (the records replayed there may hold
        such offsets). Returns how many offsets went now."""
        for partition in self.loading:
            self._deleted_while_loading.setdefault(partition, set()).update(topics)
        return self.offsets.delete_topic_offsets(topics, on_durable)

    def on_loaded(self, partition: int) -> None:
        """A partition's groups are loaded: start their members' session timers (members that
        do not come back in time are removed and the group rebalances), and remove the offsets
        of topics deleted while it loaded."""
        self.loading.discard(partition)
        deleted = self._deleted_while_loading.pop(partition, None)
        if deleted:
            self.offsets.delete_topic_offsets(deleted, log_write_failure(f"(partition {partition})",
                                                                         "tombstones of deleted topics"),
                                              partition=partition)
        self.consumer.on_loaded(g for g in self.groups.values() if self.partition_for(g.group_id) == partition)
        for g in self.groups.values():
            if self.partition_for(g.group_id) != partition:
                continue
            for m in g.members.values():
                self._reschedule_heartbeat(g, m)
            if len(g.members) > self.config.max_size and g.is_in(STABLE):
                self._prepare_rebalance(g, "more members than group.max.size")
