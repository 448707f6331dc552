"""Incremental fetch sessions (KIP-227): the broker remembers what a consumer fetches, so that
a consumer of many partitions sends, and is answered, only what changed.

A fetch request carries ``session_id`` and ``session_epoch`` (Fetch v7+):

- epoch -1: no session (a session id other than 0 is closed first); a full request, a full
  answer with session id 0.
- epoch 0: a full request that asks for a session (a session id other than 0 is closed
  first). The answer is full; if the cache has room (see eviction) it carries the new
  session's id, and the next request of that session has epoch 1.
- epoch n > 0: an incremental request of session ``session_id``: its partitions are added to
  the session or update it (fetch offset, max bytes, ...), its ``forgotten_topics_data`` leave
  it, and the answer holds only the session's partitions that have something to say: records,
  an error, a diverging epoch, or a high watermark or log start offset other than the last one
  answered. An unknown session is FETCH_SESSION_ID_NOT_FOUND, an epoch other than the one
  expected INVALID_FETCH_SESSION_EPOCH, a session opened by names (v7-12) continued by topic
  ids (v13+) or the other way round FETCH_SESSION_TOPIC_ID_ERROR; clients then start over with
  a full request. Each accepted request moves the expected epoch on by one (after 2^31-1: 1),
  as soon as it arrives, so a request sent twice is refused the second time.

A session's partitions keep their order; a partition answered with records moves to the end,
so that with a small ``max_bytes`` every partition gets its turn (Kafka does the same).

The cache (``FetchSessionCache``) holds at most ``max.incremental.fetch.session.cache.slots``
sessions (Kafka's default, 1000). A new session takes a free slot; with none free it evicts
the least recently used session if that one is idle for longer than
``min.incremental.fetch.session.eviction.ms`` (120000), else the session with the fewest
partitions if it has fewer than the new one (a consumer of many partitions gains most), else
it gets no session: the answer says session id 0, as Kafka's does, and the client keeps
sending full requests. Memory is bounded by the slots times the partitions a request may name.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .storage.log import Log

__all__ = ["CachedPartition", "FetchSession", "FetchSessionCache", "TopicKey", "next_epoch"]

#: how a session names a topic: its id in a session opened by ids (Fetch v13+), else its name
TopicKey = str | uuid.UUID

#: the largest session epoch; the one after it is 1 (0 and -1 mean "full request")
MAX_EPOCH = 0x7FFFFFFF


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= MAX_EPOCH else epoch + 1


@dataclass(slots=True)
class CachedPartition:
    """One partition of a session: what the client last asked for (``request``, the Fetch
    request's partition entry: fetch_offset, partition_max_bytes, ...) and what it was last
    answered (-1 before any answer, and after an error, so the next answer includes it).
    ``fetch_offset`` and ``plain`` (no leader epochs to check) are read from ``request`` once;
    ``log`` is the partition's log as last looked up (looked up again once it is closed)."""

    topic: str
    topic_id: uuid.UUID | None
    request: dict[str, Any]
    high_watermark: int = -1
    log_start_offset: int = -1
    fetch_offset: int = field(init=False)
    plain: bool = field(init=False)
    log: Log | None = None

    def __post_init__(self) -> None:
        self.set_request(self.request)

    def set_request(self, request: dict[str, Any]) -> None:
        self.request = request
        self.fetch_offset = request["fetch_offset"]
        self.plain = request.get("current_leader_epoch", -1) <= 0 and request.get("last_fetched_epoch", -1) <= 0


@dataclass(slots=True)
class FetchSession:
    id: int
    #: the epoch the next incremental request must carry
    epoch: int
    #: opened by topic ids (Fetch v13+) or by names
    uses_topic_ids: bool
    #: (topic id or name, partition) -> the partition, in the session's order (a dict keeps
    #: insertion order)
    partitions: dict[tuple[TopicKey, int], CachedPartition] = field(default_factory=dict)
    last_used: float = 0.0

    def __len__(self) -> int:
        return len(self.partitions)

    def update(self, topics: Iterable[tuple[str, uuid.UUID | None, list[dict[str, Any]]]],
               forgotten: Iterable[tuple[TopicKey, list[int]]]) -> None:
        """An incremental request: add or update its partitions (each topic as (name, id,
        the request's partition entries); the name is "" for an unknown id), then drop the
        forgotten ones."""
        parts = self.partitions
        by_id = self.uses_topic_ids
        for name, topic_id, plist in topics:
            tkey: TopicKey = topic_id if by_id and topic_id is not None else name
            for p in plist:
                key = (tkey, p["partition"])
                cached = parts.get(key)
                if cached is None:
                    parts[key] = CachedPartition(name, topic_id, p)
                else:
                    cached.set_request(p)
        for tkey, indexes in forgotten:
            for i in indexes:
                parts.pop((tkey, i), None)

    def answered(self, key: tuple[TopicKey, int], high_watermark: int, log_start_offset: int, error: int,
                 had_records: bool) -> None:
        """Record what a partition was answered; one answered with records moves to the end."""
        cached = self.partitions.get(key)
        if cached is None:
            return
        cached.high_watermark = -1 if error else high_watermark
        cached.log_start_offset = log_start_offset
        if had_records:
            del self.partitions[key]
            self.partitions[key] = cached


class FetchSessionCache:
    """The broker's fetch sessions, bounded by ``slots``; see the module docstring."""

    def __init__(self, slots: int, eviction_ms: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.slots = slots
        self.eviction_s = eviction_ms / 1000
        self.clock = clock
        #: id -> session, least recently used first
        self._sessions: dict[int, FetchSession] = {}
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._sessions)

    @property
    def partitions_cached(self) -> int:
        return sum(len(s) for s in self._sessions.values())

    def get(self, session_id: int) -> FetchSession | None:
        """The session, marked as just used (it moves to the most recently used end)."""
        s = self._sessions.pop(session_id, None)
        if s is not None:
            s.last_used = self.clock()
            self._sessions[session_id] = s
        return s

    def remove(self, session_id: int) -> None:
        self._sessions.pop(session_id, None)

    def create(self, uses_topic_ids: bool,
               partitions: dict[tuple[TopicKey, int], CachedPartition]) -> FetchSession | None:
        """A new session for a full request's partitions, or None when the cache has no room."""
        if self.slots <= 0 or (len(self._sessions) >= self.slots and not self._evict_for(len(partitions))):
            return None
        sid = random.randint(1, MAX_EPOCH)
        while sid in self._sessions:
            sid = random.randint(1, MAX_EPOCH)
        s = FetchSession(sid, 1, uses_topic_ids, partitions, self.clock())
        self._sessions[sid] = s
        return s

    def _evict_for(self, size: int) -> bool:
        oldest_id = next(iter(self._sessions))
        if self.clock() - self._sessions[oldest_id].last_used > self.eviction_s:
            victim = oldest_id
        else:
            victim = min(self._sessions, key=lambda i: len(self._sessions[i]))
            if len(self._sessions[victim]) >= size:
                return False
        del self._sessions[victim]
        self.evictions += 1
        return True
