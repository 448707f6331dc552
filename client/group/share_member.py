"""The member's side of a share group (KIP-932), for ``client.share_consumer.ShareConsumer``.

**Heartbeats** (ShareGroupHeartbeat v1) go to the group's coordinator (FindCoordinator, key type
0 as for other groups). The member generates its id (a UUID) and joins with epoch 0 and its
subscription; then heartbeats every ``heartbeat_interval_ms`` *the broker gives* with its epoch,
sending the subscription again only after ``subscribe()`` changed it (null: unchanged). A
response with an assignment (topic ids, named through the metadata) replaces the member's
assignment; there is nothing to revoke or commit first: a share group's records, not its
partitions, are what a member holds (locked per record by ShareFetch).

**Errors**: UNKNOWN_MEMBER_ID and FENCED_MEMBER_EPOCH (its session ran out) make it join again
with epoch 0 and the same member id, its assignment emptied meanwhile; the coordinator errors
look the coordinator up again; others (GROUP_AUTHORIZATION_FAILED, GROUP_MAX_SIZE_REACHED,
INVALID_REQUEST, GROUP_ID_NOT_FOUND for an id of another group type) stop the member and are
raised from the next poll.

**Leaving**: a heartbeat with epoch -1 (``leave``), on close or unsubscribe.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from typing import Any

from client.cluster import Cluster
from client.errors import KafkaError, error_for_code
from client.group.coordinator_link import CoordinatorLink
from client.protocol.api import ApiKey, ErrorCode, error_name
from client.structs import TopicPartition

__all__ = ["ShareGroupMember"]

logger = logging.getLogger("client.share_consumer")

E = ErrorCode
_COORDINATOR_GONE = {E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR}
_FENCED = {E.UNKNOWN_MEMBER_ID, E.FENCED_MEMBER_EPOCH}


class ShareGroupMember(CoordinatorLink):
    """One member of a share group: its id, epoch, subscription and assignment."""

    def __init__(self, cluster: Cluster, *, group_id: str, retry_backoff_ms: int, request_timeout_ms: int,
                 on_assignment: Callable[[], None] = lambda: None) -> None:
        if not group_id:
            raise ValueError("group_id must be a non-empty string")
        self.cluster = cluster
        self.group_id = group_id
        self.retry_backoff_ms = retry_backoff_ms
        self.request_timeout_ms = request_timeout_ms
        self._on_assignment = on_assignment
        self.member_id = str(uuid.uuid4())
        self.member_epoch = 0  # 0: (re)joining
        self.heartbeat_interval_ms = 5000  # until the broker says
        self.topics: set[str] = set()
        self.assignment: set[TopicPartition] = set()
        self.error: BaseException | None = None
        self.joined = asyncio.Event()  # set once the broker answered a join
        self._send_subscription = True
        self._coordinator: tuple[int, str, int] | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.closed = False

    # -- lifecycle --

    def subscribe(self, topics: set[str]) -> None:
        if topics != self.topics:
            self.topics = set(topics)
            self._send_subscription = True
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
        self._wake.set()

    async def leave(self) -> None:
        """Leave the group (epoch -1); the heartbeat task stops."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - stopping
                pass
        if self.member_epoch > 0:
            try:
                await self._heartbeat_request({"group_id": self.group_id, "member_id": self.member_id, "member_epoch": -1,
                                     "rack_id": None, "subscribed_topic_names": None})
            except KafkaError as e:
                logger.info("share group %s: leaving: %s", self.group_id, e)
        self.member_epoch = 0
        self.assignment = set()
        self.joined.clear()
        self._send_subscription = True

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            await self.leave()

    # -- the coordinator --

    # -- heartbeats --

    async def _heartbeat_request(self, body: dict[str, Any]) -> dict[str, Any]:
        _, resp = await self._request(ApiKey.SHARE_GROUP_HEARTBEAT, body, self.request_timeout_ms / 1000, 1)
        return resp

    async def _run(self) -> None:
        backoff = self.retry_backoff_ms / 1000
        while not self.closed:
            try:
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
                    logger.error("share group %s: %s", self.group_id, e)
                    self.error = e
                    self._on_assignment()
                    return
                logger.info("share group %s: %s; retrying", self.group_id, e)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 1.0)

    async def _heartbeat(self) -> bool:
        """One heartbeat; True to send the next one at once."""
        send_sub = self._send_subscription or self.member_epoch == 0
        self._send_subscription = False
        resp = await self._heartbeat_request({"group_id": self.group_id, "member_id": self.member_id,
                                    "member_epoch": self.member_epoch, "rack_id": None,
                                    "subscribed_topic_names": sorted(self.topics) if send_sub else None})
        code = resp["error_code"]
        if code in _FENCED:
            logger.info("share group %s: %s; joining again", self.group_id, error_name(code))
            self.member_epoch = 0
            self.assignment = set()
            self._on_assignment()
            return True
        if code in _COORDINATOR_GONE or code == E.COORDINATOR_LOAD_IN_PROGRESS:
            if code in _COORDINATOR_GONE:
                self._coordinator = None
            self._send_subscription = self._send_subscription or send_sub
            await asyncio.sleep(self.retry_backoff_ms / 1000)
            return True
        if code:
            raise error_for_code(code, f"ShareGroupHeartbeat of group {self.group_id!r}: "
                                       f"{resp.get('error_message') or error_name(code)}")
        self.member_epoch = resp["member_epoch"]
        if resp["heartbeat_interval_ms"] > 0:
            self.heartbeat_interval_ms = resp["heartbeat_interval_ms"]
        assignment = resp.get("assignment")
        if assignment is not None:
            ids = [t["topic_id"] for t in assignment["topic_partitions"]]
            names = await self.cluster.topic_names(ids)
            self.assignment = {TopicPartition(names[t["topic_id"]], p) for t in assignment["topic_partitions"]
                               if t["topic_id"] in names for p in t["partitions"]}
            logger.debug("share group %s: epoch %d, assigned %s", self.group_id, self.member_epoch,
                         sorted(self.assignment))
            self._on_assignment()
        self.joined.set()
        return False
