"""EndTxn (26), v0-5: commit or abort the producer's transaction. Answered once the
PrepareCommit/PrepareAbort state is durable; the markers follow (broker/txn/runtime.py).

v5 is transactions V2 (KIP-890 part 2; Kafka's TransactionVersion.transactionVersionForEndTxn):
while ``transaction.version`` 2 is finalized the coordinator bumps the producer epoch at every
transaction end (a new producer id when the epoch runs out) and answers the producer id and
epoch the client goes on with. Otherwise, and for v0-4, the transaction ends as before and v5
answers -1, -1 there, as Kafka's coordinator answers a client of the older protocol."""

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
        return {"throttle_time_ms": 0, "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                "producer_id": -1, "producer_epoch": -1}

    async def end() -> dict[str, Any]:
        code, pid, epoch = await state.txn.end_txn(request["transactional_id"], request["producer_id"],
                                                   request["producer_epoch"], request["committed"],
                                                   state.txn.client_tv(version >= 5))
        if code == ErrorCode.PRODUCER_FENCED and version < 2:
            code = ErrorCode.INVALID_PRODUCER_EPOCH
        return {"throttle_time_ms": 0, "error_code": code, "producer_id": pid, "producer_epoch": epoch}

    return end()
