"""Committed offsets of a group member (a part of ``ConsumerCoordinator``, kept in its own
module): OffsetCommit with the member's generation (or -1 outside a group), OffsetFetch, and
auto-commit. The rules are in ``client.group.coordinator``'s docstring ("Commits").

Both use the highest version the coordinator and this client share. From v10 (KIP-848's topic
ids) they name topics by id: the ids come from the cached metadata (the consumer has it for the
topics it reads), and a request for a topic whose id is not cached names it instead, at v9, as
Kafka's consumer does; answers by id are matched back by the request's own ids. UNKNOWN_TOPIC_ID
(a cached id gone stale: the topic was deleted and made again) drops the topic's metadata and
the request is made again, by name, until the request timeout."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from client.cluster import Cluster
from client.errors import KafkaError, error_for_code
from client.protocol.api import ApiKey, ErrorCode, error_name
from client.structs import OffsetAndMetadata, TopicPartition

__all__ = ["GroupOffsets", "CommitFailedError"]

logger = logging.getLogger("client.consumer")

E = ErrorCode
_COORDINATOR_GONE = {E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR}
_RETRY = {E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR}
#: OffsetFetch asks for stable offsets (as Kafka's consumer, KIP-447): a partition whose
#: transactional commit is still pending answers UNSTABLE_OFFSET_COMMIT until its transaction
#: ends, and is asked again; the offset handed out is then never one an abort takes back.
_FETCH_RETRY = _RETRY | {E.UNSTABLE_OFFSET_COMMIT}


class CommitFailedError(KafkaError):
    """The commit cannot be completed: the group rebalanced and the partitions may now belong to
    another member (ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID). The consumer rejoins by itself."""


class GroupOffsets:
    """The commit half of ``ConsumerCoordinator``; the attributes below are the coordinator's."""

    cluster: Cluster
    group_id: str
    group_instance_id: str | None
    member_id: str
    generation: int
    subscribed: bool
    closed: bool
    enable_auto_commit: bool
    auto_commit_interval_ms: int
    retry_backoff_ms: int
    request_timeout_ms: int
    _joining: bool
    _coordinator: tuple[int, str, int] | None
    _committed_positions: dict[TopicPartition, int]
    _positions: Callable[[], dict[TopicPartition, int]]

    async def _request(self, key: ApiKey, body: dict[str, Any], timeout: float | None = None,
                       max_version: int | None = None) -> tuple[int, dict[str, Any]]:
        raise NotImplementedError

    def _stale_topic_ids(self, topics: list[dict[str, Any]]) -> bool:
        """After UNKNOWN_TOPIC_ID in ``topics`` (a response by id): forget the metadata of
        the topics named so (their next request names them); whether there were any."""
        stale = [t["name"] for t in topics if any(p["error_code"] == E.UNKNOWN_TOPIC_ID for p in t["partitions"])]
        for name in stale:
            self.cluster.invalidate(name)
        return bool(stale)

    def request_rejoin(self) -> None:
        raise NotImplementedError

    async def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        if not offsets:
            return
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp, om in offsets.items():
            by_topic.setdefault(tp.topic, []).append({
                "partition_index": tp.partition, "committed_offset": om.offset,
                "committed_leader_epoch": om.leader_epoch, "commit_timestamp": -1,
                "committed_metadata": om.metadata})
        if self.subscribed and self.generation < 0:
            raise CommitFailedError(f"group {self.group_id!r}: this member is (re)joining the group and has no"
                                    " partitions to commit for yet")
        deadline = time.monotonic() + self.request_timeout_ms / 1000
        while True:
            in_group = self.subscribed and self.generation >= 0
            ids = self.cluster.known_topic_ids(by_topic)
            try:
                v, resp = await self._request(ApiKey.OFFSET_COMMIT, {
                    "group_id": self.group_id, "generation_id_or_member_epoch": self.generation if in_group else -1,
                    "member_id": self.member_id if in_group else "",
                    "group_instance_id": self.group_instance_id if in_group else None,
                    "retention_time_ms": -1,
                    "topics": [{"name": t, "topic_id": ids[t] if ids else None, "partitions": ps}
                               for t, ps in by_topic.items()]}, max_version=None if ids is not None else 9)
            except KafkaError as e:
                if not e.retriable or time.monotonic() >= deadline:
                    raise
                await asyncio.sleep(self.retry_backoff_ms / 1000)
                continue
            if v >= 10 and ids is not None:  # answered by id
                names = {i: t for t, i in ids.items()}
                for t in resp["topics"]:
                    t["name"] = names.get(t["topic_id"], "")
            code = next((p["error_code"] for t in resp["topics"] for p in t["partitions"] if p["error_code"]), 0)
            if not code:
                for tp, om in offsets.items():
                    self._committed_positions[tp] = om.offset
                return
            what = f"OffsetCommit for group {self.group_id!r}"
            if code == E.UNKNOWN_TOPIC_ID and time.monotonic() < deadline and self._stale_topic_ids(resp["topics"]):
                continue  # named, this time
            if code in _RETRY and time.monotonic() < deadline:
                if code in _COORDINATOR_GONE:
                    self._coordinator = None
                await asyncio.sleep(self.retry_backoff_ms / 1000)
                continue
            if code == E.STALE_MEMBER_EPOCH and time.monotonic() < deadline:
                # KIP-848: the member epoch moved on since the commit was sent; again with the new one
                self.request_rejoin()
                await asyncio.sleep(self.retry_backoff_ms / 1000)
                continue
            if code in (E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID):
                self.generation = -1
                if code == E.UNKNOWN_MEMBER_ID:
                    self.member_id = ""
                self.request_rejoin()
                raise CommitFailedError(f"{what}: {error_name(code)}: the group rebalanced and the partitions may"
                                        " belong to another member now; the consumer rejoins")
            if code == E.REBALANCE_IN_PROGRESS and not self._joining:
                self.request_rejoin()
            raise error_for_code(code, f"{what}: {error_name(code)}")

    def positions_to_commit(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """The consumer's positions that differ from what was last committed."""
        return {tp: OffsetAndMetadata(pos) for tp, pos in self._positions().items()
                if self._committed_positions.get(tp) != pos}

    async def _commit_quietly(self, why: str, partitions: set[TopicPartition] | None = None,
                              offsets: dict[TopicPartition, OffsetAndMetadata] | None = None) -> None:
        """Commit the positions (of ``partitions``, or ``offsets`` taken earlier), logging a
        failure instead of raising it."""
        if offsets is None:
            offsets = self.positions_to_commit()
            if partitions is not None:
                offsets = {tp: om for tp, om in offsets.items() if tp in partitions}
        if not offsets or (self.subscribed and self.generation < 0):
            return  # outside a generation a commit would be refused (or, worse, a simple commit)
        try:
            await self.commit(offsets)
        except KafkaError as e:
            logger.warning("group %s: auto-commit on %s failed: %s", self.group_id, why, e)

    async def _auto_commit_loop(self) -> None:
        while not self.closed:
            await asyncio.sleep(self.auto_commit_interval_ms / 1000)
            if self._joining or (self.subscribed and self.generation < 0):
                continue
            await self._commit_quietly("interval")

    async def fetch_committed(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """Committed offsets (OffsetFetch); None where the group has none."""
        tps = list(partitions)
        by_topic: dict[str, list[int]] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        deadline = time.monotonic() + self.request_timeout_ms / 1000
        while True:
            ids = self.cluster.known_topic_ids(by_topic)
            topics = [{"name": t, "topic_id": ids[t] if ids else None, "partition_indexes": ps}
                      for t, ps in by_topic.items()]
            try:
                v, resp = await self._request(ApiKey.OFFSET_FETCH, {
                    "group_id": self.group_id, "topics": topics, "require_stable": True,
                    "groups": [{"group_id": self.group_id, "member_id": None, "member_epoch": -1, "topics": topics}]},
                    max_version=None if ids is not None else 9)
            except KafkaError as e:
                if not e.retriable or time.monotonic() >= deadline:
                    raise
                await asyncio.sleep(self.retry_backoff_ms / 1000)
                continue
            if v >= 8:
                g = resp["groups"][0]
                code, rtopics = g["error_code"], g["topics"]
            else:
                code, rtopics = resp.get("error_code", 0), resp["topics"]
            if v >= 10 and ids is not None:  # answered by id
                names = {i: t for t, i in ids.items()}
                for t in rtopics:
                    t["name"] = names.get(t["topic_id"], "")
            code = code or next((p["error_code"] for t in rtopics for p in t["partitions"] if p["error_code"]), 0)
            if code:
                if code == E.UNKNOWN_TOPIC_ID and time.monotonic() < deadline and self._stale_topic_ids(rtopics):
                    continue  # named, this time
                if code in _FETCH_RETRY and time.monotonic() < deadline:
                    if code in _COORDINATOR_GONE:
                        self._coordinator = None
                    await asyncio.sleep(self.retry_backoff_ms / 1000)
                    continue
                raise error_for_code(code, f"OffsetFetch for group {self.group_id!r}: {error_name(code)}")
            out: dict[TopicPartition, OffsetAndMetadata | None] = {tp: None for tp in tps}
            for t in rtopics:
                for p in t["partitions"]:
                    tp = TopicPartition(t["name"], p["partition_index"])
                    if p["committed_offset"] >= 0:
                        out[tp] = OffsetAndMetadata(p["committed_offset"], p["metadata"] or "",
                                                    p.get("committed_leader_epoch", -1))
            return out


