"""DescribeTransactions (65), v0: the coordinator's state of each transactional id (state name,
timeout, start time, producer id and epoch, the partitions of the open transaction), as
``kafka-transactions.sh describe`` shows it. An unknown id: TRANSACTIONAL_ID_NOT_FOUND; an
empty one: INVALID_REQUEST; while ``__transaction_state`` loads: COORDINATOR_LOAD_IN_PROGRESS."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..request_context import RequestContext

API_KEY = ApiKey.DESCRIBE_TRANSACTIONS
AUTHORIZATION = "DESCRIBE on each transactional id (its topics filtered by DESCRIBE on the topic)"


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    state = ctx.state
    if state.authorizer is None:
        return {"throttle_time_ms": 0,
                "transaction_states": [state.txn.coordinator.describe(t) for t in request["transactional_ids"]]}
    out = []
    for t in request["transactional_ids"]:
        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, t):
            out.append({"transactional_id": t, "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                        "transaction_state": "", "transaction_timeout_ms": 0, "transaction_start_time_ms": -1,
                        "producer_id": -1, "producer_epoch": -1, "topics": []})
            continue
        d = state.txn.coordinator.describe(t)
        d["topics"] = [x for x in d["topics"] if ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, x["topic"])]
        out.append(d)
    return {"throttle_time_ms": 0, "transaction_states": out}
