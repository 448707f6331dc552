"""Kafka's ACL model: resource types, pattern types, operations and permission types with their
wire codes, resource patterns, access control entries, bindings, filters, and the validation a
binding passes before CreateAcls stores it.

Wire codes (the int8 fields of CreateAcls / DescribeAcls / DeleteAcls):

==================  ===================================================================
ResourceType        UNKNOWN 0, ANY 1, TOPIC 2, GROUP 3, CLUSTER 4, TRANSACTIONAL_ID 5,
                    DELEGATION_TOKEN 6, USER 7
PatternType         UNKNOWN 0, ANY 1, MATCH 2, LITERAL 3, PREFIXED 4
AclOperation        UNKNOWN 0, ANY 1, ALL 2, READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7,
                    DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11,
                    IDEMPOTENT_WRITE 12, CREATE_TOKENS 13, DESCRIBE_TOKENS 14
AclPermissionType   UNKNOWN 0, ANY 1, DENY 2, ALLOW 3
==================  ===================================================================

A code no enum knows decodes to UNKNOWN (``ResourceType(99) is ResourceType.UNKNOWN``), as in
Kafka's ``fromCode``. ``parse`` reads a name the way Kafka's tools write them, case-insensitive
and with or without underscores (``DescribeConfigs``, ``describe_configs``, ``DESCRIBE_CONFIGS``).

Invariants of a stored binding (``validate_binding`` returns None): resource type, operation and
permission type are concrete (no UNKNOWN or ANY), the pattern type is LITERAL or PREFIXED, the
resource name is not empty (a CLUSTER resource is named ``kafka-cluster``), the principal is
``<type>:<name>``. ``*`` is the wildcard resource name (a LITERAL ``*`` applies to every resource
of its type), ``User:*`` the wildcard principal and ``*`` the wildcard host. A PREFIXED ``*`` is
accepted, as Kafka's controller does: it is the prefix "*" and matches names starting with ``*``
only. Hosts are compared as strings (no CIDR), as Kafka does.

Filters (DescribeAcls, DeleteAcls): an ANY enum field and a null name, principal or host match
any value. A MATCH pattern type with a name matches every stored pattern that applies to that
resource: the LITERAL of that name, the LITERAL ``*`` and every PREFIXED prefix of the name.
A filter containing UNKNOWN is refused (``validate_filter``).
"""

from __future__ import annotations

import enum
from typing import NamedTuple, Self

from client.protocol.api import ErrorCode

__all__ = [
    "ResourceType", "PatternType", "AclOperation", "AclPermissionType",
    "ResourcePattern", "AccessControlEntry", "AclBinding",
    "ResourcePatternFilter", "AccessControlEntryFilter", "AclBindingFilter",
    "AclError", "validate_binding", "validate_filter", "group_by_resource",
    "WILDCARD_RESOURCE", "WILDCARD_PRINCIPAL", "WILDCARD_HOST", "CLUSTER_NAME", "SUPPORTED_OPERATIONS",
]

WILDCARD_RESOURCE = "*"
WILDCARD_PRINCIPAL = "User:*"
WILDCARD_HOST = "*"
#: the one name of the CLUSTER resource (Kafka's Resource.CLUSTER_NAME)
CLUSTER_NAME = "kafka-cluster"


class _AclEnum(enum.IntEnum):
    """An enum with Kafka's wire codes: unknown codes decode to UNKNOWN (code 0)."""

    @classmethod
    def _missing_(cls, value: object) -> Self:
        return cls(0)

    @classmethod
    def parse(cls, name: str) -> Self:
        """The member named ``name``, case-insensitive, underscores optional; UNKNOWN if none."""
        key = name.replace("_", "").replace("-", "").upper()
        for member in cls:
            if member.name.replace("_", "") == key:
                return member
        return cls(0)

    def __str__(self) -> str:
        return self.name


class ResourceType(_AclEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(_AclEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(_AclEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(_AclEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


_O = AclOperation
#: the operations each resource type has (what ``authorized_operations`` fields report on)
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER, _O.DESCRIBE_CONFIGS,
                         _O.ALTER_CONFIGS),
    # Kafka 4 added the configs operations with group configs (KIP-848), which the broker has:
    # DescribeGroups and ConsumerGroupDescribe report them (librdkafka 0081 expects 5 at 4.0+)
    ResourceType.GROUP: (_O.READ, _O.DESCRIBE, _O.DELETE, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS),
    ResourceType.CLUSTER: (_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS, _O.IDEMPOTENT_WRITE,
                           _O.ALTER, _O.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (_O.DESCRIBE, _O.WRITE),
    ResourceType.DELEGATION_TOKEN: (_O.DESCRIBE,),
    ResourceType.USER: (_O.CREATE_TOKENS, _O.DESCRIBE_TOKENS),
}


class ResourcePattern(NamedTuple):
    """What an ACL applies to: a LITERAL name (``*``: every resource of the type) or a PREFIXED
    name (every resource whose name starts with it)."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def __str__(self) -> str:
        return f"ResourcePattern(resourceType={self.resource_type}, name={self.name}, patternType={self.pattern_type})"


class AccessControlEntry(NamedTuple):
    """Who (``principal``, ``User:*`` for anyone) from where (``host``, ``*`` for anywhere) may
    or may not (``permission_type``) do what (``operation``)."""

    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def __str__(self) -> str:
        return (f"(principal={self.principal}, host={self.host}, operation={self.operation},"
                f" permissionType={self.permission_type})")


class AclBinding(NamedTuple):
    """One ACL: an entry bound to a resource pattern."""

    pattern: ResourcePattern
    entry: AccessControlEntry

    def __str__(self) -> str:
        return f"(pattern={self.pattern}, entry={self.entry})"


class ResourcePatternFilter(NamedTuple):
    """Matches resource patterns: ANY type / pattern type and a null name match anything; MATCH
    matches the patterns that apply to the named resource (see the module docstring)."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY

    def matches(self, pattern: ResourcePattern) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != pattern.resource_type:
            return False
        pt = self.pattern_type
        if pt != PatternType.ANY and pt != PatternType.MATCH and pt != pattern.pattern_type:
            return False
        name = self.name
        if name is None:
            return True
        if pt != PatternType.MATCH or pattern.pattern_type == PatternType.MATCH:
            return name == pattern.name
        if pattern.pattern_type == PatternType.LITERAL:
            return name == pattern.name or pattern.name == WILDCARD_RESOURCE
        if pattern.pattern_type == PatternType.PREFIXED:
            return name.startswith(pattern.name)
        return False

    def is_unknown(self) -> bool:
        return self.resource_type == ResourceType.UNKNOWN or self.pattern_type == PatternType.UNKNOWN


class AccessControlEntryFilter(NamedTuple):
    """Matches entries: ANY operation / permission type and a null principal or host match
    anything; otherwise values compare exactly (a ``User:*`` filter matches only ``User:*``
    entries)."""

    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def matches(self, entry: AccessControlEntry) -> bool:
        return ((self.principal is None or self.principal == entry.principal)
                and (self.host is None or self.host == entry.host)
                and (self.operation == AclOperation.ANY or self.operation == entry.operation)
                and (self.permission_type == AclPermissionType.ANY or self.permission_type == entry.permission_type))

    def is_unknown(self) -> bool:
        return self.operation == AclOperation.UNKNOWN or self.permission_type == AclPermissionType.UNKNOWN


class AclBindingFilter(NamedTuple):
    """A pattern filter and an entry filter; ``AclBindingFilter()`` matches every binding."""

    pattern_filter: ResourcePatternFilter = ResourcePatternFilter()
    entry_filter: AccessControlEntryFilter = AccessControlEntryFilter()

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern_filter.matches(binding.pattern) and self.entry_filter.matches(binding.entry)

    def is_unknown(self) -> bool:
        return self.pattern_filter.is_unknown() or self.entry_filter.is_unknown()

    @classmethod
    def of(cls, binding: AclBinding) -> AclBindingFilter:
        """The filter that matches exactly ``binding``."""
        p, e = binding
        return cls(ResourcePatternFilter(p.resource_type, p.name, p.pattern_type),
                   AccessControlEntryFilter(e.principal, e.host, e.operation, e.permission_type))


class AclError(NamedTuple):
    """Why a binding or filter is refused: the Kafka error code and message of the result."""

    error_code: int
    message: str


def _invalid(message: str) -> AclError:
    return AclError(int(ErrorCode.INVALID_REQUEST), message)


def validate_binding(binding: AclBinding) -> AclError | None:
    """None if ``binding`` may be stored, else the error CreateAcls answers for it (Kafka's
    checks, in Kafka's order: the broker's CLUSTER name and empty name, then the controller's
    resource type, pattern type, operation, permission type and principal)."""
    pattern, entry = binding
    if pattern.resource_type == ResourceType.CLUSTER and pattern.name != CLUSTER_NAME:
        return _invalid(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if not pattern.name:
        return _invalid("Invalid empty resource name")
    if pattern.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return _invalid(f"Invalid resourceType {pattern.resource_type}")
    if pattern.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return _invalid(f"Invalid patternType {pattern.pattern_type}")
    if entry.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return _invalid(f"Invalid operation {entry.operation}")
    if entry.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return _invalid(f"Invalid permissionType {entry.permission_type}")
    if ":" not in entry.principal:
        return _invalid(f"Could not parse principal from `{entry.principal}` (no colon is present separating the"
                        " principal type from the principal name)")
    return None


def validate_filter(binding_filter: AclBindingFilter) -> AclError | None:
    """None if ``binding_filter`` may be used by DescribeAcls / DeleteAcls, else its error
    (INVALID_REQUEST for a filter with an UNKNOWN element)."""
    if binding_filter.pattern_filter.is_unknown():
        return _invalid("Unknown patternFilter.")
    if binding_filter.entry_filter.is_unknown():
        return _invalid("Unknown entryFilter.")
    return None


def group_by_resource(bindings: list[AclBinding]) -> dict[ResourcePattern, list[AccessControlEntry]]:
    """Bindings grouped by resource pattern, in first-seen order (DescribeAcls' response
    shape: one resource with its ACLs)."""
    out: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for pattern, entry in bindings:
        out.setdefault(pattern, []).append(entry)
    return out
