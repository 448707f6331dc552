"""The member's side of Kafka's classic group protocol, for ``Consumer(group_id=...)``.

**Coordinator.** FindCoordinator (key type group) names the broker that runs the group; this
member keeps a connection of its own to it (heartbeats and commits never queue behind fetches).
COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS and broken
connections make it look the coordinator up again after ``retry_backoff_ms``.

**Joining** (the eager protocol, as Kafka's ``range``, ``roundrobin`` and ``sticky`` consumers use it):

1. Revoke: commit the positions (``enable_auto_commit``), call the listener's
   ``on_partitions_revoked`` with everything assigned, and stop fetching. A member that lost
   its generation (session timeout, ILLEGAL_GENERATION) commits nothing and calls
   ``on_partitions_lost`` instead: its partitions may be another member's already.
2. JoinGroup with one protocol per assignor (ConsumerProtocolSubscription v1 of the topics,
   with the assignor's user data: for ``sticky``, this member's previous assignment).
   KIP-394: a new dynamic member is answered MEMBER_ID_REQUIRED with its id and joins again
   with it at once. UNKNOWN_MEMBER_ID forgets the member id, ILLEGAL_GENERATION the
   generation; REBALANCE_IN_PROGRESS and the coordinator errors retry. The request may wait
   for the whole rebalance, so its timeout is the rebalance timeout plus ``request_timeout_ms``.
3. The leader (the broker names it) refreshes the metadata of every topic any member
   subscribed to and runs the chosen assignor over the members' subscriptions; it sends the
   assignments in its SyncGroup, the others send none.
4. The SyncGroup answer is this member's assignment. Its committed offsets (OffsetFetch) become
   the positions; partitions without one are left to ``auto_offset_reset``. Then
   ``on_partitions_assigned``.

With ``cooperative-sticky`` as the only assignor (KIP-429, the incremental protocol) the member
keeps consuming what it owns through the rebalance: step 1 commits and revokes only partitions
of topics it no longer subscribes to, the subscription (v2) lists the partitions it owns and
its generation, and after SyncGroup it revokes what it owned and was not given (committing
first), hands ``on_partitions_assigned`` only what is new, and, if it gave anything up, joins
again at once so that the next rebalance can hand those partitions to their new owner.

A rejoin is requested by a heartbeat or commit answered REBALANCE_IN_PROGRESS,
ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID, by a change of the subscription, by a pattern
subscription matching other topics, or (on the leader) by a subscribed topic changing its
partition count; the last two are checked every ``metadata_max_age_ms``.

**Heartbeats** go every ``heartbeat_interval_ms`` from a background task while the member has a
generation. If the application does not poll (getmany/getone/async for/getbatches) for
``max_poll_interval_ms``, the member leaves the group as Kafka's consumer does, and joins again
at its next poll.

**Commits** (OffsetCommit) carry the generation and member id when the member is in the group,
else generation -1 (a *simple* commit, as for ``assign()`` consumers with a ``group_id``).
ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID raise CommitFailedError (the partitions may belong to
someone else now) and REBALANCE_IN_PROGRESS raises RebalanceInProgressError, each after
requesting a rejoin. Auto-commit commits the positions every ``auto_commit_interval_ms``,
before each revocation and on close.

**Leaving.** A dynamic member sends LeaveGroup on close so its partitions move at once; a
static member (``group_instance_id``, KIP-345) does not: restarted within the session timeout,
it gets the same assignment back without a rebalance.

**Fatal errors** (FENCED_INSTANCE_ID, INVALID_SESSION_TIMEOUT, GROUP_MAX_SIZE_REACHED,
INCONSISTENT_GROUP_PROTOCOL, GROUP_AUTHORIZATION_FAILED, ...) stop the member; the consumer
raises them from its next poll.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from client.cluster import Cluster
from client.conn import BrokerConnection
from client.errors import KafkaConnectionError, KafkaError, error_for_code
from client.group.assignors import ASSIGNORS, MemberSubscription, PartitionAssignor
from client.group.coordinator_link import CoordinatorLink
from client.group.offsets import CommitFailedError, GroupOffsets
from client.group.protocol import (
    CONSUMER_PROTOCOL_TYPE,
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from client.protocol.api import ApiKey, ErrorCode, error_name
from client.protocol.primitives import DecodeError
from client.structs import TopicPartition

__all__ = ["ConsumerCoordinator", "ConsumerRebalanceListener", "CommitFailedError"]

logger = logging.getLogger("client.consumer")

E = ErrorCode
_COORDINATOR_GONE = {E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR}
_RETRY = {E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR}


class ConsumerRebalanceListener:
    """Override either method (plain or ``async def``). ``on_partitions_revoked`` runs before a
    rebalance with everything this member had (after the auto-commit), ``on_partitions_assigned``
    after it with the new assignment (positions set from the committed offsets)."""

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> Awaitable[None] | None:
        return None

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> Awaitable[None] | None:
        return None

    def on_partitions_lost(self, lost: set[TopicPartition]) -> Awaitable[None] | None:
        """The member was dropped from the group (session timeout, fenced generation): its
        partitions may already be someone else's, so nothing was committed. By default the
        same as ``on_partitions_revoked``, as in Kafka."""
        return self.on_partitions_revoked(lost)


class _Rejoin(Exception):
    """Start the join again (after the backoff)."""


class ConsumerCoordinator(CoordinatorLink, GroupOffsets):
    """One group member. ``apply_assignment(partitions, positions)`` is the consumer's: it
    replaces what the consumer fetches and sets the given positions; ``positions()`` gives the
    consumer's current positions (what auto-commit commits)."""

    def __init__(self, cluster: Cluster, *, group_id: str, group_instance_id: str | None,
                 session_timeout_ms: int, rebalance_timeout_ms: int, heartbeat_interval_ms: int,
                 max_poll_interval_ms: int, assignors: Iterable[str | PartitionAssignor],
                 enable_auto_commit: bool, auto_commit_interval_ms: int, retry_backoff_ms: int,
                 request_timeout_ms: int, metadata_max_age_ms: int, exclude_internal_topics: bool,
                 apply_assignment: Callable[[list[TopicPartition], dict[TopicPartition, int]], None],
                 positions: Callable[[], dict[TopicPartition, int]],
                 wake_consumer: Callable[[], None]) -> None:
        if not group_id:
            raise ValueError("group_id must be a non-empty string")
        if heartbeat_interval_ms >= session_timeout_ms:
            raise ValueError("heartbeat_interval_ms must be lower than session_timeout_ms")
        self.cluster = cluster
        self.group_id = group_id
        self.group_instance_id = group_instance_id
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.max_poll_interval_ms = max_poll_interval_ms
        self.assignors: list[PartitionAssignor] = []
        for a in assignors:
            if isinstance(a, str):
                cls = ASSIGNORS.get(a)
                if cls is None:
                    raise ValueError(f"unknown partition assignor {a!r} (known: {', '.join(ASSIGNORS)})")
                self.assignors.append(cls())
            else:
                self.assignors.append(a)
        if not self.assignors:
            raise ValueError("partition_assignment_strategy is empty")
        #: KIP-429's incremental protocol, when every assignor supports it (Kafka's rule)
        self.cooperative = all(a.cooperative for a in self.assignors)
        self.enable_auto_commit = enable_auto_commit
        self.auto_commit_interval_ms = auto_commit_interval_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.request_timeout_ms = request_timeout_ms
        self.metadata_max_age_ms = metadata_max_age_ms
        self.exclude_internal_topics = exclude_internal_topics
        self._apply_assignment = apply_assignment
        self._positions = positions
        self._wake_consumer = wake_consumer

        self.member_id = ""
        self.generation = -1
        self.protocol: str | None = None
        self.leader_id: str | None = None
        self._coordinator: tuple[int, str, int] | None = None
        self.topics: set[str] = set()  # what this member subscribes to
        self.pattern: re.Pattern[str] | None = None
        self.listener: ConsumerRebalanceListener | None = None
        self.subscribed = False
        self.assigned: set[TopicPartition] = set()
        self._assigned_generation = -1  # the generation ``assigned`` was given in
        self.error: BaseException | None = None  # fatal: raised from the consumer's next poll
        self._metadata_checked = 0.0
        self._group_topics: dict[str, int] = {}  # leader: partition counts it assigned
        self._rejoin_needed = True
        self._joining = False
        self._poll_expired = False
        self.last_poll = time.monotonic()
        self._committed_positions: dict[TopicPartition, int] = {}
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.closed = False

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._run()), loop.create_task(self._heartbeat_loop())]
        if self.enable_auto_commit:
            self._tasks.append(loop.create_task(self._auto_commit_loop()))

    async def close(self, *, leave: bool = True) -> None:
        """Final auto-commit, revocation, LeaveGroup (dynamic members), then stop the tasks."""
        if self.closed:
            return
        self.closed = True
        self._wake.set()
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            try:
                await t
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - closing: the task's outcome no longer matters
                pass
        if self.enable_auto_commit:
            await self._commit_quietly("close")
        if self.subscribed and self.assigned:
            await self._call_listener("on_partitions_revoked" if self.generation >= 0 else "on_partitions_lost",
                                      set(self.assigned))
        if leave:
            await self.leave_group("the consumer is being closed")

    # ------------------------------------------------------------ subscription

    def subscribe(self, topics: Iterable[str], pattern: str | re.Pattern[str] | None,
                  listener: ConsumerRebalanceListener | None) -> None:
        self.pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
        self.topics = set() if self.pattern is not None else set(topics)
        self.listener = listener
        self.subscribed = True
        self._metadata_checked = 0.0  # pattern: resolve at once
        self.request_rejoin()

    async def unsubscribe(self) -> None:
        if self.enable_auto_commit:
            await self._commit_quietly("unsubscribe")
        if self.assigned:
            await self._call_listener("on_partitions_revoked", set(self.assigned))
        self.subscribed = False
        self.topics = set()
        self.pattern = None
        self.assigned = set()
        self._apply_assignment([], {})
        await self.leave_group("the consumer unsubscribed")

    def request_rejoin(self) -> None:
        self._rejoin_needed = True
        self._wake.set()

    def on_poll(self) -> None:
        """The application polled: note the time; raise a fatal group error."""
        self.last_poll = time.monotonic()
        if self._poll_expired:
            self._poll_expired = False
            self.request_rejoin()
        if self.error is not None:
            raise self.error

    # ------------------------------------------------------------ the coordinator

    async def _connection(self) -> BrokerConnection:
        deadline = time.monotonic() + self.request_timeout_ms / 1000
        while True:
            if self._coordinator is None:
                try:
                    await self._find_coordinator()
                except KafkaError as e:
                    if not e.retriable or time.monotonic() >= deadline or self.closed:
                        raise
                    logger.debug("group %s: no coordinator yet: %s", self.group_id, e)
                    await asyncio.sleep(self.retry_backoff_ms / 1000)
                    continue
            assert self._coordinator is not None
            node, host, port = self._coordinator
            try:
                return await self.cluster.coordinator_connection(node, host, port)
            except KafkaConnectionError:
                self._coordinator = None
                if time.monotonic() >= deadline or self.closed:
                    raise
                await asyncio.sleep(self.retry_backoff_ms / 1000)

    async def _find_coordinator(self) -> None:
        node, host, port = await self.cluster.find_coordinator(self.group_id, 0)
        self._coordinator = (node, host, port)
        logger.debug("group %s: coordinator is node %d at %s:%d", self.group_id, node, host, port)

    # ------------------------------------------------------------ join and sync

    async def _run(self) -> None:
        backoff = self.retry_backoff_ms / 1000
        while not self.closed:
            try:
                if self.subscribed and time.monotonic() - self._metadata_checked >= self.metadata_max_age_ms / 1000:
                    await self._check_metadata()
                if self.subscribed and self._rejoin_needed and not self._poll_expired and self.error is None:
                    await self._join_group()
                    backoff = self.retry_backoff_ms / 1000
                    continue
                self._wake.clear()
                wait = self.metadata_max_age_ms / 1000 if self.subscribed else None
                try:
                    await asyncio.wait_for(self._wake.wait(), wait)
                except TimeoutError:
                    pass
            except asyncio.CancelledError:
                raise
            except _Rejoin:
                await asyncio.sleep(backoff)
            except KafkaError as e:
                if not e.retriable:
                    logger.error("group %s: %s", self.group_id, e)
                    self.error = e
                    self._wake_consumer()
                    continue
                logger.info("group %s: %s; retrying", self.group_id, e)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 1.0)
            except Exception as e:
                logger.exception("group %s: unexpected error", self.group_id)
                self.error = e
                self._wake_consumer()

    async def _join_group(self) -> None:
        self._joining = True
        try:
            await self._join_group_once()
        except BaseException:
            self._rejoin_needed = True  # whatever failed, the member has no assignment yet
            raise
        finally:
            self._joining = False

    async def _revoke(self, partitions: set[TopicPartition], lost: bool) -> None:
        """Stop consuming ``partitions``, then (unless ``lost``) commit their last positions: no
        record of theirs is handed out after the positions committed for them."""
        if not partitions:
            return
        final = {tp: om for tp, om in self.positions_to_commit().items() if tp in partitions}
        self.assigned = self.assigned - partitions
        self._apply_assignment(sorted(self.assigned), {})
        if self.enable_auto_commit and not lost:
            await self._commit_quietly("revocation", offsets=final)
        await self._call_listener("on_partitions_lost" if lost else "on_partitions_revoked", set(partitions))

    async def _join_group_once(self) -> None:
        if self.generation < 0:
            await self._revoke(set(self.assigned), lost=True)  # dropped from the group: commit nothing
        elif not self.cooperative:
            await self._revoke(set(self.assigned), lost=False)  # eager: give everything up first
        else:  # cooperative: keep consuming; give up only the topics no longer subscribed to
            if self.enable_auto_commit:
                await self._commit_quietly("rebalance")
            await self._revoke({tp for tp in self.assigned if tp.topic not in self.topics}, lost=False)
        self._rejoin_needed = False
        topics = sorted(self.topics)
        if self.cooperative:
            owned = sorted(self.assigned)
            metadata = {a.name: encode_subscription(Subscription(topics, a.user_data(), owned, self._assigned_generation,
                                                                 None, 2)) for a in self.assignors}
        else:
            metadata = {a.name: encode_subscription(Subscription(topics, a.user_data())) for a in self.assignors}
        timeout = (self.rebalance_timeout_ms + self.request_timeout_ms) / 1000
        while True:
            v, resp = await self._request(ApiKey.JOIN_GROUP, {
                "group_id": self.group_id, "session_timeout_ms": self.session_timeout_ms,
                "rebalance_timeout_ms": self.rebalance_timeout_ms, "member_id": self.member_id,
                "group_instance_id": self.group_instance_id, "protocol_type": CONSUMER_PROTOCOL_TYPE,
                "protocols": [{"name": a.name, "metadata": metadata[a.name]} for a in self.assignors],
                "reason": None}, timeout=timeout)
            code = resp["error_code"]
            if code == E.MEMBER_ID_REQUIRED:
                self.member_id = resp["member_id"]
                continue
            if code:
                self._join_error("JoinGroup", code)
            break
        self.member_id = resp["member_id"]
        self.generation = resp["generation_id"]
        self.protocol = resp["protocol_name"]
        self.leader_id = resp["leader"]
        logger.info("group %s: joined generation %d as %s (%s, leader %s)", self.group_id, self.generation,
                    self.member_id, self.protocol, "this member" if self.leader_id == self.member_id else self.leader_id)
        assignments: list[dict[str, Any]] = []
        if self.leader_id == self.member_id and not resp.get("skip_assignment"):
            assignments = await self._assign(self.protocol or "", resp["members"])
        _, sync = await self._request(ApiKey.SYNC_GROUP, {
            "group_id": self.group_id, "generation_id": self.generation, "member_id": self.member_id,
            "group_instance_id": self.group_instance_id, "protocol_type": CONSUMER_PROTOCOL_TYPE,
            "protocol_name": self.protocol, "assignments": assignments}, timeout=timeout)
        if sync["error_code"]:
            self._join_error("SyncGroup", sync["error_code"])
        try:
            assignment = decode_assignment(sync["assignment"])
        except DecodeError as e:
            raise KafkaError(f"group {self.group_id}: undecodable assignment from the leader: {e}") from None
        partitions = sorted(set(assignment.partitions))
        added = sorted(set(partitions) - self.assigned)
        revoked = self.assigned - set(partitions)  # cooperative only: eager revoked everything first
        committed = await self.fetch_committed(added) if added else {}
        if self.closed or (self._rejoin_needed and not self.cooperative):
            return  # superseded while fetching the offsets: no assignment to hand out
        for a in self.assignors:
            if a.name == self.protocol:
                a.on_assignment(partitions, self.generation)
        await self._revoke(revoked, lost=False)
        self.assigned = set(partitions)
        self._assigned_generation = self.generation
        self._apply_assignment(partitions, {tp: om.offset for tp, om in committed.items()
                                            if om is not None and om.offset >= 0})
        self._committed_positions = {tp: o for tp, o in self._committed_positions.items() if tp in self.assigned}
        self._committed_positions.update((tp, om.offset) for tp, om in committed.items() if om is not None)
        if revoked:
            # KIP-429: what this member gave up goes to its new owner in the next rebalance
            self.request_rejoin()
        await self._call_listener("on_partitions_assigned", set(added))

    def _join_error(self, what: str, code: int) -> None:
        """Act on an error of JoinGroup/SyncGroup: reset what it invalidates, then retry (or
        raise a fatal error)."""
        if code == E.UNKNOWN_MEMBER_ID:
            self.member_id, self.generation = "", -1
        elif code == E.ILLEGAL_GENERATION:
            self.generation = -1
        elif code in _COORDINATOR_GONE:
            self._coordinator = None
        elif code not in (E.REBALANCE_IN_PROGRESS, E.COORDINATOR_LOAD_IN_PROGRESS):
            raise error_for_code(code, f"{what} for group {self.group_id!r}: {error_name(code)}")
        logger.info("group %s: %s answered %s; joining again", self.group_id, what, error_name(code))
        self._rejoin_needed = True
        raise _Rejoin()

    async def _assign(self, protocol: str, members: list[dict[str, Any]]) -> list[dict[str, Any]]:
        assignor = next((a for a in self.assignors if a.name == protocol), None)
        if assignor is None:
            raise error_for_code(E.INCONSISTENT_GROUP_PROTOCOL,
                                 f"group {self.group_id!r} chose assignor {protocol!r}, which this consumer lacks")
        subs: dict[str, MemberSubscription] = {}
        for m in members:
            try:
                sub = decode_subscription(m["metadata"])
            except DecodeError as e:
                logger.warning("group %s: member %s sent an undecodable subscription (%s); it gets nothing",
                               self.group_id, m["member_id"], e)
                sub = Subscription([])
            subs[m["member_id"]] = MemberSubscription(m["member_id"], m.get("group_instance_id"), list(sub.topics),
                                                      sub.user_data, list(sub.owned_partitions), sub.generation_id)
        wanted = sorted({t for s in subs.values() for t in s.topics})
        counts = await self._partition_counts(wanted)
        result = assignor.assign(counts, subs)
        self._group_topics = counts
        logger.info("group %s: %s assignment of %d partitions to %d members", self.group_id, protocol,
                    sum(counts.values()), len(subs))
        return [{"member_id": m, "assignment": encode_assignment_for(result.get(m, []))} for m in subs]

    async def _partition_counts(self, topics: list[str]) -> dict[str, int]:
        if not topics:
            return {}
        md = await self.cluster.refresh_metadata(topics)
        return {t: len(tm.partitions) for t, tm in md.items() if tm.error_code == 0 and tm.partitions}

    async def _check_metadata(self) -> None:
        """Pattern subscriptions: re-match the topic names. Leader: partition counts changed?"""
        self._metadata_checked = time.monotonic()
        if self.pattern is not None:
            md = await self.cluster.refresh_metadata(None)
            matched = {t for t, tm in md.items() if tm.error_code == 0 and self.pattern.fullmatch(t)
                       and not (self.exclude_internal_topics and tm.internal)}
            if matched != self.topics:
                logger.info("group %s: pattern %r now matches %s", self.group_id, self.pattern.pattern, sorted(matched))
                self.topics = matched
                self.request_rejoin()
        if self.generation >= 0 and self.leader_id == self.member_id and not self._rejoin_needed:
            counts = await self._partition_counts(sorted(self._group_topics))
            if counts != self._group_topics:
                logger.info("group %s: partitions of the subscribed topics changed; rebalancing", self.group_id)
                self.request_rejoin()

    async def _call_listener(self, method: str, partitions: set[TopicPartition]) -> None:
        if self.listener is None:
            return
        try:
            got = getattr(self.listener, method)(partitions)
            if inspect.isawaitable(got):
                await got
        except Exception:
            logger.exception("group %s: the rebalance listener's %s failed", self.group_id, method)

    # ------------------------------------------------------------ heartbeats and leaving

    async def _heartbeat_loop(self) -> None:
        while not self.closed:
            await asyncio.sleep(self.heartbeat_interval_ms / 1000)
            if self.generation < 0 or self._joining or not self.subscribed:
                continue
            if time.monotonic() - self.last_poll > self.max_poll_interval_ms / 1000 and not self._poll_expired:
                logger.warning("group %s: no poll for more than max_poll_interval_ms (%d): leaving the group;"
                               " it rejoins at the next poll", self.group_id, self.max_poll_interval_ms)
                self._poll_expired = True
                await self.leave_group("consumer poll timeout has expired")
                self.request_rejoin()
                continue
            try:
                _, resp = await self._request(ApiKey.HEARTBEAT, {
                    "group_id": self.group_id, "generation_id": self.generation, "member_id": self.member_id,
                    "group_instance_id": self.group_instance_id}, timeout=self.session_timeout_ms / 1000)
            except asyncio.CancelledError:
                raise
            except KafkaError as e:
                logger.debug("group %s: heartbeat failed: %s", self.group_id, e)
                continue
            code = resp["error_code"]
            if not code or self._joining:
                continue
            if code == E.REBALANCE_IN_PROGRESS:
                logger.info("group %s: rebalance in progress; rejoining", self.group_id)
                self.request_rejoin()
            elif code in (E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID):
                logger.info("group %s: heartbeat answered %s; rejoining", self.group_id, error_name(code))
                self.generation = -1
                if code == E.UNKNOWN_MEMBER_ID:
                    self.member_id = ""
                self.request_rejoin()
            elif code in _RETRY:
                self._coordinator = None
            else:
                self.error = error_for_code(code, f"Heartbeat for group {self.group_id!r}: {error_name(code)}")
                logger.error("group %s: %s", self.group_id, self.error)
                self._wake_consumer()

    async def leave_group(self, reason: str) -> None:
        """LeaveGroup for a dynamic member (errors only logged); a static member stays."""
        member, self.member_id, self.generation = self.member_id, "", -1
        if self.group_instance_id is not None or not member:
            if self.group_instance_id is not None:
                self.member_id = member  # a static member keeps its id across polls
            return
        try:
            v, resp = await self._request(ApiKey.LEAVE_GROUP, {
                "group_id": self.group_id, "member_id": member,
                "members": [{"member_id": member, "group_instance_id": None, "reason": reason}]},
                timeout=self.request_timeout_ms / 1000)
            code = resp["error_code"] or next((m["error_code"] for m in resp.get("members", []) if m["error_code"]), 0)
            if code:
                logger.info("group %s: LeaveGroup answered %s", self.group_id, error_name(code))
        except KafkaError as e:
            logger.info("group %s: LeaveGroup failed: %s", self.group_id, e)

def encode_assignment_for(partitions: list[TopicPartition]) -> bytes:
    return encode_assignment(Assignment(partitions))
