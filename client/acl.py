"""Kafka's ACL structs on the client side, named after the Java admin's
(``org.apache.kafka.common.acl`` / ``.resource``): ``ResourcePattern``, ``AccessControlEntry``,
``AclBinding`` and their filters, and the enums with Kafka's wire codes. ``Admin.create_acls``,
``describe_acls`` and ``delete_acls`` (client/admin_acls.py) take and return them. ::

    binding = AclBinding(ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL),
                         AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW))
    str(binding.pattern)  # 'ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)'

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

A code this client does not know decodes to UNKNOWN, as Kafka's ``fromCode`` does. ``str()`` of
every struct is the Java ``toString`` (what ``kafka-acls.sh`` prints); a filter's null name,
principal or host prints as ``<any>``.

Filters: an ANY enum and a None name / principal / host match anything (``AclBindingFilter()``
is Kafka's ``AclBindingFilter.ANY``). PatternType MATCH with a name matches every pattern that
applies to that resource: its LITERAL name, the LITERAL ``*`` and each PREFIXED prefix of it.
"""

from __future__ import annotations

import enum
from typing import NamedTuple, Self

__all__ = ["ResourceType", "PatternType", "AclOperation", "AclPermissionType", "ResourcePattern",
           "ResourcePatternFilter", "AccessControlEntry", "AccessControlEntryFilter", "AclBinding",
           "AclBindingFilter", "WILDCARD_RESOURCE", "WILDCARD_HOST", "CLUSTER_NAME", "SUPPORTED_OPERATIONS",
           "parse_principal", "operation_name"]

#: a LITERAL resource name that applies to every resource of its type
WILDCARD_RESOURCE = "*"
#: the host of an entry that applies from everywhere
WILDCARD_HOST = "*"
#: the one name of the CLUSTER resource (Kafka's Resource.CLUSTER_NAME)
CLUSTER_NAME = "kafka-cluster"


class _AclEnum(enum.IntEnum):
    """Kafka's enums: unknown codes decode to UNKNOWN (0); ``str()`` is the name."""

    @classmethod
    def _missing_(cls, value: object) -> Self:
        return cls(0)

    @classmethod
    def parse(cls, name: str) -> Self:
        """The member named ``name``, case-insensitive, underscores optional (``ClusterAction``,
        ``cluster_action``, ``CLUSTERACTION``); UNKNOWN if none."""
        key = name.strip().replace("_", "").upper()
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

    @property
    def is_specific(self) -> bool:
        """LITERAL or PREFIXED: what a stored ACL has (ANY and MATCH are for filters only)."""
        return self in (PatternType.LITERAL, PatternType.PREFIXED)


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


def operation_name(operation: AclOperation) -> str:
    """Kafka's tool name of an operation: ``ClusterAction``, ``IdempotentWrite``, ``All``."""
    return "".join(word.capitalize() for word in operation.name.split("_"))


_O = AclOperation
#: the operations an ACL on each resource type may name besides ALL (Kafka's
#: AclEntry.supportedOperations, what ``kafka-acls.sh`` checks before it sends anything)
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER, _O.DESCRIBE_CONFIGS,
                         _O.ALTER_CONFIGS),
    ResourceType.GROUP: (_O.READ, _O.DESCRIBE, _O.DELETE, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS),
    ResourceType.CLUSTER: (_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS, _O.IDEMPOTENT_WRITE,
                           _O.ALTER, _O.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (_O.DESCRIBE, _O.WRITE),
    ResourceType.DELEGATION_TOKEN: (_O.DESCRIBE,),
    ResourceType.USER: (_O.CREATE_TOKENS, _O.DESCRIBE_TOKENS),
}


def parse_principal(text: str) -> str:
    """``type:name`` (split at the first colon, as Kafka's SecurityUtils.parseKafkaPrincipal);
    ValueError with Kafka's message for anything else."""
    if not text or ":" not in text:
        raise ValueError(f"expected a string in format principalType:principalName but got {text}")
    return text


def _any(value: str | None) -> str:
    return "<any>" if value is None else value


class ResourcePattern(NamedTuple):
    """What an ACL applies to: a LITERAL name (``*``: every resource of the type) or a PREFIXED
    one (every resource whose name starts with it). The cluster is ``CLUSTER_NAME``."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def to_filter(self) -> ResourcePatternFilter:
        """The filter that matches exactly this pattern."""
        return ResourcePatternFilter(self.resource_type, self.name, self.pattern_type)

    def __str__(self) -> str:
        return (f"ResourcePattern(resourceType={self.resource_type}, name={self.name},"
                f" patternType={self.pattern_type})")


class ResourcePatternFilter(NamedTuple):
    """Matches resource patterns (see the module docstring for ANY, None and MATCH)."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY

    def matches(self, pattern: ResourcePattern) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != pattern.resource_type:
            return False
        pt = self.pattern_type
        if pt not in (PatternType.ANY, PatternType.MATCH) and pt != pattern.pattern_type:
            return False
        if self.name is None:
            return True
        if pt == PatternType.ANY or pt == pattern.pattern_type:
            return self.name == pattern.name
        if pattern.pattern_type == PatternType.LITERAL:
            return self.name == pattern.name or pattern.name == WILDCARD_RESOURCE
        if pattern.pattern_type == PatternType.PREFIXED:
            return self.name.startswith(pattern.name)
        return False

    def is_unknown(self) -> bool:
        return self.resource_type == ResourceType.UNKNOWN or self.pattern_type == PatternType.UNKNOWN

    def find_indefinite_field(self) -> str | None:
        """Why this filter could match more than one pattern (Kafka's wording), else None."""
        if self.resource_type == ResourceType.ANY:
            return "Resource type is ANY."
        if self.resource_type == ResourceType.UNKNOWN:
            return "Resource type is UNKNOWN."
        if self.name is None:
            return "Resource name is NULL."
        if self.pattern_type == PatternType.MATCH:
            return "Resource pattern type is MATCH."
        if self.pattern_type == PatternType.UNKNOWN:
            return "Resource pattern type is UNKNOWN."
        return None

    def __str__(self) -> str:  # Java's ResourcePatternFilter prints as a ResourcePattern too
        return (f"ResourcePattern(resourceType={self.resource_type}, name={_any(self.name)},"
                f" patternType={self.pattern_type})")


class AccessControlEntry(NamedTuple):
    """Who (``principal``, ``User:*`` for anyone) from where (``host``, ``*`` for anywhere) may
    (ALLOW) or may not (DENY; a Deny wins over any Allow) do what (``operation``)."""

    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def to_filter(self) -> AccessControlEntryFilter:
        return AccessControlEntryFilter(self.principal, self.host, self.operation, self.permission_type)

    def __str__(self) -> str:
        return (f"(principal={self.principal}, host={self.host}, operation={self.operation},"
                f" permissionType={self.permission_type})")


class AccessControlEntryFilter(NamedTuple):
    """Matches entries: ANY and None match anything; other values compare exactly (a
    ``User:*`` filter matches only ``User:*`` entries)."""

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

    def find_indefinite_field(self) -> str | None:
        if self.principal is None:
            return "Principal is NULL"
        if self.host is None:
            return "Host is NULL"
        if self.operation == AclOperation.ANY:
            return "Operation is ANY"
        if self.operation == AclOperation.UNKNOWN:
            return "Operation is UNKNOWN"
        if self.permission_type == AclPermissionType.ANY:
            return "Permission type is ANY"
        if self.permission_type == AclPermissionType.UNKNOWN:
            return "Permission type is UNKNOWN"
        return None

    def __str__(self) -> str:
        return (f"(principal={_any(self.principal)}, host={_any(self.host)}, operation={self.operation},"
                f" permissionType={self.permission_type})")


class AclBinding(NamedTuple):
    """One ACL: an entry bound to a resource pattern."""

    pattern: ResourcePattern
    entry: AccessControlEntry

    def to_filter(self) -> AclBindingFilter:
        """The filter that matches exactly this binding."""
        return AclBindingFilter(self.pattern.to_filter(), self.entry.to_filter())

    def __str__(self) -> str:
        return f"(pattern={self.pattern}, entry={self.entry})"


class AclBindingFilter(NamedTuple):
    """A pattern filter and an entry filter; ``AclBindingFilter()`` matches every binding."""

    pattern_filter: ResourcePatternFilter = ResourcePatternFilter()
    entry_filter: AccessControlEntryFilter = AccessControlEntryFilter()

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern_filter.matches(binding.pattern) and self.entry_filter.matches(binding.entry)

    def is_unknown(self) -> bool:
        return self.pattern_filter.is_unknown() or self.entry_filter.is_unknown()

    def find_indefinite_field(self) -> str | None:
        """None if this filter matches at most one binding (so it can be created as one)."""
        return self.pattern_filter.find_indefinite_field() or self.entry_filter.find_indefinite_field()

    def __str__(self) -> str:
        return f"(patternFilter={self.pattern_filter}, entryFilter={self.entry_filter})"
