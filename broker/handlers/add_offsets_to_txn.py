"""AddOffsetsToTxn (25), v0-4: add the group's ``__consumer_offsets`` partition to the
producer's transaction, so that its TxnOffsetCommit becomes visible with the transaction."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..errors import error_code_of
from ..group.records import CONSUMER_OFFSETS
from ..request_context import RequestContext

API_KEY = ApiKey.ADD_OFFSETS_TO_TXN
AUTHORIZATION = "WRITE on the transactional id; READ on the group"


def handle(ctx: RequestContext, request: dict[str, Any]) -> Any:
    state, version = ctx.state, ctx.api_version
    if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request["transactional_id"]):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request["group_id"]):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    if not request["group_id"]:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_GROUP_ID}
    try:
        state.groups.ensure_topic()
    except Exception as e:  # noqa: BLE001
        return {"throttle_time_ms": 0, "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE
                if error_code_of(e) else ErrorCode.UNKNOWN_SERVER_ERROR}
    partition = state.groups.coordinator.partition_for(request["group_id"])

    async def add() -> dict[str, Any]:
        code = await state.txn.add_partitions(request["transactional_id"], request["producer_id"],
                                              request["producer_epoch"], [(CONSUMER_OFFSETS, partition)])
        if code == ErrorCode.PRODUCER_FENCED and version < 2:
            code = ErrorCode.INVALID_PRODUCER_EPOCH
        return {"throttle_time_ms": 0, "error_code": code}

    return add()
