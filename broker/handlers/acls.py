"""What the three ACL APIs (DescribeAcls, CreateAcls, DeleteAcls) share: the answers of a broker
without an authorizer, the checks of one with it, and the wire <-> model conversions.

Without an authorizer (``authorizer.class.name`` empty) they answer as Kafka's broker does:
SECURITY_DISABLED, "No Authorizer is configured.", for the request (DescribeAcls) or for each
creation and each filter, and store nothing. Answering (instead of not advertising the APIs) is
what admin clients expect: Kafka's admin tools and kafka-python-ng take a broker without the
ACL APIs for an incompatible version.

With the StandardAuthorizer they act on ``state.acls`` (the durable set, broker/authorizer/
acl_store.py), after Kafka's cluster checks: DescribeAcls needs DESCRIBE on the cluster,
CreateAcls and DeleteAcls ALTER; without it every creation / filter (or the request) answers
CLUSTER_AUTHORIZATION_FAILED and nothing changes.
"""

from __future__ import annotations

from typing import Any

from client.protocol.api import ErrorCode

from ..authorizer.acl import (
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePatternFilter,
    ResourceType,
)

__all__ = ["NO_AUTHORIZER", "SECURITY_DISABLED", "CLUSTER_DENIED", "CLUSTER_DENIED_MESSAGE", "to_filter",
           "binding_fields"]

#: Kafka's message for an ACL request to a broker without an authorizer
NO_AUTHORIZER = "No Authorizer is configured."
SECURITY_DISABLED = int(ErrorCode.SECURITY_DISABLED)
CLUSTER_DENIED = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
#: Kafka's default message for CLUSTER_AUTHORIZATION_FAILED
CLUSTER_DENIED_MESSAGE = "Cluster authorization failed."


def to_filter(f: dict[str, Any]) -> AclBindingFilter:
    """A DescribeAcls request or a DeleteAcls filter as the model's filter (codes no enum knows
    become UNKNOWN, which ``validate_filter`` refuses)."""
    return AclBindingFilter(
        ResourcePatternFilter(ResourceType(f["resource_type_filter"]), f["resource_name_filter"],
                              PatternType(f["pattern_type_filter"])),
        AccessControlEntryFilter(f["principal_filter"], f["host_filter"], AclOperation(f["operation"]),
                                 AclPermissionType(f["permission_type"])))


def binding_fields(b: AclBinding) -> dict[str, Any]:
    """A binding's resource and entry fields as DeleteAcls' matching_acls carry them."""
    p, e = b
    return {"resource_type": int(p.resource_type), "resource_name": p.name, "pattern_type": int(p.pattern_type),
            "principal": e.principal, "host": e.host, "operation": int(e.operation),
            "permission_type": int(e.permission_type)}
