"""ListTransactions (66), v0-2: the transactional ids the coordinator knows, filtered by state
name (Kafka's names: Empty, Ongoing, PrepareCommit, ...; unknown names are answered back in
``unknown_state_filters``), by producer id, (v1, KIP-994) to transactions running longer than
``duration_filter`` ms — how ``kafka-transactions.sh list`` and ``find-hanging`` look — and
(v2, KIP-1152) to transactional ids that wholly match ``transactional_id_pattern``, an RE2
regular expression (null or empty: all); a pattern RE2 refuses is INVALID_REGULAR_EXPRESSION."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..regex import InvalidRegularExpression, compile_pattern
from ..request_context import RequestContext

API_KEY = ApiKey.LIST_TRANSACTIONS
AUTHORIZATION = "the transactions answered are those with DESCRIBE on the transactional id"


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    state = ctx.state
    if pattern := request.get("transactional_id_pattern"):
        try:
            matcher = compile_pattern(pattern)
        except InvalidRegularExpression:
            return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_REGULAR_EXPRESSION,
                    "unknown_state_filters": [], "transaction_states": []}
    code, unknown, found = state.txn.coordinator.list_transactions(request["state_filters"], request["producer_id_filters"],
                                                       request.get("duration_filter", -1))
    if pattern:
        found = [t for t in found if matcher.fullmatch(t["transactional_id"])]
    if state.authorizer is not None:
        found = [t for t in found if ctx.authorize(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                                                   t["transactional_id"])]
    return {"throttle_time_ms": 0, "error_code": code, "unknown_state_filters": unknown,
            "transaction_states": found}
