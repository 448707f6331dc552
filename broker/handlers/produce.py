"""Produce (0), v0-13 (Kafka 4.2; v0-2, which Kafka 4 dropped, kept).

Each partition's records are appended with ``Log.append`` straight from the request frame
(a writable memoryview: offsets are patched in place, nothing is re-encoded). Errors are per
partition (CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, UNKNOWN_TOPIC_OR_PARTITION,
UNSUPPORTED_FOR_MESSAGE_FORMAT, INVALID_REQUIRED_ACKS, ...); a partition that fails writes
nothing. Batches of an idempotent producer are checked against the partition's producer state
(storage/producer_state.py): a retry of one of its last 5 batches is answered with the offsets
it got the first time and not written again (no error, as Kafka >= 2.x); a gap answers
OUT_OF_ORDER_SEQUENCE_NUMBER and an old epoch INVALID_PRODUCER_EPOCH. acks=-1 to a topic whose
``min.insync.replicas`` is above 1 (the one replica here) gets NOT_ENOUGH_REPLICAS and writes
nothing, as in Kafka. Records refused one by one (KIP-467, storage/log_validator.py): a
record without a key on a compacted topic (INVALID_RECORD), a timestamp out of the
``message.timestamp.*`` bounds or a LogAppendTime the producer may not set (INVALID_TIMESTAMP,
which wins when both occur) refuse the partition's batch whole, nothing of it written, and v8+
answer Kafka's ``record_errors``: each refused record's index in the batch (``batch_index``)
with its message (e.g. "Compacted topic cannot accept message without key in topic partition
t-0"), in record order, and Kafka's ``error_message`` ("One or more records have been rejected
due to 2 record errors in total, and only showing the first three errors at most: [...]", or
"... due to invalid timestamp"); librdkafka fails the listed records (with INVALID_RECORD
when more than one is listed) and the batch's others with its own _INVALID_DIFFERENT_RECORD.
acks=0: no response (the connection is closed if anything failed, as Kafka does);
acks=1: answered after the append (page cache); acks=-1: answered once the appended offsets
are fsync'd (group commit, see state.py).

Compressed batches, and v0-2 message sets, are validated (inflated: storage/inflation.py
bounds what that may cost, whatever the topic's ``max.message.bytes``) in the broker's inflate
threads, not on the event loop, then appended on the loop; a log whose earlier append is still
being validated makes later ones wait (``BrokerState.append_tails``), so each log takes
appends in arrival order. An uncompressed batch is appended at once, as before.

Versions: v0-2 normally carry magic 0/1 message sets (clients pinned to Kafka < 0.11): they
are converted to one RecordBatch v2 on the way in (client/records/legacy.py: keys, values and
timestamps kept, offsets assigned by the log, the producer's codec re-applied), as Kafka 3.x
does, then appended like any batch. v3+ carry exactly one batch per partition (Kafka's
ProduceRequest rule: more is INVALID_RECORD for that partition, nothing written; v0-2 may
carry several). Transactional batches need the request's transactional_id
(v3+): a request whose partitions' first batch is transactional (magic 2, attribute bit 4)
without one — every v0-2 request, which has no such field — is refused whole, every partition
answering TRANSACTIONAL_ID_AUTHORIZATION_FAILED and nothing written, as Kafka's
``handleProduceRequest`` does before anything else (otherwise a made-up producer id would open
a transaction no coordinator knows, holding the last stable offset back for ever). With one, a
transactional batch is accepted only for a partition its producer's Ongoing transaction added
(INVALID_TXN_STATE, or TRANSACTION_ABORTABLE from v11, otherwise; see
broker/txn/coordinator.py); v8+ answer a refused partition's reason in
``error_message``; v9+ are flexible; v10+ may carry KIP-951's leader hints (``current_leader``,
``node_endpoints``), which Kafka sends only with NOT_LEADER_OR_FOLLOWER — never the case with
one broker, so they are never sent. v12 is v11 on the wire, but it is the version of a
transactions V2 producer (KIP-890 part 2; Kafka's produceRequestVersionToTransactionSupportedOperation:
ADD_PARTITION above v11): while ``transaction.version`` 2 is finalized, a transactional batch
of v12+ whose partition is not in its producer's Ongoing transaction adds it there first, at
the batch's producer id and epoch, as Kafka's leader asks its coordinator with
AddPartitionsToTxn (CONCURRENT_TRANSACTIONS, the previous transaction's markers still being
written, retried for up to 100 ms; the producer fenced — an epoch the coordinator has bumped,
such as a late batch of a transaction that ended — INVALID_PRODUCER_EPOCH; a coordinator still
loading or still busy NOT_ENOUGH_REPLICAS, which producers retry, as Kafka converts them). The
producer's V2 requests keep their arrival order while one waits for its add
(``TransactionRuntime.produce_gate``). At a lower ``transaction.version`` v12+ behave as v11
(AddPartitionsToTxn first). v13 names each
topic by ``topic_id`` (KIP-516) and its response carries the id instead of the name: an id
that names no topic answers UNKNOWN_TOPIC_ID for each of its partitions (acks=0: the
connection is closed), before any authorization check, as Kafka 4.1+'s
``handleProduceRequest`` does (an unknown id reveals nothing); a known id is then handled
exactly as its name would be. The id is resolved once per topic, never per record.

Authorization (with an authorizer, as Kafka's ``handleProduceRequest``): transactional records
need WRITE on the request's transactional id (else the whole request answers
TRANSACTIONAL_ID_AUTHORIZATION_FAILED); each topic needs WRITE (else its partitions answer
TOPIC_AUTHORIZATION_FAILED, before any other check, and nothing of them is written). A topic
named by id (v13) is authorized by the name the id resolves to: TOPIC_AUTHORIZATION_FAILED for
a known id without WRITE, UNKNOWN_TOPIC_ID for an id that names nothing, whatever the ACLs
(Kafka 4.1+ after KAFKA-19234: ids are resolved first, then the names are authorized; a
missing *name* stays TOPIC_AUTHORIZATION_FAILED without WRITE, so names are not probed).
"""

from __future__ import annotations

import asyncio
import logging
import struct
from typing import Any, NamedTuple

from client.protocol.api import ApiKey, ErrorCode, error_name
from client.records.batch import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_CODEC_MASK,
    CURRENT_MAGIC,
    MAGIC_OFFSET,
    PRODUCER_ID_OFFSET,
    RECORD_BATCH_OVERHEAD,
    TRANSACTIONAL_FLAG_MASK,
)
from client.records.compression import DecompressedSizeError
from client.records.legacy import convert_legacy, is_legacy

from ..authorizer.acl import AclOperation, ResourceType
from ..errors import error_code_of
from ..request_context import RequestContext
from ..state import BrokerState
from ..storage.errors import RecordTooLargeError, RecordValidationError
from ..storage.inflation import RequestInflation
from ..storage.log_validator import max_decompressed_size
from .common import CLOSE, NO_RESPONSE, after_fsync
from .metadata import INTERNAL_TOPICS

API_KEY = ApiKey.PRODUCE
AUTHORIZATION = "WRITE on each topic; WRITE on the transactional id for transactional records"

#: where a RecordBatch keeps its attributes' low byte and its producer id and epoch
_ATTRIBUTES_LOW = ATTRIBUTES_OFFSET + 1
_PRODUCER = struct.Struct(">qh")
_PRODUCER_END = PRODUCER_ID_OFFSET + _PRODUCER.size
#: a batch's batchLength: int32 at byte 8, counting the bytes after it
_BATCH_LENGTH = struct.Struct(">i")
_BATCH_LENGTH_OFFSET = 8
_BATCH_LENGTH_END = _BATCH_LENGTH_OFFSET + _BATCH_LENGTH.size

logger = logging.getLogger(__name__)


def _convert(records: Any, config: Any, inflation: RequestInflation) -> bytearray:
    """A magic 0/1 message set as one v2 batch; its wrappers inflate within the request's
    bound, the pool paying for all of it while it is converted."""
    topic_bound = max_decompressed_size(config)
    bound = inflation.bound(topic_bound)
    inflation.acquire(bound)
    try:
        return convert_legacy(records, bound)
    except DecompressedSizeError as e:
        raise RecordTooLargeError(f"{e} ({inflation.describe(bound, topic_bound)})") from None
    finally:
        inflation.release(bound)


def _compressed(records: Any) -> bool:
    """Whether any v2 batch of ``records`` is compressed (its attributes' codec bits); walks
    the batch headers only. A length that does not parse ends the walk (validation refuses it)."""
    n = len(records)
    pos = 0
    while pos + _ATTRIBUTES_LOW < n:
        if records[pos + _ATTRIBUTES_LOW] & COMPRESSION_CODEC_MASK:
            return True
        (length,) = _BATCH_LENGTH.unpack_from(records, pos + _BATCH_LENGTH_OFFSET)
        if length <= 0:
            return False
        pos += _BATCH_LENGTH_END + length
    return False


class _Job(NamedTuple):
    """A partition whose append is validated in a worker thread (see ``handle``)."""

    log: Any
    topic: str
    partition: int
    records: Any
    legacy: bool
    resp: dict[str, Any]
    previous: asyncio.Future[None] | None  # the log's pending append before this one
    done: asyncio.Future[None]  # resolved once this append is written or refused


def _validate_jobs(jobs: list[_Job], inflation: RequestInflation) -> list[Any]:
    """In a worker thread: each job's ``Log.validate_append`` result, or the exception it raised."""
    out: list[Any] = []
    for job in jobs:
        try:
            records = _convert(job.records, job.log.config, inflation) if job.legacy else job.records
            out.append(job.log.validate_append(records, inflation=inflation))
        except Exception as e:  # noqa: BLE001 - every failure becomes a partition error
            out.append(e)
    return out


def _more_than_one_batch(records: Any) -> bool:
    """Whether a v2 record set holds more than one batch: its first batch's batchLength (bytes
    8-11) does not reach the end. A length that does not parse is left to validation
    (CORRUPT_MESSAGE)."""
    if len(records) < _BATCH_LENGTH_END:
        return False
    (length,) = _BATCH_LENGTH.unpack_from(records, _BATCH_LENGTH_OFFSET)
    return 0 < length and _BATCH_LENGTH_END + length < len(records)


def _is_transactional(records: Any) -> bool:
    """Whether ``records`` starts with a transactional RecordBatch (v2): the first batch
    decides, as Kafka's ``RequestUtils.hasTransactionalRecords`` looks at no other."""
    return (records is not None and len(records) >= RECORD_BATCH_OVERHEAD and records[MAGIC_OFFSET] == CURRENT_MAGIC
            and bool(records[_ATTRIBUTES_LOW] & TRANSACTIONAL_FLAG_MASK))


def _refused_whole(request: dict[str, Any], code: int, message: str) -> dict[str, Any]:
    """A response giving every partition of ``request`` ``code`` (Kafka's error response)."""
    return {"throttle_time_ms": 0, "responses": [
        {"name": t["name"], "topic_id": t.get("topic_id"), "partition_responses": [
            {"index": p["index"], "error_code": code, "base_offset": -1, "log_append_time_ms": -1,
             "log_start_offset": -1, "error_message": message} for p in t["partition_data"]]}
        for t in request["topic_data"]]}


def _verify_transactional(request: dict[str, Any], version: int, records: Any, topic: str, partition: int,
                          state: BrokerState) -> int:
    """A transactional batch must come from the producer of an Ongoing transaction that added
    this partition (Kafka's partition verification); the first batch's producer id and epoch
    decide, as in Kafka."""
    pid, epoch = _PRODUCER.unpack_from(records, PRODUCER_ID_OFFSET)
    return int(state.txn.verify_produce(request.get("transactional_id"), pid, epoch, topic, partition, version))


#: what a transactions V2 add's error becomes for the producer (Kafka's AddPartitionsToTxnManager
#: and ReplicaManager: a fence is the produce path's INVALID_PRODUCER_EPOCH, the retriable
#: coordinator errors NOT_ENOUGH_REPLICAS, which every producer retries)
_ADD_ERRORS: dict[int, int] = {ErrorCode.PRODUCER_FENCED: ErrorCode.INVALID_PRODUCER_EPOCH,
                               ErrorCode.CONCURRENT_TRANSACTIONS: ErrorCode.NOT_ENOUGH_REPLICAS,
                               ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: ErrorCode.NOT_ENOUGH_REPLICAS,
                               ErrorCode.COORDINATOR_NOT_AVAILABLE: ErrorCode.NOT_ENOUGH_REPLICAS,
                               ErrorCode.NOT_COORDINATOR: ErrorCode.NOT_ENOUGH_REPLICAS}


def handle(ctx: RequestContext, request: dict[str, Any]) -> Any:
    txn_id = request.get("transactional_id")
    if txn_id and ctx.api_version >= 12 and ctx.state.txn.client_tv(True) >= 2 and (
            _v2_adds(ctx, request) or ctx.state.txn.produce_busy(txn_id)):
        return _v2_produce(ctx, request, txn_id)
    return _handle(ctx, request, None)


def _v2_adds(ctx: RequestContext, request: dict[str, Any]) -> dict[tuple[int, int], list[tuple[str, int]]]:
    """Transactions V2: the partitions of this request's transactional batches that are not in
    their producer's Ongoing transaction, by (producer id, epoch); only those the request may
    write to (authorized, existing, not internal: the others are refused by ``_handle``)."""
    state = ctx.state
    txn_id = request["transactional_id"]
    if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, txn_id):
        return {}
    out: dict[tuple[int, int], list[tuple[str, int]]] = {}
    for topic in request["topic_data"]:
        name = state.logs.topic_name(topic["topic_id"]) if ctx.api_version >= 13 else topic["name"]
        if name is None or name in INTERNAL_TOPICS or not ctx.authorize(AclOperation.WRITE, ResourceType.TOPIC, name):
            continue
        for p in topic["partition_data"]:
            records = p["records"]
            if not _is_transactional(records) or state.logs.get_log(name, p["index"]) is None:
                continue
            pid, epoch = _PRODUCER.unpack_from(records, PRODUCER_ID_OFFSET)
            if not state.txn.in_transaction(txn_id, pid, epoch, name, p["index"]):
                out.setdefault((pid, epoch), []).append((name, p["index"]))
    return out


def _v2_produce(ctx: RequestContext, request: dict[str, Any], txn_id: str) -> Any:
    """A transactions V2 request that adds partitions (or follows one that does): after the
    producer's earlier ones (its place in line taken now), the adds, then the append as usual."""
    async def add_then_handle() -> Any:
        errors: dict[tuple[str, int], int] = {}
        for (pid, epoch), partitions in _v2_adds(ctx, request).items():
            code = await ctx.state.txn.add_for_v2(txn_id, pid, epoch, partitions)
            if code:
                errors.update(dict.fromkeys(partitions, int(_ADD_ERRORS.get(code, code))))
        return _handle(ctx, request, errors)  # appended at once; what it returns may wait for fsyncs

    return _reply_v2(ctx.state.txn.produce_gate(txn_id, add_then_handle))


async def _reply_v2(task: asyncio.Task[Any]) -> Any:
    result = await asyncio.shield(task)
    return await result if asyncio.iscoroutine(result) else result


def _handle(ctx: RequestContext, request: dict[str, Any], add_errors: dict[tuple[str, int], int] | None) -> Any:
    """The request, with ``add_errors`` the partitions a transactions V2 add refused."""
    state, version = ctx.state, ctx.api_version
    acks = request["acks"]
    txn_id = request.get("transactional_id")
    if txn_id is not None and state.authorizer is not None and any(
            _is_transactional(p["records"]) for t in request["topic_data"] for p in t["partition_data"]) \
            and not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, txn_id):
        if acks == 0:
            return CLOSE
        return _refused_whole(request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                              ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.name)
    if txn_id is None and any(
            _is_transactional(p["records"]) for t in request["topic_data"] for p in t["partition_data"]):
        state.log_limiter.info("transactional produce without transactional id", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
                               "produce v%d with transactional records but no transactional id rejected", version,
                               logger=logger)
        if acks == 0:
            return CLOSE
        return _refused_whole(request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                              "transactional records need the request's transactional id")
    bad_acks = acks not in (-1, 0, 1)
    responses = []
    waits: list[Any] = []  # (log, offset, partition response) for acks=-1
    failed = False
    jobs: list[_Job] = []
    tails = state.append_tails
    by_id = version >= 13
    for topic in request["topic_data"]:
        if by_id:  # v13: the topic by id; the response names it by id too
            topic_id = topic["topic_id"]
            found = state.logs.topic_name(topic_id)
            if found is None:
                responses.append(_unknown_topic_id(topic))
                failed = True
                continue
            name = found
        else:
            name = topic["name"]
        parts = []
        allowed = ctx.authorize(AclOperation.WRITE, ResourceType.TOPIC, name)
        for p in topic["partition_data"]:
            resp = {"index": p["index"], "error_code": 0, "base_offset": -1,
                    "log_append_time_ms": -1, "log_start_offset": -1, "error_message": None}
            parts.append(resp)
            if not allowed:  # before anything else: whether the topic exists is not told
                resp["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                failed = True
                continue
            if bad_acks:
                resp["error_code"] = ErrorCode.INVALID_REQUIRED_ACKS
                continue
            log = state.logs.get_log(name, p["index"])
            records = p["records"]
            if log is None:
                resp["error_code"] = state.logs.missing_partition_error(name, p["index"])
            elif records is None or len(records) == 0:
                resp["error_code"] = ErrorCode.CORRUPT_MESSAGE
            elif name in INTERNAL_TOPICS:  # written by the broker only, as in Kafka
                resp["error_code"] = ErrorCode.INVALID_TOPIC_EXCEPTION
            elif version >= 3 and _more_than_one_batch(records):
                resp["error_code"] = ErrorCode.INVALID_RECORD
                resp["error_message"] = (f"Produce requests with version {version} are only allowed to contain"
                                         " exactly one record batch per partition")
                state.log_limiter.info(f"producers to {name}-{p['index']}", "INVALID_RECORD",
                                       "produce to %s-%d rejected: more than one record batch", name, p["index"],
                                       logger=logger)
            elif acks == -1 and log.config.min_insync_replicas > 1:
                # Kafka refuses acks=all before writing when the ISR (here: this broker alone)
                # is smaller than min.insync.replicas.
                resp["error_code"] = ErrorCode.NOT_ENOUGH_REPLICAS
                state.log_limiter.info(f"producers to {name}-{p['index']}", "NOT_ENOUGH_REPLICAS",
                                       "produce to %s-%d rejected: the ISR of 1 is insufficient to satisfy the"
                                       " min.isr requirement of %d", name, p["index"], log.config.min_insync_replicas,
                                       logger=logger)
            elif _is_transactional(records) and (code := (add_errors or {}).get((name, p["index"])) or
                                                  _verify_transactional(request, version, records, name, p["index"],
                                                                        state)):
                resp["error_code"] = code
                state.log_limiter.info(f"producers to {name}-{p['index']}", error_name(code),
                                       "transactional produce to %s-%d rejected: %s", name, p["index"],
                                       error_name(code), logger=logger)
            else:
                legacy = version <= 2 and is_legacy(records)
                if legacy or _compressed(records) or id(log) in tails:
                    # Inflating is the worker threads' job; the log's appends keep their order.
                    previous = tails.get(id(log))
                    done = tails[id(log)] = asyncio.get_running_loop().create_future()
                    jobs.append(_Job(log, name, p["index"], records, legacy, resp, previous, done))
                    continue
                try:
                    info = log.append(records)
                except Exception as e:  # noqa: BLE001 - every failure becomes a partition error
                    _refused(state, resp, name, p["index"], e)
                else:
                    _appended(state, resp, name, p["index"], log, info, acks, waits)
            if resp["error_code"]:
                failed = True
        responses.append({"name": name, "topic_id": topic_id, "partition_responses": parts} if by_id
                         else {"name": name, "partition_responses": parts})
    body = {"responses": responses, "throttle_time_ms": 0}
    if jobs:
        # A task of its own, not the reply's coroutine: it runs to the end (and releases the
        # logs' tails) even when the connection goes and the reply is dropped.
        work = asyncio.ensure_future(_append_off_loop(jobs, state, acks, waits))
        return _reply(work, body, acks, failed, state, waits)
    if acks == 0:
        return CLOSE if failed else NO_RESPONSE
    if not waits:
        return body
    return after_fsync(body, state, waits)


def _unknown_topic_id(topic: dict[str, Any]) -> dict[str, Any]:
    """v13: a topic whose id names no topic here: UNKNOWN_TOPIC_ID for each partition."""
    return {"name": "", "topic_id": topic["topic_id"], "partition_responses": [
        {"index": p["index"], "error_code": ErrorCode.UNKNOWN_TOPIC_ID, "base_offset": -1, "log_append_time_ms": -1,
         "log_start_offset": -1, "error_message": None} for p in topic["partition_data"]]}


def _refused(state: BrokerState, resp: dict[str, Any], topic: str, partition: int, e: Exception) -> None:
    resp["error_code"] = error_code_of(e)
    resp["error_message"] = str(e) or None
    if isinstance(e, RecordValidationError):  # KIP-467: which records, and why (v8+)
        resp["record_errors"] = [{"batch_index": i, "batch_index_error_message": m} for i, m in e.record_errors]
    state.log_limiter.info(f"producers to {topic}-{partition}", type(e).__name__,
                           "produce to %s-%d rejected: %s", topic, partition, e, logger=logger)


def _appended(state: BrokerState, resp: dict[str, Any], topic: str, partition: int, log: Any, info: Any, acks: int,
              waits: list[Any]) -> None:
    resp["base_offset"] = info.first_offset
    resp["log_append_time_ms"] = info.log_append_time
    resp["log_start_offset"] = info.log_start_offset
    state.notify_append(topic, partition)
    metrics = state.metrics
    if metrics is not None:
        metrics.produced(topic, info.num_records, info.valid_bytes)
    if acks == -1:
        waits.append((log, info.last_offset + 1, resp))


async def _append_off_loop(jobs: list[_Job], state: BrokerState, acks: int, waits: list[Any]) -> bool:
    """Validate (inflate) the jobs' records in a worker thread, then append each on the loop
    once the log's earlier append is done; True if any failed. Every job's ``done`` is resolved
    whatever happens."""
    tails = state.append_tails
    failed = False
    try:
        loop = asyncio.get_running_loop()
        results = await loop.run_in_executor(state.inflate_executor, _validate_jobs, jobs, state.inflation.request())
        for job, result in zip(jobs, results):
            if job.previous is not None and not job.previous.done():
                await job.previous
            if not isinstance(result, Exception):
                try:
                    info = job.log.append_validated(*result)
                except Exception as e:  # noqa: BLE001 - every failure becomes a partition error
                    result = e
                else:
                    _appended(state, job.resp, job.topic, job.partition, job.log, info, acks, waits)
            if isinstance(result, Exception):
                _refused(state, job.resp, job.topic, job.partition, result)
                failed = True
            _release(tails, job)
    finally:
        for job in jobs:
            _release(tails, job)
    return failed


def _release(tails: dict[int, asyncio.Future[None]], job: _Job) -> None:
    if not job.done.done():
        job.done.set_result(None)
    if tails.get(id(job.log)) is job.done:
        del tails[id(job.log)]


async def _reply(work: asyncio.Future[bool], body: dict[str, Any], acks: int, failed: bool, state: BrokerState,
                 waits: list[Any]) -> Any:
    failed = await asyncio.shield(work) or failed
    if acks == 0:
        return CLOSE if failed else NO_RESPONSE
    if not waits:
        return body
    return await after_fsync(body, state, waits)

