"""The member's side of KIP-848's consumer group protocol, for
``Consumer(group_id=..., group_protocol="consumer")``: the broker assigns, the member
reconciles.

**Heartbeats** (ConsumerGroupHeartbeat v1): the member generates its id (a UUID, KIP-1082) and
joins with epoch 0, its subscription (topic names, or a regular expression in RE2 syntax that
the broker resolves: ``pattern``), its rebalance timeout and, if set,
``group_remote_assignor``. Afterwards it heartbeats every ``heartbeat_interval_ms`` *the broker
gives*, sending only what changed (null means unchanged): its subscription after
``subscribe()``, the partitions it owns after a reconciliation.

**Reconciliation**, whenever a response carries an assignment (topic ids, named through the
metadata):

1. partitions no longer assigned are revoked: fetching stops and no more of their records are
   handed out, then their last positions are committed (``enable_auto_commit``) and
   ``on_partitions_revoked`` is called with just those;
2. partitions newly assigned get their committed offsets as positions (the others are left to
   ``auto_offset_reset``), fetching starts, ``on_partitions_assigned`` is called with just those;
3. a heartbeat reporting what the member now owns goes at once: that acknowledgement is what
   lets the broker hand revoked partitions to their next owner.

Partitions kept are consumed throughout: there is no stop-the-world barrier.

**Errors**: UNKNOWN_MEMBER_ID and FENCED_MEMBER_EPOCH mean the member was fenced (its session
ran out, or it missed a revocation deadline): its partitions are *lost* (``on_partitions_lost``,
nothing committed) and it joins again with epoch 0 and the same member id. The coordinator
errors look the coordinator up again; UNRELEASED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED,
UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION, GROUP_AUTHORIZATION_FAILED and the like stop
the member and are raised from the next poll.

**Commits** carry the member epoch (OffsetCommit's ``generation_id_or_member_epoch``);
STALE_MEMBER_EPOCH (the epoch moved between the commit and its answer) is retried with the new
epoch until the request timeout.

**Leaving**: a heartbeat with epoch -1 on close or unsubscribe; a static member
(``group_instance_id``) sends -2, so that its next instance takes its assignment over. No poll
for ``max_poll_interval_ms`` leaves the group too (it rejoins at the next poll).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from client.cluster import Cluster
from client.errors import KafkaError, error_for_code
from client.group.coordinator import ConsumerRebalanceListener
from client.group.coordinator_link import CoordinatorLink
from client.group.offsets import GroupOffsets
from client.protocol.api import ApiKey, ErrorCode, error_name
from client.structs import TopicPartition

__all__ = ["ConsumerGroupMember"]

logger = logging.getLogger("client.consumer")

E = ErrorCode
_COORDINATOR_GONE = {E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR}
_FENCED = {E.UNKNOWN_MEMBER_ID, E.FENCED_MEMBER_EPOCH}


class ConsumerGroupMember(CoordinatorLink, GroupOffsets):
    """One member of a KIP-848 consumer group; the same interface to ``Consumer`` as the
    classic ``ConsumerCoordinator``. ``generation`` is the member epoch (-1 outside the group)."""

    def __init__(self, cluster: Cluster, *, group_id: str, group_instance_id: str | None,
                 rebalance_timeout_ms: int, max_poll_interval_ms: int, remote_assignor: str | None,
                 enable_auto_commit: bool, auto_commit_interval_ms: int, retry_backoff_ms: int,
                 request_timeout_ms: int, apply_assignment: Callable[[list[TopicPartition], dict[TopicPartition, int]],
                                                                      None],
                 positions: Callable[[], dict[TopicPartition, int]], wake_consumer: Callable[[], None]) -> None:
        if not group_id:
            raise ValueError("group_id must be a non-empty string")
        self.cluster = cluster
        self.group_id = group_id
        self.group_instance_id = group_instance_id
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.max_poll_interval_ms = max_poll_interval_ms
        self.remote_assignor = remote_assignor
        self.enable_auto_commit = enable_auto_commit
        self.auto_commit_interval_ms = auto_commit_interval_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.request_timeout_ms = request_timeout_ms
        self._apply_assignment = apply_assignment
        self._positions = positions
        self._wake_consumer = wake_consumer

        self.member_id = str(uuid.uuid4())
        self.generation = -1  # the member epoch; -1 outside the group
        self.heartbeat_interval_ms = 5000  # until the broker says
        self._coordinator: tuple[int, str, int] | None = None
        self.topics: set[str] = set()
        self.pattern: str | None = None
        self.listener: ConsumerRebalanceListener | None = None
        self.subscribed = False
        self.assigned: set[TopicPartition] = set()
        self.error: BaseException | None = None
        self._joining = False
        self._send_subscription = True  # the next heartbeat carries the subscription
        self._send_owned = True  # ... and the partitions owned
        self._poll_expired = False
        self.last_poll = time.monotonic()
        self._committed_positions: dict[TopicPartition, int] = {}
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.closed = False

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._run())]
        if self.enable_auto_commit:
            self._tasks.append(loop.create_task(self._auto_commit_loop()))

    async def close(self, *, leave: bool = True) -> None:
        if self.closed:
            return
        self.closed = True
        self._wake.set()
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            try:
                await t
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - closing
                pass
        if self.enable_auto_commit:
            await self._commit_quietly("close")
        if self.subscribed and self.assigned:
            await self._call_listener("on_partitions_revoked", set(self.assigned))
        if leave:
            await self.leave_group("the consumer is being closed")

    # ------------------------------------------------------------ subscription

    def subscribe(self, topics: Iterable[str], pattern: str | re.Pattern[str] | None,
                  listener: ConsumerRebalanceListener | None) -> None:
        self.pattern = pattern.pattern if isinstance(pattern, re.Pattern) else pattern
        self.topics = set() if self.pattern is not None else set(topics)
        self.listener = listener
        self.subscribed = True
        self._send_subscription = True
        self._wake.set()

    async def unsubscribe(self) -> None:
        if self.enable_auto_commit:
            await self._commit_quietly("unsubscribe")
        if self.assigned:
            await self._call_listener("on_partitions_revoked", set(self.assigned))
        self.assigned = set()
        self._apply_assignment([], {})
        await self.leave_group("the consumer unsubscribed")
        self.subscribed = False
        self.topics = set()
        self.pattern = None

    def request_rejoin(self) -> None:
        """Send a full heartbeat at once (after a commit found the epoch stale)."""
        self._send_subscription = self._send_owned = True
        self._wake.set()

    def on_poll(self) -> None:
        self.last_poll = time.monotonic()
        if self._poll_expired:
            self._poll_expired = False
            self.request_rejoin()
        if self.error is not None:
            raise self.error

    # ------------------------------------------------------------ heartbeats

    async def _run(self) -> None:
        backoff = self.retry_backoff_ms / 1000
        while not self.closed:
            try:
                if not self.subscribed or self.error is not None or self._poll_expired:
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                if time.monotonic() - self.last_poll > self.max_poll_interval_ms / 1000 and self.generation >= 0:
                    logger.warning("group %s: no poll for more than max_poll_interval_ms (%d): leaving the group;"
                                   " it rejoins at the next poll", self.group_id, self.max_poll_interval_ms)
                    self._poll_expired = True
                    await self._lose("poll timeout")
                    await self.leave_group("consumer poll timeout has expired")
                    continue
                again = await self._heartbeat()
                backoff = self.retry_backoff_ms / 1000
                if again:
                    continue
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), self.heartbeat_interval_ms / 1000)
                except TimeoutError:
                    pass
            except asyncio.CancelledError:
                raise
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

    async def _heartbeat(self) -> bool:
        """One heartbeat and what its answer asks for; True to send the next one at once."""
        joining = self.generation < 0
        full = joining or self._send_subscription
        body: dict[str, Any] = {
            "group_id": self.group_id, "member_id": self.member_id, "member_epoch": max(self.generation, 0),
            "instance_id": self.group_instance_id, "rack_id": None,
            "rebalance_timeout_ms": self.rebalance_timeout_ms if full else -1,
            "subscribed_topic_names": (sorted(self.topics) if self.pattern is None else []) if full else None,
            "subscribed_topic_regex": (self.pattern or "") if full else None,
            "server_assignor": self.remote_assignor if full else None,
            "topic_partitions": None}
        if joining:
            body["topic_partitions"] = []
        elif self._send_owned or full:
            body["topic_partitions"] = await self._owned_by_id()
        self._joining = joining
        try:
            _, resp = await self._request(ApiKey.CONSUMER_GROUP_HEARTBEAT, body,
                                          timeout=self.request_timeout_ms / 1000, max_version=1)
        finally:
            self._joining = False
        code = resp["error_code"]
        if code:
            return await self._heartbeat_error(code, resp.get("error_message"))
        self._send_subscription = self._send_owned = False
        self.generation = resp["member_epoch"]
        self.heartbeat_interval_ms = resp["heartbeat_interval_ms"] or self.heartbeat_interval_ms
        if resp["assignment"] is not None:
            return await self._reconcile(resp["assignment"]["topic_partitions"])
        return False

    async def _heartbeat_error(self, code: int, message: str | None) -> bool:
        what = f"ConsumerGroupHeartbeat for group {self.group_id!r}: {error_name(code)}" + (
            f" ({message})" if message else "")
        if code in _FENCED:
            logger.info("%s; the member's partitions are lost, it joins again", what)
            await self._lose(error_name(code))
            return True
        if code in _COORDINATOR_GONE or code == E.COORDINATOR_LOAD_IN_PROGRESS:
            if code in _COORDINATOR_GONE:
                self._coordinator = None
            await asyncio.sleep(self.retry_backoff_ms / 1000)
            return True
        raise error_for_code(code, what)

    async def _lose(self, why: str) -> None:
        """Fenced: the partitions may be someone else's already; nothing is committed."""
        lost = set(self.assigned)
        self.assigned = set()
        self.generation = -1
        self._apply_assignment([], {})
        if lost:
            await self._call_listener("on_partitions_lost", lost)

    async def _owned_by_id(self) -> list[dict[str, Any]]:
        by_topic: dict[str, list[int]] = {}
        for tp in self.assigned:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        ids = await self.cluster.topic_ids(by_topic) or {}
        return [{"topic_id": ids[t], "partitions": sorted(ps)} for t, ps in sorted(by_topic.items()) if t in ids]

    async def _reconcile(self, assignment: list[dict[str, Any]]) -> bool:
        names = await self.cluster.topic_names(tp["topic_id"] for tp in assignment)
        target = {TopicPartition(names[tp["topic_id"]], p) for tp in assignment if tp["topic_id"] in names
                  for p in tp["partitions"]}
        revoked = self.assigned - target
        added = target - self.assigned
        if not revoked and not added:
            return False
        if revoked:
            # the revoked partitions stop handing out records first (as Kafka's consumer marks
            # them pending revocation): the positions committed below are their last ones, and
            # the next owner starts where this member stopped
            final = {tp: om for tp, om in self.positions_to_commit().items() if tp in revoked}
            self.assigned -= revoked
            self._apply_assignment(sorted(self.assigned), {})
            if self.enable_auto_commit:
                await self._commit_quietly("revocation", offsets=final)
            await self._call_listener("on_partitions_revoked", revoked)
        if added:
            committed = await self.fetch_committed(added)
            self.assigned |= added
            self._apply_assignment(sorted(self.assigned), {tp: om.offset for tp, om in committed.items()
                                                          if om is not None and om.offset >= 0})
            self._committed_positions.update((tp, om.offset) for tp, om in committed.items() if om is not None)
            await self._call_listener("on_partitions_assigned", added)
        logger.info("group %s: epoch %d: +%d -%d partitions, %d owned", self.group_id, self.generation, len(added),
                    len(revoked), len(self.assigned))
        self._send_owned = True
        return True  # acknowledge at once

    async def _call_listener(self, method: str, partitions: set[TopicPartition]) -> None:
        if self.listener is None:
            return
        try:
            got = getattr(self.listener, method)(partitions)
            if inspect.isawaitable(got):
                await got
        except Exception:
            logger.exception("group %s: the rebalance listener's %s failed", self.group_id, method)

    # ------------------------------------------------------------ leaving

    async def leave_group(self, reason: str) -> None:
        """A heartbeat with epoch -1 (-2 for a static member); errors only logged."""
        if self.generation < 0:
            return
        epoch = -2 if self.group_instance_id is not None else -1
        self.generation = -1
        try:
            _, resp = await self._request(ApiKey.CONSUMER_GROUP_HEARTBEAT, {
                "group_id": self.group_id, "member_id": self.member_id, "member_epoch": epoch,
                "instance_id": self.group_instance_id, "rack_id": None, "rebalance_timeout_ms": -1,
                "subscribed_topic_names": None, "subscribed_topic_regex": None, "server_assignor": None,
                "topic_partitions": None}, timeout=self.request_timeout_ms / 1000, max_version=1)
            if resp["error_code"]:
                logger.info("group %s: leaving answered %s", self.group_id, error_name(resp["error_code"]))
            else:
                logger.info("group %s: left (%s)", self.group_id, reason)
        except KafkaError as e:
            logger.info("group %s: leaving failed: %s", self.group_id, e)
