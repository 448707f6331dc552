"""The fetch pipeline of the Consumer: per-partition state, the background fetch loop, and
decoding buffered record bytes into what the application gets.

A background task (``Fetcher.loop``) sends one Fetch per broker node for every assigned
partition that has no fetch in flight and fewer than ``PREFETCH`` (2) undecoded chunks
buffered: while the application works through one chunk, the request for the next range is
already out (or its answer already buffered). A chunk (``client.consumer_records.FetchedChunk``) is the
record bytes of one partition from one response, kept as a memoryview of the response frame,
whole batches only: a partial trailing batch, cut by ``max_partition_fetch_bytes``, is dropped
and the next fetch starts at it. A partition whose answer held *only* a partial batch goes
first in the next request, where KIP-74 guarantees it one whole batch.

Records are decoded lazily, one RecordBatch at a time, in the application's call (``take_rows``
/ ``take_columns`` / ``next_rows``), with the CRC checked unless ``check_crcs`` is off; the
chunk's slot is freed (and the next fetch sent) when its last batch is decoded. A seek bumps
the partition's generation: buffered chunks are dropped and answers to fetches sent before it
are ignored. A partition without a position gets one from ``auto_offset_reset`` (ListOffsets)
before it is fetched; OFFSET_OUT_OF_RANGE clears the position so that happens again (or, with
``none``, becomes the partition's error).

Errors. Connection errors and retriable partition errors (leader moved, topic being created)
are retried here with ``retry_backoff_ms``. A corrupt batch or another non-retriable error
becomes the partition's ``error``: the consumer raises it once the records before it are handed
out, and the partition is fetched again from its position afterwards — so a bad batch fails
again until the application seeks past it, as in Kafka's consumer.

Transactions. Control batches (COMMIT/ABORT markers) are skipped in both isolation levels:
the position moves past them. With ``isolation_level='read_committed'`` the broker answers
only records below the last stable offset (every transaction there has ended) and lists the
aborted transactions overlapping the answer; the batches of those producers' transactions,
from each one's first offset to its ABORT marker, are dropped before decoding
(``client.aborted_transactions``), for records and bulk columns alike, and the position
moves past them. read_uncommitted hands out everything, aborted records included.

Not done: fetch sessions (KIP-227: every Fetch lists all its partitions).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from client.aborted_transactions import AbortedTransactions
from client.cluster import Cluster
from client.consumer_records import (
    ColumnBatch,
    ConsumerRecord,
    FetchedChunk,
    batch_next_offset,
    decode_batch_columns,
    decode_batch_rows,
    decode_run_columns,
    whole_batches,
)
from client.errors import KafkaError, error_for_code
from client.protocol.api import ApiKey, ErrorCode, error_name
from client.records.batch import RecordError
from client.records.compression import DEFAULT_MAX_DECOMPRESSED
from client.structs import OffsetAndTimestamp, OffsetSpec, TopicPartition

__all__ = ["Fetcher", "PartitionState", "NoOffsetForPartitionError", "PREFETCH"]

logger = logging.getLogger("client.consumer")

PREFETCH = 2  # undecoded chunks buffered per partition before it stops being fetched
EARLIEST = OffsetSpec.EARLIEST
LATEST = OffsetSpec.LATEST


class NoOffsetForPartitionError(KafkaError):
    """The position of a partition is unknown and ``auto_offset_reset`` is ``none``."""


class PartitionState:
    __slots__ = ("tp", "position", "fetch_offset", "generation", "chunks", "rest", "rest_i", "rest_next",
                 "rest_cols", "in_flight", "resetting", "error", "high_watermark", "last_stable_offset",
                 "log_start_offset", "until")

    def __init__(self, tp: TopicPartition) -> None:
        self.tp = tp
        self.position: int | None = None
        self.fetch_offset = -1
        self.generation = 0
        self.chunks: deque[FetchedChunk] = deque()
        self.rest: list[ConsumerRecord] | None = None  # decoded records not handed out yet
        self.rest_i = 0
        self.rest_next = -1  # position once ``rest`` is exhausted (the batch's next offset)
        self.rest_cols: ColumnBatch | None = None  # bulk mode's remainder (max_records cut)
        self.in_flight = False
        self.resetting = False
        self.error: BaseException | None = None
        self.high_watermark = -1
        self.last_stable_offset = -1
        self.log_start_offset = -1
        self.until: int | None = None  # a bounded read: no fetch once fetch_offset >= until

    def set_position(self, offset: int, until: int | None = None) -> None:
        self.position = offset
        self.fetch_offset = offset
        self.until = until
        self.generation += 1
        self.chunks.clear()
        self.rest = None
        self.rest_cols = None
        self.error = None

    def clear_position(self) -> None:
        """Forget the position (``auto_offset_reset`` will find one)."""
        self.set_position(0)
        self.position = None

    @property
    def has_data(self) -> bool:
        return bool(self.rest is not None or self.rest_cols is not None or self.chunks)


class Fetcher:
    """Fetch state and tasks of one Consumer (options as the Consumer's)."""

    def __init__(self, cluster: Cluster, *, fetch_min_bytes: int, fetch_max_wait_ms: int, fetch_max_bytes: int,
                 max_partition_fetch_bytes: int, auto_offset_reset: str, check_crcs: bool, isolation_level: int,
                 request_timeout_ms: int, retry_backoff_ms: int) -> None:
        self.cluster = cluster
        self.fetch_min_bytes = fetch_min_bytes
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.fetch_max_bytes = fetch_max_bytes
        #: how far one compressed batch may inflate when decoded: the larger of 64 MiB and
        #: fetch_max_bytes (a zstd batch of zeros inflates ~1000x; beyond it: CorruptRecordError)
        self.max_decompressed = max(DEFAULT_MAX_DECOMPRESSED, fetch_max_bytes)
        self.max_partition_fetch_bytes = max_partition_fetch_bytes
        self.auto_offset_reset = auto_offset_reset
        self.check_crcs = check_crcs
        self.isolation_level = isolation_level
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.parts: dict[TopicPartition, PartitionState] = {}
        self.order: deque[PartitionState] = deque()  # fetch order: rotated each request
        self.wake = asyncio.Event()  # the fetch loop has something to look at
        self.data = asyncio.Event()  # a fetch completed (data or error)
        self.tasks: set[asyncio.Task[Any]] = set()
        self.closed = False
        self._meta_pending = False
        self._task: asyncio.Task[None] | None = None

    @property
    def started(self) -> bool:
        return self._task is not None and not self.closed

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._fetch_loop())

    async def close(self) -> None:
        """Stop every task. The caller closes the connections *first*: requests in flight then
        fail and their tasks see it, so no answer future is left with an unread exception."""
        self.closed = True
        self.data.set()  # wake whoever waits for records
        await asyncio.sleep(0)  # let the failed answers' callbacks run
        tasks = list(self.tasks) + ([self._task] if self._task is not None else [])
        for t in tasks:
            t.cancel()
        for t in tasks:
            try:
                await t
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - closing: the task's outcome no longer matters
                pass
        self.tasks.clear()
        self._task = None

    def assign(self, tps: Iterable[TopicPartition]) -> None:
        new = set(tps)
        for tp in list(self.parts):
            if tp not in new:
                del self.parts[tp]
        for tp in sorted(new):
            if tp not in self.parts:
                self.parts[tp] = PartitionState(tp)
        self.order = deque(self.parts[tp] for tp in sorted(new))
        self.wake.set()

    # ------------------------------------------------------------ offsets

    async def list_offsets(self, request: Mapping[TopicPartition, int]) -> dict[TopicPartition, OffsetAndTimestamp]:
        """ListOffsets, grouped by leader, retrying what a metadata refresh can fix."""
        out: dict[TopicPartition, OffsetAndTimestamp] = {}
        todo = dict(request)
        deadline = time.monotonic() + self.request_timeout_ms / 1000
        while todo:
            by_node: dict[int, list[TopicPartition]] = {}
            for tp in todo:
                tm = await self.cluster.topic(tp.topic)
                leader = tm.partitions.get(tp.partition)
                if leader is None:
                    raise error_for_code(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp.topic}-{tp.partition} does not exist")
                by_node.setdefault(leader, []).append(tp)
            retry: dict[TopicPartition, int] = {}
            last: KafkaError | None = None
            for node, tps in by_node.items():
                conn = await self.cluster.node_connection(node)
                version = conn.pick_version(ApiKey.LIST_OFFSETS)
                topics: dict[str, list[dict[str, int]]] = {}
                for tp in tps:
                    topics.setdefault(tp.topic, []).append({"partition_index": tp.partition, "timestamp": todo[tp]})
                resp = await conn.request(ApiKey.LIST_OFFSETS, version, {
                    "replica_id": -1, "isolation_level": self.isolation_level,
                    "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]})
                for t in resp["topics"]:
                    for p in t["partitions"]:
                        tp = TopicPartition(t["name"], p["partition_index"])
                        code = p["error_code"]
                        if code == 0:
                            out[tp] = OffsetAndTimestamp(p["offset"], p["timestamp"])
                            continue
                        err = error_for_code(code, f"ListOffsets {tp.topic}-{tp.partition}: {error_name(code)}")
                        if not err.retriable:
                            raise err
                        retry[tp] = todo[tp]
                        last = err
            if retry:
                if time.monotonic() >= deadline:
                    raise last  # type: ignore[misc]
                for tp in retry:
                    self.cluster.invalidate(tp.topic)
                await asyncio.sleep(self.retry_backoff_ms / 1000)
            todo = retry
        return out

    async def reset(self, parts: list[PartitionState]) -> None:
        """Give positionless partitions a position with ``auto_offset_reset``."""
        parts = [p for p in parts if p.position is None]
        if not parts:
            return
        if self.auto_offset_reset == "none":
            raise NoOffsetForPartitionError(
                "no position for " + ", ".join(f"{p.tp.topic}-{p.tp.partition}" for p in parts)
                + " and auto_offset_reset is 'none': seek first")
        gens = {p.tp: p.generation for p in parts}
        ts = EARLIEST if self.auto_offset_reset == "earliest" else LATEST
        offsets = await self.list_offsets({p.tp: ts for p in parts})
        for p in parts:
            if p.generation == gens[p.tp] and p.position is None and self.parts.get(p.tp) is p:
                p.set_position(offsets[p.tp].offset)
        self.wake.set()

    # ------------------------------------------------------------ the fetch loop

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _fetch_loop(self) -> None:
        while not self.closed:
            self.wake.clear()
            try:
                self._launch()
            except Exception:  # never let the loop die; the next wake-up retries
                logger.exception("fetch loop")
            await self.wake.wait()

    def _launch(self) -> None:
        if self.closed:
            return
        by_node: dict[int, list[PartitionState]] = {}
        to_reset: list[PartitionState] = []
        unknown: set[str] = set()
        topics = self.cluster.topics
        for part in self.order:
            if part.in_flight or part.error is not None or len(part.chunks) >= PREFETCH:
                continue
            if part.until is not None and part.fetch_offset >= part.until:
                continue  # a bounded read that has everything it asked for
            if part.position is None:
                if not part.resetting:
                    to_reset.append(part)
                continue
            tm = topics.get(part.tp.topic)
            leader = tm.partitions.get(part.tp.partition) if tm is not None else None
            if leader is None or leader < 0:
                unknown.add(part.tp.topic)
                continue
            by_node.setdefault(leader, []).append(part)
        if to_reset:
            for p in to_reset:
                p.resetting = True
            self._spawn(self._reset_task(to_reset))
        if unknown and not self._meta_pending:
            self._meta_pending = True
            self._spawn(self._metadata_task(sorted(unknown)))
        for node, parts in by_node.items():
            for p in parts:
                p.in_flight = True
            self._spawn(self._fetch(node, parts))
        if self.order:
            self.order.rotate(-1)

    async def _reset_task(self, parts: list[PartitionState]) -> None:
        try:
            await self.reset(parts)
        except asyncio.CancelledError:
            raise
        except NoOffsetForPartitionError as e:
            for p in parts:
                if p.position is None:
                    p.error = e
            self.data.set()
        except KafkaError as e:
            if not e.retriable:  # TOPIC_AUTHORIZATION_FAILED...: the application is told (getmany raises), as
                # Java's poll() throws, instead of retrying for ever
                for p in parts:
                    if p.position is None:
                        p.error = e
                self.data.set()
                return
            logger.warning("cannot reset positions: %s", e)
            await asyncio.sleep(self.retry_backoff_ms / 1000)
        finally:
            for p in parts:
                p.resetting = False
            self.wake.set()

    async def _metadata_task(self, topics: list[str]) -> None:
        try:
            for t in topics:
                try:
                    await self.cluster.topic(t, timeout_ms=0)
                except KafkaError as e:
                    # Retried every retry_backoff_ms while the partition stays assigned (the
                    # topic may be about to be created), so only at debug level.
                    (logger.debug if e.retriable else logger.warning)("metadata for %r: %s", t, e)
                    await asyncio.sleep(self.retry_backoff_ms / 1000)
        finally:
            self._meta_pending = False
            self.wake.set()

    async def _fetch(self, node: int, parts: list[PartitionState]) -> None:
        sent = [(p, p.generation, p.fetch_offset) for p in parts]
        try:
            await self._fetch_once(node, sent)
        except asyncio.CancelledError:
            raise
        except KafkaError as e:
            logger.debug("fetch from node %d failed: %s", node, e)
            if e.invalid_metadata:
                self.cluster.invalidate()
            await asyncio.sleep(self.retry_backoff_ms / 1000)
        except Exception:
            logger.exception("fetch from node %d", node)
            await asyncio.sleep(self.retry_backoff_ms / 1000)
        finally:
            for p, _, _ in sent:
                p.in_flight = False
            self.data.set()
            self.wake.set()

    async def _fetch_once(self, node: int, sent: list[tuple[PartitionState, int, int]]) -> None:
        conn = await self.cluster.node_connection(node)
        version = conn.pick_version(ApiKey.FETCH)
        topics: dict[str, list[dict[str, int]]] = {}
        for p, _, offset in sent:
            topics.setdefault(p.tp.topic, []).append({
                "partition": p.tp.partition, "current_leader_epoch": -1, "fetch_offset": offset,
                "log_start_offset": -1, "partition_max_bytes": self.max_partition_fetch_bytes})
        resp = await conn.request(ApiKey.FETCH, version, {
            "replica_id": -1, "max_wait_ms": self.fetch_max_wait_ms, "min_bytes": self.fetch_min_bytes,
            "max_bytes": self.fetch_max_bytes, "isolation_level": self.isolation_level,
            "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
            "forgotten_topics_data": [], "rack_id": ""},
            timeout=(self.request_timeout_ms + self.fetch_max_wait_ms) / 1000)
        if resp.get("error_code"):
            raise error_for_code(resp["error_code"], f"fetch from node {node}: {error_name(resp['error_code'])}")
        sent_by_tp = {p.tp: (p, gen, offset) for p, gen, offset in sent}
        backoff = False
        first: list[PartitionState] = []
        for t in resp["responses"]:
            for pr in t["partitions"]:
                got = sent_by_tp.get(TopicPartition(t["topic"], pr["partition_index"]))
                if got is None:
                    continue
                p, gen, offset = got
                if p.generation != gen or self.parts.get(p.tp) is not p:
                    continue  # seeked (or unassigned) since: stale
                code = pr["error_code"]
                if code == 0:
                    p.high_watermark = pr["high_watermark"]
                    p.last_stable_offset = pr["last_stable_offset"]
                    p.log_start_offset = pr["log_start_offset"]
                    records = pr["records"]
                    if records is not None and len(records):
                        try:
                            end, nxt, n = whole_batches(records)
                        except RecordError as e:
                            p.error = error_for_code(ErrorCode.CORRUPT_MESSAGE,
                                                     f"{p.tp.topic}-{p.tp.partition} at offset {offset}: {e}")
                            continue
                        if n:
                            aborted = pr.get("aborted_transactions") if self.isolation_level else None
                            p.chunks.append(FetchedChunk(records, end, offset, nxt, AbortedTransactions(
                                [(a["producer_id"], a["first_offset"]) for a in aborted], self.check_crcs)
                                if aborted else None))
                            p.fetch_offset = nxt
                        else:
                            first.append(p)  # only a partial batch: ask for it first next time
                elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    if self.auto_offset_reset == "none":
                        p.error = error_for_code(
                            code, f"offset {offset} is out of range for {p.tp.topic}-{p.tp.partition} (log start"
                                  f" {pr['log_start_offset']}, end {pr['high_watermark']}) and auto_offset_reset is 'none'")
                    else:
                        logger.info("offset %d out of range for %s-%d: resetting to %s", offset, p.tp.topic,
                                    p.tp.partition, self.auto_offset_reset)
                        p.clear_position()
                else:
                    err = error_for_code(code, f"fetch {p.tp.topic}-{p.tp.partition}: {error_name(code)}")
                    if err.invalid_metadata:
                        self.cluster.invalidate(p.tp.topic)
                    if err.retriable:
                        backoff = True
                    else:
                        p.error = err
        for p in first:
            try:
                self.order.remove(p)
            except ValueError:
                continue
            self.order.appendleft(p)
        if backoff:
            await asyncio.sleep(self.retry_backoff_ms / 1000)

    # ------------------------------------------------------------ handing records out

    @staticmethod
    def bounded_reads_done(parts: list[PartitionState]) -> bool:
        """Every one of ``parts`` is a bounded read (``until``) whose position has reached its
        end with nothing buffered: nothing more will be handed out for them."""
        return bool(parts) and all(p.until is not None and p.position is not None and p.position >= p.until
                                   and not p.has_data for p in parts)

    def raise_error(self, parts: Iterable[PartitionState]) -> None:
        for p in parts:
            if p.error is not None and not p.has_data:
                err, p.error = p.error, None
                self.wake.set()
                raise err

    def _corrupt(self, part: PartitionState, chunk: FetchedChunk, e: RecordError) -> None:
        """A bad batch: drop the buffer; the error goes to the application, and the next fetch
        starts again at the position (so it fails again until the application seeks)."""
        # A new generation: a fetch already in flight must not bring the bytes after the bad
        # batch in behind the application's back.
        part.set_position(part.position if part.position is not None else chunk.fetch_offset)
        part.error = error_for_code(ErrorCode.CORRUPT_MESSAGE,
                                    f"{part.tp.topic}-{part.tp.partition}: corrupt record batch at or after offset"
                                    f" {part.position}: {e}")
        part.error.__cause__ = e
        self.wake.set()

    def _decode_next(self, part: PartitionState, decode: Any) -> tuple[Any, int] | None:
        """Walk the partition's buffered chunks to the next batch with records at or above its
        position and decode it with ``decode`` (decode_batch_rows or decode_batch_columns):
        ``(rows or columns, next offset)``, or None when nothing is buffered or a corrupt batch
        stopped the partition."""
        chunks = part.chunks
        while chunks:
            chunk = chunks[0]
            pos = chunk.next_batch()
            if pos < 0:
                chunks.popleft()
                self._launch()
                continue
            if chunk.pos >= chunk.end:
                # Its last batch: free the slot now, so the next range is requested while the
                # application works through this one. Launched here, not by waking the fetch
                # loop: an application that calls getmany in a loop while records are buffered
                # gives the loop no turn, and the request would only go out once the buffer ran
                # dry (a round trip of stall per chunk). The consumer yields once per call, so
                # the task spawned here sends it at once.
                chunks.popleft()
                self._launch()
            try:
                aborted = chunk.aborted
                if aborted is not None and aborted.is_aborted(chunk.buf, pos):
                    nxt = batch_next_offset(chunk.buf, pos)
                    if part.position is not None and nxt > part.position:
                        part.position = nxt
                    continue
                got, nxt = decode(chunk.buf, pos, part.tp.topic, part.tp.partition,
                                  part.position or 0, self.check_crcs, self.max_decompressed)
            except RecordError as e:
                self._corrupt(part, chunk, e)
                return None
            if got is not None and len(got):
                return got, nxt
            if part.position is not None and nxt > part.position:
                part.position = nxt  # control batch, or all of it below the position
        return None

    def next_rows(self, part: PartitionState) -> bool:
        """Decode the partition's next batch into ``part.rest``; False when nothing is buffered."""
        if part.rest_cols is not None:
            cb, part.rest_cols = part.rest_cols, None
            part.rest, part.rest_i, part.rest_next = cb.to_records(), 0, cb.next_offset
            return True
        found = self._decode_next(part, decode_batch_rows)
        if found is None:
            return False
        part.rest, part.rest_i, part.rest_next = found[0], 0, found[1]
        return True

    def take_rows(self, part: PartitionState, limit: int) -> list[ConsumerRecord]:
        out: list[ConsumerRecord] = []
        while limit > 0:
            if part.rest is None and not self.next_rows(part):
                break
            rest = part.rest
            assert rest is not None
            i = part.rest_i
            n = len(rest) - i
            if n <= limit:
                if i == 0 and not out:
                    out = rest
                else:
                    out.extend(rest[i:] if i else rest)
                part.rest = None
                part.position = part.rest_next
                limit -= n
            else:
                j = i + limit
                out.extend(rest[i:j])
                part.rest_i = j
                part.position = rest[j - 1][2] + 1
                limit = 0
        return out

    def take_column_run(self, part: PartitionState, limit: int) -> ColumnBatch | None:
        """As ``take_columns``, but a run of plain batches of one chunk comes as one ColumnBatch
        (``decode_run_columns``); batch by batch where a run cannot start (a chunk of a
        read_committed answer listing aborted transactions, a compressed or control batch, the
        first batch straddling the position or the limit, records left over from a partial
        take, a corrupt batch: reported by the batch-by-batch path, where it is)."""
        chunks = part.chunks
        while part.rest is None and part.rest_cols is None and chunks:
            chunk = chunks[0]
            if chunk.pos >= chunk.end:
                chunks.popleft()
                self._launch()
                continue
            if chunk.aborted is not None:
                break
            try:
                got = decode_run_columns(chunk.buf, chunk.pos, chunk.end, part.tp.topic, part.tp.partition,
                                         part.position or 0, limit, self.check_crcs)
            except RecordError:
                break
            if got is None:
                break
            cb, chunk.pos = got
            if chunk.pos >= chunk.end:
                chunks.popleft()
                self._launch()  # as _decode_next: the next range is requested while this one is used
            part.position = cb.next_offset
            return cb
        return self.take_columns(part, limit)

    def take_columns(self, part: PartitionState, limit: int) -> ColumnBatch | None:
        cb: ColumnBatch | None
        if part.rest is not None:
            rest, i = part.rest, part.rest_i
            cb = ColumnBatch.from_records(rest[i:] if i else rest, part.rest_next)
            part.rest = None
        elif part.rest_cols is not None:
            cb, part.rest_cols = part.rest_cols, None
        else:
            found = self._decode_next(part, decode_batch_columns)
            if found is None:
                return None
            cb = found[0]
        if len(cb) > limit:
            part.rest_cols = cb.slice(limit)
            cb = cb.slice(0, limit)
        part.position = cb.next_offset
        return cb


