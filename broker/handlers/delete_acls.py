"""DeleteAcls (31), v0-3: remove every stored binding some filter matches (one atomic write),
each filter answered with the bindings it matched (a filter with an UNKNOWN element answers
INVALID_REQUEST). Needs ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED for every
filter); SECURITY_DISABLED for every filter without an authorizer (see acls.py). A failed write
answers KAFKA_STORAGE_ERROR for every filter and removes nothing."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey

from ..authorizer.acl import CLUSTER_NAME, AclOperation, ResourceType
from ..errors import error_code_of
from ..request_context import RequestContext
from .acls import CLUSTER_DENIED, CLUSTER_DENIED_MESSAGE, NO_AUTHORIZER, SECURITY_DISABLED, binding_fields, to_filter

API_KEY = ApiKey.DELETE_ACLS
AUTHORIZATION = "ALTER on the cluster"


def _all(request: dict[str, Any], code: int, message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "filter_results": [
        {"error_code": code, "error_message": message, "matching_acls": []} for _ in request["filters"]]}


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    store = ctx.state.acls
    if store is None:
        return _all(request, SECURITY_DISABLED, NO_AUTHORIZER)
    if not ctx.authorize(AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        return _all(request, CLUSTER_DENIED, CLUSTER_DENIED_MESSAGE)
    try:
        results = store.delete([to_filter(f) for f in request["filters"]])
    except OSError as e:
        return _all(request, error_code_of(e), f"Failed to write the ACLs: {e}")
    return {"throttle_time_ms": 0, "filter_results": [
        {"error_code": r.error_code, "error_message": r.error_message,
         "matching_acls": [{"error_code": 0, "error_message": None, **binding_fields(b)} for b in r.bindings]}
        for r in results]}
