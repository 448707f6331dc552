"""InitProducerId (22), v0-5: a producer id unique across restarts (state.ProducerIdManager).

Without a transactional id: a fresh producer id at epoch 0 — also for v3+ requests that carry
the producer's current id and epoch asking for a new epoch (KIP-360), as Kafka answers them.
With one: the transaction coordinator's answer (broker/txn/coordinator.py): the id's producer
id with its epoch bumped, fencing the previous producer of that id. v4 and v5 change only
which errors a client may be sent. v6 (KIP-939, two-phase commit) is unstable in Kafka 4.2,
whose brokers do not advertise it; neither does this one.
"""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import CLUSTER_NAME, AclOperation, ResourceType
from ..request_context import RequestContext

API_KEY = ApiKey.INIT_PRODUCER_ID
AUTHORIZATION = "WRITE on the transactional id; without one IDEMPOTENT_WRITE on the cluster or WRITE on some topic"


def handle(ctx: RequestContext, request: dict[str, Any]) -> Any:
    state = ctx.state
    txn_id = request["transactional_id"]
    if state.authorizer is not None:
        if txn_id is not None:
            if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, txn_id):
                return {"throttle_time_ms": 0, "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                        "producer_id": -1, "producer_epoch": -1}
        elif not ctx.authorize(AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME) and \
                not state.authorizer.authorize_by_resource_type(ctx.principal, ctx.client_host, AclOperation.WRITE,
                                                                ResourceType.TOPIC):
            return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                    "producer_id": -1, "producer_epoch": -1}
    if txn_id is None:
        return {"throttle_time_ms": 0, "error_code": 0, "producer_id": state.producer_ids.next_id(),
                "producer_epoch": 0}

    async def transactional() -> dict[str, Any]:
        code, pid, epoch = await state.txn.init_producer_id(
            txn_id, request["transaction_timeout_ms"], request.get("producer_id", -1),
            request.get("producer_epoch", -1))
        return {"throttle_time_ms": 0, "error_code": code, "producer_id": pid, "producer_epoch": epoch}

    return transactional()
