"""AddPartitionsToTxn (24), v0-3: add partitions to the producer's transaction (see
broker/txn/coordinator.py). A partition that does not exist answers
UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED (nothing is added), as
Kafka; otherwise every partition gets the coordinator's answer."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..request_context import RequestContext

API_KEY = ApiKey.ADD_PARTITIONS_TO_TXN
AUTHORIZATION = "WRITE on the transactional id; WRITE on each topic"


def _response(request: dict[str, Any], code_of: Any) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": [
        {"name": t["name"], "results_by_partition": [
            {"partition_index": p, "partition_error_code": int(code_of(t["name"], p))} for p in t["partitions"]]}
        for t in request["v3_and_below_topics"]]}


def handle(ctx: RequestContext, request: dict[str, Any]) -> Any:
    state, version = ctx.state, ctx.api_version
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
