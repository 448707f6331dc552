"""DescribeAcls (29), v0-3: the stored bindings the request's filter matches, grouped by
resource pattern. Needs DESCRIBE on the cluster (else CLUSTER_AUTHORIZATION_FAILED); a filter
with an UNKNOWN element answers INVALID_REQUEST; SECURITY_DISABLED without an authorizer
(see acls.py)."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey

from ..authorizer.acl import CLUSTER_NAME, AclOperation, ResourceType, group_by_resource, validate_filter
from ..request_context import RequestContext
from .acls import CLUSTER_DENIED, CLUSTER_DENIED_MESSAGE, NO_AUTHORIZER, SECURITY_DISABLED, to_filter

API_KEY = ApiKey.DESCRIBE_ACLS
AUTHORIZATION = "DESCRIBE on the cluster"


def _error(code: int, message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "resources": []}


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    store = ctx.state.acls
    if store is None:
        return _error(SECURITY_DISABLED, NO_AUTHORIZER)
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return _error(CLUSTER_DENIED, CLUSTER_DENIED_MESSAGE)
    f = to_filter(request)
    if (err := validate_filter(f)) is not None:
        return _error(err.error_code, err.message)
    resources = [{"resource_type": int(p.resource_type), "resource_name": p.name, "pattern_type": int(p.pattern_type),
                  "acls": [{"principal": e.principal, "host": e.host, "operation": int(e.operation),
                            "permission_type": int(e.permission_type)} for e in entries]}
                 for p, entries in group_by_resource(store.describe(f)).items()]
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "resources": resources}
