"""ConsumerGroupCoordinator: KIP-848 consumer groups (ConsumerGroupHeartbeat, ConsumerGroupDescribe)
as a state machine over ``GroupCoordinator.groups``, with the classic coordinator's seams
(``write`` to ``__consumer_offsets``, ``Timer``, a clock) and a view of the broker's topics.

A group of type ``consumer`` is the classic coordinator's group entry (``ClassicGroup``, which
holds the committed offsets every group type shares) whose ``consumer`` attribute holds the
``ConsumerGroup``; its classic state stays Empty.

A heartbeat, in the order Kafka's coordinator applies the rules:

1. The request is checked: empty group id, instance id or rack id, a bad member epoch, a
   first heartbeat without rebalance timeout, subscription or with owned partitions:
   INVALID_REQUEST; an unknown ``ServerAssignor``: UNSUPPORTED_ASSIGNOR; a regular expression
   RE2 refuses: INVALID_REGULAR_EXPRESSION. v0 members are given an id by the coordinator;
   from v1 the client generates its own (KIP-1082) and an empty one is INVALID_REQUEST.
2. Epoch -1 (leave) or -2 (a static member leaving for a restart) ends here: the member is
   removed (the group epoch is bumped) or, for -2, kept with epoch -2 so that the next
   instance with its ``group.instance.id`` takes its assignment over.
3. Epoch 0 joins (creating the group): a full group answers GROUP_MAX_SIZE_REACHED; a static
   member whose instance id is held by a member not at epoch -2 answers UNRELEASED_INSTANCE_ID.
   Any other epoch must match the member's (UNKNOWN_MEMBER_ID for no such member,
   FENCED_MEMBER_EPOCH for a newer epoch or an older one unless it is the previous epoch and the
   member owns only what it was assigned: a lost response).
4. The member's metadata is updated from the fields sent (null means unchanged); a changed
   subscription or assignor, a new member, or topic metadata that changed since the group last
   looked (a subscribed topic created, deleted or grown; a regular expression matching another
   set of topics) bumps the group epoch. A regular expression new to the group is resolved at
   the group's next heartbeat, not the one that brought it (Kafka resolves it asynchronously:
   its member gets the topics it names first, those the expression matches a heartbeat later).
5. A group epoch ahead of the assignment epoch: the target assignment is computed by the
   group's assignor (``assignors.py``) and stored; for a group of
   ``group.consumer.assignment.offload.min.members`` or more, off the request path
   (``assignment_offload.py``): the group is Assigning until the result is installed, and its
   members come back after 2 ms per member (at least 20 ms) meanwhile.
6. The member is reconciled towards its target (``reconciliation.py``); a member left with
   partitions to revoke must do so within its rebalance timeout or it is fenced.
7. The records are appended, and the response — member id, epoch, heartbeat interval, and the
   assignment when the request was a full one or the assignment changed — is sent once they
   are durable. The member's session timer restarts; when it fires the member is fenced.
   Unlike Kafka, three cases get a shorter heartbeat interval than
   ``group.consumer.heartbeat.interval.ms``, so that a group converges in milliseconds rather
   than heartbeat intervals: a member left waiting for partitions other members still hold
   (UNRELEASED_PARTITIONS) comes back after 20 ms, and gets them as soon as they are released
   (the releasing member acknowledges its revocation at once); while a new regular expression
   waits to be resolved, likewise; and for
   ``group.initial.rebalance.delay.ms`` after a group leaves Empty (the classic protocol's
   window for members starting together), its members come back after 50 ms (2 ms per member
   for large groups), so the first member learns at once that the ones starting with it joined.

Records (value None: tombstone), keys by (group[, member]): ConsumerGroupMetadata (group epoch),
ConsumerGroupMemberMetadata, ConsumerGroupRegularExpression, ConsumerGroupTargetAssignmentMember,
ConsumerGroupTargetAssignmentMetadata (assignment epoch), ConsumerGroupCurrentMemberAssignment.
Replaying them (``replay``) rebuilds every group at its epochs after a restart.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from client.group.protocol import decode_subscription
from client.protocol.api import ErrorCode
from client.protocol.primitives import DecodeError

from ..regex import InvalidRegularExpression, compile_pattern
from . import consumer_records as cr
from .assignment_offload import Offload
from .assignors import MemberSubscription, assign
from .config import GroupConfig
from .consumer_group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    assignment_of,
    partitions_of,
)
from .effects import Record, Timer, Writer, error_after_append, log_write_failure
from .group import ClassicGroup, GroupError
from .migration import (
    MigrationError,
    by_topic_id,
    classic_record_from_consumer,
    consumer_group_from_classic,
    protocol_assignment,
)
from .reconciliation import next_assignment
from .records import encode_group_metadata_key, encode_group_metadata_value

__all__ = ["ConsumerGroupCoordinator", "TopicsImage", "NoTopics", "INTERNAL_TOPICS"]

logger = logging.getLogger("broker.group")

E = ErrorCode

#: the heartbeat interval given to a member waiting for partitions another member must release
#: first (a few heartbeats at most: the releasing member acknowledges as soon as it has revoked)
UNRELEASED_HEARTBEAT_INTERVAL_MS = 20
#: the heartbeat interval while a group that has just left Empty settles
SETTLING_HEARTBEAT_INTERVAL_MS = 50

#: topics a regular expression never matches (Kafka's internal topics)
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


class TopicsImage(Protocol):
    """The broker's topics as the coordinator reads them (the LogManager provides it):
    ``metadata_epoch`` moves whenever a topic or partition is created or deleted."""

    metadata_epoch: int

    def partition_counts(self) -> Mapping[str, int]: ...

    def topic_id(self, topic: str) -> uuid.UUID | None: ...

    def topic_name(self, topic_id: uuid.UUID) -> str | None: ...


class GroupHost(Protocol):
    """What this coordinator uses of the classic one (coordinator.py), which owns the groups,
    the seams and the clock."""

    groups: dict[str, ClassicGroup]
    config: GroupConfig
    timer: Timer
    write: Writer
    clock: Callable[[], int]

    def check_loaded(self, group_id: str) -> None: ...

    def get_or_create(self, group_id: str) -> ClassicGroup: ...

    def after_downgrade(self, g: ClassicGroup) -> None: ...


class NoTopics:
    """A TopicsImage without topics (a coordinator built without a broker, in tests)."""

    metadata_epoch = 0

    def partition_counts(self) -> Mapping[str, int]:
        return {}

    def topic_id(self, topic: str) -> uuid.UUID | None:
        return None

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return None


Responder = Callable[[dict[str, Any]], None]


def _error(code: int, message: str | None = None, member_id: str | None = None, epoch: int = 0) -> dict[str, Any]:
    return {"error_code": int(code), "error_message": message, "member_id": member_id, "member_epoch": epoch,
            "heartbeat_interval_ms": 0, "assignment": None}


def _classic_error(code: int, member_id: str, join: bool) -> dict[str, Any]:
    """A JoinGroup (``join``) or SyncGroup answer carrying only an error."""
    if join:
        return {"error_code": int(code), "generation_id": -1, "protocol_type": None, "protocol_name": None,
                "leader": "", "skip_assignment": False, "member_id": member_id, "members": []}
    return {"error_code": int(code), "protocol_type": None, "protocol_name": None, "assignment": b""}


def _wire(assignment: Assignment) -> list[dict[str, Any]]:
    return [{"topic_id": t, "partitions": sorted(ps)} for t, ps in sorted(assignment.items())]


class ConsumerGroupCoordinator:
    def __init__(self, groups: GroupHost, topics: TopicsImage) -> None:
        self.groups = groups
        self.topics = topics
        #: whether ``group.version`` is finalized at 1 or more (the broker binds it to its
        #: feature store; UpdateFeatures may change it at run time)
        self.enabled: Callable[[], bool] = lambda: True
        #: (group, key) -> the group's config (consumer.session.timeout.ms,
        #: consumer.heartbeat.interval.ms: group_configs.py); None: the broker's settings
        self.group_config: Callable[[str, str], str] | None = None
        #: classic members told to rejoin (REBALANCE_IN_PROGRESS), with a deadline running
        self._rejoin_deadlines: set[tuple[str, str, str]] = set()
        #: where large groups' assignors run (the runtime sets a ThreadOffload); None: always
        #: in the heartbeat that needs the assignment
        self.offload: Offload | None = None
        #: group id -> the group whose assignor run is in flight (at most one per group)
        self._assigning: dict[str, ConsumerGroup] = {}

    @property
    def config(self) -> GroupConfig:
        return self.groups.config

    # ------------------------------------------------------------------ helpers

    def group(self, group_id: str) -> ConsumerGroup | None:
        g = self.groups.groups.get(group_id)
        return None if g is None else g.consumer

    def _session_key(self, group_id: str, member_id: str) -> tuple[str, str, str]:
        return ("consumer-session", group_id, member_id)

    def _revocation_key(self, group_id: str, member_id: str) -> tuple[str, str, str]:
        return ("consumer-revocation", group_id, member_id)

    def _schedule_session(self, group_id: str, member_id: str, timeout_ms: int | None = None) -> None:
        """Restart a member's session timer: ``group.consumer.session.timeout.ms``, or a classic
        member's own session timeout."""
        if timeout_ms is None:
            timeout_ms = self.config.consumer_session_timeout_ms if self.group_config is None else \
                int(self.group_config(group_id, "consumer.session.timeout.ms"))
        self.groups.timer.schedule(self._session_key(group_id, member_id), timeout_ms,
                                   lambda: self._session_expired(group_id, member_id))

    # ------------------------------------------------------------------ ConsumerGroupHeartbeat

    def heartbeat(self, req: dict[str, Any], version: int, client_id: str, client_host: str,
                  respond: Responder) -> None:
        """ConsumerGroupHeartbeat: answers through ``respond`` once its records are durable."""
        try:
            self._validate(req, version)
            self.groups.check_loaded(req["group_id"])
            records: list[Record] = []
            body = self._heartbeat(req, version, client_id, client_host, records)
        except GroupError as e:
            return respond(_error(e.error_code, str(e) or None, req.get("member_id") or None))
        self._write_then(req["group_id"], records, body, respond)

    def _write_then(self, group_id: str, records: list[Record], body: dict[str, Any], respond: Responder) -> None:
        if not records:
            return respond(body)

        def durable(code: int) -> None:
            respond(body if not code else _error(error_after_append(code), None, body.get("member_id")))

        code = self.groups.write(group_id, records, durable)
        if code:
            # nothing was written: the in-memory state already moved on, as in Kafka a failed
            # write unloads the partition; the member retries and reconciles again
            respond(_error(error_after_append(code), None, body.get("member_id")))

    def _validate(self, req: dict[str, Any], version: int) -> None:
        if not self.config.consumer_protocol or not self.enabled():
            raise GroupError(E.UNSUPPORTED_VERSION, "The consumer group protocol is not enabled "
                                                    "(group.coordinator.rebalance.protocols)")
        epoch = req["member_epoch"]
        if not req["group_id"]:
            raise GroupError(E.INVALID_REQUEST, "GroupId can't be empty.")
        if req.get("instance_id") == "":
            raise GroupError(E.INVALID_REQUEST, "InstanceId can't be empty.")
        if req.get("rack_id") == "":
            raise GroupError(E.INVALID_REQUEST, "RackId can't be empty.")
        if version >= 1 and not req["member_id"]:
            raise GroupError(E.INVALID_REQUEST, "MemberId can't be empty.")
        if epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH:
            if not req["member_id"]:
                raise GroupError(E.INVALID_REQUEST, "MemberId can't be empty.")
        elif epoch == 0:
            if req["rebalance_timeout_ms"] == -1:
                raise GroupError(E.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
            if req["topic_partitions"] is None or req["topic_partitions"]:
                raise GroupError(E.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
            names, regex = req["subscribed_topic_names"], req.get("subscribed_topic_regex")
            if (names is None or not names) and not regex:
                raise GroupError(E.INVALID_REQUEST,
                                 "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
        elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if not req["member_id"]:
                raise GroupError(E.INVALID_REQUEST, "MemberId can't be empty.")
            if req.get("instance_id") is None:
                raise GroupError(E.INVALID_REQUEST, "InstanceId can't be null.")
        else:
            raise GroupError(E.INVALID_REQUEST, "MemberEpoch is invalid.")
        assignor = req.get("server_assignor")
        if assignor is not None and assignor not in self.config.consumer_assignors:
            raise GroupError(E.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {assignor} is not supported. Supported "
                             f"assignors: {', '.join(self.config.consumer_assignors)}.")
        regex = req.get("subscribed_topic_regex")
        if regex:
            try:
                compile_pattern(regex)
            except InvalidRegularExpression as e:
                raise GroupError(E.INVALID_REGULAR_EXPRESSION, str(e)) from None

    def _group_for(self, group_id: str, create: bool, records: list[Record]) -> tuple[ClassicGroup, ConsumerGroup]:
        entry = self.groups.groups.get(group_id)
        if entry is not None and entry.consumer is None and entry.members:
            if not create or not self._may_upgrade(entry):
                raise GroupError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
            return entry, self._upgrade(entry, records)
        if entry is None or entry.consumer is None:
            if not create:
                raise GroupError(E.UNKNOWN_MEMBER_ID, f"Consumer group {group_id} not found.")
            if entry is not None and entry.protocol_type is not None:
                # an empty classic group becomes a consumer group: its classic record goes
                records.append((encode_group_metadata_key(group_id), None))
            entry = self.groups.get_or_create(group_id)
            entry.consumer = ConsumerGroup(group_id)
            entry.protocol_type = "consumer"
            records.append(_group_epoch_record(group_id, 0))
        return entry, entry.consumer

    def _heartbeat(self, req: dict[str, Any], version: int, client_id: str, client_host: str,
                   records: list[Record]) -> dict[str, Any]:
        group_id, member_id, epoch = req["group_id"], req["member_id"], req["member_epoch"]
        instance_id = req.get("instance_id")
        if epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._leave(group_id, member_id, instance_id, epoch, records)
        entry, g = self._group_for(group_id, epoch == 0, records)
        if not member_id:
            member_id = str(uuid.uuid4())
        owned = None if req["topic_partitions"] is None else \
            [(tp["topic_id"], list(tp["partitions"])) for tp in req["topic_partitions"]]
        member = self._member(g, member_id, epoch, instance_id, owned, records)
        names = req["subscribed_topic_names"]
        regex = req.get("subscribed_topic_regex")
        updated = member.replace(
            instance_id=instance_id if instance_id is not None else member.instance_id,
            rack_id=req.get("rack_id") if req.get("rack_id") is not None else member.rack_id,
            rebalance_timeout_ms=req["rebalance_timeout_ms"] if req["rebalance_timeout_ms"] != -1
            else member.rebalance_timeout_ms,
            server_assignor=req.get("server_assignor") if req.get("server_assignor") is not None
            else member.server_assignor,
            subscribed_topic_names=tuple(names) if names is not None else member.subscribed_topic_names,
            subscribed_topic_regex=(regex or None) if regex is not None else member.subscribed_topic_regex,
            client_id=client_id, client_host=client_host, classic=None)
        bump = member_id not in g.members or updated.subscription() != member.subscription()
        if updated.metadata() != member.metadata() or member_id not in g.members:
            records.append(_member_metadata_record(group_id, updated))
        if not g.members:
            g.active_since_ms = self.groups.clock()
        g.update_member(updated)
        if self._refresh_metadata(g, records) or bump:
            g.group_epoch += 1
            records.append(_group_epoch_record(group_id, g.group_epoch))
            logger.info("group %s: group epoch bumped to %d", group_id, g.group_epoch)
        self._assign(g, records)
        reconciled = self._reconcile(g, g.members[member_id], owned, records)
        self._schedule_session(group_id, member_id)
        full = epoch == 0 or (req["rebalance_timeout_ms"] != -1 and names is not None and owned is not None)
        body: dict[str, Any] = {"error_code": 0, "error_message": None, "member_id": member_id,
                                "member_epoch": reconciled.member_epoch,
                                "heartbeat_interval_ms": self._heartbeat_interval(g, reconciled),
                                "assignment": None}
        if full or reconciled.assigned != member.assigned or epoch == 0:
            body["assignment"] = {"topic_partitions": _wire(reconciled.assigned)}
        return body

    def _heartbeat_interval(self, g: ConsumerGroup, m: ConsumerGroupMember) -> int:
        """``group.consumer.heartbeat.interval.ms``, except (see the module docstring): a member
        waiting for partitions that others still hold, or any member while a new regular
        expression waits to be resolved, comes back after ``UNRELEASED_HEARTBEAT_INTERVAL_MS``; while a group that has just left Empty settles
        (``group.initial.rebalance.delay.ms``), its members come back after
        ``SETTLING_HEARTBEAT_INTERVAL_MS`` (2 ms per member at least), so that members started
        together share the partitions at once rather than after a whole interval."""
        interval = self.config.consumer_heartbeat_interval_ms if self.group_config is None else \
            int(self.group_config(g.group_id, "consumer.heartbeat.interval.ms"))
        if m.state == MemberState.UNRELEASED_PARTITIONS or g.pending_regexes:
            return min(interval, UNRELEASED_HEARTBEAT_INTERVAL_MS)
        if g.group_epoch > g.assignment_epoch:  # an assignor run in flight (large groups)
            return min(interval, max(UNRELEASED_HEARTBEAT_INTERVAL_MS, 2 * len(g.members)))
        if self.groups.clock() - g.active_since_ms < self.config.initial_rebalance_delay_ms:
            return min(interval, max(SETTLING_HEARTBEAT_INTERVAL_MS, 2 * len(g.members)))
        return interval

    def _member(self, g: ConsumerGroup, member_id: str, epoch: int, instance_id: str | None,
                owned: list[tuple[uuid.UUID, list[int]]] | None, records: list[Record]) -> ConsumerGroupMember:
        existing = g.members.get(member_id)
        if epoch == 0:
            if existing is None and len(g.members) >= self.config.consumer_max_size:
                raise GroupError(E.GROUP_MAX_SIZE_REACHED, f"The consumer group has reached its maximum "
                                 f"capacity of {self.config.consumer_max_size} members.")
            if instance_id is not None:
                static = g.static_member(instance_id)
                if static is not None and static.member_id != member_id:
                    if static.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                        raise GroupError(E.UNRELEASED_INSTANCE_ID, f"Static member {static.member_id} with "
                                         f"instance id {instance_id} is not released yet.")
                    # the restarted instance takes its predecessor's place and assignment
                    target = g.target.get(static.member_id, {})
                    self._remove(g, static, records)
                    new = static.replace(member_id=member_id, member_epoch=0, previous_member_epoch=0)
                    g.target[member_id] = target
                    records.append(_target_member_record(g.group_id, member_id, target))
                    records.append(_current_assignment_record(g.group_id, new))
                    g.update_member(new)
                    return new
            return existing if existing is not None else ConsumerGroupMember(member_id)
        if existing is None:
            raise GroupError(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {g.group_id}.")
        if instance_id is not None and g.static_members.get(instance_id, member_id) != member_id:
            raise GroupError(E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance_id} "
                             "was fenced by another member.")
        if epoch > existing.member_epoch:
            raise GroupError(E.FENCED_MEMBER_EPOCH, f"The consumer group member has a greater member epoch "
                             f"({epoch}) than the one known by the group coordinator ({existing.member_epoch}). "
                             "The member must abandon all its partitions and rejoin.")
        if epoch < existing.member_epoch:
            lost_response = epoch == existing.previous_member_epoch and owned is not None and \
                partitions_of(assignment_of(owned)) <= partitions_of(existing.assigned)
            if not lost_response:
                raise GroupError(E.FENCED_MEMBER_EPOCH, f"The consumer group member has a smaller member epoch "
                                 f"({epoch}) than the one known by the group coordinator ({existing.member_epoch}). "
                                 "The member must abandon all its partitions and rejoin.")
        return existing

    # ------------------------------------------------------------------ metadata and assignment

    def _refresh_metadata(self, g: ConsumerGroup, records: list[Record]) -> bool:
        """Resolve the group's regular expressions and subscribed topics against the broker's
        topics; True when the result differs from what the assignment was computed from."""
        image = self.topics
        counts = image.partition_counts()
        subscribed = g.regexes()
        # An expression new to the group waits for the group's next heartbeat, as Kafka's
        # asynchronous resolution: the member gets its named topics at once and the matched
        # ones a heartbeat later (librdkafka's 0045 expects two assignments for a regex plus a
        # topic name); _heartbeat_interval brings that heartbeat soon.
        unresolved = subscribed - set(g.resolved_regexes)
        g.pending_regexes = frozenset(unresolved - g.pending_regexes)
        regexes = subscribed - g.pending_regexes
        resolved_changed = False
        if image.metadata_epoch != g.metadata_epoch or regexes != set(g.resolved_regexes):
            eligible = sorted(t for t in counts if t not in INTERNAL_TOPICS)
            for regex in sorted(regexes):
                pattern = compile_pattern(regex)
                matched = frozenset(t for t in eligible if pattern.fullmatch(t))
                if g.resolved_regexes.get(regex) != matched:
                    g.resolved_regexes[regex] = matched
                    records.append(_regex_record(g.group_id, regex, matched, image.metadata_epoch,
                                                 self.groups.clock()))
                    resolved_changed = True
            for regex in sorted(set(g.resolved_regexes) - subscribed):
                del g.resolved_regexes[regex]
                records.append((cr.encode_key(cr.ConsumerGroupRegularExpressionKey(g.group_id, regex)), None))
        metadata: dict[str, tuple[uuid.UUID, int]] = {}
        for name in g.subscribed_topic_names():
            n = counts.get(name)
            topic_id = image.topic_id(name) if n is not None else None
            if n is not None and topic_id is not None:
                metadata[name] = (topic_id, n)
        g.metadata_epoch = image.metadata_epoch
        if metadata != g.subscription_metadata:
            g.subscription_metadata = metadata
            return True
        return resolved_changed

    def _assignor(self, g: ConsumerGroup) -> str:
        """The assignor most members ask for, else the configured default."""
        wanted = Counter(m.server_assignor for m in g.members.values() if m.server_assignor is not None)
        if wanted:
            order = self.config.consumer_assignors
            return max(wanted, key=lambda a: (wanted[a], -order.index(a) if a in order else -99))
        return str(self.config.consumer_assignors[0])

    def _assign(self, g: ConsumerGroup, records: list[Record]) -> None:
        """Give the group a target assignment for its group epoch, unless it has one: computed
        now, or for a group of ``group.consumer.assignment.offload.min.members`` or more,
        started off the request path (a run already in flight is followed by another)."""
        if g.group_epoch <= g.assignment_epoch:
            return
        if self.offload is None or len(g.members) < self.config.consumer_assignment_offload_min_members:
            self._update_target_assignment(g, records)
        elif self._assigning.get(g.group_id) is not g:
            self._start_assignment(g)

    def _assignment_input(self, g: ConsumerGroup) -> tuple[str, dict[str, MemberSubscription],
                                                           dict[uuid.UUID, int], dict[str, Assignment]]:
        """The assignor's input, copied from the group: (assignor, members, topics, current target)."""
        ids = {name: tid for name, (tid, _) in g.subscription_metadata.items()}
        topics = {tid: n for tid, n in g.subscription_metadata.values()}
        members: dict[str, MemberSubscription] = {
            m.member_id: (frozenset(ids[t] for t in g.member_topics(m) if t in ids), m.instance_id or m.member_id)
            for m in g.members.values()}
        return self._assignor(g), members, topics, dict(g.target)

    def _update_target_assignment(self, g: ConsumerGroup, records: list[Record]) -> None:
        name, members, topics, current = self._assignment_input(g)
        self._install_target(g, assign(name, members, topics, current), g.group_epoch, records)

    def _install_target(self, g: ConsumerGroup, new: Mapping[str, Assignment], epoch: int,
                        records: list[Record]) -> None:
        for member_id, target in sorted(new.items()):
            if g.target.get(member_id) != target:
                records.append(_target_member_record(g.group_id, member_id, target))
        g.target = dict(new)
        g.assignment_epoch = epoch
        records.append(_target_metadata_record(g.group_id, g.assignment_epoch))

    def _start_assignment(self, g: ConsumerGroup) -> None:
        """Run the group's assignor on a snapshot through ``offload``; its result becomes the
        target of the epoch it was started at, unless the group moved past that meanwhile."""
        assert self.offload is not None
        name, members, topics, current = self._assignment_input(g)
        epoch, started = g.group_epoch, time.monotonic()
        self._assigning[g.group_id] = g

        def done(outcome: Any) -> None:
            if self._assigning.get(g.group_id) is g:
                del self._assigning[g.group_id]
            if self.group(g.group_id) is not g:
                return  # deleted, downgraded or replaced meanwhile
            if isinstance(outcome, BaseException):
                logger.error("group %s: the %s assignor failed for epoch %d; the group stays at assignment "
                             "epoch %d until its next epoch bump", g.group_id, name, epoch, g.assignment_epoch,
                             exc_info=outcome)
                return
            records: list[Record] = []
            if g.assignment_epoch < epoch:
                logger.info("group %s: target assignment for epoch %d computed off the request path in %.1f ms "
                            "(%d members)", g.group_id, epoch, (time.monotonic() - started) * 1000, len(members))
                self._install_target(g, self._carried_over(g, outcome, members), epoch, records)
            self._assign(g, records)  # epochs bumped during the run: the next run
            if records:
                code = self.groups.write(g.group_id, records, log_write_failure(g.group_id, "a target assignment"))
                if code:
                    logger.error("group %s: the target assignment of epoch %d was not stored (error %d)",
                                 g.group_id, epoch, code)

        self.offload.submit(lambda: assign(name, members, topics, current), done)

    @staticmethod
    def _carried_over(g: ConsumerGroup, result: Mapping[str, Assignment],
                      members: Mapping[str, MemberSubscription]) -> dict[str, Assignment]:
        """An assignment computed from a snapshot, fitted to the group as it is now: a static
        member replaced meanwhile (same instance id) takes its predecessor's target, a member
        gone drops out, topics a member no longer subscribes to are left out; members that
        joined meanwhile get nothing until the next run (their joining bumped the epoch)."""
        static = {m.instance_id: m.member_id for m in g.members.values() if m.instance_id is not None}
        ids = {name: tid for name, (tid, _) in g.subscription_metadata.items()}
        out: dict[str, Assignment] = {}
        for member_id, target in result.items():
            now = member_id if member_id in g.members else static.get(members[member_id][1])
            if now is None:
                continue
            subscribed = {ids[t] for t in g.member_topics(g.members[now]) if t in ids}
            out[now] = {t: ps for t, ps in target.items() if t in subscribed}
        return out

    def _reconcile(self, g: ConsumerGroup, member: ConsumerGroupMember,
                   owned: list[tuple[uuid.UUID, list[int]]] | None, records: list[Record]) -> ConsumerGroupMember:
        target = g.target.get(member.member_id, {})
        new = next_assignment(member, g.assignment_epoch, target, g.current_partition_epoch, owned)
        if new.assignment_state() != member.assignment_state():
            g.update_member(new)
            records.append(_current_assignment_record(g.group_id, new))
            key = self._revocation_key(g.group_id, new.member_id)
            if new.state == MemberState.UNREVOKED_PARTITIONS:
                gid, mid, e = g.group_id, new.member_id, new.member_epoch
                self.groups.timer.schedule(key, max(new.rebalance_timeout_ms, 0),
                                           lambda: self._revocation_expired(gid, mid, e))
            else:
                self.groups.timer.cancel(key)
        return new

    # ------------------------------------------------------------------ leaving and fencing

    def _leave(self, group_id: str, member_id: str, instance_id: str | None, epoch: int,
               records: list[Record]) -> dict[str, Any]:
        g = self.group(group_id)
        if g is None:
            raise GroupError(E.UNKNOWN_MEMBER_ID, f"Consumer group {group_id} not found.")
        if instance_id is None:
            member = g.members.get(member_id)
            if member is None:
                raise GroupError(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
        else:
            member = g.static_member(instance_id)
            if member is None:
                raise GroupError(E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
            if member.member_id != member_id:
                raise GroupError(E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                 f"{instance_id} was fenced by member {member.member_id}.")
        body = {"error_code": 0, "error_message": None, "member_id": member_id, "member_epoch": epoch,
                "heartbeat_interval_ms": 0, "assignment": None}
        if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            leaving = member.replace(member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, pending_revocation={})
            g.update_member(leaving)
            records.append(_current_assignment_record(group_id, leaving))
            logger.info("group %s: static member %s (instance %s) left temporarily", group_id, member_id, instance_id)
            return body
        logger.info("group %s: member %s left", group_id, member_id)
        self._fence(g, member, records)
        return body

    def _remove(self, g: ConsumerGroup, member: ConsumerGroupMember, records: list[Record]) -> None:
        """Drop ``member`` and its records (no epoch bump)."""
        gid, mid = g.group_id, member.member_id
        records.append((cr.encode_key(cr.ConsumerGroupCurrentMemberAssignmentKey(gid, mid)), None))
        records.append((cr.encode_key(cr.ConsumerGroupTargetAssignmentMemberKey(gid, mid)), None))
        records.append((cr.encode_key(cr.ConsumerGroupMemberMetadataKey(gid, mid)), None))
        g.remove_member(mid)
        self.groups.timer.cancel(self._session_key(gid, mid))
        self.groups.timer.cancel(self._revocation_key(gid, mid))

    def _fence(self, g: ConsumerGroup, member: ConsumerGroupMember, records: list[Record]) -> None:
        """Remove ``member``; the group epoch is bumped so that the others get its partitions
        (or, when only classic members remain, the group becomes a classic group again)."""
        if self._may_downgrade(g, member.member_id):
            self._remove(g, member, records)
            self._downgrade(g, records)
            return
        self._remove(g, member, records)
        self._refresh_metadata(g, records)
        g.group_epoch += 1
        records.append(_group_epoch_record(g.group_id, g.group_epoch))
        if g.members:
            self._assign(g, records)
        else:
            g.target = {}
            g.assignment_epoch = g.group_epoch
            records.append(_target_metadata_record(g.group_id, g.assignment_epoch))

    def _session_expired(self, group_id: str, member_id: str) -> None:
        g = self.group(group_id)
        member = None if g is None else g.members.get(member_id)
        if g is None or member is None:
            return
        logger.info("group %s: member %s's session timed out (group.consumer.session.timeout.ms); fenced",
                    group_id, member_id)
        self._fence_and_write(g, member)

    def _revocation_expired(self, group_id: str, member_id: str, epoch: int) -> None:
        g = self.group(group_id)
        member = None if g is None else g.members.get(member_id)
        if g is None or member is None or member.state != MemberState.UNREVOKED_PARTITIONS \
                or member.member_epoch != epoch:
            return
        logger.info("group %s: member %s did not revoke its partitions within its rebalance timeout; fenced",
                    group_id, member_id)
        self._fence_and_write(g, member)

    def _fence_and_write(self, g: ConsumerGroup, member: ConsumerGroupMember) -> None:
        records: list[Record] = []
        self._fence(g, member, records)
        code = self.groups.write(g.group_id, records, log_write_failure(g.group_id, "a fenced member"))
        if code:
            logger.error("group %s: fencing member %s was not stored (error %d)", g.group_id, member.member_id, code)

    # ------------------------------------------------------------------ migration (migration.py)

    def _may_upgrade(self, entry: ClassicGroup) -> bool:
        if self.config.migration_policy not in ("upgrade", "bidirectional"):
            logger.info("group %s: not upgraded to a consumer group: group.consumer.migration.policy is %s",
                        entry.group_id, self.config.migration_policy)
            return False
        if entry.protocol_type != "consumer":
            return False
        return len(entry.members) < self.config.consumer_max_size

    def _upgrade(self, entry: ClassicGroup, records: list[Record]) -> ConsumerGroup:
        """A classic group becomes a consumer group (a consumer-protocol member is joining)."""
        ids = {name: tid for name in self.topics.partition_counts()
               if (tid := self.topics.topic_id(name)) is not None}
        try:
            g = consumer_group_from_classic(entry, ids)
        except MigrationError as e:
            raise GroupError(E.GROUP_ID_NOT_FOUND, f"Cannot upgrade the classic group {entry.group_id}: {e}") from None
        for cm in list(entry.members.values()):  # parked JoinGroup/SyncGroup: rejoin, now as classic members
            cm.complete_join(_classic_error(E.REBALANCE_IN_PROGRESS, cm.member_id, join=True))
            cm.complete_sync(_classic_error(E.REBALANCE_IN_PROGRESS, cm.member_id, join=False))
            self.groups.timer.cancel(("heartbeat", entry.group_id, cm.member_id))
        self.groups.timer.cancel(("join", entry.group_id))
        entry.become_consumer_group(g, self.groups.clock())
        records.append((encode_group_metadata_key(entry.group_id), None))
        records.append(_group_epoch_record(g.group_id, g.group_epoch))
        for m in g.members.values():
            records.append(_member_metadata_record(g.group_id, m))
            records.append(_target_member_record(g.group_id, m.member_id, g.target[m.member_id]))
        records.append(_target_metadata_record(g.group_id, g.assignment_epoch))
        for m in g.members.values():
            records.append(_current_assignment_record(g.group_id, m))
            assert m.classic is not None
            self._schedule_session(g.group_id, m.member_id, m.classic.session_timeout_ms)
        g.metadata_epoch = -1
        logger.info("group %s: upgraded from the classic protocol to a consumer group at epoch %d (%d members)",
                    g.group_id, g.group_epoch, len(g.members))
        return g

    def _may_downgrade(self, g: ConsumerGroup, leaving: str) -> bool:
        if len(g.members) <= 1 or not g.all_classic_except(leaving):
            return False
        if self.config.migration_policy not in ("downgrade", "bidirectional"):
            logger.info("group %s: not downgraded to a classic group: group.consumer.migration.policy is %s",
                        g.group_id, self.config.migration_policy)
            return False
        return len(g.members) - 1 <= self.groups.config.max_size

    def _downgrade(self, g: ConsumerGroup, records: list[Record]) -> None:
        """Only classic members are left: the group becomes a classic group and rebalances."""
        names = {tid: name for name, (tid, _) in g.subscription_metadata.items()}
        for m in g.members.values():
            for t in m.assigned:
                if t not in names and (name := self.topics.topic_name(t)) is not None:
                    names[t] = name
        try:
            record = classic_record_from_consumer(g, names, self.groups.clock())
        except MigrationError as e:
            logger.warning("group %s: not downgraded to a classic group: %s", g.group_id, e)
            return
        for m in list(g.members.values()):
            self._remove(g, m, records)
        records.extend(self.delete_records(g))
        records.append((encode_group_metadata_key(g.group_id), encode_group_metadata_value(record)))
        entry = self.groups.groups[g.group_id]
        entry.consumer = None
        entry.replay(record, self.groups.clock())
        self.groups.after_downgrade(entry)
        logger.info("group %s: downgraded to a classic group at generation %d (%d members)", g.group_id,
                    record.generation, len(record.members))

    # ------------------------------------------------------------------ classic members of a consumer group

    def classic_join(self, entry: ClassicGroup, req: dict[str, Any], version: int, respond: Responder) -> None:
        """JoinGroup of a classic member to a consumer group (with members): the member is
        reconciled as a consumer-group member whose owned partitions are those of its
        subscription; it is answered (as a follower: the broker assigns) once the records are
        durable, and its SyncGroup gets its assignment."""
        g = entry.consumer
        assert g is not None
        records: list[Record] = []
        try:
            body = self._classic_join(g, req, version, records)
        except GroupError as e:
            return respond(_classic_error(e.error_code, req["member_id"], join=True))
        if body["error_code"]:
            return respond(body)
        key = self._join_key(g.group_id, body["member_id"])
        self.groups.timer.cancel(key)
        self._rejoin_deadlines.discard(key)
        self._write_then(g.group_id, records, body,
                         lambda b: respond(b if not b.get("error_code") else _classic_error(b["error_code"],
                                                                                            body["member_id"], True)))

    def _classic_join(self, g: ConsumerGroup, req: dict[str, Any], version: int,
                      records: list[Record]) -> dict[str, Any]:
        if req["protocol_type"] != "consumer" or not req["protocols"]:
            raise GroupError(E.INCONSISTENT_GROUP_PROTOCOL)
        member_id, instance_id = req["member_id"], req.get("group_instance_id")
        unknown = member_id == ""
        if unknown:
            member_id = str(uuid.uuid4())
        if member_id not in g.members and len(g.members) >= self.config.consumer_max_size:
            raise GroupError(E.GROUP_MAX_SIZE_REACHED)
        if unknown and instance_id is None and version >= 4:  # KIP-394
            return {**_classic_error(E.MEMBER_ID_REQUIRED, member_id, join=True), "member_id": member_id}
        protocols = [(p[0], bytes(p[1])) if isinstance(p, tuple) else (p["name"], bytes(p["metadata"]))
                     for p in req["protocols"]]
        try:
            sub = decode_subscription(protocols[0][1])
        except DecodeError:
            raise GroupError(E.INCONSISTENT_GROUP_PROTOCOL) from None
        member = g.members.get(member_id)
        if member is None and instance_id is not None:
            static = g.static_member(instance_id)
            if static is not None:  # a restarted static member takes its predecessor's place
                target = g.target.get(static.member_id, {})
                self._remove(g, static, records)
                member = static.replace(member_id=member_id)
                g.target[member_id] = target
                records.append(_target_member_record(g.group_id, member_id, target))
        if member is None:  # new (possibly with the id MEMBER_ID_REQUIRED gave it)
            member = ConsumerGroupMember(member_id)
        session = req["session_timeout_ms"]
        updated = member.replace(
            instance_id=instance_id, client_id=req.get("_client_id", member.client_id),
            client_host=req.get("_client_host", member.client_host), server_assignor=None,
            subscribed_topic_names=tuple(sorted(sub.topics)), subscribed_topic_regex=None,
            rebalance_timeout_ms=req["rebalance_timeout_ms"],
            classic=cr.ClassicMemberMetadata(session, [cr.ClassicProtocol(n, d) for n, d in protocols]))
        bump = member_id not in g.members or updated.subscription() != member.subscription()
        if updated.metadata() != member.metadata() or member_id not in g.members:
            records.append(_member_metadata_record(g.group_id, updated))
        g.update_member(updated)
        if self._refresh_metadata(g, records) or bump:
            g.group_epoch += 1
            records.append(_group_epoch_record(g.group_id, g.group_epoch))
            logger.info("group %s: group epoch bumped to %d (classic member %s joined)", g.group_id, g.group_epoch,
                        member_id)
        if g.group_epoch > g.assignment_epoch:
            self._update_target_assignment(g, records)
        ids = {name: tid for name, (tid, _) in g.subscription_metadata.items()}
        owned = [(t, sorted(ps)) for t, ps in by_topic_id(list(sub.owned_partitions), ids).items()]
        reconciled = self._reconcile(g, g.members[member_id], owned, records)
        self._schedule_session(g.group_id, member_id, session)
        return {"error_code": 0, "generation_id": reconciled.member_epoch, "protocol_type": "consumer",
                "protocol_name": protocols[0][0], "leader": "", "skip_assignment": False, "member_id": member_id,
                "members": []}

    def _classic_member(self, g: ConsumerGroup, member_id: str, instance_id: str | None,
                        generation: int) -> ConsumerGroupMember:
        if instance_id is not None:
            member = g.static_member(instance_id)
            if member is None:
                raise GroupError(E.UNKNOWN_MEMBER_ID)
            if member.member_id != member_id:
                raise GroupError(E.FENCED_INSTANCE_ID)
        else:
            member = g.members.get(member_id)
            if member is None:
                raise GroupError(E.UNKNOWN_MEMBER_ID)
        if member.classic is None:
            raise GroupError(E.UNKNOWN_MEMBER_ID, f"Member {member_id} does not use the classic protocol.")
        if generation != member.member_epoch:
            raise GroupError(E.ILLEGAL_GENERATION)
        return member

    def _needs_rejoin(self, g: ConsumerGroup, m: ConsumerGroupMember) -> bool:
        """A classic member must rejoin to reconcile: its epoch is behind, it has partitions to
        revoke, or partitions it waited for were released."""
        if m.member_epoch < g.group_epoch or m.state == MemberState.UNREVOKED_PARTITIONS:
            return True
        if m.state == MemberState.UNRELEASED_PARTITIONS:
            target = g.target.get(m.member_id, {})
            waiting = any(p not in m.assigned.get(t, ()) and g.current_partition_epoch(t, p) != -1
                          for t, ps in target.items() for p in ps)
            return not waiting
        return False

    def classic_sync(self, entry: ClassicGroup, req: dict[str, Any]) -> dict[str, Any]:
        g = entry.consumer
        assert g is not None
        try:
            m = self._classic_member(g, req["member_id"], req.get("group_instance_id"), req["generation_id"])
            if req.get("protocol_type") not in (None, "consumer") or (
                    req.get("protocol_name") is not None and req["protocol_name"] not in
                    [p.name for p in m.classic.supported_protocols]):  # type: ignore[union-attr]
                raise GroupError(E.INCONSISTENT_GROUP_PROTOCOL)
            if m.member_epoch < g.group_epoch or m.state == MemberState.UNREVOKED_PARTITIONS:
                raise GroupError(E.REBALANCE_IN_PROGRESS)
        except GroupError as e:
            return _classic_error(e.error_code, req["member_id"], join=False)
        assert m.classic is not None
        self._schedule_session(g.group_id, m.member_id, m.classic.session_timeout_ms)
        names = {tid: name for name, (tid, _) in g.subscription_metadata.items()}
        return {"error_code": 0, "protocol_type": "consumer",
                "protocol_name": req.get("protocol_name") or m.classic.supported_protocols[0].name,
                "assignment": protocol_assignment(m.assigned, names)}

    def classic_heartbeat(self, entry: ClassicGroup, req: dict[str, Any]) -> int:
        g = entry.consumer
        assert g is not None
        try:
            m = self._classic_member(g, req["member_id"], req.get("group_instance_id"), req["generation_id"])
        except GroupError as e:
            return e.error_code
        assert m.classic is not None
        self._schedule_session(g.group_id, m.member_id, m.classic.session_timeout_ms)
        if self._needs_rejoin(g, m):
            gid, mid = g.group_id, m.member_id
            key = self._join_key(gid, mid)
            if key not in self._rejoin_deadlines:
                self._rejoin_deadlines.add(key)
                self.groups.timer.schedule(key, max(m.rebalance_timeout_ms, 0), lambda: self._join_expired(gid, mid))
            return int(E.REBALANCE_IN_PROGRESS)
        return 0

    def _join_key(self, group_id: str, member_id: str) -> tuple[str, str, str]:
        return ("consumer-classic-join", group_id, member_id)

    def _join_expired(self, group_id: str, member_id: str) -> None:
        self._rejoin_deadlines.discard(self._join_key(group_id, member_id))
        g = self.group(group_id)
        member = None if g is None else g.members.get(member_id)
        if g is None or member is None or not self._needs_rejoin(g, member):
            return
        logger.info("group %s: classic member %s did not rejoin within its rebalance timeout; fenced",
                    group_id, member_id)
        self._fence_and_write(g, member)

    def classic_leave(self, entry: ClassicGroup, members: list[dict[str, Any]]) -> list[dict[str, Any]]:
        g = entry.consumer
        assert g is not None
        records: list[Record] = []
        results = []
        for ident in members:
            mid, iid = ident["member_id"], ident.get("group_instance_id")
            result = {"member_id": mid, "group_instance_id": iid, "error_code": 0}
            member = g.static_member(iid) if iid is not None else g.members.get(mid)
            if member is None:
                result["error_code"] = int(E.UNKNOWN_MEMBER_ID)
            elif mid and member.member_id != mid:
                result["error_code"] = int(E.FENCED_INSTANCE_ID)
            elif self.group(g.group_id) is g:  # not downgraded by an earlier leave of this request
                logger.info("group %s: classic member %s left", g.group_id, member.member_id)
                self._fence(g, member, records)
            results.append(result)
        if records:
            self.groups.write(g.group_id, records, log_write_failure(g.group_id, "classic members leaving"))
        return results

    # ------------------------------------------------------------------ describe and admin

    def describe(self, group_id: str, describe_ops: Callable[[str], int] | None = None) -> dict[str, Any]:
        """ConsumerGroupDescribe of one group."""
        base: dict[str, Any] = {"error_code": 0, "error_message": None, "group_id": group_id, "group_state": "",
                                "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "", "members": [],
                                "authorized_operations": -2**31}
        try:
            self.groups.check_loaded(group_id)
        except GroupError as e:
            return {**base, "error_code": e.error_code}
        entry = self.groups.groups.get(group_id)
        g = None if entry is None else entry.consumer
        if g is None:
            if entry is not None and entry.protocol_type is not None:
                return {**base, "error_code": int(E.GROUP_ID_NOT_FOUND),
                        "error_message": f"Group {group_id} is not a consumer group."}
            return {**base, "error_code": int(E.GROUP_ID_NOT_FOUND),
                    "error_message": f"Group {group_id} not found."}
        names = {tid: name for name, (tid, _) in g.subscription_metadata.items()}

        def described(a: Assignment) -> dict[str, Any]:
            return {"topic_partitions": [
                {"topic_id": t, "topic_name": names.get(t) or self.topics.topic_name(t) or "", "partitions": sorted(ps)}
                for t, ps in sorted(a.items())]}

        members = [{"member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
                    "member_epoch": m.member_epoch, "client_id": m.client_id, "client_host": m.client_host,
                    "subscribed_topic_names": list(m.subscribed_topic_names),
                    "subscribed_topic_regex": m.subscribed_topic_regex,
                    "assignment": described(m.assigned), "target_assignment": described(g.target.get(m.member_id, {})),
                    "member_type": 0 if m.classic is not None else 1}
                   for m in g.members.values()]
        return {**base, "group_state": g.state.value, "group_epoch": g.group_epoch,
                "assignment_epoch": g.assignment_epoch, "assignor_name": self._assignor(g), "members": members}

    def delete_records(self, g: ConsumerGroup) -> list[Record]:
        """The tombstones that delete an Empty consumer group's own records."""
        gid = g.group_id
        out: list[Record] = [(cr.encode_key(cr.ConsumerGroupRegularExpressionKey(gid, r)), None)
                             for r in sorted(g.resolved_regexes)]
        out.append((cr.encode_key(cr.ConsumerGroupTargetAssignmentMetadataKey(gid)), None))
        out.append((cr.encode_key(cr.ConsumerGroupMetadataKey(gid)), None))
        return out

    def validate_offset_commit(self, g: ConsumerGroup, member_id: str, member_epoch: int) -> None:
        """OffsetCommit to a consumer group: a commit without member (epoch < 0) only while the
        group is empty; otherwise the member must exist (UNKNOWN_MEMBER_ID) at the epoch sent
        (STALE_MEMBER_EPOCH)."""
        if member_epoch < 0 and not g.members:
            return
        member = g.members.get(member_id)
        if member is None:
            raise GroupError(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {g.group_id}.")
        if member_epoch != member.member_epoch and member.classic is not None:
            raise GroupError(E.ILLEGAL_GENERATION, f"The generation {member_epoch} of classic member {member_id} "
                             f"is not its member epoch {member.member_epoch}.")
        if member_epoch != member.member_epoch:
            raise GroupError(E.STALE_MEMBER_EPOCH, f"The member epoch {member_epoch} is stale; the current "
                             f"epoch of member {member_id} is {member.member_epoch}.")

    def validate_offset_fetch(self, g: ConsumerGroup, member_id: str | None, member_epoch: int) -> None:
        """OffsetFetch v9+ naming a member: it must exist at the epoch sent."""
        if member_epoch < 0 and not member_id:
            return
        self.validate_offset_commit(g, member_id or "", member_epoch)

    def subscribed_topics(self, g: ConsumerGroup) -> set[str]:
        return g.subscribed_topic_names()

    # ------------------------------------------------------------------ loading

    def replay(self, key: Any, value: Any) -> None:
        """One KIP-848 record of ``__consumer_offsets`` (value None: a tombstone)."""
        gid = key.group_id
        entry = self.groups.groups.get(gid)
        if isinstance(key, cr.ConsumerGroupMetadataKey):
            if value is None:
                if entry is not None and entry.consumer is not None:
                    entry.consumer = None
                    entry.protocol_type = None
                    if not entry.offsets and not entry.pending_txn_offsets:
                        del self.groups.groups[gid]
                return
            self._replay_group(gid).group_epoch = value.epoch
            return
        if entry is None or entry.consumer is None:
            g = self._replay_group(gid)
        else:
            g = entry.consumer
        if isinstance(key, cr.ConsumerGroupTargetAssignmentMetadataKey):
            if value is not None:
                g.assignment_epoch = value.assignment_epoch
        elif isinstance(key, cr.ConsumerGroupTargetAssignmentMemberKey):
            if value is None:
                g.target.pop(key.member_id, None)
            else:
                g.target[key.member_id] = _assignment_from_record(value.topic_partitions)
        elif isinstance(key, cr.ConsumerGroupRegularExpressionKey):
            if value is None:
                g.resolved_regexes.pop(key.regular_expression, None)
            else:
                g.resolved_regexes[key.regular_expression] = frozenset(value.topics)
        elif isinstance(key, cr.ConsumerGroupMemberMetadataKey):
            if value is None:
                g.remove_member(key.member_id)
                return
            old = g.members.get(key.member_id, ConsumerGroupMember(key.member_id))
            g.update_member(old.replace(
                instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
                client_host=value.client_host, subscribed_topic_names=tuple(value.subscribed_topic_names),
                subscribed_topic_regex=value.subscribed_topic_regex or None, server_assignor=value.server_assignor,
                rebalance_timeout_ms=value.rebalance_timeout_ms, classic=value.classic_member_metadata))
        elif isinstance(key, cr.ConsumerGroupCurrentMemberAssignmentKey):
            if value is None:
                return  # the member metadata tombstone removes the member
            old = g.members.get(key.member_id, ConsumerGroupMember(key.member_id))
            g.update_member(old.replace(
                member_epoch=value.member_epoch, previous_member_epoch=value.previous_member_epoch,
                state=MemberState(value.state) if value.state in MemberState._value2member_map_ else MemberState.UNKNOWN,
                assigned=_assignment_from_record(value.assigned_partitions),
                pending_revocation=_assignment_from_record(value.partitions_pending_revocation)))

    def _replay_group(self, group_id: str) -> ConsumerGroup:
        entry = self.groups.get_or_create(group_id)
        if entry.consumer is None:
            entry.consumer = ConsumerGroup(group_id)
            entry.protocol_type = "consumer"
        return entry.consumer

    def on_loaded(self, groups: Iterable[ClassicGroup]) -> None:
        """A partition is loaded: its consumer-group members' session timers start (a member
        that does not come back in time is fenced)."""
        for entry in groups:
            g = entry.consumer
            if g is None:
                continue
            g.metadata_epoch = -1  # resolve the subscriptions again at the next heartbeat
            for member_id, m in list(g.members.items()):
                self._schedule_session(g.group_id, member_id, m.classic.session_timeout_ms if m.classic else None)


# ---------------------------------------------------------------------- records


def _record_assignment(a: Assignment) -> dict[bytes, list[int]]:
    return {t.bytes: sorted(ps) for t, ps in sorted(a.items())}


def _assignment_from_record(a: Mapping[bytes, Iterable[int]]) -> dict[uuid.UUID, frozenset[int]]:
    return assignment_of((uuid.UUID(bytes=bytes(t)), ps) for t, ps in a.items())


def _group_epoch_record(group_id: str, epoch: int) -> Record:
    return (cr.encode_key(cr.ConsumerGroupMetadataKey(group_id)),
            cr.encode_value(cr.ConsumerGroupMetadataValue(epoch=epoch)))


def _target_metadata_record(group_id: str, epoch: int) -> Record:
    return (cr.encode_key(cr.ConsumerGroupTargetAssignmentMetadataKey(group_id)),
            cr.encode_value(cr.ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=epoch)))


def _target_member_record(group_id: str, member_id: str, target: Assignment) -> Record:
    return (cr.encode_key(cr.ConsumerGroupTargetAssignmentMemberKey(group_id, member_id)),
            cr.encode_value(cr.ConsumerGroupTargetAssignmentMemberValue(topic_partitions=_record_assignment(target))))


def _current_assignment_record(group_id: str, m: ConsumerGroupMember) -> Record:
    return (cr.encode_key(cr.ConsumerGroupCurrentMemberAssignmentKey(group_id, m.member_id)),
            cr.encode_value(cr.ConsumerGroupCurrentMemberAssignmentValue(
                member_epoch=m.member_epoch, previous_member_epoch=m.previous_member_epoch, state=int(m.state),
                assigned_partitions=_record_assignment(m.assigned),
                partitions_pending_revocation=_record_assignment(m.pending_revocation))))


def _member_metadata_record(group_id: str, m: ConsumerGroupMember) -> Record:
    return (cr.encode_key(cr.ConsumerGroupMemberMetadataKey(group_id, m.member_id)),
            cr.encode_value(cr.ConsumerGroupMemberMetadataValue(
                rack_id=m.rack_id, instance_id=m.instance_id, client_id=m.client_id, client_host=m.client_host,
                subscribed_topic_names=list(m.subscribed_topic_names), subscribed_topic_regex=m.subscribed_topic_regex,
                server_assignor=m.server_assignor, rebalance_timeout_ms=m.rebalance_timeout_ms,
                classic_member_metadata=m.classic)))


def _regex_record(group_id: str, regex: str, topics: Iterable[str], version: int, timestamp: int) -> Record:
    return (cr.encode_key(cr.ConsumerGroupRegularExpressionKey(group_id, regex)),
            cr.encode_value(cr.ConsumerGroupRegularExpressionValue(topics=sorted(topics), version=version,
                                                                   timestamp=timestamp)))
