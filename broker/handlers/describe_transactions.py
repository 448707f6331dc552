"""DescribeTransactions (65), v0: the coordinator's state of each transactional id (state name,
timeout, start time, producer id and epoch, the partitions of the open transaction), as
``kafka-transactions.sh describe`` shows it. An unknown id: TRANSACTIONAL_ID_NOT_FOUND; an
empty one: INVALID_REQUEST; while ``__transaction_state`` loads: COORDINATOR_LOAD_IN_PROGRESS."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey

from ..request_context import RequestContext

API_KEY = ApiKey.DESCRIBE_TRANSACTIONS


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    state = ctx.state
    return {"throttle_time_ms": 0,
            "transaction_states": [state.txn.coordinator.describe(t) for t in request["transactional_ids"]]}
