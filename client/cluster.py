"""Cluster: bootstrap servers, the metadata cache and one connection per broker node.

Shared by Producer, Consumer and Admin. ``await cluster.start()`` connects to the first
reachable bootstrap server (trying each in turn with exponential backoff until
``connect_timeout_ms``), then ``metadata()`` refreshes topics on demand; ``leader(topic,
partition)`` gives the node's connection, reconnecting when it broke. Metadata is refreshed
when an error says it is stale (``KafkaError.invalid_metadata``) or after
``metadata_max_age_ms``.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from client.conn import BrokerConnection
from client.errors import KafkaConnectionError, error_for_code
from client.protocol.api import ApiKey, ErrorCode, error_name
from client.security.config import SecurityConfig

__all__ = ["Cluster", "TopicMetadata", "parse_bootstrap"]

logger = logging.getLogger("client")

def parse_bootstrap(servers: str | Iterable[str]) -> list[tuple[str, int]]:
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    out = []
    for item in items:
        item = item.strip()
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep:
            host, port = item, "9092"
        try:
            out.append((host.strip("[]") or "127.0.0.1", int(port)))
        except ValueError:
            raise ValueError(f"invalid bootstrap server {item!r}; expected host:port") from None
    if not out:
        raise ValueError("bootstrap_servers is empty")
    return out

@dataclass
class TopicMetadata:
    name: str
    error_code: int
    partitions: dict[int, int] = field(default_factory=dict)  # partition -> leader node id
    internal: bool = False  # __consumer_offsets and the like (Metadata v1+)
    topic_id: uuid.UUID | None = None  # KIP-516 (Metadata v10+); None when the broker gives none

class Cluster:
    def __init__(self, bootstrap_servers: str | Iterable[str], *, client_id: str = "minibroker-python",
                 request_timeout_ms: int = 30000, connect_timeout_ms: int = 10000,
                 metadata_max_age_ms: int = 300000, retry_backoff_ms: int = 100,
                 reconnect_backoff_max_ms: int = 1000, allow_auto_create_topics: bool = True,
                 security: SecurityConfig | None = None) -> None:
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.connect_timeout_ms = connect_timeout_ms
        self.metadata_max_age_ms = metadata_max_age_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.reconnect_backoff_max_ms = reconnect_backoff_max_ms
        self.allow_auto_create_topics = allow_auto_create_topics
        self.security = security or SecurityConfig()
        self.brokers: dict[int, tuple[str, int]] = {}
        self.controller_id = -1
        self.cluster_id: str | None = None
        self.topics: dict[str, TopicMetadata] = {}
        self._conns: dict[Any, BrokerConnection] = {}
        self._connecting: dict[Any, asyncio.Future[BrokerConnection]] = {}
        self._metadata_at = 0.0
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        await self.refresh_metadata([])

    async def close(self) -> None:
        for c in list(self._conns.values()):
            await c.close()
        self._conns.clear()

    # -- connections --

    async def _connect(self, key: Any, host: str, port: int) -> BrokerConnection:
        conn = self._conns.get(key)
        if conn is not None and conn.connected:
            return conn
        pending = self._connecting.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        fut: asyncio.Future[BrokerConnection] = asyncio.get_running_loop().create_future()
        self._connecting[key] = fut
        try:
            conn = await BrokerConnection.connect(host, port, client_id=self.client_id,
                                                  request_timeout_ms=self.request_timeout_ms,
                                                  timeout_ms=self.connect_timeout_ms, security=self.security)
            self._conns[key] = conn
            fut.set_result(conn)
            return conn
        except BaseException as e:
            fut.set_exception(e)
            fut.exception()  # retrieved: no "never retrieved" warning if nobody else waits
            raise
        finally:
            self._connecting.pop(key, None)

    async def any_connection(self) -> BrokerConnection:
        """A connection to some broker: a known node, else a bootstrap server; retries with
        backoff until connect_timeout_ms, then KafkaConnectionError naming what was tried."""
        deadline = time.monotonic() + self.connect_timeout_ms / 1000
        backoff = self.retry_backoff_ms / 1000
        errors: list[str] = []
        while True:
            candidates: list[tuple[tuple[str | int, ...], str, int]] = [
                (("node", n), h, p) for n, (h, p) in self.brokers.items()]
            candidates += [(("bootstrap", h, p), h, p) for h, p in self.bootstrap]
            for key, _host, _port in candidates:
                conn = self._conns.get(key)
                if conn is not None and conn.connected:
                    return conn
            for key, host, port in candidates:
                try:
                    return await self._connect(key, host, port)
                except KafkaConnectionError as e:
                    errors.append(str(e))
            if time.monotonic() + backoff > deadline:
                raise KafkaConnectionError(
                    f"no broker reachable within {self.connect_timeout_ms} ms; tried "
                    + ", ".join(f"{h}:{p}" for h, p in self.bootstrap) + (f" ({errors[-1]})" if errors else ""))
            await asyncio.sleep(backoff * (0.8 + 0.4 * random.random()))
            backoff = min(backoff * 2, self.reconnect_backoff_max_ms / 1000)

    def ready_connection(self, node_id: int) -> BrokerConnection | None:
        """The open connection to broker ``node_id``, or None (``node_connection`` makes one)."""
        conn = self._conns.get(("node", node_id))
        return conn if conn is not None and conn.connected else None

    async def node_connection(self, node_id: int) -> BrokerConnection:
        if node_id not in self.brokers:
            await self.refresh_metadata()
        if node_id not in self.brokers:
            raise KafkaConnectionError(f"unknown broker node {node_id}")
        host, port = self.brokers[node_id]
        return await self._connect(("node", node_id), host, port)

    async def coordinator_connection(self, node_id: int, host: str, port: int) -> BrokerConnection:
        """A connection of its own to a group coordinator (as Kafka's consumer keeps one), so
        that heartbeats and commits do not wait behind long-polling fetches to the same node."""
        return await self._connect(("coordinator", node_id), host, port)

    async def find_coordinator(self, key: str, key_type: int) -> tuple[int, str, int]:
        """``(node id, host, port)`` of the coordinator of ``key`` (FindCoordinator; key type
        0: a consumer group, 1: a transactional id); raises the answer's error (retriable:
        COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS)."""
        conn = await self.any_connection()
        v = conn.pick_version(ApiKey.FIND_COORDINATOR)
        if v >= 4:
            resp = await conn.request(ApiKey.FIND_COORDINATOR, v, {"key_type": key_type, "coordinator_keys": [key]})
            c = resp["coordinators"][0]
        else:
            c = await conn.request(ApiKey.FIND_COORDINATOR, v, {"key": key, "key_type": key_type})
        code = c["error_code"]
        if code:
            what = "group" if key_type == 0 else "transactional id"
            name = error_name(code)
            raise error_for_code(code, f"FindCoordinator for {what} {key!r}: {c.get('error_message') or name}")
        return c["node_id"], c["host"], c["port"]

    async def controller_connection(self) -> BrokerConnection:
        if self.controller_id < 0:
            await self.refresh_metadata()
        if self.controller_id >= 0 and self.controller_id in self.brokers:
            return await self.node_connection(self.controller_id)
        return await self.any_connection()

    # -- metadata --

    async def refresh_metadata(self, topics: list[str] | None = None) -> dict[str, TopicMetadata]:
        """Metadata for ``topics`` (None = all topics; [] = brokers only)."""
        async with self._lock:
            conn = await self.any_connection()
            version = conn.pick_version(ApiKey.METADATA)
            body: dict[str, Any] = {"allow_auto_topic_creation": self.allow_auto_create_topics}
            if topics is None:
                body["topics"] = None if version >= 1 else []
            else:
                if version == 0 and not topics:
                    body["topics"] = []  # v0: empty = all; fine, just more data
                else:
                    body["topics"] = [{"name": t} for t in topics]
            resp = await conn.request(ApiKey.METADATA, version, body)
            self.brokers = {b["node_id"]: (b["host"], b["port"]) for b in resp["brokers"]}
            self.controller_id = resp.get("controller_id", -1)
            self.cluster_id = resp.get("cluster_id")
            out = {}
            for t in resp["topics"]:
                tid = t.get("topic_id")
                tm = TopicMetadata(t["name"], t["error_code"],
                                   {p["partition_index"]: p["leader_id"] for p in t["partitions"]},
                                   bool(t.get("is_internal", False)), tid if tid is not None and tid.int else None)
                out[t["name"]] = tm
                if t["error_code"] == 0:
                    self.topics[t["name"]] = tm
                else:
                    self.topics.pop(t["name"], None)
            if topics is None:
                for name in list(self.topics):
                    if name not in out:
                        del self.topics[name]
            self._metadata_at = time.monotonic()
            return out

    async def topic(self, name: str, *, timeout_ms: int | None = None) -> TopicMetadata:
        """Metadata of one topic, refreshing (and so auto-creating, if allowed) as needed;
        retriable errors (LEADER_NOT_AVAILABLE right after creation) are retried until the
        timeout, others raise."""
        tm = self.topics.get(name)
        stale = time.monotonic() - self._metadata_at > self.metadata_max_age_ms / 1000
        if tm is not None and not stale:
            return tm
        deadline = time.monotonic() + (timeout_ms if timeout_ms is not None else self.request_timeout_ms) / 1000
        while True:
            got = (await self.refresh_metadata([name])).get(name)
            if got is not None and got.error_code == 0 and got.partitions:
                return got
            code = got.error_code if got is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            err = error_for_code(code, f"topic {name!r}: {error_name(code)}")
            if not err.retriable or time.monotonic() >= deadline:
                raise err
            await asyncio.sleep(self.retry_backoff_ms / 1000)

    def known_topic_ids(self, names: Iterable[str]) -> dict[str, uuid.UUID] | None:
        """The cached ids (KIP-516) of ``names``, or None unless every one has one: a request
        that names topics by id (OffsetCommit/OffsetFetch v10) needs them all, otherwise it
        names them (an earlier version), as Kafka's consumer does. No metadata is requested
        (that could auto-create a topic)."""
        out = {}
        topics = self.topics
        for name in names:
            tm = topics.get(name)
            if tm is None or tm.topic_id is None:
                return None
            out[name] = tm.topic_id
        return out

    async def topic_ids(self, names: Iterable[str]) -> dict[str, uuid.UUID] | None:
        """``known_topic_ids``, after asking for the metadata of the topics it has no id of
        (for clients that never auto-create topics: the Admin)."""
        names = list(names)
        missing = [n for n in names if getattr(self.topics.get(n), "topic_id", None) is None]
        if missing:
            await self.refresh_metadata(missing)
        return self.known_topic_ids(names)

    async def topic_names(self, ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, str]:
        """The names of topic ids (a response naming topics by id), from the cached metadata,
        asking for every topic's once when one is not there; an id that names no topic is left
        out."""
        ids = list(ids)
        for attempt in range(2):
            names = {tm.topic_id: name for name, tm in self.topics.items() if tm.topic_id is not None}
            if attempt or all(i in names for i in ids):
                break
            await self.refresh_metadata(None)
        return {i: names[i] for i in ids if i in names}

    def invalidate(self, topic: str | None = None) -> None:
        """Mark metadata stale (after an invalid_metadata error)."""
        if topic is None:
            self._metadata_at = 0.0
        else:
            self.topics.pop(topic, None)
