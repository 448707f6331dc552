"""Admin operations on ACLs (``Admin`` inherits them): create_acls, describe_acls and
delete_acls, as Kafka's Java admin's ``createAcls`` / ``describeAcls`` / ``deleteAcls``, with the
structs of ``client.acl`` (``minibroker acls`` is built on them, as ``kafka-acls.sh`` is on the
Java admin). ::

    async with Admin("127.0.0.1:9092") as admin:
        topic = ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL)
        await admin.create_acls([AclBinding(topic, AccessControlEntry(
            "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW))])
        print(await admin.describe_acls(AclBindingFilter(topic.to_filter())))
        deleted = await admin.delete_acls([AclBindingFilter(topic.to_filter())])

The three requests go to any broker, as the Java admin sends them (to the least loaded one).
A broker without an authorizer answers SECURITY_DISABLED ("No Authorizer is configured."),
raised as ``SecurityDisabledError``; other broker errors are raised as the ``KafkaError``
subclass of their code with the broker's message: the first failing creation, the describe's
error, the first failing filter or deleted binding. Checked here before anything is sent, as
the Java admin does: a binding to create must be definite (no ANY or UNKNOWN, no None), and a
filter must hold no UNKNOWN (InvalidRequestError with Kafka's message). Against a broker that
speaks only v0 of these APIs (Kafka before 2.0), a filter's pattern type ANY is sent as LITERAL
and any other non-LITERAL pattern raises UnsupportedVersionError, as in the Java client.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from client.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from client.cluster import Cluster
from client.conn import BrokerConnection
from client.errors import InvalidRequestError, UnsupportedVersionError, error_for_code
from client.protocol.api import ApiKey, error_name

__all__ = ["AclAdmin"]


def _error(code: int, what: str, message: str | None) -> Exception:
    return error_for_code(code, f"{what}: {message or error_name(code)}")


def _filter_body(f: AclBindingFilter, version: int) -> dict[str, Any]:
    p, e = f
    pattern_type = p.pattern_type
    if version == 0:  # v0 has no pattern type: the broker reads every filter as LITERAL
        if pattern_type == PatternType.ANY:
            pattern_type = PatternType.LITERAL
        elif pattern_type != PatternType.LITERAL:
            raise UnsupportedVersionError("Version 0 only supports literal resource pattern types")
    return {"resource_type_filter": int(p.resource_type), "resource_name_filter": p.name,
            "pattern_type_filter": int(pattern_type), "principal_filter": e.principal, "host_filter": e.host,
            "operation": int(e.operation), "permission_type": int(e.permission_type)}


def _binding(r: dict[str, Any], pattern: ResourcePattern | None = None) -> AclBinding:
    if pattern is None:
        pattern = ResourcePattern(ResourceType(r["resource_type"]), r["resource_name"], PatternType(r["pattern_type"]))
    return AclBinding(pattern, AccessControlEntry(r["principal"], r["host"], AclOperation(r["operation"]),
                                                  AclPermissionType(r["permission_type"])))


class AclAdmin(ABC):
    """The ACL operations of ``Admin``, which provides the connection plumbing."""

    _cluster: Cluster

    @abstractmethod
    async def _request(self, conn_getter: Callable[[], Awaitable[BrokerConnection]], api_key: ApiKey,
                       body: dict[str, Any]) -> dict[str, Any]:
        """One request on the connection ``conn_getter`` gives, answered with its body."""

    async def _acl_version(self, api_key: ApiKey) -> int:
        conn = await self._cluster.any_connection()
        return conn.pick_version(api_key)

    async def create_acls(self, bindings: Iterable[AclBinding]) -> None:
        """Create ACLs (one already stored is no error; a binding named twice is sent once).
        The broker creates each valid one and refuses the others; the first refusal is raised
        (InvalidRequestError for a bad principal or a CLUSTER resource not named kafka-cluster,
        SecurityDisabledError without an authorizer, ClusterAuthorizationFailedError without
        Alter on the cluster)."""
        items = list(dict.fromkeys(bindings))
        if not items:
            return
        for b in items:
            indefinite = b.to_filter().find_indefinite_field()
            if indefinite is not None:
                raise InvalidRequestError(f"Invalid ACL creation: {indefinite} ({b})")
        version = await self._acl_version(ApiKey.CREATE_ACLS)
        if version == 0 and any(b.pattern.pattern_type != PatternType.LITERAL for b in items):
            raise UnsupportedVersionError("Version 0 only supports literal resource pattern types")
        body = {"creations": [
            {"resource_type": int(p.resource_type), "resource_name": p.name, "resource_pattern_type": int(p.pattern_type),
             "principal": e.principal, "host": e.host, "operation": int(e.operation),
             "permission_type": int(e.permission_type)} for p, e in items]}
        resp = await self._request(self._cluster.any_connection, ApiKey.CREATE_ACLS, body)
        results = resp["results"]
        for b, r in zip(items, results, strict=False):
            if r["error_code"]:
                raise _error(r["error_code"], f"cannot create ACL {b}", r.get("error_message"))
        if len(results) < len(items):
            raise error_for_code(-1, f"The broker reported no creation result for the given ACL: {items[len(results)]}")

    async def describe_acls(self, binding_filter: AclBindingFilter | None = None) -> list[AclBinding]:
        """The ACLs ``binding_filter`` matches (None: every ACL), in the broker's order."""
        binding_filter = binding_filter or AclBindingFilter()
        if binding_filter.is_unknown():
            raise InvalidRequestError("The AclBindingFilter must not contain UNKNOWN elements.")
        body = _filter_body(binding_filter, await self._acl_version(ApiKey.DESCRIBE_ACLS))
        resp = await self._request(self._cluster.any_connection, ApiKey.DESCRIBE_ACLS, body)
        if resp["error_code"]:
            raise _error(resp["error_code"], "cannot describe ACLs", resp.get("error_message"))
        out: list[AclBinding] = []
        for r in resp["resources"]:
            pattern = ResourcePattern(ResourceType(r["resource_type"]), r["resource_name"], PatternType(r["pattern_type"]))
            out.extend(_binding(a, pattern) for a in r["acls"])
        return out

    async def delete_acls(self, filters: Iterable[AclBindingFilter]) -> dict[AclBindingFilter, list[AclBinding]]:
        """Delete every ACL each filter matches: ``{filter: [the bindings it deleted]}`` (a
        filter named twice is sent once). The first error of a filter, or of one of its
        bindings, is raised."""
        items = list(dict.fromkeys(filters))
        if not items:
            return {}
        version = await self._acl_version(ApiKey.DELETE_ACLS)
        body = {"filters": [_filter_body(f, version) for f in items]}
        resp = await self._request(self._cluster.any_connection, ApiKey.DELETE_ACLS, body)
        results = resp["filter_results"]
        out: dict[AclBindingFilter, list[AclBinding]] = {}
        for f, r in zip(items, results, strict=False):
            if r["error_code"]:
                raise _error(r["error_code"], f"cannot delete ACLs matching {f}", r.get("error_message"))
            deleted = []
            for m in r["matching_acls"]:
                b = _binding(m)
                if m["error_code"]:
                    raise _error(m["error_code"], f"cannot delete ACL {b}", m.get("error_message"))
                deleted.append(b)
            out[f] = deleted
        if len(results) < len(items):
            raise error_for_code(-1, "The broker reported no deletion result for the given filter.")
        return out
