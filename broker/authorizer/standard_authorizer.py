"""The StandardAuthorizer's decisions (Kafka's ``org.apache.kafka.metadata.authorizer.StandardAuthorizer``),
sans I/O: an index of the ACLs by resource and the rules that turn them into allow or deny.

A request is authorized for (principal, host, operation, resource type, resource name):

1. a super user (``super.users``, ``User:admin;User:ops``) is allowed everything;
2. the ACLs that apply to the resource are those of its type with a LITERAL pattern of its
   name, the LITERAL ``*`` and every PREFIXED pattern that is a prefix of its name;
3. of those, an ACL matches the request if its principal is the request's or ``User:*``, its
   host the request's or ``*``, and its operation the request's or ALL; an ALLOW ACL also
   matches through the implied operations: READ, WRITE, DELETE and ALTER imply DESCRIBE,
   ALTER_CONFIGS implies DESCRIBE_CONFIGS (only for ALLOW: a DENY READ does not deny DESCRIBE,
   a DENY DESCRIBE does);
4. any matching DENY denies; else any matching ALLOW allows;
5. else, if no ACL applies to the resource at all (whatever its principal, host or operation),
   ``allow.everyone.if.no.acl.found`` (false by default) decides; if some ACL applies but none
   matches, deny.

Index and cost: per resource type, a dict of LITERAL names (``*`` is one of its keys) and a dict
of PREFIXED names, each to the entries bound to that pattern grouped by principal, plus the
sorted distinct lengths of the prefixes. A decision costs two dict lookups for the literal name
and the wildcard, and one slice and lookup per distinct prefix length not longer than the name:
O(L) with L the number of distinct prefix lengths (bounded by the name's length, 249 for a
topic, and in practice a handful); then, per applicable pattern, two lookups (the principal
and ``User:*``) and a look at their entries only. It never scans the ACL set. Decisions are cached
per (principal, host, operation, resource type, name) until the next ACL change (the cache is
dropped whole when it reaches ``CACHE_SIZE`` entries). An ACL change updates the index in
place (``acls_changed``): O(1) per binding, plus a re-sort of the prefix lengths when a length
appears or disappears.

``authorize_by_resource_type`` (Kafka's default ``Authorizer.authorizeByResourceType``, used for
an idempotent producer's "Write on any topic") scans the ACLs of that resource type: it runs
once per InitProducerId, not per record batch.

Principals are taken as ``<type>:<name>`` strings or as any object with ``principal_type`` and
``name`` (``broker.request_context.KafkaPrincipal``); hosts as the peer's address string. Not
thread-safe: the broker calls it from its event loop only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import Protocol

from .acl import (
    SUPPORTED_OPERATIONS,
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

__all__ = ["StandardAuthorizer", "PrincipalLike", "AUTHORIZER_CLASS_NAME", "parse_super_users", "CACHE_SIZE"]

#: the ``authorizer.class.name`` that switches the authorizer on, as in a KRaft broker
AUTHORIZER_CLASS_NAME = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
#: decisions cached before the cache is dropped and starts again
CACHE_SIZE = 65536

_ALL = AclOperation.ALL
_DESCRIBE = AclOperation.DESCRIBE
_DESCRIBE_CONFIGS = AclOperation.DESCRIBE_CONFIGS
_DENY = AclPermissionType.DENY
#: operations whose ALLOW also allows the key
_IMPLIED_BY: dict[int, frozenset[int]] = {
    _DESCRIBE: frozenset({AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}),
    _DESCRIBE_CONFIGS: frozenset({AclOperation.ALTER_CONFIGS}),
}
_NOTHING: frozenset[int] = frozenset()


class PrincipalLike(Protocol):
    """A principal as the request context carries it (``KafkaPrincipal``)."""

    @property
    def principal_type(self) -> str: ...

    @property
    def name(self) -> str: ...


def parse_super_users(value: str | None) -> frozenset[str]:
    """``super.users``: principals separated by semicolons, blanks around them ignored."""
    return frozenset(p.strip() for p in (value or "").split(";") if p.strip())


def _parse_bool(key: str, value: str | None) -> bool:
    if value is None or value.strip().lower() == "false":
        return False
    if value.strip().lower() == "true":
        return True
    raise ValueError(f"Invalid value {value} for configuration {key}: Expected value to be either true or false")


class _PatternAcls:
    """The entries bound to one pattern, by principal (a decision looks at two principals: the
    request's and ``User:*``)."""

    __slots__ = ("by_principal", "count")

    def __init__(self) -> None:
        self.by_principal: dict[str, dict[AccessControlEntry, None]] = {}
        self.count = 0

    def add(self, entry: AccessControlEntry) -> bool:
        entries = self.by_principal.setdefault(entry.principal, {})
        if entry in entries:
            return False
        entries[entry] = None
        self.count += 1
        return True

    def remove(self, entry: AccessControlEntry) -> bool:
        entries = self.by_principal.get(entry.principal)
        if entries is None or entry not in entries:
            return False
        del entries[entry]
        if not entries:
            del self.by_principal[entry.principal]
        self.count -= 1
        return True

    def __iter__(self) -> Iterator[AccessControlEntry]:
        for entries in self.by_principal.values():
            yield from entries


class _TypeIndex:
    """The ACLs of one resource type, by pattern."""

    __slots__ = ("literal", "prefixed", "prefix_lengths", "lengths")

    def __init__(self) -> None:
        self.literal: dict[str, _PatternAcls] = {}
        self.prefixed: dict[str, _PatternAcls] = {}
        self.prefix_lengths: Counter[int] = Counter()  # distinct prefixes per length
        self.lengths: tuple[int, ...] = ()  # the lengths present, ascending

    def add(self, name: str, pattern_type: PatternType, entry: AccessControlEntry) -> bool:
        """Index ``entry`` under the pattern; False if it was there already."""
        table = self.literal if pattern_type == PatternType.LITERAL else self.prefixed
        acls = table.get(name)
        if acls is None:
            acls = table[name] = _PatternAcls()
            if table is self.prefixed:
                self.prefix_lengths[len(name)] += 1
                if self.prefix_lengths[len(name)] == 1:
                    self.lengths = tuple(sorted(self.prefix_lengths))
        return acls.add(entry)

    def remove(self, name: str, pattern_type: PatternType, entry: AccessControlEntry) -> bool:
        """Drop ``entry`` from the pattern; False if it was not there."""
        table = self.literal if pattern_type == PatternType.LITERAL else self.prefixed
        acls = table.get(name)
        if acls is None or not acls.remove(entry):
            return False
        if not acls.count:
            del table[name]
            if table is self.prefixed:
                self.prefix_lengths[len(name)] -= 1
                if not self.prefix_lengths[len(name)]:
                    del self.prefix_lengths[len(name)]
                    self.lengths = tuple(sorted(self.prefix_lengths))
        return True

    def applicable(self, name: str) -> list[_PatternAcls]:
        """The ACLs of every pattern that applies to the resource ``name`` (none is empty)."""
        out = []
        literal = self.literal
        if (acls := literal.get(name)) is not None:
            out.append(acls)
        if name != WILDCARD_RESOURCE and (acls := literal.get(WILDCARD_RESOURCE)) is not None:
            out.append(acls)
        if self.lengths:
            prefixed = self.prefixed
            n = len(name)
            for k in self.lengths:
                if k > n:
                    break
                if (acls := prefixed.get(name[:k])) is not None:
                    out.append(acls)
        return out


class StandardAuthorizer:
    """Kafka's StandardAuthorizer rules over an in-memory index (see the module docstring).

    Fed by an ``AclStore`` (``store.attach(authorizer)`` calls ``acls_loaded`` with the stored
    set, then ``acls_changed`` on every change), or directly by ``acls_loaded`` /
    ``acls_changed`` in tests."""

    def __init__(self, *, super_users: Iterable[str] = (), allow_everyone_if_no_acl_found: bool = False) -> None:
        self.super_users = frozenset(super_users)
        self._allow_everyone = allow_everyone_if_no_acl_found
        self._index: dict[int, _TypeIndex] = {}
        self._count = 0
        self._cache: dict[tuple[str, str, int, int, str], bool] = {}

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> StandardAuthorizer:
        """Built from broker properties ``super.users`` and ``allow.everyone.if.no.acl.found``
        (ValueError, naming the property, for a value that is not true or false)."""
        return cls(super_users=parse_super_users(props.get("super.users")),
                   allow_everyone_if_no_acl_found=_parse_bool("allow.everyone.if.no.acl.found",
                                                               props.get("allow.everyone.if.no.acl.found")))

    @property
    def allow_everyone_if_no_acl_found(self) -> bool:
        return self._allow_everyone

    @allow_everyone_if_no_acl_found.setter
    def allow_everyone_if_no_acl_found(self, value: bool) -> None:
        self._allow_everyone = value
        self._cache.clear()  # cached decisions may have come from the old default

    # -- the ACL set (AclStore's listener interface) --------------------------------------

    def acls_loaded(self, bindings: Collection[AclBinding]) -> None:
        """Replace the whole ACL set (start-up)."""
        self._index = {}
        self._count = 0
        self.acls_changed(bindings, ())

    def acls_changed(self, added: Iterable[AclBinding], removed: Iterable[AclBinding]) -> None:
        """Apply a change to the index in place: ``removed`` bindings leave, ``added`` ones
        join (adding a binding already present, or removing one absent, changes nothing)."""
        for pattern, entry in removed:
            idx = self._index.get(pattern.resource_type)
            if idx is not None and idx.remove(pattern.name, pattern.pattern_type, entry):
                self._count -= 1
        for pattern, entry in added:
            if pattern.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
                raise ValueError(f"not a stored pattern: {pattern}")
            idx = self._index.get(pattern.resource_type)
            if idx is None:
                idx = self._index[pattern.resource_type] = _TypeIndex()
            if idx.add(pattern.name, pattern.pattern_type, entry):
                self._count += 1
        self._cache.clear()

    @property
    def acl_count(self) -> int:
        """How many ACLs the index holds."""
        return self._count

    # -- decisions ------------------------------------------------------------------------

    def authorize(self, principal: str | PrincipalLike, host: str, operation: AclOperation,
                  resource_type: ResourceType, resource_name: str) -> bool:
        """Whether ``principal`` connected from ``host`` may do ``operation`` on the resource."""
        p = principal if isinstance(principal, str) else f"{principal.principal_type}:{principal.name}"
        if p in self.super_users:
            return True
        key = (p, host, operation, resource_type, resource_name)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        result = self._decide(p, host, operation, resource_type, resource_name)
        if len(self._cache) >= CACHE_SIZE:
            self._cache.clear()
        self._cache[key] = result
        return result

    def authorize_many(self, principal: str | PrincipalLike, host: str,
                       actions: Iterable[tuple[AclOperation, ResourceType, str]]) -> list[bool]:
        """``authorize`` for each (operation, resource type, resource name), in order."""
        p = principal if isinstance(principal, str) else f"{principal.principal_type}:{principal.name}"
        return [self.authorize(p, host, op, rt, name) for op, rt, name in actions]

    def authorized_operations(self, principal: str | PrincipalLike, host: str, resource_type: ResourceType,
                              resource_name: str, operations: Sequence[AclOperation] | None = None) -> int:
        """The ``authorized_operations`` bit field of Metadata, DescribeGroups and
        DescribeCluster: bit ``op`` set for each operation of ``operations`` (by default those
        the resource type supports) that is allowed."""
        ops = SUPPORTED_OPERATIONS.get(resource_type, ()) if operations is None else operations
        p = principal if isinstance(principal, str) else f"{principal.principal_type}:{principal.name}"
        bits = 0
        for op in ops:
            if self.authorize(p, host, op, resource_type, resource_name):
                bits |= 1 << int(op)
        return bits

    def _decide(self, principal: str, host: str, operation: int, resource_type: int, name: str) -> bool:
        idx = self._index.get(resource_type)
        sets = idx.applicable(name) if idx is not None else []
        if not sets:
            return self._allow_everyone
        implied = _IMPLIED_BY.get(operation, _NOTHING)
        allowed = False
        for acls in sets:
            by_principal = acls.by_principal
            for who in (principal, WILDCARD_PRINCIPAL):
                entries = by_principal.get(who)
                if entries is None:
                    continue
                for e in entries:
                    if e.host != host and e.host != WILDCARD_HOST:
                        continue
                    op = e.operation
                    if e.permission_type == _DENY:
                        if op == operation or op == _ALL:
                            return False
                    elif op == operation or op == _ALL or op in implied:
                        allowed = True
                if principal == WILDCARD_PRINCIPAL:
                    break
        return allowed

    def authorize_by_resource_type(self, principal: str | PrincipalLike, host: str, operation: AclOperation,
                                   resource_type: ResourceType) -> bool:
        """Whether ``principal`` may do ``operation`` on at least one resource of the type
        (Kafka's ``authorizeByResourceType``): allowed if the rules allow it on a resource
        named ``hardcode`` (super users, ``allow.everyone.if.no.acl.found`` with no ACL on
        such a name), denied by a matching DENY on the LITERAL ``*``, else allowed if some
        matching ALLOW (operation or ALL; no implied operations) is a LITERAL ``*``, a LITERAL
        name not denied by a DENY on the same name or on a prefix of it, or a PREFIXED name not
        denied by a PREFIXED DENY on a prefix of it."""
        p = principal if isinstance(principal, str) else f"{principal.principal_type}:{principal.name}"
        if self.authorize(p, host, operation, resource_type, "hardcode"):
            return True
        idx = self._index.get(resource_type)
        if idx is None:
            return False
        deny_literal: set[str] = set()
        deny_prefixed: set[str] = set()
        allow: list[tuple[str, bool]] = []  # (name, is literal)
        wildcard_allow = False
        for literal, table in ((True, idx.literal), (False, idx.prefixed)):
            for name, entries in table.items():
                for e in entries:
                    if (e.principal != p and e.principal != WILDCARD_PRINCIPAL) or \
                            (e.host != host and e.host != WILDCARD_HOST) or \
                            (e.operation != operation and e.operation != _ALL):
                        continue
                    if e.permission_type == _DENY:
                        if literal and name == WILDCARD_RESOURCE:
                            return False
                        (deny_literal if literal else deny_prefixed).add(name)
                    elif literal and name == WILDCARD_RESOURCE:
                        wildcard_allow = True
                    else:
                        allow.append((name, literal))
        if wildcard_allow:
            return True
        for name, literal in allow:
            if literal and name in deny_literal:
                continue
            if not any(name[:k] in deny_prefixed for k in range(1, len(name) + 1)):
                return True
        return False
