"""WriteTxnMarkers (27), v0-2: write a COMMIT or ABORT marker for a producer to partitions.

Kafka's transaction coordinator sends it to partition leaders; here the coordinator writes its
markers itself (broker/txn/runtime.py), so what arrives comes from an operator's admin
client: ``Admin.abortTransaction`` / ``kafka-transactions.sh abort`` (``minibroker
transactions abort``) ending a hanging transaction — one still open in a partition whose
coordinator no longer knows it — with ``transaction_result`` false.

Each marker (producer id, producer epoch, coordinator epoch, result) is appended to each named
partition as one control batch, as Kafka's coordinator-origin append does: a producer epoch
older than the partition's for that producer is refused with INVALID_PRODUCER_EPOCH, a
coordinator epoch older than the last marker's with TRANSACTION_COORDINATOR_FENCED, an unknown
partition UNKNOWN_TOPIC_OR_PARTITION (KAFKA_STORAGE_ERROR offline), and nothing is written to
a refused partition. A marker for a producer with no transaction open there is written all the
same (it ends nothing), as in Kafka. A marker on ``__consumer_offsets`` settles the producer's
pending transactional offsets there. The answer (one entry per marker, by producer id) waits
until every written marker is fsync'd (Kafka appends them with acks=-1).

v2 (KIP-1228, Kafka 4.2) gives each marker its ``transaction_version``. A transactions V2
marker (2) carries the epoch the coordinator bumped at the transaction's end, so it must be
above the partition's epoch for the producer (Kafka's ProducerAppendInfo.checkProducerEpoch):
one at that epoch or below is INVALID_PRODUCER_EPOCH (a late or duplicate marker), except one at
exactly that epoch with no transaction of the producer open there, a retry of a marker already
written (KAFKA-19999), which is written again. Markers of 0 and 1 (and every v0-1 marker) keep
the rule above. Kafka 4 dropped v0; 3.9 served it, and so does minibroker.
"""

from __future__ import annotations

import logging
from typing import Any

from client.clock import now_ms
from client.protocol.api import ApiKey, ErrorCode
from client.records.control import build_control_batch

from ..authorizer.acl import CLUSTER_NAME, AclOperation, ResourceType
from ..errors import error_code_of
from ..group.records import CONSUMER_OFFSETS
from ..request_context import RequestContext
from ..state import BrokerState
from .common import after_fsync

API_KEY = ApiKey.WRITE_TXN_MARKERS
AUTHORIZATION = "ALTER or CLUSTER_ACTION on the cluster"

logger = logging.getLogger(__name__)


def _write(state: BrokerState, topic: str, partition: int, marker: dict[str, Any], waits: list[tuple[Any, int, dict[str, Any]]],
           resp: dict[str, Any]) -> None:
    """Append ``marker`` to ``topic-partition``, setting ``resp["error_code"]`` on refusal."""
    log = state.logs.get_log(topic, partition)
    if log is None:
        resp["error_code"] = state.logs.missing_partition_error(topic, partition)
        return
    pid, epoch, coordinator_epoch = marker["producer_id"], marker["producer_epoch"], marker["coordinator_epoch"]
    commit = bool(marker["transaction_result"])
    entry = log.producer_state.last_entry(pid)
    if entry is not None and (epoch < entry.producer_epoch or (
            marker.get("transaction_version", 0) >= 2 and epoch == entry.producer_epoch
            and entry.current_txn_first_offset >= 0)):
        resp["error_code"] = ErrorCode.INVALID_PRODUCER_EPOCH
        return
    if entry is not None and entry.coordinator_epoch > coordinator_epoch:
        resp["error_code"] = ErrorCode.TRANSACTION_COORDINATOR_FENCED
        return
    open_at = entry.current_txn_first_offset if entry is not None else -1
    try:
        info = log.append(build_control_batch(pid, epoch, commit, coordinator_epoch, now_ms()),
                          from_coordinator=True)
    except Exception as e:  # noqa: BLE001 - every failure becomes a partition error
        resp["error_code"] = error_code_of(e)
        return
    logger.warning("%s-%d: %s marker of producer id %d (epoch %d, coordinator epoch %d) written at offset %d by"
                   " WriteTxnMarkers%s", topic, partition, "COMMIT" if commit else "ABORT", pid, epoch,
                   coordinator_epoch, info.first_offset,
                   f": the transaction open since offset {open_at} ends" if open_at >= 0 else
                   " (no transaction of that producer was open there)")
    if topic == CONSUMER_OFFSETS and state.groups is not None:
        state.groups.coordinator.offsets.complete_txn(partition, pid, commit)
    state.notify_append(topic, partition)
    waits.append((log, info.last_offset + 1, resp))


def handle(ctx: RequestContext, request: dict[str, Any]) -> Any:
    state = ctx.state
    if not ctx.authorize(AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME) and \
            not ctx.authorize(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
        return {"markers": [{"producer_id": m["producer_id"], "topics": [
            {"name": t["name"], "partitions": [
                {"partition_index": i, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
                for i in t["partition_indexes"]]} for t in m["topics"]]} for m in request["markers"]]}
    markers = []
    waits: list[tuple[Any, int, dict[str, Any]]] = []
    for marker in request["markers"]:
        topics = []
        for t in marker["topics"]:
            parts = []
            for index in t["partition_indexes"]:
                resp: dict[str, Any] = {"partition_index": index, "error_code": 0}
                parts.append(resp)
                _write(state, t["name"], index, marker, waits, resp)
            topics.append({"name": t["name"], "partitions": parts})
        markers.append({"producer_id": marker["producer_id"], "topics": topics})
    body = {"markers": markers}
    if not waits:
        return body
    return after_fsync(body, state, waits)
