"""Fetch (1), v0-18: index lookup, then the record bytes leave by ``os.sendfile`` (v4+) or
down-converted to magic 0/1 message sets (v0-3, see "Old versions" below).

For each partition: ``Log.read`` gives file slices starting at the batch that holds
``fetch_offset``; the first non-empty partition's first batch is always whole (KIP-74), after
that ``min(partition_max_bytes, bytes left of max_bytes)`` (a slice may end mid-batch; clients
drop the partial tail). Errors: OFFSET_OUT_OF_RANGE below the log start or above the log end,
UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID (v13+, topics named by id),
UNKNOWN_LEADER_EPOCH for a ``current_leader_epoch`` (v9+) above 0, the only leader epoch here.
high_watermark = log end offset (one replica); preferred_read_replica = -1 (no follower to
read from); records are never null.

Isolation (v4+): read_uncommitted (0) reads up to the high watermark and answers
``aborted_transactions`` null. read_committed (1) reads only below the partition's last
stable offset (the first offset of its oldest open transaction, see Log.last_stable_offset)
and answers the aborted transactions (producer id, first offset) overlapping the records
returned, from the segments' ``.txnindex``: the client drops those producers' records from
each first offset up to their ABORT marker, and skips control batches. ``last_stable_offset``
is the LSO in both modes.

Fetch sessions (KIP-227, v7+): see broker/fetch_session.py. A full request (session epoch 0)
opens a session when the cache has room and is answered in full with its id; an incremental
one (epoch > 0) updates its session and is answered with the partitions that changed. Idle
partitions of a session cost one comparison each: a partition whose fetch offset is its high
watermark and last stable offset, both as last answered, is not read at all.

``last_fetched_epoch`` (v12+, followers; consumers send -1) is checked as Kafka does: epoch 0
ends at the log end offset, so a fetch offset past it answers ``diverging_epoch`` (0, log end
offset) with no records; any other epoch is unknown here (OFFSET_OUT_OF_RANGE).

Long poll: with fewer than ``min_bytes`` available and no error, the request waits until an
append to one of its partitions or ``max_wait_ms``, then reads again.

Authorization (with an authorizer): READ on each topic (internal topics: CLUSTER_ACTION, see
authz.py), a follower's fetch CLUSTER_ACTION on the cluster; a topic denied answers
TOPIC_AUTHORIZATION_FAILED for each of its partitions, whether it exists or not.

Response layout (Kafka's FetchResponse.json), after the frame size::

    int32 correlation_id | tag buffer [v12+]              (response header v0 / v1)
    int32 throttle_time_ms | int16 error_code [v7+] | int32 session_id [v7+] | ARRAY topics
      STRING topic [v4-12] | UUID topic_id [v13+] | ARRAY partitions
        int32 partition_index | int16 error_code | int64 high_watermark
        int64 last_stable_offset | int64 log_start_offset [v5+]
        ARRAY aborted_transactions (null for read_uncommitted, empty otherwise)
        int32 preferred_read_replica [v11+] | BYTES records (sendfile)
        tag buffer [v12+]: tag 0 diverging_epoch {int32 epoch, int64 end_offset}
      tag buffer [v12+]
    tag buffer [v12+]

ARRAY/STRING/BYTES are int32/int16/int32-length-prefixed up to v11, and "compact" from v12
(unsigned varint of length + 1, 0 = null).

Old versions (v0-3, which Kafka 3.9 serves and Kafka 4 removed): clients from before Kafka
0.11 read magic 0 (v0-1) or magic 1 (v2-3) message sets, so the v2 batches read are
down-converted in memory, as Kafka 3.9's ``KafkaApis.maybeConvertFetchedData`` and
``LazyDownConversionRecords`` do (client/records/downconvert.py: control batches skipped,
records below the fetch offset of an uncompressed batch left out, compressed batches
re-compressed in the same codec as one wrapper message). The read is Kafka's for these
versions: read_uncommitted (there is no isolation level), ``max_bytes`` (v3; v0-2: none) at
most Kafka's ``fetch.max.bytes`` default (55 MiB, which bounds what one request converts),
the first partition's first batch whole only from v3 (KIP-74: v0-2 have a hard limit, and a
batch larger than ``partition_max_bytes`` gives no message), a partition's first converted
batch whole, the rest within the bytes read. Per partition of a topic on this broker:
``compression.type=zstd`` answers UNSUPPORTED_COMPRESSION_TYPE (as Kafka for any version
below 10), ``message.downconversion.enable=false`` UNSUPPORTED_VERSION, a zstd batch first in
line UNSUPPORTED_COMPRESSION_TYPE (with high watermark -1, as Kafka's error responses). The
conversion runs in the inflate threads (off the event loop); compressed batches inflate
within the broker's bounds (storage/inflation.py). Response v0-3::

    int32 correlation_id | int32 throttle_time_ms [v1+] | ARRAY topics
      STRING topic | ARRAY partitions
        int32 partition_index | int16 error_code | int64 high_watermark | BYTES records
"""

from __future__ import annotations

import asyncio
import os
import struct
import uuid
from collections.abc import Callable, Coroutine
from typing import Any

from client.protocol.api import ApiKey, ErrorCode
from client.records.batch import UnsupportedCompressionTypeError
from client.records.downconvert import down_convert

from ..errors import error_code_of
from ..fetch_session import FetchSession, TopicKey, next_epoch
from ..request_context import RequestContext
from ..state import BrokerState
from ..storage.errors import OffsetOutOfRangeError
from ..storage.file_records import FileSlice
from ..storage.inflation import InflationPool
from ..storage.log_validator import max_decompressed_size
from .authz import AclOperation, cluster_allows, may_read_topic
from .common import FetchReply
from .quotas import bound_fetch

API_KEY = ApiKey.FETCH
AUTHORIZATION = "READ on each topic (CLUSTER_ACTION for an internal one); CLUSTER_ACTION for a follower's fetch"

FLEXIBLE_FROM = 12
#: the first version whose records are RecordBatch v2; below it they are down-converted
RECORD_BATCH_FROM = 4
#: Kafka's ``fetch.max.bytes`` default (55 MiB): Kafka bounds every fetch's total with it; here
#: it bounds the v0-3 fetches, whose records are converted in memory
OLD_FETCH_MAX_BYTES = 55 * 1024 * 1024
TOPIC_IDS_FROM = 13
#: the leader epoch of every partition: one broker, never a leader change
LEADER_EPOCH = 0
#: session epochs of a full fetch request: 0 opens a session, -1 asks for none
_FULL_FETCH_EPOCHS = (0, -1)

_TOP = struct.Struct(">ihi")  # throttle, error_code, session_id (v7+)
_I32 = struct.Struct(">i")
_PART = struct.Struct(">ihqq")  # index, error, high watermark, last stable offset
_I64 = struct.Struct(">q")
_ABORTED = struct.Struct(">qq")  # producer_id, first_offset
_DIVERGING_TAG = struct.Struct(">iq")  # the diverging_epoch struct: epoch, end offset
_OLD_PART = struct.Struct(">ihqi")  # v0-3: index, error, high watermark, records size

#: one partition of the answer: (index, error, high watermark, log start, slices, diverging
#: epoch's end offset or -1, last stable offset, aborted transactions (producer id, first offset))
Part = tuple[int, int, int, int, list[FileSlice], int, int, list[tuple[int, int]]]
_NO_ABORTED: list[tuple[int, int]] = []
_NO_SLICES: list[FileSlice] = []  # shared: never appended to
#: the answer: [(topic name, topic id, [Part])]; the name is "" for an unknown id
Result = list[tuple[str, uuid.UUID | None, list[Part]]]


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _partition_error(p: dict[str, Any], log: Any) -> int:
    """The error Kafka answers before reading, or 0."""
    if p["current_leader_epoch"] > LEADER_EPOCH:
        return ErrorCode.UNKNOWN_LEADER_EPOCH
    if p["last_fetched_epoch"] > LEADER_EPOCH:  # an epoch this partition never had
        return ErrorCode.OFFSET_OUT_OF_RANGE
    if p["last_fetched_epoch"] == LEADER_EPOCH and p["fetch_offset"] < log.log_start_offset:
        return ErrorCode.OFFSET_OUT_OF_RANGE
    return 0


def _read_all(request: dict[str, Any], version: int, state: BrokerState,
              ctx: RequestContext | None = None) -> tuple[Result, int, bool]:
    """Read every partition: the answer, the total record bytes, and whether any partition had
    an error. With ``ctx`` (an authorizer is on), a topic the request may not read answers
    TOPIC_AUTHORIZATION_FAILED for each of its partitions."""
    read_committed = request.get("isolation_level", 0) == 1
    limit = request["max_bytes"]
    old = version < RECORD_BATCH_FROM
    if old:
        limit = min(limit, OLD_FETCH_MAX_BYTES)
    # KIP-74 (the first partition's first batch whole) from v3; v0-2 have a hard limit
    min_one = version >= 3
    total = 0
    errors = False
    out: Result = []
    by_id = version >= TOPIC_IDS_FROM
    for t in request["topics"]:
        topic_id = t["topic_id"] if by_id else None
        name = state.logs.topic_name(t["topic_id"]) if by_id else t["topic"]
        parts: list[Part] = []
        if name is None:
            out.append(("", topic_id, [(p["partition"], ErrorCode.UNKNOWN_TOPIC_ID, -1, -1, [], -1, -1, _NO_ABORTED)
                                       for p in t["partitions"]]))
            errors = True
            continue
        if ctx is not None and not _may_read(ctx, request, version, name):
            out.append((name, topic_id, [(p["partition"], ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1, -1, [], -1, -1,
                                          _NO_ABORTED) for p in t["partitions"]]))
            errors = True
            continue
        for p in t["partitions"]:
            idx = p["partition"]
            log = state.logs.get_log(name, idx)
            if log is None:
                parts.append((idx, state.logs.missing_partition_error(name, idx), -1, -1, [], -1, -1, _NO_ABORTED))
                errors = True
                continue
            lso = log.last_stable_offset
            err = _partition_error(p, log)
            if err:
                parts.append((idx, err, log.high_watermark, log.log_start_offset, [], -1, lso, _NO_ABORTED))
                errors = True
                continue
            if p["last_fetched_epoch"] == LEADER_EPOCH and p["fetch_offset"] > log.log_end_offset:
                end = log.log_end_offset
                parts.append((idx, 0, log.high_watermark, log.log_start_offset, [], end, lso, _NO_ABORTED))
                errors = True  # answer at once, as for an error: there is nothing to wait for
                continue
            offset = p["fetch_offset"]
            if offset == lso == log.high_watermark and not log.closed:
                # Nothing new (a caught-up consumer's every partition): what log.read answers at
                # the log end, without building its result.
                parts.append((idx, 0, lso, log.log_start_offset, _NO_SLICES, -1, lso, _NO_ABORTED))
                continue
            try:
                res = log.read(offset, min(p["partition_max_bytes"], limit), min_one,
                               lso if read_committed else None)
            except OffsetOutOfRangeError:
                parts.append((idx, ErrorCode.OFFSET_OUT_OF_RANGE, log.high_watermark, log.log_start_offset, [], -1,
                              lso, _NO_ABORTED))
                errors = True
                continue
            except Exception as e:  # noqa: BLE001
                parts.append((idx, error_code_of(e), -1, -1, [], -1, -1, _NO_ABORTED))
                errors = True
                continue
            size = res.size
            if old and res.first_entry_incomplete and version >= 3:
                # Kafka replaces an incomplete first batch with nothing when the limit is not
                # hard (v3+); v0-2 keep the bytes, which convert to no message
                res, size = res._replace(slices=_NO_SLICES), 0
            aborted = _NO_ABORTED
            if size > 0:
                min_one = False
                if read_committed:
                    aborted = [(a.producer_id, a.first_offset) for a in log.collect_aborted_transactions(offset, lso)]
            limit = max(0, limit - size)
            total += size
            parts.append((idx, 0, res.high_watermark, res.log_start_offset, res.slices, -1, lso, aborted))
        out.append((name, topic_id, parts))
    return out, total, errors


def _encode(result: Result, version: int, correlation_id: int, read_committed: bool,
            error: int = 0, session_id: int = 0) -> FetchReply:
    flexible = version >= FLEXIBLE_FROM
    by_id = version >= TOPIC_IDS_FROM
    parts: list[bytes | FileSlice] = []
    buf = bytearray(_I32.pack(correlation_id))
    if flexible:
        buf += b"\x00"  # response header v1: no tagged fields
    buf += _I32.pack(0)  # throttle_time_ms
    if version >= 7:
        buf += struct.pack(">h", error) + _I32.pack(session_id)
    buf += _uvarint(len(result) + 1) if flexible else _I32.pack(len(result))
    size = 0
    if flexible:
        no_aborted = b"\x01" if read_committed else b"\x00"  # compact array: empty / null
    else:
        no_aborted = _I32.pack(0 if read_committed else -1)
    for name, topic_id, plist in result:
        if by_id:
            buf += topic_id.bytes if topic_id is not None else bytes(16)
        else:
            nb = name.encode()
            buf += _uvarint(len(nb) + 1) + nb if flexible else struct.pack(">h", len(nb)) + nb
        buf += _uvarint(len(plist) + 1) if flexible else _I32.pack(len(plist))
        for idx, err, hw, start, slices, diverging, lso, aborted in plist:
            buf += _PART.pack(idx, err, hw, lso)
            if version >= 5:
                buf += _I64.pack(start)
            if aborted:
                buf += _uvarint(len(aborted) + 1) if flexible else _I32.pack(len(aborted))
                for pid, first in aborted:
                    buf += _ABORTED.pack(pid, first)
                    if flexible:
                        buf += b"\x00"
            else:
                buf += no_aborted
            if version >= 11:
                buf += _I32.pack(-1)
            n = sum([s.size for s in slices]) if slices else 0
            buf += _uvarint(n + 1) if flexible else _I32.pack(n)
            if n:
                parts.append(bytes(buf))
                size += len(buf)
                buf = bytearray()
                parts.extend(s for s in slices if s.size)
                size += n
            if flexible:
                if diverging >= 0:  # one tagged field: tag 0, its size, the struct (no tags of its own)
                    buf += b"\x01\x00\x0d" + _DIVERGING_TAG.pack(LEADER_EPOCH, diverging) + b"\x00"
                else:
                    buf += b"\x00"
        if flexible:
            buf += b"\x00"  # the topic's tag buffer
    if flexible:
        buf += b"\x00"  # the response's tag buffer
    if buf:
        parts.append(bytes(buf))
        size += len(buf)
    return FetchReply(parts, size)


class _PoolOnly:
    """What a down-conversion's inflated buffers are paid from: the broker-wide pool of
    storage/inflation.py (a Produce request's own budget does not apply to a fetch)."""

    __slots__ = ("pool",)

    def __init__(self, pool: InflationPool) -> None:
        self.pool = pool

    def acquire(self, n: int) -> None:
        self.pool.acquire(n)

    def release(self, n: int) -> None:
        self.pool.release(n)

    def inflated(self, n: int) -> None:
        pass


#: one partition to down-convert: its slices, fetch offset, and the bound of one inflated batch
_Job = tuple[list[FileSlice], int, int]


def _convert_jobs(jobs: list[_Job], magic: int, memory: _PoolOnly) -> list[tuple[int, bytes]]:
    """In an inflate thread: each partition's bytes read (pread: the slices keep their files
    open) and down-converted, within as many bytes as were read (Kafka's first-batch rule
    aside); (error code, message set) per job."""
    out: list[tuple[int, bytes]] = []
    for slices, offset, bound in jobs:
        data = b"".join([os.pread(s.fd, s.size, s.position) for s in slices])
        try:
            out.append((0, down_convert(data, magic, offset, len(data), bound, memory)))
        except UnsupportedCompressionTypeError:
            out.append((ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, b""))
        except Exception as e:  # noqa: BLE001 - a batch that does not decode or inflate: that partition's error
            out.append((error_code_of(e), b""))
    return out


async def _down_converted(ctx: RequestContext, request: dict[str, Any], result: Result) -> FetchReply:
    """A v0-3 answer: each partition's v2 batches as magic 0 (v0-1) or magic 1 (v2-3) messages,
    or the error that replaces them (module docstring, "Old versions")."""
    state, version = ctx.state, ctx.api_version
    magic = 0 if version <= 1 else 1
    jobs: list[_Job] = []
    where: list[tuple[int, int]] = []
    final: Result = []
    for ti, (t, (name, topic_id, plist)) in enumerate(zip(request["topics"], result)):
        parts: list[Part] = []
        for p, part in zip(t["partitions"], plist):
            idx, err, _, _, slices = part[:5]
            log = state.logs.get_log(name, idx) if name and err != ErrorCode.TOPIC_AUTHORIZATION_FAILED else None
            if log is not None:
                cfg = log.config
                if cfg.compression_type == "zstd":
                    part = (idx, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, -1, -1, _NO_SLICES, -1, -1, _NO_ABORTED)
                elif not cfg.message_downconversion_enable:
                    part = (idx, ErrorCode.UNSUPPORTED_VERSION, -1, -1, _NO_SLICES, -1, -1, _NO_ABORTED)
                elif not err and slices:
                    jobs.append((slices, p["fetch_offset"], min(max_decompressed_size(cfg),
                                                                state.inflation.message_max)))
                    where.append((ti, len(parts)))
            parts.append(part)
        final.append((name, topic_id, parts))
    _metrics(state, version, final)
    converted: list[tuple[int, bytes]] = []
    if jobs:
        loop = asyncio.get_running_loop()
        converted = await loop.run_in_executor(state.inflate_executor, _convert_jobs, jobs, magic,
                                               _PoolOnly(state.inflation.pool))
    records: dict[tuple[int, int], tuple[int, bytes]] = dict(zip(where, converted))
    return _encode_old(final, records, version, ctx.correlation_id)


def _encode_old(result: Result, records: dict[tuple[int, int], tuple[int, bytes]], version: int,
                correlation_id: int) -> FetchReply:
    """The v0-3 response (module docstring); ``records``: the converted message sets (or the
    error that replaces them) by (topic, partition) position in ``result``."""
    buf = bytearray(_I32.pack(correlation_id))
    if version >= 1:
        buf += _I32.pack(0)  # throttle_time_ms
    buf += _I32.pack(len(result))
    for ti, (name, _, plist) in enumerate(result):
        nb = name.encode()
        buf += struct.pack(">h", len(nb)) + nb + _I32.pack(len(plist))
        for pi, (idx, err, hw, *_rest) in enumerate(plist):
            conv = records.get((ti, pi))
            data = b""
            if conv is not None:
                if conv[0]:
                    err, hw = conv[0], -1  # as Kafka's error answers: no offsets
                else:
                    data = conv[1]
            buf += _OLD_PART.pack(idx, err, hw, len(data)) + data
    return FetchReply([bytes(buf)], len(buf))


def _metrics(state: BrokerState, version: int, result: Result) -> None:
    if state.metrics is not None:
        state.metrics.fetched(version, [(name, plist) for name, _, plist in result if name])


def _expire(fut: asyncio.Future[None]) -> None:
    """A long poll's max_wait_ms has passed: wake it (unless an append did)."""
    if not fut.done():
        fut.set_result(None)


def _may_read(ctx: RequestContext, request: dict[str, Any], version: int, topic: str) -> bool:
    """A follower's fetch (replica id >= 0) needs CLUSTER_ACTION on the cluster, a consumer's
    READ on the topic (authz.py for the internal topics), as Kafka's ``handleFetchRequest``."""
    if version >= 15:  # a tagged field: a consumer's request (librdkafka's v16) leaves it out
        rs = request.get("replica_state")
        replica = -1 if rs is None else rs["replica_id"]
    else:
        replica = request["replica_id"]
    if replica >= 0:
        return cluster_allows(ctx, AclOperation.CLUSTER_ACTION)
    return may_read_topic(ctx, topic)


def _session_request(request: dict[str, Any], session: FetchSession) -> tuple[dict[str, Any], list[tuple[TopicKey, int]]]:
    """The session's partitions that may have something to say (``FetchSession.candidates``)
    as a request ``_read_all`` reads (consecutive partitions of a topic grouped, as Kafka's
    response groups them), and their session keys in the same order."""
    topics: list[dict[str, Any]] = []
    keys = session.candidates()
    parts = session.partitions
    last: TopicKey | None = None
    plist: list[dict[str, Any]] = []
    for key in keys:
        cp = parts[key]
        if key[0] != last or not topics:
            plist = []
            topics.append({"topic": cp.topic, "topic_id": cp.topic_id, "partitions": plist})
            last = key[0]
        plist.append(cp.request)
    return {**request, "topics": topics}, keys


def _changed(result: Result, keys: list[tuple[TopicKey, int]], session: FetchSession) -> Result:
    """An incremental answer: the partitions read with records, an error, a diverging epoch or
    a high watermark / log start offset other than last answered; the session records what
    each partition read was answered."""
    out: Result = []
    i = 0
    cached = session.partitions
    for name, topic_id, plist in result:
        kept: list[Part] = []
        for part in plist:
            key = keys[i]
            i += 1
            idx, err, hw, start, slices, diverging, _, _ = part
            cp = cached.get(key)
            if cp is None:
                continue
            has_records = any(sl.size for sl in slices)
            include = has_records or err or diverging >= 0 or hw != cp.high_watermark or start != cp.log_start_offset
            session.answered(key, hw, start, err, has_records)
            if include:
                kept.append(part)
        if kept:
            out.append((name, topic_id, kept))
    return out


def _open_session(ctx: RequestContext, request: dict[str, Any], result: Result) -> int:
    """After a full request's answer (epoch 0): a new session holding its partitions with what
    they were answered; its id, or 0 when the cache has no room."""
    by_id = ctx.api_version >= TOPIC_IDS_FROM
    cache = ctx.state.fetch_sessions
    session = cache.create(by_id, sum(len(t["partitions"]) for t in request["topics"]))
    if session is None:
        return 0
    for t, (_, _, plist) in zip(request["topics"], result):
        name = t["topic"] if not by_id else (ctx.state.logs.topic_name(t["topic_id"]) or "")
        topic_id = t["topic_id"] if by_id else None
        for p, part in zip(t["partitions"], plist):
            _, err, hw, start, slices = part[:5]
            key = session.add(name, topic_id, p)
            session.answered(key, hw, start, err, False)
    cache.watch(session)
    return session.id


def _incremental(ctx: RequestContext, request: dict[str, Any]) -> FetchSession | int:
    """An incremental request's session, updated by it and moved to its next epoch, or the
    error that refuses the request."""
    sid, epoch = request["session_id"], request["session_epoch"]
    cache = ctx.state.fetch_sessions
    session = cache.get(sid)
    if session is None:
        return ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    if session.epoch != epoch:
        return ErrorCode.INVALID_FETCH_SESSION_EPOCH
    by_id = ctx.api_version >= TOPIC_IDS_FROM
    if session.uses_topic_ids != by_id:
        return ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
    session.epoch = next_epoch(epoch)
    logs = ctx.state.logs
    if by_id:
        topics = [(logs.topic_name(t["topic_id"]) or "", t["topic_id"], t["partitions"]) for t in request["topics"]]
        forgotten = [(t["topic_id"], t["partitions"]) for t in request["forgotten_topics_data"]]
    else:
        topics = [(t["topic"], None, t["partitions"]) for t in request["topics"]]
        forgotten = [(t["topic"], t["partitions"]) for t in request["forgotten_topics_data"]]
    cache.update(session, topics, forgotten)
    return session


def handle(ctx: RequestContext, request: dict[str, Any]) -> Any:
    state, version = ctx.state, ctx.api_version
    bound_fetch(ctx, request)  # a consumer_byte_rate quota bounds max_bytes (handlers/quotas.py)
    correlation_id = ctx.correlation_id
    read_committed = request.get("isolation_level", 0) == 1
    epoch = request["session_epoch"]
    session: FetchSession | None = None
    keys: list[tuple[TopicKey, int]] = []
    if epoch in _FULL_FETCH_EPOCHS:
        if request["session_id"]:
            state.fetch_sessions.remove(request["session_id"])
    else:
        opened = _incremental(ctx, request)
        if isinstance(opened, int):
            return _encode([], version, correlation_id, read_committed, opened)
        session = opened
    auth_ctx = ctx if state.authorizer is not None else None

    def read() -> tuple[Result, int, bool, dict[str, Any]]:
        req = request
        if session is not None:
            req, keys[:] = _session_request(request, session)
        result, total, errors = _read_all(req, version, state, auth_ctx)
        return result, total, errors, req

    def answer(result: Result) -> FetchReply | Coroutine[Any, Any, FetchReply]:
        if version < RECORD_BATCH_FROM:
            return _down_converted(ctx, request, result)
        _metrics(state, version, result)
        if session is not None:
            return _encode(_changed(result, keys, session), version, correlation_id, read_committed, 0, session.id)
        sid = _open_session(ctx, request, result) if epoch == 0 and version >= 7 else 0
        return _encode(result, version, correlation_id, read_committed, 0, sid)

    result, total, errors, req = read()
    max_wait = request["max_wait_ms"]
    if total >= request["min_bytes"] or max_wait <= 0 or errors or not (req["topics"] or session is not None):
        return answer(result)
    if session is not None:
        def wait_on_session(fut: asyncio.Future[None]) -> Callable[[], None]:
            session.waiter = fut

            def release() -> None:
                if session.waiter is fut:
                    session.waiter = None
            return release
        return _long_poll(wait_on_session, lambda: session.version, session.version, request["min_bytes"],
                          read, answer, result, max_wait)
    wait_keys = [(name, p[0]) for name, _, plist in result for p in plist]

    def wait_on_partitions(fut: asyncio.Future[None]) -> Callable[[], None]:
        state.add_waiter(wait_keys, fut)
        return lambda: state.remove_waiter(wait_keys, fut)
    return _long_poll(wait_on_partitions, lambda: state.appends, state.appends, request["min_bytes"],
                      read, answer, result, max_wait)


async def _long_poll(wait: Callable[[asyncio.Future[None]], Callable[[], None]], version: Callable[[], int],
                     seen: int, min_bytes: int, read: Callable[[], tuple[Result, int, bool, dict[str, Any]]],
                     answer: Callable[[Result], FetchReply | Coroutine[Any, Any, FetchReply]], result: Result,
                     max_wait: int) -> FetchReply:
    """Wait until ``min_bytes`` are there, an error, or ``max_wait`` ms, then answer (v0-3's
    answer is a coroutine: their down-conversion runs off the event loop).

    ``wait(fut)`` registers a future that a change wakes (a session's own waiter, or the
    partitions' waiters) and returns its undo; ``version()`` moves on with every change that
    could alter the answer (the session's, or the broker's count of appends, log start moves
    and deletions). ``seen`` is the version of the read that decided to wait: a change after
    it, even before this coroutine first runs, makes it read again once registered, and it
    reads again only after a change. Woken by ``max_wait`` with nothing changed, it answers
    from its last read."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max_wait / 1000
    res = result
    while True:
        fut: asyncio.Future[None] = loop.create_future()
        release = wait(fut)
        timer = None
        try:
            if version() != seen:
                seen = version()
                res, tot, errs, _ = read()
                if tot >= min_bytes or errs:
                    break
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            # A timer that resolves the waiter, not asyncio.wait_for: no second future, and
            # no cancel-and-wait turn when max_wait_ms passes (the common end of a long poll).
            timer = loop.call_later(remaining, _expire, fut)
            await fut
        finally:
            if timer is not None:
                timer.cancel()
            release()
        if version() == seen:
            break
    reply = answer(res)
    return reply if isinstance(reply, FetchReply) else await reply
