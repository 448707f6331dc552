"""Produce (0), v0-11 (Kafka 3.9).

Each partition's records are appended with ``Log.append`` straight from the request frame
(a writable memoryview: offsets are patched in place, nothing is re-encoded). Errors are per
partition (CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, UNKNOWN_TOPIC_OR_PARTITION,
UNSUPPORTED_FOR_MESSAGE_FORMAT, INVALID_REQUIRED_ACKS, ...); a partition that fails writes
nothing. Batches of an idempotent producer are checked against the partition's producer state
(storage/producer_state.py): a retry of one of its last 5 batches is answered with the offsets
it got the first time and not written again (no error, as Kafka >= 2.x); a gap answers
OUT_OF_ORDER_SEQUENCE_NUMBER and an old epoch INVALID_PRODUCER_EPOCH. acks=-1 to a topic whose
``min.insync.replicas`` is above 1 (the one replica here) gets NOT_ENOUGH_REPLICAS and writes
nothing, as in Kafka; a record timestamp out of the ``message.timestamp.*`` bounds,
INVALID_TIMESTAMP. acks=0: no response (the connection is closed if anything failed, as Kafka does);
acks=1: answered after the append (page cache); acks=-1: answered once the appended offsets
are fsync'd (group commit, see state.py).

Versions: v0-2 normally carry magic 0/1 message sets (clients pinned to Kafka < 0.11): they
are converted to one RecordBatch v2 on the way in (client/records/legacy.py: keys, values and
timestamps kept, offsets assigned by the log, the producer's codec re-applied), as Kafka 3.x
does, then appended like any batch. Transactional batches need the request's transactional_id
(v3+): a request whose partitions' first batch is transactional (magic 2, attribute bit 4)
without one — every v0-2 request, which has no such field — is refused whole, every partition
answering TRANSACTIONAL_ID_AUTHORIZATION_FAILED and nothing written, as Kafka's
``handleProduceRequest`` does before anything else (otherwise a made-up producer id would open
a transaction no coordinator knows, holding the last stable offset back for ever). With one, a
transactional batch is accepted only for a partition its producer's Ongoing transaction added
(INVALID_TXN_STATE, or TRANSACTION_ABORTABLE from v11, otherwise; see
broker/txn/coordinator.py); v8+ answer a refused partition's reason in
``error_message`` (``record_errors`` stays empty: a batch is refused whole, never record by
record); v9+ are flexible; v10+ may carry KIP-951's leader hints (``current_leader``,
``node_endpoints``), which Kafka sends only with NOT_LEADER_OR_FOLLOWER — never the case with
one broker, so they are never sent.
"""

from __future__ import annotations

import logging
import struct
from typing import Any

from client.protocol.api import ApiKey, ErrorCode
from client.records.batch import (
    ATTRIBUTES_OFFSET,
    CURRENT_MAGIC,
    MAGIC_OFFSET,
    PRODUCER_ID_OFFSET,
    RECORD_BATCH_OVERHEAD,
    TRANSACTIONAL_FLAG_MASK,
)
from client.records.compression import DecompressedSizeError
from client.records.legacy import convert_legacy, is_legacy

from ..storage.errors import RecordTooLargeError
from ..storage.log_validator import max_decompressed_size
from .common import CLOSE, NO_RESPONSE, error_code_of
from .metadata import INTERNAL_TOPICS

API_KEY = ApiKey.PRODUCE

#: where a RecordBatch keeps its attributes' low byte and its producer id and epoch
_ATTRIBUTES_LOW = ATTRIBUTES_OFFSET + 1
_PRODUCER = struct.Struct(">qh")

logger = logging.getLogger(__name__)


def _convert(records: Any, config: Any) -> bytearray:
    try:
        return convert_legacy(records, max_decompressed_size(config))
    except DecompressedSizeError as e:
        raise RecordTooLargeError(str(e)) from None


def _is_transactional(records: Any) -> bool:
    """Whether ``records`` starts with a transactional RecordBatch (v2): the first batch
    decides, as Kafka's ``RequestUtils.hasTransactionalRecords`` looks at no other."""
    return (records is not None and len(records) >= RECORD_BATCH_OVERHEAD and records[MAGIC_OFFSET] == CURRENT_MAGIC
            and bool(records[_ATTRIBUTES_LOW] & TRANSACTIONAL_FLAG_MASK))


def _refused_whole(request: dict[str, Any], code: int, message: str) -> dict[str, Any]:
    """A response giving every partition of ``request`` ``code`` (Kafka's error response)."""
    return {"throttle_time_ms": 0, "responses": [
        {"name": t["name"], "partition_responses": [
            {"index": p["index"], "error_code": code, "base_offset": -1, "log_append_time_ms": -1,
             "log_start_offset": -1, "error_message": message} for p in t["partition_data"]]}
        for t in request["topic_data"]]}


def _verify_transactional(request: dict[str, Any], version: int, records: Any, topic: str, partition: int,
                          state: Any) -> int:
    """A transactional batch must come from the producer of an Ongoing transaction that added
    this partition (Kafka's partition verification); the first batch's producer id and epoch
    decide, as in Kafka."""
    pid, epoch = _PRODUCER.unpack_from(records, PRODUCER_ID_OFFSET)
    return int(state.txn.verify_produce(request.get("transactional_id"), pid, epoch, topic, partition, version))


def handle(request: dict[str, Any], version: int, state: Any) -> Any:
    acks = request["acks"]
    if request.get("transactional_id") is None and any(
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
    waits = []  # (log, offset, partition response) for acks=-1
    failed = False
    metrics = state.metrics
    for topic in request["topic_data"]:
        name = topic["name"]
        parts = []
        for p in topic["partition_data"]:
            resp = {"index": p["index"], "error_code": 0, "base_offset": -1,
                    "log_append_time_ms": -1, "log_start_offset": -1, "error_message": None}
            parts.append(resp)
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
            elif acks == -1 and log.config.min_insync_replicas > 1:
                # Kafka refuses acks=all before writing when the ISR (here: this broker alone)
                # is smaller than min.insync.replicas.
                resp["error_code"] = ErrorCode.NOT_ENOUGH_REPLICAS
                state.log_limiter.info(f"producers to {name}-{p['index']}", "NOT_ENOUGH_REPLICAS",
                                       "produce to %s-%d rejected: the ISR of 1 is insufficient to satisfy the"
                                       " min.isr requirement of %d", name, p["index"], log.config.min_insync_replicas,
                                       logger=logger)
            elif _is_transactional(records) and (
                    code := _verify_transactional(request, version, records, name, p["index"], state)):
                resp["error_code"] = code
                state.log_limiter.info(f"producers to {name}-{p['index']}", ErrorCode(code).name,
                                       "transactional produce to %s-%d rejected: %s", name, p["index"],
                                       ErrorCode(code).name, logger=logger)
            else:
                try:
                    if version <= 2 and is_legacy(records):
                        records = _convert(records, log.config)
                    info = log.append(records)
                except Exception as e:  # noqa: BLE001 - every failure becomes a partition error
                    resp["error_code"] = error_code_of(e)
                    resp["error_message"] = str(e) or None
                    state.log_limiter.info(f"producers to {name}-{p['index']}", type(e).__name__,
                                           "produce to %s-%d rejected: %s", name, p["index"], e, logger=logger)
                else:
                    resp["base_offset"] = info.first_offset
                    resp["log_append_time_ms"] = info.log_append_time
                    resp["log_start_offset"] = info.log_start_offset
                    state.notify_append(name, p["index"])
                    if metrics is not None:
                        metrics.produced(name, info.num_records, info.valid_bytes)
                    if acks == -1:
                        waits.append((log, info.last_offset + 1, resp))
            if resp["error_code"]:
                failed = True
        responses.append({"name": name, "partition_responses": parts})
    body = {"responses": responses, "throttle_time_ms": 0}
    if acks == 0:
        return CLOSE if failed else NO_RESPONSE
    if not waits:
        return body

    async def after_fsync() -> dict[str, Any]:
        for log, offset, resp in waits:
            try:
                await state.durable(log, offset)
            except Exception as e:  # noqa: BLE001
                resp["error_code"] = error_code_of(e)
        return body

    return after_fsync()
