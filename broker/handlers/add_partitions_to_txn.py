"""AddPartitionsToTxn (24), v0-5: add partitions to a producer's transaction (see
broker/txn/coordinator.py).

v0-3 are the client's: one transaction, WRITE on its transactional id and on each topic. A
partition that does not exist answers UNKNOWN_TOPIC_OR_PARTITION and the others
OPERATION_NOT_ATTEMPTED (nothing is added), as Kafka; otherwise every partition gets the
coordinator's answer.

v4+ are the form Kafka's partition leaders send the coordinator (KIP-890), served as Kafka's
coordinator serves them (``KafkaApis.handleAddPartitionsToTxnRequest``): CLUSTER_ACTION on the
cluster (else the whole response is the top-level CLUSTER_AUTHORIZATION_FAILED), several
transactions per request, each answered under its transactional id; no topic authorization
(the sender checked it), a partition that does not exist fails its transaction as above. A
transaction with ``verify_only`` is checked, not changed: each partition NONE when it is in the
producer's Ongoing transaction, TRANSACTION_ABORTABLE when not (v4, which predates that code:
INVALID_TXN_STATE), INVALID_PRODUCER_ID_MAPPING / PRODUCER_FENCED / CONCURRENT_TRANSACTIONS for
a producer id or epoch that is not the transaction's or a transaction ending. Without it the
partitions are added, as a transactions V2 producer's batch adds its partition (the
coordinator keeps the transaction as the V2 client's when ``transaction.version`` 2 is
finalized). One node needs neither — its produce path asks its own coordinator — but a client
may send them: @platformatic/kafka's transactional producer sends the highest version offered,
with ``verify_only`` false."""

from __future__ import annotations

import asyncio
from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import CLUSTER_NAME, AclOperation, ResourceType
from ..request_context import RequestContext
from ..state import BrokerState

API_KEY = ApiKey.ADD_PARTITIONS_TO_TXN
AUTHORIZATION = "v0-3: WRITE on the transactional id; WRITE on each topic. v4+: CLUSTER_ACTION on the cluster"


def _topic_results(topics: list[dict[str, Any]], code_of: Any) -> list[dict[str, Any]]:
    return [{"name": t["name"], "results_by_partition": [
        {"partition_index": p, "partition_error_code": int(code_of(t["name"], p))} for p in t["partitions"]]}
        for t in topics]


def _response(request: dict[str, Any], code_of: Any) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": _topic_results(request["v3_and_below_topics"],
                                                                                   code_of)}


def handle(ctx: RequestContext, request: dict[str, Any]) -> Any:
    state, version = ctx.state, ctx.api_version
    if version >= 4:
        return _handle_batched(ctx, request)
    wanted = [(t["name"], p) for t in request["v3_and_below_topics"] for p in t["partitions"]]
    if state.authorizer is not None:
        if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request["v3_and_below_transactional_id"]):
            return _response(request, lambda t, p: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        denied = {t for t, _ in wanted if not ctx.authorize(AclOperation.WRITE, ResourceType.TOPIC, t)}
        if denied:  # Kafka's order: the topics denied, then the unknown ones, the rest not attempted
            return _response(request, lambda t, p: ErrorCode.TOPIC_AUTHORIZATION_FAILED if t in denied
                             else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if state.logs.get_log(t, p) is None
                             else ErrorCode.OPERATION_NOT_ATTEMPTED)
    missing = {tp for tp in wanted if state.logs.get_log(*tp) is None}
    if missing:
        return _response(request, lambda t, p: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if (t, p) in missing
                         else ErrorCode.OPERATION_NOT_ATTEMPTED)

    async def add() -> dict[str, Any]:
        code = await state.txn.add_partitions(request["v3_and_below_transactional_id"],
                                              request["v3_and_below_producer_id"],
                                              request["v3_and_below_producer_epoch"], wanted)
        if code == ErrorCode.PRODUCER_FENCED and version < 2:  # v2 introduced PRODUCER_FENCED
            code = ErrorCode.INVALID_PRODUCER_EPOCH
        return _response(request, lambda t, p: code)

    return add()


def _handle_batched(ctx: RequestContext, request: dict[str, Any]) -> Any:
    """v4+: every transaction of the request, answered together."""
    state, version = ctx.state, ctx.api_version
    if not ctx.authorize(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "results_by_transaction": []}
    return _batched(state, request["transactions"], version)


async def _batched(state: BrokerState, transactions: list[dict[str, Any]], version: int) -> dict[str, Any]:
    results = await asyncio.gather(*(_one(state, txn, version) for txn in transactions))
    return {"throttle_time_ms": 0, "error_code": 0, "results_by_transaction": list(results)}


async def _one(state: BrokerState, txn: dict[str, Any], version: int) -> dict[str, Any]:
    topics = txn["topics"]
    wanted = [(t["name"], p) for t in topics for p in t["partitions"]]
    missing = {tp for tp in wanted if state.logs.get_log(*tp) is None}
    codes: dict[tuple[str, int], int]
    if missing:
        codes = {tp: int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in missing else ErrorCode.OPERATION_NOT_ATTEMPTED)
                 for tp in wanted}
    elif txn["verify_only"]:
        codes = state.txn.verify_partitions(txn["transactional_id"], txn["producer_id"], txn["producer_epoch"], wanted)
        if version < 5:  # TRANSACTION_ABORTABLE came with v5; v4's senders knew INVALID_TXN_STATE
            codes = {tp: int(ErrorCode.INVALID_TXN_STATE) if c == ErrorCode.TRANSACTION_ABORTABLE else c
                     for tp, c in codes.items()}
    else:
        code = await state.txn.add_partitions(txn["transactional_id"], txn["producer_id"], txn["producer_epoch"],
                                              wanted, state.txn.client_tv(True))
        codes = dict.fromkeys(wanted, code)
    return {"transactional_id": txn["transactional_id"],
            "topic_results": _topic_results(topics, lambda t, p: codes[(t, p)])}
