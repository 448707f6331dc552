"""EndTxn (26), v0-4: commit or abort the producer's transaction. Answered once the
PrepareCommit/PrepareAbort state is durable; the markers follow (broker/txn/runtime.py)."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..request_context import RequestContext

API_KEY = ApiKey.END_TXN


def handle(ctx: RequestContext, request: dict[str, Any]) -> Any:
    state, version = ctx.state, ctx.api_version
    async def end() -> dict[str, Any]:
        code = await state.txn.end_txn(request["transactional_id"], request["producer_id"],
                                       request["producer_epoch"], request["committed"])
        if code == ErrorCode.PRODUCER_FENCED and version < 2:
            code = ErrorCode.INVALID_PRODUCER_EPOCH
        return {"throttle_time_ms": 0, "error_code": code}

    return end()
