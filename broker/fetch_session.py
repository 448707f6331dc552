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

Kafka reads every partition of a session at every fetch; here a session reads only those that
may have changed (``FetchSession.dirty`` and ``unsettled``), which the cache learns of through
``changed(topic, partition)``: the broker calls it for every append (``notify_append``), log
start offset move (DeleteRecords, retention) and deleted topic. An idle session's fetch costs
the same whatever its number of partitions, and its long poll waits on the session itself.

The cache (``FetchSessionCache``) holds at most ``max.incremental.fetch.session.cache.slots``
sessions (Kafka's default, 1000). A new session takes a free slot; with none free it evicts
the least recently used session if that one is idle for longer than
``min.incremental.fetch.session.eviction.ms`` (120000), else the session with the fewest
partitions if it has fewer than the new one (a consumer of many partitions gains most), else
it gets no session: the answer says session id 0, as Kafka's does, and the client keeps
sending full requests. Memory is bounded by the slots times the partitions a request may name.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

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
    answered (-1 before any answer, and after an error). ``seq`` orders the session's
    partitions (the last answered with records last). ``topic`` is the topic's name ("" for a
    topic id no topic has)."""

    topic: str
    topic_id: uuid.UUID | None
    request: dict[str, Any]
    seq: int
    high_watermark: int = -1
    log_start_offset: int = -1


@dataclass(slots=True, eq=False)
class FetchSession:
    """A session (compared and hashed by identity). Its partitions are read only when they
    may have something to say: ``dirty`` ones (named by a request since their last answer, or
    whose log changed: an append, a log start offset moved, deleted) and ``unsettled`` ones
    (last answered with an error, or with records left to read at their fetch offset, which
    the client has not moved past). An idle session's fetch reads nothing."""

    id: int
    #: the epoch the next incremental request must carry
    epoch: int
    #: opened by topic ids (Fetch v13+) or by names
    uses_topic_ids: bool
    #: (topic id or name, partition) -> the partition
    partitions: dict[tuple[TopicKey, int], CachedPartition] = field(default_factory=dict)
    last_used: float = 0.0
    dirty: set[tuple[TopicKey, int]] = field(default_factory=set)
    unsettled: set[tuple[TopicKey, int]] = field(default_factory=set)
    #: moves on at every change marked: a long poll that read at version v reads again only
    #: if it moved
    version: int = 0
    #: the long poll waiting on this session, woken by a change
    waiter: asyncio.Future[None] | None = None
    next_seq: int = 0

    def __len__(self) -> int:
        return len(self.partitions)

    def key_of(self, name: str, topic_id: uuid.UUID | None, partition: int) -> tuple[TopicKey, int]:
        return (topic_id if self.uses_topic_ids and topic_id is not None else name, partition)

    def add(self, name: str, topic_id: uuid.UUID | None, request: dict[str, Any]) -> tuple[TopicKey, int]:
        """Add a partition or update what the client asks of it; it is read next time."""
        key = self.key_of(name, topic_id, request["partition"])
        cached = self.partitions.get(key)
        if cached is None:
            self.partitions[key] = CachedPartition(name, topic_id, request, self.next_seq)
            self.next_seq += 1
        else:
            cached.request = request
        self.dirty.add(key)
        return key

    def forget(self, key: tuple[TopicKey, int]) -> CachedPartition | None:
        self.dirty.discard(key)
        self.unsettled.discard(key)
        return self.partitions.pop(key, None)

    def mark(self, key: tuple[TopicKey, int]) -> None:
        """The partition's log changed: read it next time, and wake a long poll."""
        self.dirty.add(key)
        self.version += 1
        w = self.waiter
        if w is not None and not w.done():
            w.set_result(None)

    def candidates(self) -> list[tuple[TopicKey, int]]:
        """The partitions to read, in the session's order."""
        keys = self.dirty | self.unsettled if self.unsettled else self.dirty
        parts = self.partitions
        return sorted((k for k in keys if k in parts), key=lambda k: parts[k].seq)

    def answered(self, key: tuple[TopicKey, int], high_watermark: int, log_start_offset: int, error: int,
                 had_records: bool) -> None:
        """Record what a partition read was answered (or would have been: unchanged ones are
        left out of the answer); one answered with records moves to the end of the order."""
        cached = self.partitions.get(key)
        if cached is None:
            return
        self.dirty.discard(key)
        cached.high_watermark = -1 if error else high_watermark
        cached.log_start_offset = log_start_offset
        if error or cached.request["fetch_offset"] < high_watermark:
            self.unsettled.add(key)
        else:
            self.unsettled.discard(key)
        if had_records:
            cached.seq = self.next_seq
            self.next_seq += 1


class FetchSessionCache:
    """The broker's fetch sessions, bounded by ``slots``; see the module docstring."""

    def __init__(self, slots: int, eviction_ms: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.slots = slots
        self.eviction_s = eviction_ms / 1000
        self.clock = clock
        #: id -> session, least recently used first
        self._sessions: dict[int, FetchSession] = {}
        self.evictions = 0
        #: (topic, partition) -> the sessions holding it, each with its key for it: how a
        #: change to a log reaches the sessions that must read it (``changed``)
        self.watchers: dict[tuple[str, int], dict[FetchSession, tuple[TopicKey, int]]] = {}

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
        s = self._sessions.pop(session_id, None)
        if s is not None:
            self._unwatch_all(s)

    def create(self, uses_topic_ids: bool, size: int) -> FetchSession | None:
        """A new, empty session for a full request of ``size`` partitions (``add`` them, then
        ``watch``), or None when the cache has no room."""
        if self.slots <= 0 or (len(self._sessions) >= self.slots and not self._evict_for(size)):
            return None
        sid = random.randint(1, MAX_EPOCH)
        while sid in self._sessions:
            sid = random.randint(1, MAX_EPOCH)
        s = FetchSession(sid, 1, uses_topic_ids, last_used=self.clock())
        self._sessions[sid] = s
        return s

    def update(self, session: FetchSession, topics: Iterable[tuple[str, uuid.UUID | None, list[dict[str, Any]]]],
               forgotten: Iterable[tuple[TopicKey, list[int]]]) -> None:
        """An incremental request: add or update its partitions (each topic as (name, id,
        the request's partition entries); the name is "" for an unknown id), then drop the
        forgotten ones."""
        for name, topic_id, plist in topics:
            for p in plist:
                key = session.add(name, topic_id, p)
                if name:
                    self.watchers.setdefault((name, p["partition"]), {})[session] = key
        for tkey, indexes in forgotten:
            for i in indexes:
                cached = session.forget((tkey, i))
                if cached is not None and cached.topic:
                    self._unwatch(session, (cached.topic, i))

    def watch(self, session: FetchSession) -> None:
        """Watch every partition of a new session."""
        for key, cached in session.partitions.items():
            if cached.topic:
                self.watchers.setdefault((cached.topic, key[1]), {})[session] = key

    def changed(self, topic: str, partition: int) -> None:
        """A log changed (an append, its log start offset, deleted): mark it in the sessions
        holding it."""
        w = self.watchers.get((topic, partition))
        if w:
            for session, key in w.items():
                session.mark(key)

    def _unwatch(self, session: FetchSession, tp: tuple[str, int]) -> None:
        w = self.watchers.get(tp)
        if w is not None:
            w.pop(session, None)
            if not w:
                del self.watchers[tp]

    def _unwatch_all(self, session: FetchSession) -> None:
        for key, cached in session.partitions.items():
            if cached.topic:
                self._unwatch(session, (cached.topic, key[1]))

    def _evict_for(self, size: int) -> bool:
        oldest_id = next(iter(self._sessions))
        if self.clock() - self._sessions[oldest_id].last_used > self.eviction_s:
            victim = oldest_id
        else:
            victim = min(self._sessions, key=lambda i: len(self._sessions[i]))
            if len(self._sessions[victim]) >= size:
                return False
        self._unwatch_all(self._sessions.pop(victim))
        self.evictions += 1
        return True
