"""CreateAcls (30), v0-3: store the request's bindings in the ACL set (broker/authorizer/
acl_store.py), all in one atomic write, each answered with its own error (INVALID_REQUEST and
Kafka's message for a binding ``validate_binding`` refuses; creating one already present
succeeds). Needs ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED for every creation);
SECURITY_DISABLED for every creation without an authorizer (see acls.py). A failed write
answers KAFKA_STORAGE_ERROR for every creation and changes nothing."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey

from ..authorizer.acl import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from ..errors import error_code_of
from ..request_context import RequestContext
from .acls import CLUSTER_DENIED, CLUSTER_DENIED_MESSAGE, NO_AUTHORIZER, SECURITY_DISABLED

API_KEY = ApiKey.CREATE_ACLS
AUTHORIZATION = "ALTER on the cluster"


def _all(request: dict[str, Any], code: int, message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "results": [{"error_code": code, "error_message": message}
                                               for _ in request["creations"]]}


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    store = ctx.state.acls
    if store is None:
        return _all(request, SECURITY_DISABLED, NO_AUTHORIZER)
    if not ctx.authorize(AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        return _all(request, CLUSTER_DENIED, CLUSTER_DENIED_MESSAGE)
    bindings = [AclBinding(ResourcePattern(ResourceType(c["resource_type"]), c["resource_name"],
                                           PatternType(c["resource_pattern_type"])),
                           AccessControlEntry(c["principal"], c["host"], AclOperation(c["operation"]),
                                              AclPermissionType(c["permission_type"])))
                for c in request["creations"]]
    try:
        results = store.create(bindings)
    except OSError as e:
        return _all(request, error_code_of(e), f"Failed to write the ACLs: {e}")
    return {"throttle_time_ms": 0, "results": [{"error_code": r.error_code, "error_message": r.error_message}
                                               for r in results]}
