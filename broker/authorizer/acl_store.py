"""The ACL set, kept durably in the data directory: what CreateAcls, DescribeAcls and DeleteAcls
act on, and what feeds the authorizer's index.

File: ``<log.dir>/acls.json`` (minibroker's own; Kafka keeps ACLs in its metadata log), replaced
whole by ``atomic_write`` on every change (``acls.json.tmp``, fsync, rename, fsync of the
directory), so a crash leaves the old set or the new one, never a mix; a leftover
``acls.json.tmp`` is a torn write and is ignored (removed at start-up). Format, one ACL per line
and sorted, enum values by name::

    {"version": 1, "acls": [
    {"resource_type": "TOPIC", "name": "orders", "pattern_type": "LITERAL", "principal": "User:alice", "host": "*", "operation": "READ", "permission_type": "ALLOW"}
    ]}

A missing file is the empty set. A file that cannot be read as this format (bad JSON, another
version, an unknown enum name, a binding ``validate_binding`` refuses) stops start-up with
``AclFileError`` naming the file: never a silent empty set, which would turn every DENY off.

Changes: ``create`` and ``delete`` compute the new set, write it, then replace the set in
memory and tell the attached listener (the ``StandardAuthorizer``) which bindings were added
and removed, so its index changes in place. If the write fails (OSError) nothing changed, in
memory or on disk, and the error propagates to the caller (the handler answers
KAFKA_STORAGE_ERROR). A request's bindings are written once, together. Semantics as Kafka's
controller: creating a binding already present succeeds and changes nothing; each delete
filter is matched against the set as it was before the request (a binding matched by two
filters is reported by both), all matched bindings are removed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterable, Sequence
from typing import Any, NamedTuple, Protocol

from ..storage.fileutil import atomic_write, read_atomic_file
from .acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    validate_binding,
    validate_filter,
)

__all__ = ["AclStore", "AclFileError", "AclChangeListener", "AclCreateResult", "AclDeleteResult", "ACLS_FILE",
           "FORMAT_VERSION"]

ACLS_FILE = "acls.json"
FORMAT_VERSION = 1


class AclFileError(Exception):
    """The ACL file exists but cannot be read (the message names it)."""


class AclChangeListener(Protocol):
    """What the store tells (the StandardAuthorizer)."""

    def acls_loaded(self, bindings: Collection[AclBinding]) -> None: ...

    def acls_changed(self, added: Iterable[AclBinding], removed: Iterable[AclBinding]) -> None: ...


class AclCreateResult(NamedTuple):
    """One binding's CreateAcls result (error_code 0: created, or already present)."""

    error_code: int = 0
    error_message: str | None = None


class AclDeleteResult(NamedTuple):
    """One filter's DeleteAcls result: the bindings it matched and removed, or its error."""

    error_code: int = 0
    error_message: str | None = None
    bindings: tuple[AclBinding, ...] = ()


def _sort_key(b: AclBinding) -> tuple[int, str, int, str, str, int, int]:
    p, e = b
    return (p.resource_type, p.name, p.pattern_type, e.principal, e.host, e.operation, e.permission_type)


def _to_json(b: AclBinding) -> dict[str, str]:
    p, e = b
    return {"resource_type": p.resource_type.name, "name": p.name, "pattern_type": p.pattern_type.name,
            "principal": e.principal, "host": e.host, "operation": e.operation.name,
            "permission_type": e.permission_type.name}


def encode(bindings: Iterable[AclBinding]) -> bytes:
    """The file's content for ``bindings`` (see the module docstring)."""
    lines = [json.dumps(_to_json(b), ensure_ascii=False) for b in sorted(bindings, key=_sort_key)]
    body = ",\n".join(lines)
    return (f'{{"version": {FORMAT_VERSION}, "acls": [\n{body}\n]}}\n' if lines
            else f'{{"version": {FORMAT_VERSION}, "acls": []}}\n').encode()


def _enum(cls: Any, value: object, field: str) -> Any:
    if not isinstance(value, str) or value not in cls.__members__:
        raise ValueError(f"{field}: unknown value {value!r}")
    return cls[value]


def _str(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{field}: not a string: {value!r}")
    return value


def decode(data: bytes) -> list[AclBinding]:
    """The bindings of a file's content; ValueError saying what is wrong."""
    doc = json.loads(data)
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    if doc.get("version") != FORMAT_VERSION:
        raise ValueError(f"unsupported version {doc.get('version')!r} (this broker reads version {FORMAT_VERSION})")
    acls = doc.get("acls")
    if not isinstance(acls, list):
        raise ValueError('"acls" is not a list')
    out = []
    for i, a in enumerate(acls):
        if not isinstance(a, dict):
            raise ValueError(f"acl #{i}: not a JSON object")
        try:
            b = AclBinding(
                ResourcePattern(_enum(ResourceType, a.get("resource_type"), "resource_type"),
                                _str(a.get("name"), "name"),
                                _enum(PatternType, a.get("pattern_type"), "pattern_type")),
                AccessControlEntry(_str(a.get("principal"), "principal"), _str(a.get("host"), "host"),
                                   _enum(AclOperation, a.get("operation"), "operation"),
                                   _enum(AclPermissionType, a.get("permission_type"), "permission_type")))
        except ValueError as e:
            raise ValueError(f"acl #{i}: {e}") from None
        if (err := validate_binding(b)) is not None:
            raise ValueError(f"acl #{i}: {err.message}")
        out.append(b)
    return out


class AclStore:
    """The durable ACL set of one directory (see the module docstring)."""

    def __init__(self, directory: str) -> None:
        self.path = os.path.join(directory, ACLS_FILE)
        self._bindings: dict[AclBinding, None] = dict.fromkeys(self._load())
        self._listener: AclChangeListener | None = None

    def _load(self) -> list[AclBinding]:
        data = read_atomic_file(self.path, "the ACL file", AclFileError)
        if data is None:
            return []
        try:
            return decode(data)
        except (ValueError, UnicodeDecodeError) as e:
            raise AclFileError(f"the ACL file {self.path} is corrupt ({e}); fix or restore it, or remove it to"
                               " start with no ACLs") from e

    def attach(self, listener: AclChangeListener) -> None:
        """Feed ``listener`` the current set now and every change from now on."""
        self._listener = listener
        listener.acls_loaded(list(self._bindings))

    def __len__(self) -> int:
        return len(self._bindings)

    def bindings(self) -> list[AclBinding]:
        """Every stored binding, in the file's order."""
        return sorted(self._bindings, key=_sort_key)

    def describe(self, binding_filter: AclBindingFilter) -> list[AclBinding]:
        """The stored bindings ``binding_filter`` matches (a scan: DescribeAcls is rare). The
        caller validates the filter (``validate_filter``: INVALID_REQUEST for UNKNOWN)."""
        return [b for b in self.bindings() if binding_filter.matches(b)]

    def create(self, bindings: Sequence[AclBinding]) -> list[AclCreateResult]:
        """Store the valid bindings of ``bindings``; one result per binding, in order."""
        results = []
        added: dict[AclBinding, None] = {}
        for b in bindings:
            err = validate_binding(b)
            if err is not None:
                results.append(AclCreateResult(err.error_code, err.message))
                continue
            if b not in self._bindings:
                added[b] = None
            results.append(AclCreateResult())
        if added:
            self._commit({**self._bindings, **added}, list(added), [])
        return results

    def delete(self, filters: Sequence[AclBindingFilter]) -> list[AclDeleteResult]:
        """Remove every binding some filter matches; one result per filter, in order."""
        results = []
        removed: dict[AclBinding, None] = {}
        current = self.bindings()
        for f in filters:
            err = validate_filter(f)
            if err is not None:
                results.append(AclDeleteResult(err.error_code, err.message))
                continue
            matched = tuple(b for b in current if f.matches(b))
            removed.update(dict.fromkeys(matched))
            results.append(AclDeleteResult(bindings=matched))
        if removed:
            self._commit({b: None for b in self._bindings if b not in removed}, [], list(removed))
        return results

    def _commit(self, new: dict[AclBinding, None], added: list[AclBinding], removed: list[AclBinding]) -> None:
        atomic_write(self.path, encode(new))  # the commit point: raises before anything changed
        self._bindings = new
        if self._listener is not None:
            self._listener.acls_changed(added, removed)
