"""EndTxn (26), v0-4: commit or abort the producer's transaction. Answered once the
PrepareCommit/PrepareAbort state is durable; the markers follow (broker/txn/runtime.py)."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..request_context import RequestContext

API_KEY = ApiKey.END_TXN
AUTHORIZATION = "WRITE on the transactional id"


def handle(ctx: RequestContext, request: dict[str, Any]) -> Any:
    state, version = ctx.state, ctx.api_version
    if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request["transactional_id"]):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    async def end() -> dict[str, Any]:
        code = await state.txn.end_txn(request["transactional_id"], request["producer_id"],
                                       request["producer_epoch"], request["committed"])
        if code == ErrorCode.PRODUCER_FENCED and version < 2:
            code = ErrorCode.INVALID_PRODUCER_EPOCH
        return {"throttle_time_ms": 0, "error_code": code}

    return end()
