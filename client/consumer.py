"""Consumer: manual assignment, seeks, and a fetch pipeline that keeps the next range in flight.

Usage::

    async with Consumer(bootstrap_servers="127.0.0.1:9092", auto_offset_reset="earliest") as c:
        c.assign([("events", 0), ("events", 1)])
        async for record in c:                      # ConsumerRecord, one at a time
            ...
        batch = await c.getmany(max_records=10000, timeout_ms=1000)  # {TopicPartition: [records]}
        for cb in await c.getbatches(timeout_ms=1000):               # bulk: ColumnBatch per RecordBatch
            cb.values.data, cb.values.offsets, cb.offsets, cb.timestamps

**Consumer groups.** With a ``group_id``, ``subscribe(["events"])`` (or ``pattern="events-.*"``)
joins the group and the partitions are shared among its members by the chosen assignor
(``partition_assignment_strategy``: ``range`` and ``roundrobin`` as Kafka's, ``sticky``, and
``cooperative-sticky`` with the incremental protocol); positions start at
the group's committed offsets. ``commit()`` / ``commit_async()`` store positions (or explicit
offsets), ``enable_auto_commit`` does it every ``auto_commit_interval_ms``, before a
rebalance takes partitions away and on close; ``committed()`` reads them. A
``ConsumerRebalanceListener`` hears of revocations and assignments. ``group_instance_id``
makes a static member. See ``client.group.coordinator`` for the protocol.
``group_protocol="consumer"`` uses KIP-848's protocol instead (Kafka 4's): the broker assigns
(``group_remote_assignor``: ``uniform`` or ``range``; the session and heartbeat interval are
the broker's ``group.consumer.*`` settings), changes are incremental and the listener hears
only of the partitions that move; see ``client.group.consumer_member``. Without
``subscribe``, partitions are assigned with ``assign`` and positions are the application's to
keep (``commit()`` still works when a ``group_id`` is given).

**Positions.** Each assigned partition has a *position*, the offset of the next record the
application will get. It is unknown after ``assign`` until reset by ``auto_offset_reset``
(``earliest``, ``latest``; ``none`` raises NoOffsetForPartitionError), and set by ``seek``,
``seek_to_beginning``/``seek_to_end`` and ``seek_to_timestamp`` (ListOffsets). Handing out a
record moves the position past it; ``position()`` tells it. A fetch answered with
OFFSET_OUT_OF_RANGE resets the same way (``none``: OffsetOutOfRangeError to the caller).

**Fetching** (``client.fetcher``): a background task keeps, per partition, the next range
in flight while the application works through the current one (fetch_min_bytes,
fetch_max_wait_ms long-poll, fetch_max_bytes, max_partition_fetch_bytes); records are decoded
a RecordBatch at a time in the application's call, CRC checked (``check_crcs``); partial
trailing batches are dropped and fetched again whole. ``isolation_level="read_committed"``
reads up to the last stable offset and drops aborted transactions' records (``end_offsets``
answers the last stable offset then); ``committed()`` waits while a transactional offset
commit is pending (require_stable).

**Errors.** Connection errors and retriable partition errors are retried in the background;
a corrupt batch (CorruptMessageError) or another non-retriable partition error is raised from
the next getmany/getone/getbatches/anext once the records before it are handed out, and again
until the application seeks past it, as Kafka's consumer does.

**Cost.** Per record the consumer builds one ``ConsumerRecord`` (a tuple, zipped in C from the
decoded columns). Being containers, they are tracked by the cyclic GC, and a list of tens of
thousands of them alive at once makes full collections frequent (measured: ~20% of the CPU
when getmany handed out everything buffered, ~2 MB of records). Hence Kafka's default
``max_poll_records=500`` for getmany. Bulk mode (``getbatches``) builds no object per record.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping

from client.cluster import Cluster
from client.consumer_records import ColumnBatch, ConsumerRecord
from client.errors import IllegalStateError, error_for_code
from client.fetcher import EARLIEST, LATEST, Fetcher, NoOffsetForPartitionError, PartitionState
from client.group.assignors import PartitionAssignor
from client.group.consumer_member import ConsumerGroupMember
from client.group.coordinator import ConsumerCoordinator, ConsumerRebalanceListener
from client.group.offsets import CommitFailedError
from client.protocol.api import ErrorCode
from client.security.config import SecurityConfig, TokenProvider
from client.structs import (
    ConsumerGroupMetadata,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    TopicPartition,
    offsets_and_metadata,
)

__all__ = ["Consumer", "ConsumerRecord", "ColumnBatch", "TopicPartition", "OffsetAndTimestamp",
           "OffsetAndMetadata", "NoOffsetForPartitionError", "IllegalStateError", "CommitFailedError",
           "ConsumerRebalanceListener"]


class Consumer:
    """An asyncio consumer with manual assignment. Options use Kafka's consumer property names
    in snake_case; see the module docstring for the behaviour."""

    def __init__(self, bootstrap_servers: str | Iterable[str] = "127.0.0.1:9092", *,
                 client_id: str = "minibroker-python",
                 fetch_min_bytes: int = 1,
                 fetch_max_wait_ms: int = 500,
                 fetch_max_bytes: int = 52428800,
                 max_partition_fetch_bytes: int = 1048576,
                 max_poll_records: int | None = 500,
                 auto_offset_reset: str = "latest",
                 check_crcs: bool = True,
                 isolation_level: str = "read_uncommitted",
                 request_timeout_ms: int = 30000,
                 connect_timeout_ms: int = 10000,
                 retry_backoff_ms: int = 100,
                 metadata_max_age_ms: int = 300000,
                 allow_auto_create_topics: bool = False,
                 group_id: str | None = None,
                 group_instance_id: str | None = None,
                 session_timeout_ms: int = 45000,
                 heartbeat_interval_ms: int = 3000,
                 max_poll_interval_ms: int = 300000,
                 rebalance_timeout_ms: int | None = None,
                 partition_assignment_strategy: Iterable[str | PartitionAssignor] = ("range", "roundrobin"),
                 group_protocol: str = "classic",
                 group_remote_assignor: str | None = None,
                 enable_auto_commit: bool = True,
                 auto_commit_interval_ms: int = 5000,
                 exclude_internal_topics: bool = True,
                 security_protocol: str = "PLAINTEXT",
                 ssl_context: ssl.SSLContext | None = None,
                 sasl_mechanism: str = "PLAIN",
                 sasl_plain_username: str | None = None,
                 sasl_plain_password: str | None = None,
                 sasl_oauth_token_provider: TokenProvider | None = None) -> None:
        if auto_offset_reset not in ("earliest", "latest", "none"):
            raise ValueError(f"auto_offset_reset must be earliest, latest or none, not {auto_offset_reset!r}")
        if isolation_level not in ("read_uncommitted", "read_committed"):
            raise ValueError(f"isolation_level must be read_uncommitted or read_committed, not {isolation_level!r}")
        self._cluster = Cluster(bootstrap_servers, client_id=client_id, request_timeout_ms=request_timeout_ms,
                                connect_timeout_ms=connect_timeout_ms, metadata_max_age_ms=metadata_max_age_ms,
                                retry_backoff_ms=retry_backoff_ms, allow_auto_create_topics=allow_auto_create_topics,
                                security=SecurityConfig(security_protocol, ssl_context, sasl_mechanism, sasl_plain_username,
                                  sasl_plain_password, sasl_oauth_token_provider))
        self.max_poll_records = max_poll_records
        self.request_timeout_ms = request_timeout_ms
        self._fetcher = Fetcher(self._cluster, fetch_min_bytes=fetch_min_bytes, fetch_max_wait_ms=fetch_max_wait_ms,
                                fetch_max_bytes=fetch_max_bytes, max_partition_fetch_bytes=max_partition_fetch_bytes,
                                auto_offset_reset=auto_offset_reset, check_crcs=check_crcs,
                                isolation_level=1 if isolation_level == "read_committed" else 0,
                                request_timeout_ms=request_timeout_ms, retry_backoff_ms=retry_backoff_ms)
        self._parts = self._fetcher.parts
        self._cur: PartitionState | None = None  # partition whose ``rest`` anext is walking
        self._rr = 0  # round-robin start for getmany
        if group_protocol not in ("classic", "consumer"):
            raise ValueError(f"group_protocol must be classic or consumer, not {group_protocol!r}")
        self._group: ConsumerCoordinator | ConsumerGroupMember | None = None
        if group_id is not None and group_protocol == "consumer":
            self._group = ConsumerGroupMember(
                self._cluster, group_id=group_id, group_instance_id=group_instance_id,
                rebalance_timeout_ms=rebalance_timeout_ms if rebalance_timeout_ms is not None else max_poll_interval_ms,
                max_poll_interval_ms=max_poll_interval_ms, remote_assignor=group_remote_assignor,
                enable_auto_commit=enable_auto_commit, auto_commit_interval_ms=auto_commit_interval_ms,
                retry_backoff_ms=retry_backoff_ms, request_timeout_ms=request_timeout_ms,
                apply_assignment=self._apply_assignment, positions=self._current_positions,
                wake_consumer=self._fetcher.data.set)
        elif group_id is not None:
            self._group = ConsumerCoordinator(
                self._cluster, group_id=group_id, group_instance_id=group_instance_id,
                session_timeout_ms=session_timeout_ms,
                rebalance_timeout_ms=rebalance_timeout_ms if rebalance_timeout_ms is not None else max_poll_interval_ms,
                heartbeat_interval_ms=heartbeat_interval_ms, max_poll_interval_ms=max_poll_interval_ms,
                assignors=partition_assignment_strategy, enable_auto_commit=enable_auto_commit,
                auto_commit_interval_ms=auto_commit_interval_ms, retry_backoff_ms=retry_backoff_ms,
                request_timeout_ms=request_timeout_ms, metadata_max_age_ms=metadata_max_age_ms,
                exclude_internal_topics=exclude_internal_topics, apply_assignment=self._apply_assignment,
                positions=self._current_positions, wake_consumer=self._fetcher.data.set)
        elif group_instance_id is not None:
            raise ValueError("group_instance_id needs a group_id")
        self._started = False

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Connect to a bootstrap server (KafkaConnectionError naming it if none answers)."""
        await self._cluster.start()
        self._fetcher.start()
        if self._group is not None:
            self._group.start()
        self._started = True

    async def close(self) -> None:
        """Stop. In a group: a last auto-commit, ``on_partitions_revoked``, and LeaveGroup
        unless the member is static (``group_instance_id``)."""
        if self._group is not None and self._started:
            await self._group.close()
        self._started = False
        self._fetcher.closed = True  # no new fetches from here on
        await self._cluster.close()  # then fail those in flight (see Fetcher.close)
        await self._fetcher.close()

    stop = close

    async def __aenter__(self) -> Consumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------ assignment and positions

    def assign(self, partitions: Iterable[tuple[str, int]]) -> None:
        """Replace the assignment. Partitions kept keep their positions; new ones start with
        none (``auto_offset_reset`` decides, unless the application seeks first)."""
        if self._group is not None and self._group.subscribed:
            raise IllegalStateError("assign() and subscribe() exclude each other (unsubscribe() first)")
        self._assign(TopicPartition(t, int(p)) for t, p in partitions)

    def _assign(self, tps: Iterable[TopicPartition]) -> None:
        self._fetcher.assign(tps)
        self._parts = self._fetcher.parts
        if self._cur is not None and self._cur.tp not in self._parts:
            self._cur = None

    # ------------------------------------------------------------ consumer groups

    def _require_group(self) -> ConsumerCoordinator | ConsumerGroupMember:
        if self._group is None:
            raise IllegalStateError("this needs a consumer group: Consumer(group_id=...)")
        return self._group

    def subscribe(self, topics: Iterable[str] = (), *, pattern: str | re.Pattern[str] | None = None,
                  listener: ConsumerRebalanceListener | None = None) -> None:
        """Join the group (``group_id``) and consume what its assignor gives this member of
        ``topics``, or of every topic whose whole name matches ``pattern`` (re-checked every
        ``metadata_max_age_ms``; internal topics excluded). Replaces an earlier subscription."""
        group = self._require_group()
        if isinstance(topics, str):
            raise TypeError("subscribe() takes a list of topics, not one string")
        topics = list(topics)
        if bool(topics) == (pattern is not None):
            raise ValueError("subscribe() takes either topics or pattern=")
        if not group.subscribed and self._parts:
            raise IllegalStateError("assign() and subscribe() exclude each other (assign([]) first)")
        group.subscribe(topics, pattern, listener)

    async def unsubscribe(self) -> None:
        """Leave the group (after a last auto-commit) and stop consuming."""
        group = self._require_group()
        if group.subscribed:
            await group.unsubscribe()

    def subscription(self) -> set[str]:
        """The topics subscribed to (for a pattern: those it matches now)."""
        return set(self._group.topics) if self._group is not None and self._group.subscribed else set()

    def _apply_assignment(self, tps: list[TopicPartition], positions: dict[TopicPartition, int]) -> None:
        self._assign(tps)
        for tp, offset in positions.items():
            part = self._parts.get(tp)
            if part is not None:
                part.set_position(offset)
        self._fetcher.wake.set()

    def _current_positions(self) -> dict[TopicPartition, int]:
        return {tp: p.position for tp, p in self._parts.items() if p.position is not None}

    _offsets = staticmethod(offsets_and_metadata)

    async def commit(self, offsets: Mapping[tuple[str, int], int | tuple[int, str] | OffsetAndMetadata] | None = None
                     ) -> None:
        """Commit ``offsets`` (partition -> the offset of the next record to read, optionally
        with a metadata string), or, by default, the positions of every assigned partition.
        CommitFailedError if the group rebalanced meanwhile (the consumer rejoins by itself)."""
        group = self._require_group()
        await group.commit(self._offsets(offsets) if offsets is not None else
                           {tp: OffsetAndMetadata(pos) for tp, pos in self._current_positions().items()})

    def commit_async(self, offsets: Mapping[tuple[str, int], int | tuple[int, str] | OffsetAndMetadata] | None = None,
                     callback: Callable[[dict[TopicPartition, OffsetAndMetadata], BaseException | None], None] | None = None
                     ) -> asyncio.Task[None]:
        """Start a commit (offsets as ``commit``, taken now) and return its task; ``callback``
        gets ``(offsets, exception or None)`` when it completes."""
        group = self._require_group()
        todo = self._offsets(offsets) if offsets is not None else {
            tp: OffsetAndMetadata(pos) for tp, pos in self._current_positions().items()}
        task = asyncio.get_running_loop().create_task(group.commit(todo))

        def done(t: asyncio.Task[None]) -> None:
            exc = None if t.cancelled() else t.exception()
            if callback is not None:
                callback(todo, exc)
        task.add_done_callback(done)
        return task

    async def committed(self, partitions: Iterable[tuple[str, int]]) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets of ``partitions`` (None where there is none)."""
        return await self._require_group().fetch_committed(TopicPartition(*tp) for tp in partitions)

    @property
    def member_id(self) -> str | None:
        """This member's id in the group (None without a group or before joining)."""
        return (self._group.member_id or None) if self._group is not None else None

    @property
    def generation_id(self) -> int:
        """The generation of the group this member last joined (-1: none)."""
        return self._group.generation if self._group is not None else -1

    def group_metadata(self) -> ConsumerGroupMetadata:
        """This member's group, generation and member id, for
        ``Producer.send_offsets_to_transaction`` (Kafka's ``groupMetadata()``): the group
        coordinator then refuses the commit if the group has rebalanced since."""
        group = self._require_group()
        in_group = group.subscribed and group.generation >= 0
        return ConsumerGroupMetadata(group.group_id, group.generation if in_group else -1,
                                     group.member_id if in_group else "", group.group_instance_id)

    def _polled(self) -> None:
        if self._group is not None:
            self._group.on_poll()

    def assignment(self) -> set[TopicPartition]:
        return set(self._parts)

    def _part(self, tp: tuple[str, int]) -> PartitionState:
        part = self._parts.get(TopicPartition(*tp))
        if part is None:
            raise IllegalStateError(f"partition {tp[0]}-{tp[1]} is not assigned to this consumer")
        return part

    def _selected(self, partitions: tuple[tuple[str, int], ...]) -> list[PartitionState]:
        return [self._part(tp) for tp in partitions] if partitions else list(self._parts.values())

    def seek(self, partition: tuple[str, int], offset: int, *, until: int | None = None) -> None:
        """The next record handed out for ``partition`` will be the one at ``offset`` (or the
        first after it). Drops what was buffered for it.

        ``until`` makes it a bounded read: nothing is fetched once the fetch position reaches
        ``until`` (the batch holding ``until - 1`` is the last one requested; it may hold
        records past it). No fetch is left long-polling after the range, so the next request
        on the connection is not kept waiting behind it (the Spark reader reads one range per
        task). Once the position reaches ``until`` with nothing left buffered, getmany and
        getbatches for that partition return at once, empty, instead of waiting: the range
        may end in records never handed out (transaction markers, aborted records), so the
        caller checks ``position()`` rather than waiting for a record at ``until - 1``."""
        if offset < 0:
            raise ValueError(f"offset must be >= 0, not {offset}")
        self._part(partition).set_position(int(offset), until)
        self._fetcher.wake.set()

    async def seek_to_beginning(self, *partitions: tuple[str, int]) -> None:
        """Seek to the log start offset of ``partitions`` (all assigned when none given)."""
        parts = self._selected(partitions)
        offsets = await self._fetcher.list_offsets({p.tp: EARLIEST for p in parts})
        for p in parts:
            p.set_position(offsets[p.tp].offset)
        self._fetcher.wake.set()

    async def seek_to_end(self, *partitions: tuple[str, int]) -> None:
        """Seek to the log end offset (only records produced from now on will be read)."""
        parts = self._selected(partitions)
        offsets = await self._fetcher.list_offsets({p.tp: LATEST for p in parts})
        for p in parts:
            p.set_position(offsets[p.tp].offset)
        self._fetcher.wake.set()

    async def seek_to_timestamp(self, timestamp_ms: int, *partitions: tuple[str, int]) -> None:
        """Seek to the first record whose timestamp is >= ``timestamp_ms`` (ListOffsets); to the
        log end where there is none."""
        parts = self._selected(partitions)
        found = await self.offsets_for_times({p.tp: timestamp_ms for p in parts})
        missing = [p.tp for p in parts if found[p.tp] is None]
        ends = await self._fetcher.list_offsets({tp: LATEST for tp in missing}) if missing else {}
        for p in parts:
            hit = found[p.tp]
            p.set_position(hit.offset if hit is not None else ends[p.tp].offset)
        self._fetcher.wake.set()

    async def position(self, partition: tuple[str, int]) -> int:
        """Offset of the next record this consumer will hand out for ``partition`` (resolving
        an unknown position with ``auto_offset_reset`` first)."""
        part = self._part(partition)
        if part.position is None:
            await self._fetcher.reset([part])
        assert part.position is not None
        return part.position

    def highwater(self, partition: tuple[str, int]) -> int | None:
        """The high watermark from the last fetch answer for ``partition`` (None before one)."""
        hw = self._part(partition).high_watermark
        return None if hw < 0 else hw

    async def beginning_offsets(self, partitions: Iterable[tuple[str, int]]) -> dict[TopicPartition, int]:
        got = await self._fetcher.list_offsets({TopicPartition(*tp): EARLIEST for tp in partitions})
        return {tp: v.offset for tp, v in got.items()}

    async def end_offsets(self, partitions: Iterable[tuple[str, int]]) -> dict[TopicPartition, int]:
        got = await self._fetcher.list_offsets({TopicPartition(*tp): LATEST for tp in partitions})
        return {tp: v.offset for tp, v in got.items()}

    async def offsets_for_times(self, timestamps: Mapping[tuple[str, int], int]) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """First offset whose timestamp is >= the given one, per partition (None: no such record)."""
        for ts in timestamps.values():
            if ts < 0:
                raise ValueError(f"timestamps must be >= 0, not {ts}")
        got = await self._fetcher.list_offsets({TopicPartition(*tp): ts for tp, ts in timestamps.items()})
        return {tp: (None if v.offset < 0 else v) for tp, v in got.items()}

    async def partitions_for_topic(self, topic: str) -> set[int]:
        """Partition ids of ``topic``; UnknownTopicOrPartitionError at once if it does not
        exist (other errors, such as LEADER_NOT_AVAILABLE just after creation, are retried)."""
        got = (await self._cluster.refresh_metadata([topic])).get(topic)
        if got is None or got.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            raise error_for_code(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic!r} does not exist")
        if got.error_code or not got.partitions:
            got = await self._cluster.topic(topic)
        return set(got.partitions)



    # ------------------------------------------------------------ the fetch loop








    # ------------------------------------------------------------ handing records out






    def _ready_parts(self, partitions: tuple[tuple[str, int], ...]) -> list[PartitionState]:
        parts = self._selected(partitions)
        if len(parts) > 1:
            k = self._rr % len(parts)
            self._rr += 1
            parts = parts[k:] + parts[:k]
        return parts

    async def _wait(self, deadline: float | None) -> bool:
        """Wait for a fetch to complete; False once ``deadline`` (monotonic) has passed."""
        if not self._fetcher.started:
            raise IllegalStateError("the consumer is not started or already closed"
                                    " (use `async with Consumer(...) as consumer:`)")
        if deadline is None:
            await self._fetcher.data.wait()
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            await asyncio.wait_for(self._fetcher.data.wait(), left)
        except TimeoutError:
            return False
        return True

    async def getmany(self, *partitions: tuple[str, int], timeout_ms: int = 0,
                      max_records: int | None = None) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Records buffered for ``partitions`` (all assigned ones when none are given), at most
        ``max_records`` in all (default ``max_poll_records``); waits up to ``timeout_ms`` when
        nothing is buffered (0: return at once, possibly empty). A partition's error (corrupt
        batch, out of range with ``auto_offset_reset='none'``, ...) is raised once the records
        before it are handed out."""
        if max_records is None:
            max_records = self.max_poll_records
        limit = max_records if max_records is not None else 1 << 62
        deadline = time.monotonic() + timeout_ms / 1000
        await _yield()
        while True:
            self._polled()
            self._fetcher.data.clear()
            parts = self._ready_parts(partitions)
            out: dict[TopicPartition, list[ConsumerRecord]] = {}
            for p in parts:
                if limit <= 0:
                    break
                rows = self._fetcher.take_rows(p, limit)
                if rows:
                    out[p.tp] = rows
                    limit -= len(rows)
            if out:
                return out
            self._fetcher.raise_error(parts)
            if self._fetcher.bounded_reads_done(parts) or not await self._wait(deadline):
                return out

    async def getone(self, *partitions: tuple[str, int]) -> ConsumerRecord:
        """The next record of ``partitions`` (all assigned when none given), waiting for it."""
        while True:
            got = await self.getmany(*partitions, max_records=1, timeout_ms=self.request_timeout_ms)
            for rows in got.values():
                return rows[0]

    async def getbatches(self, *partitions: tuple[str, int], timeout_ms: int = 0,
                         max_records: int | None = None, max_batches: int | None = None,
                         coalesce: bool = False) -> list[ColumnBatch]:
        """Bulk mode: the buffered records as ColumnBatches, one per RecordBatch (cut to keep
        within ``max_records`` in all; at most ``max_batches``); waits up to ``timeout_ms`` when
        nothing is buffered. Positions move past what is returned. ``coalesce``: a run of
        consecutive plain RecordBatches of one fetch response (uncompressed, not control, one
        timestamp type) comes as one ColumnBatch, decoded in one call of the C extension (without
        it, or for other batches, one per RecordBatch as before)."""
        limit = max_records if max_records is not None else 1 << 62
        nb = max_batches if max_batches is not None else 1 << 62
        deadline = time.monotonic() + timeout_ms / 1000
        take = self._fetcher.take_column_run if coalesce else self._fetcher.take_columns
        await _yield()
        while True:
            self._polled()
            self._fetcher.data.clear()
            parts = self._ready_parts(partitions)
            out: list[ColumnBatch] = []
            for p in parts:
                while limit > 0 and len(out) < nb:
                    cb = take(p, limit)
                    if cb is None:
                        break
                    out.append(cb)
                    limit -= len(cb)
                if limit <= 0 or len(out) >= nb:
                    break
            if out:
                return out
            self._fetcher.raise_error(parts)
            if self._fetcher.bounded_reads_done(parts) or not await self._wait(deadline):
                return out

    async def batches(self, *partitions: tuple[str, int]) -> AsyncIterator[ColumnBatch]:
        """``async for cb in consumer.batches():`` one ColumnBatch at a time, until the
        consumer is closed. The position moves past a batch as it is yielded."""
        while not self._fetcher.closed:
            for cb in await self.getbatches(*partitions, timeout_ms=self.request_timeout_ms, max_batches=1):
                yield cb

    def __aiter__(self) -> Consumer:
        return self

    async def __anext__(self) -> ConsumerRecord:
        part = self._cur
        if part is not None and part.rest is not None:
            rest = part.rest
            i = part.rest_i
            r = rest[i]
            i += 1
            if i == len(rest):
                part.rest = None
                part.position = part.rest_next
                self._cur = None
            else:
                part.rest_i = i
                part.position = r[2] + 1
            return r
        return await self._anext_slow()

    async def _anext_slow(self) -> ConsumerRecord:
        await _yield()
        while True:
            if self._fetcher.closed:
                raise StopAsyncIteration
            self._polled()
            self._fetcher.data.clear()
            parts = self._ready_parts(())
            for p in parts:
                if p.rest is not None or self._fetcher.next_rows(p):
                    self._cur = p
                    return await self.__anext__()
            self._fetcher.raise_error(parts)
            await self._wait(None)


async def _yield() -> None:
    """One turn of the event loop: the fetch tasks send what was launched and received bytes
    are read, even when the application finds records buffered on every call (~5 µs; once per
    getmany/getbatches call and once per RecordBatch in ``async for``)."""
    await asyncio.sleep(0)
