"""Authorization: Kafka's ACLs and the StandardAuthorizer's rules, without I/O in the decisions.

- ``acl.py``: the model (resource, pattern, operation and permission types with Kafka's wire
  codes; patterns, entries, bindings, filters) and the validation of a binding to create;
- ``standard_authorizer.py``: ``StandardAuthorizer``, the decisions (super users, DENY wins,
  LITERAL / wildcard / PREFIXED patterns, implied operations, ``allow.everyone.if.no.acl.found``)
  over an index of the ACLs by resource;
- ``acl_store.py``: ``AclStore``, the ACL set kept in ``<log.dir>/acls.json`` (written
  atomically), which CreateAcls / DescribeAcls / DeleteAcls change and which feeds the
  authorizer's index incrementally.

A handler asks ``authorizer.authorize(ctx.principal, ctx.client_host, AclOperation.READ,
ResourceType.TOPIC, name)``. The package takes principals as plain values (it sits below
broker.request_context in the layers).
"""

from .acl import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclError,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    validate_binding,
    validate_filter,
)
from .acl_store import AclCreateResult, AclDeleteResult, AclFileError, AclStore
from .standard_authorizer import AUTHORIZER_CLASS_NAME, StandardAuthorizer

__all__ = [
    "AccessControlEntry", "AccessControlEntryFilter", "AclBinding", "AclBindingFilter", "AclError", "AclOperation",
    "AclPermissionType", "PatternType", "ResourcePattern", "ResourcePatternFilter", "ResourceType",
    "validate_binding", "validate_filter", "AclCreateResult", "AclDeleteResult", "AclFileError", "AclStore",
    "AUTHORIZER_CLASS_NAME", "StandardAuthorizer",
]
