"""ShareConsumer: a member of a share group (KIP-932, Kafka's queues): the group's members take
records from the same partitions, each record handed to one of them at a time under an
acquisition lock, and acknowledge each one.

Usage::

    async with ShareConsumer("127.0.0.1:9092", group_id="workers") as c:
        c.subscribe(["jobs"])
        while True:
            for record in await c.poll(timeout_ms=1000):   # ShareConsumerRecord
                handle(record)            # implicit mode: accepted at the next poll

    async with ShareConsumer(..., group_id="workers", share_acknowledgement_mode="explicit") as c:
        c.subscribe(["jobs"])
        for record in await c.poll(timeout_ms=1000):
            c.acknowledge(record, AcknowledgeType.RELEASE if busy() else AcknowledgeType.ACCEPT)
        await c.commit_sync()             # or commit_async(), or the next poll carries them

**Acknowledgement**: ACCEPT (done), RELEASE (hand it out again, its delivery count raised) or
REJECT (never again: archived). With ``share_acknowledgement_mode="implicit"`` (the default)
every record a poll returned and that was not acknowledged explicitly is accepted when the next
poll, ``commit_sync``/``commit_async`` or ``close`` runs. In ``"explicit"`` mode each record of
a poll must be acknowledged before the next poll (IllegalStateError otherwise). Records the
consumer never acknowledges go back to the others when their lock expires
(``group.share.record.lock.duration.ms``) or when it leaves. A record delivered
``group.share.delivery.count.limit`` times is archived by the broker. ``delivery_count`` on each
record says how many times it was handed out (1 the first time).

**Requests**: membership through ``client.group.share_member`` (ShareGroupHeartbeat);
records through ShareFetch v1 to each partition's leader, one share session per leader (epoch 0
opens it with the assigned partitions; later requests add and forget partitions as the
assignment changes, and carry the acknowledgements made since: "piggy-backed"). ``commit_*``
send ShareAcknowledge instead of waiting for the next poll. SHARE_SESSION_NOT_FOUND and
INVALID_SHARE_SESSION_EPOCH reopen the session (acknowledgements then pending are failed: the
broker released those records when it dropped the session). Offsets within an acquired range
that hold no record (compacted away, control records) are acknowledged as GAP.

**Close**: the pending acknowledgements and an epoch -1 ShareAcknowledge that closes each
session (what is still acquired goes back to the group at once), then the member leaves (-1).
"""

from __future__ import annotations

import asyncio
import enum
import logging
import ssl
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from client.cluster import Cluster
from client.consumer_records import ConsumerRecord, decode_batch_rows
from client.errors import IllegalStateError, KafkaConnectionError, KafkaError, error_for_code
from client.group.share_member import ShareGroupMember
from client.protocol.api import ApiKey, ErrorCode, error_name
from client.records.batch import LOG_OVERHEAD
from client.security.config import SecurityConfig
from client.structs import TopicPartition

__all__ = ["ShareConsumer", "ShareConsumerRecord", "AcknowledgeType"]

logger = logging.getLogger("client.share_consumer")

E = ErrorCode
_SESSION_LOST = {E.SHARE_SESSION_NOT_FOUND, E.INVALID_SHARE_SESSION_EPOCH}


class AcknowledgeType(enum.IntEnum):
    """KIP-932's acknowledge types (their wire values)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3


class ShareConsumerRecord(NamedTuple):
    """A ``ConsumerRecord`` and how many times the record has been delivered (1 the first time)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Any, ...]
    delivery_count: int


class _Session:
    """One share session with one broker: its next epoch and the partitions it has."""

    def __init__(self) -> None:
        self.epoch = 0
        self.partitions: set[TopicPartition] = set()


#: per partition: offset -> acknowledge type
Acks = dict[TopicPartition, dict[int, int]]


def ack_batches(acks: dict[int, int]) -> list[dict[str, Any]]:
    """Acknowledgements as ShareFetch/ShareAcknowledge batches: runs of consecutive offsets of
    one type, one type per batch."""
    out: list[dict[str, Any]] = []
    for offset in sorted(acks):
        t = acks[offset]
        if out and out[-1]["last_offset"] == offset - 1 and out[-1]["acknowledge_types"] == [t]:
            out[-1]["last_offset"] = offset
        else:
            out.append({"first_offset": offset, "last_offset": offset, "acknowledge_types": [t]})
    return out


class ShareConsumer:
    """An asyncio share-group consumer (see the module docstring)."""

    def __init__(self, bootstrap_servers: str | Iterable[str] = "127.0.0.1:9092", *, group_id: str,
                 client_id: str = "minibroker-python",
                 share_acknowledgement_mode: str = "implicit",
                 max_poll_records: int = 500,
                 fetch_min_bytes: int = 1,
                 fetch_max_bytes: int = 52428800,
                 fetch_max_wait_ms: int = 500,
                 request_timeout_ms: int = 30000,
                 connect_timeout_ms: int = 10000,
                 retry_backoff_ms: int = 100,
                 check_crcs: bool = True,
                 security_protocol: str = "PLAINTEXT",
                 ssl_context: ssl.SSLContext | None = None,
                 sasl_mechanism: str = "PLAIN",
                 sasl_plain_username: str | None = None,
                 sasl_plain_password: str | None = None,
                 on_acknowledgement_commit: Callable[[dict[TopicPartition, list[int]], KafkaError | None], None]
                 | None = None) -> None:
        if share_acknowledgement_mode not in ("implicit", "explicit"):
            raise ValueError("share_acknowledgement_mode must be 'implicit' or 'explicit'")
        self.group_id = group_id
        self.explicit = share_acknowledgement_mode == "explicit"
        self.max_poll_records = max_poll_records
        self.fetch_min_bytes = fetch_min_bytes
        self.fetch_max_bytes = fetch_max_bytes
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.request_timeout_ms = request_timeout_ms
        self.check_crcs = check_crcs
        self.on_acknowledgement_commit = on_acknowledgement_commit
        security = SecurityConfig(security_protocol=security_protocol, ssl_context=ssl_context,
                                  sasl_mechanism=sasl_mechanism, sasl_plain_username=sasl_plain_username,
                                  sasl_plain_password=sasl_plain_password)
        self._cluster = Cluster(bootstrap_servers, client_id=client_id, request_timeout_ms=request_timeout_ms,
                                connect_timeout_ms=connect_timeout_ms, retry_backoff_ms=retry_backoff_ms,
                                allow_auto_create_topics=False, security=security)
        self._changed = asyncio.Event()
        self._member = ShareGroupMember(self._cluster, group_id=group_id, retry_backoff_ms=retry_backoff_ms,
                                        request_timeout_ms=request_timeout_ms, on_assignment=self._changed.set)
        self._sessions: dict[int, _Session] = {}
        #: records the last poll returned, not acknowledged yet: (tp, offset)
        self._delivered: dict[tuple[TopicPartition, int], None] = {}
        #: acknowledgements made, not sent yet
        self._pending: Acks = {}
        self._lock = asyncio.Lock()  # one request at a time per consumer: session epochs are sequential
        self._started = False
        self._closed = False

    # -- lifecycle --

    async def start(self) -> None:
        if not self._started:
            await self._cluster.start()
            self._started = True

    async def __aenter__(self) -> ShareConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def member_id(self) -> str:
        return self._member.member_id

    def subscribe(self, topics: Iterable[str]) -> None:
        """Join the group for ``topics`` (replacing an earlier subscription)."""
        topics = set(topics)
        if not topics:
            raise ValueError("subscribe needs at least one topic; use unsubscribe() to leave")
        self._member.subscribe(topics)

    def subscription(self) -> set[str]:
        return set(self._member.topics)

    def assignment(self) -> set[TopicPartition]:
        """The partitions the group assigned this member (others may have them too)."""
        return set(self._member.assignment)

    async def unsubscribe(self) -> None:
        await self._acknowledge_and_close_sessions()
        await self._member.leave()
        self._member.topics = set()

    async def close(self) -> None:
        """Send pending acknowledgements, close the share sessions and leave the group."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._started:
                await self._acknowledge_and_close_sessions()
        finally:
            await self._member.close()
            await self._cluster.close()

    # -- acknowledgements --

    def acknowledge(self, record: ShareConsumerRecord, type: AcknowledgeType | int = AcknowledgeType.ACCEPT) -> None:
        """Acknowledge one record the last poll returned (sent by the next poll or commit)."""
        if type not in (AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT):
            raise ValueError(f"acknowledge type {type!r}: ACCEPT, RELEASE or REJECT")
        tp = TopicPartition(record.topic, record.partition)
        if (tp, record.offset) not in self._delivered:
            raise IllegalStateError(f"{tp.topic}-{tp.partition}@{record.offset} is not a record of the last poll"
                                    " waiting for its acknowledgement")
        del self._delivered[(tp, record.offset)]
        self._pending.setdefault(tp, {})[record.offset] = int(type)

    def _accept_delivered(self) -> None:
        """Implicit mode: what the last poll returned and was not acknowledged is accepted."""
        for tp, offset in self._delivered:
            self._pending.setdefault(tp, {})[offset] = AcknowledgeType.ACCEPT
        self._delivered.clear()

    async def commit_sync(self) -> dict[TopicPartition, KafkaError | None]:
        """Send the acknowledgements made so far (ShareAcknowledge) and wait for the answers:
        per partition None or the error."""
        if not self.explicit:
            self._accept_delivered()
        async with self._lock:
            return await self._send_acks()

    def commit_async(self) -> asyncio.Task[dict[TopicPartition, KafkaError | None]]:
        """``commit_sync`` in a task; its result goes to ``on_acknowledgement_commit`` too."""
        return asyncio.get_running_loop().create_task(self.commit_sync())

    def _report(self, acks: Acks, errors: dict[TopicPartition, KafkaError | None]) -> None:
        if self.on_acknowledgement_commit is None:
            for tp, err in errors.items():
                if err is not None:
                    logger.warning("share group %s: acknowledgement of %s failed: %s", self.group_id, tp, err)
            return
        for tp, err in errors.items():
            self.on_acknowledgement_commit({tp: sorted(acks.get(tp, {}))}, err)

    def _take_pending(self, node: int) -> Acks:
        mine = {tp: a for tp, a in self._pending.items() if self._leader(tp) == node}
        for tp in mine:
            del self._pending[tp]
        return mine

    async def _send_acks(self, *, close: bool = False) -> dict[TopicPartition, KafkaError | None]:
        errors: dict[TopicPartition, KafkaError | None] = {}
        sent: Acks = {}
        nodes = set(self._sessions) | {self._leader(tp) for tp in self._pending}
        for node in sorted(n for n in nodes if n is not None):
            session = self._sessions.get(node)
            acks = self._take_pending(node)
            sent.update(acks)
            if session is None or session.epoch == 0:
                # no session: whatever was acquired was released when it went
                errors.update({tp: error_for_code(E.SHARE_SESSION_NOT_FOUND) for tp in acks})
                continue
            if not acks and not close:
                continue
            epoch = -1 if close else session.epoch
            body = {"group_id": self.group_id, "member_id": self.member_id, "share_session_epoch": epoch,
                    "topics": await self._ack_topics(acks)}
            try:
                conn = await self._cluster.node_connection(node)
                resp = await conn.request(ApiKey.SHARE_ACKNOWLEDGE, 1, body)
            except KafkaError as e:
                self._sessions.pop(node, None)
                errors.update({tp: e for tp in acks})
                continue
            code = resp["error_code"]
            if close or code in _SESSION_LOST:
                self._sessions.pop(node, None)
            else:
                session.epoch = _next_epoch(session.epoch)
            if code:
                err = error_for_code(code, f"ShareAcknowledge: {resp.get('error_message') or error_name(code)}")
                errors.update({tp: err for tp in acks})
                continue
            names = await self._cluster.topic_names([t["topic_id"] for t in resp["responses"]])
            for t in resp["responses"]:
                for p in t["partitions"]:
                    tp = TopicPartition(names.get(t["topic_id"], "?"), p["partition_index"])
                    if tp in acks:
                        errors[tp] = error_for_code(p["error_code"]) if p["error_code"] else None
            for tp in acks:
                errors.setdefault(tp, None)
        self._report(sent, errors)
        return errors

    async def _ack_topics(self, acks: Acks) -> list[dict[str, Any]]:
        ids = await self._cluster.topic_ids({tp.topic for tp in acks}) or {}
        by: dict[Any, list[dict[str, Any]]] = {}
        for tp, a in sorted(acks.items()):
            if tp.topic in ids:
                by.setdefault(ids[tp.topic], []).append({"partition_index": tp.partition,
                                                         "acknowledgement_batches": ack_batches(a)})
        return [{"topic_id": t, "partitions": ps} for t, ps in by.items()]

    async def _acknowledge_and_close_sessions(self) -> None:
        if not self.explicit:
            self._accept_delivered()
        self._delivered.clear()
        async with self._lock:
            await self._send_acks(close=True)
        self._sessions.clear()

    # -- polling --

    def _leader(self, tp: TopicPartition) -> int | None:
        tm = self._cluster.topics.get(tp.topic)
        return None if tm is None else tm.partitions.get(tp.partition)

    async def poll(self, timeout_ms: int = 1000) -> list[ShareConsumerRecord]:
        """The next records acquired for this member (at most ``max_poll_records``), waiting up to
        ``timeout_ms`` for some; sends the acknowledgements made since the last poll."""
        if self._member.error is not None:
            raise self._member.error
        if self.explicit and self._delivered:
            raise IllegalStateError(f"{len(self._delivered)} records of the last poll are not acknowledged yet"
                                    " (share_acknowledgement_mode='explicit')")
        self._accept_delivered()
        if not self._member.topics:
            raise IllegalStateError("not subscribed to any topic")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        while True:
            if not self._member.assignment and not self._pending:
                self._changed.clear()
                try:
                    await asyncio.wait_for(self._changed.wait(), max(0.0, deadline - loop.time()))
                except TimeoutError:
                    return []
                if self._member.error is not None:
                    raise self._member.error
                continue
            wait_ms = max(0, min(self.fetch_max_wait_ms, int((deadline - loop.time()) * 1000)))
            async with self._lock:
                records = await self._fetch_round(wait_ms)
            if records or loop.time() >= deadline:
                for r in records:
                    self._delivered[(TopicPartition(r.topic, r.partition), r.offset)] = None
                return records

    async def getmany(self, timeout_ms: int = 1000) -> dict[TopicPartition, list[ShareConsumerRecord]]:
        """``poll``, grouped by partition."""
        out: dict[TopicPartition, list[ShareConsumerRecord]] = {}
        for r in await self.poll(timeout_ms):
            out.setdefault(TopicPartition(r.topic, r.partition), []).append(r)
        return out

    async def _fetch_round(self, wait_ms: int) -> list[ShareConsumerRecord]:
        """One ShareFetch per leader of the assigned partitions (or holding acknowledgements)."""
        assigned = self._member.assignment
        unknown = [tp.topic for tp in assigned if self._leader(tp) is None]
        if unknown:
            await self._cluster.refresh_metadata(sorted(set(unknown)))
        wanted: dict[int, set[TopicPartition]] = {}
        for tp in assigned:
            node = self._leader(tp)
            if node is not None:
                wanted.setdefault(node, set()).add(tp)
        nodes = set(wanted) | {n for n, s in self._sessions.items() if s.partitions}
        nodes |= {n for n in (self._leader(tp) for tp in self._pending) if n is not None}
        rounds = [self._fetch_from(node, wanted.get(node, set()), wait_ms) for node in sorted(nodes)]
        out: list[ShareConsumerRecord] = []
        for got in await asyncio.gather(*rounds):
            out.extend(got)
        return out

    async def _fetch_from(self, node: int, wanted: set[TopicPartition], wait_ms: int) -> list[ShareConsumerRecord]:
        session = self._sessions.setdefault(node, _Session())
        acks = self._take_pending(node)
        if session.epoch == 0 and acks:
            # a session that opens cannot carry acknowledgements; the old one released them
            self._report(acks, {tp: error_for_code(E.SHARE_SESSION_NOT_FOUND) for tp in acks})
            acks = {}
        if not wanted and not session.partitions and not acks:
            return []
        ids = await self._cluster.topic_ids({tp.topic for tp in wanted | session.partitions | set(acks)}) or {}
        added = wanted if session.epoch == 0 else wanted - session.partitions
        forgotten = set() if session.epoch == 0 else session.partitions - wanted
        topics: dict[Any, dict[int, dict[str, Any]]] = {}
        for tp in added | set(acks):
            if tp.topic in ids:
                topics.setdefault(ids[tp.topic], {})[tp.partition] = {
                    "partition_index": tp.partition, "acknowledgement_batches": ack_batches(acks.get(tp, {}))}
        forgot: dict[Any, list[int]] = {}
        for tp in forgotten:
            if tp.topic in ids:
                forgot.setdefault(ids[tp.topic], []).append(tp.partition)
        body = {"group_id": self.group_id, "member_id": self.member_id, "share_session_epoch": session.epoch,
                "max_wait_ms": wait_ms if wanted else 0, "min_bytes": self.fetch_min_bytes,
                "max_bytes": self.fetch_max_bytes, "max_records": self.max_poll_records,
                "batch_size": self.max_poll_records,
                "topics": [{"topic_id": t, "partitions": list(ps.values())} for t, ps in topics.items()],
                "forgotten_topics_data": [{"topic_id": t, "partitions": ps} for t, ps in forgot.items()]}
        try:
            conn = await self._cluster.node_connection(node)
            resp = await conn.request(ApiKey.SHARE_FETCH, 1, body,
                                      timeout=self.request_timeout_ms / 1000 + wait_ms / 1000)
        except KafkaConnectionError as e:
            self._sessions.pop(node, None)
            self._report(acks, {tp: e for tp in acks})
            self._cluster.invalidate()
            return []
        code = resp["error_code"]
        if code:
            if code in _SESSION_LOST or code == E.UNKNOWN_MEMBER_ID:
                logger.info("share group %s: %s from node %d; opening a new share session", self.group_id,
                            error_name(code), node)
                self._sessions.pop(node, None)
                self._report(acks, {tp: error_for_code(code) for tp in acks})
                await asyncio.sleep(self._cluster.retry_backoff_ms / 1000)
                return []
            err = error_for_code(code, f"ShareFetch: {resp.get('error_message') or error_name(code)}")
            self._report(acks, {tp: err for tp in acks})
            if err.retriable:
                await asyncio.sleep(self._cluster.retry_backoff_ms / 1000)
                return []
            raise err
        session.partitions = (session.partitions | added) - forgotten
        session.epoch = _next_epoch(session.epoch)
        return await self._records(resp, acks)

    async def _records(self, resp: dict[str, Any], acks: Acks) -> list[ShareConsumerRecord]:
        names = await self._cluster.topic_names([t["topic_id"] for t in resp["responses"]])
        out: list[ShareConsumerRecord] = []
        ack_errors: dict[TopicPartition, KafkaError | None] = {tp: None for tp in acks}
        for t in resp["responses"]:
            topic = names.get(t["topic_id"])
            if topic is None:
                continue
            for p in t["partitions"]:
                tp = TopicPartition(topic, p["partition_index"])
                if tp in acks and p["acknowledge_error_code"]:
                    ack_errors[tp] = error_for_code(p["acknowledge_error_code"])
                if p["error_code"]:
                    err = error_for_code(p["error_code"])
                    if err.invalid_metadata:
                        self._cluster.invalidate(topic)
                    logger.info("share group %s: %s: %s", self.group_id, tp, error_name(p["error_code"]))
                    continue
                if p["acquired_records"]:
                    out.extend(self._acquired(tp, p["records"], p["acquired_records"]))
        if acks:
            self._report(acks, ack_errors)
        return out

    def _acquired(self, tp: TopicPartition, data: Any, acquired: list[dict[str, Any]]) -> list[ShareConsumerRecord]:
        """The records of ``data`` (whole log batches) within the acquired ranges, each with its
        delivery count; acquired offsets with no record are acknowledged as GAP."""
        counts: dict[int, int] = {}
        for a in acquired:
            for offset in range(a["first_offset"], a["last_offset"] + 1):
                counts[offset] = a["delivery_count"]
        out: list[ShareConsumerRecord] = []
        buf = memoryview(data or b"")
        pos = 0
        first = min(counts)
        while pos + LOG_OVERHEAD <= len(buf):
            length = int.from_bytes(buf[pos + 8:pos + 12], "big")
            if pos + LOG_OVERHEAD + length > len(buf):
                break
            rows, _ = decode_batch_rows(buf, pos, tp.topic, tp.partition, first, self.check_crcs)
            pos += LOG_OVERHEAD + length
            for row in rows:
                count = counts.pop(row.offset, None)
                if count is not None:
                    out.append(_share_record(row, count))
        if counts:  # acquired offsets with no record: gaps
            gaps = self._pending.setdefault(tp, {})
            for offset in counts:
                gaps[offset] = AcknowledgeType.GAP
        return out


def _share_record(row: ConsumerRecord, count: int) -> ShareConsumerRecord:
    return ShareConsumerRecord(*row, count)


def _next_epoch(epoch: int) -> int:
    return 1 if epoch >= 2**31 - 1 else epoch + 1
