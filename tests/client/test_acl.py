"""client/acl.py and the request bodies of client/admin_acls.py: Kafka's codes, the Java
``toString`` of every struct (what kafka-acls.sh prints), filter matching and definiteness, and
the encoding of filters and bindings through the CreateAcls / DescribeAcls / DeleteAcls schemas
(decode(encode(x)) == x, v0's LITERAL-only rule)."""

from __future__ import annotations

from typing import Any

import pytest

from client.acl import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    operation_name,
    parse_principal,
)
from client.admin_acls import _binding, _filter_body
from client.errors import UnsupportedVersionError
from client.protocol.messages.create_acls import CreateAclsRequest
from client.protocol.messages.delete_acls import DeleteAclsRequest
from client.protocol.messages.describe_acls import DescribeAclsRequest
from client.protocol.primitives import Reader


def _round_trip(message: Any, body: dict[str, Any], version: int) -> dict[str, Any]:
    return message.decode(Reader(bytes(message.encode(body, version).buf)), version)  # type: ignore[no-any-return]


TOPIC = ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL)
ALICE_READ = AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)


def test_codes_are_kafkas() -> None:
    assert [(m.name, m.value) for m in ResourceType] == [
        ("UNKNOWN", 0), ("ANY", 1), ("TOPIC", 2), ("GROUP", 3), ("CLUSTER", 4), ("TRANSACTIONAL_ID", 5),
        ("DELEGATION_TOKEN", 6), ("USER", 7)]
    assert [(m.name, m.value) for m in PatternType] == [
        ("UNKNOWN", 0), ("ANY", 1), ("MATCH", 2), ("LITERAL", 3), ("PREFIXED", 4)]
    assert [m.value for m in AclOperation] == list(range(15))
    assert AclOperation.IDEMPOTENT_WRITE == 12 and AclOperation.DESCRIBE_TOKENS == 14
    assert [(m.name, m.value) for m in AclPermissionType] == [("UNKNOWN", 0), ("ANY", 1), ("DENY", 2), ("ALLOW", 3)]
    # a code this side does not know is UNKNOWN, as Kafka's fromCode
    assert ResourceType(42) is ResourceType.UNKNOWN and AclOperation(99) is AclOperation.UNKNOWN


def test_names() -> None:
    assert AclOperation.parse("ClusterAction") is AclOperation.CLUSTER_ACTION
    assert AclOperation.parse("CLUSTERACTION") is AclOperation.CLUSTER_ACTION
    assert AclOperation.parse("describe_configs") is AclOperation.DESCRIBE_CONFIGS
    assert AclOperation.parse("Frobnicate") is AclOperation.UNKNOWN
    assert [operation_name(o) for o in (AclOperation.ALL, AclOperation.IDEMPOTENT_WRITE, AclOperation.CREATE_TOKENS)] \
        == ["All", "IdempotentWrite", "CreateTokens"]
    assert parse_principal("User:CN=a:b") == "User:CN=a:b"
    with pytest.raises(ValueError, match="expected a string in format principalType:principalName but got alice"):
        parse_principal("alice")


def test_java_tostring() -> None:
    assert str(TOPIC) == "ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)"
    assert str(ALICE_READ) == "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
    assert str(AclBinding(TOPIC, ALICE_READ)) == (
        "(pattern=ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL), "
        "entry=(principal=User:alice, host=*, operation=READ, permissionType=ALLOW))")
    assert str(AclBindingFilter()) == (
        "(patternFilter=ResourcePattern(resourceType=ANY, name=<any>, patternType=ANY), "
        "entryFilter=(principal=<any>, host=<any>, operation=ANY, permissionType=ANY))")
    assert str(ResourcePatternFilter(ResourceType.GROUP, "g", PatternType.MATCH)) == \
        "ResourcePattern(resourceType=GROUP, name=g, patternType=MATCH)"


def test_filters_match_as_kafkas() -> None:
    lit = ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL)
    star = ResourcePattern(ResourceType.TOPIC, "*", PatternType.LITERAL)
    pre = ResourcePattern(ResourceType.TOPIC, "ord", PatternType.PREFIXED)
    other = ResourcePattern(ResourceType.TOPIC, "payments", PatternType.LITERAL)
    group = ResourcePattern(ResourceType.GROUP, "orders", PatternType.LITERAL)
    every = [lit, star, pre, other, group]

    def hits(f: ResourcePatternFilter) -> list[ResourcePattern]:
        return [p for p in every if f.matches(p)]

    assert hits(ResourcePatternFilter()) == every
    assert hits(ResourcePatternFilter(ResourceType.TOPIC, "orders", PatternType.MATCH)) == [lit, star, pre]
    assert hits(ResourcePatternFilter(ResourceType.TOPIC, "orders", PatternType.ANY)) == [lit]
    assert hits(ResourcePatternFilter(ResourceType.ANY, "orders", PatternType.LITERAL)) == [lit, group]
    assert hits(ResourcePatternFilter(ResourceType.TOPIC, "ord", PatternType.PREFIXED)) == [pre]
    assert AccessControlEntryFilter(principal="User:alice").matches(ALICE_READ)
    assert not AccessControlEntryFilter(principal="User:*").matches(ALICE_READ)
    assert not AccessControlEntryFilter(permission_type=AclPermissionType.DENY).matches(ALICE_READ)
    assert AclBinding(TOPIC, ALICE_READ).to_filter().matches(AclBinding(TOPIC, ALICE_READ))


def test_definiteness() -> None:
    assert AclBinding(TOPIC, ALICE_READ).to_filter().find_indefinite_field() is None
    assert AclBindingFilter().find_indefinite_field() == "Resource type is ANY."
    assert AclBindingFilter(TOPIC.to_filter(), AccessControlEntryFilter(
        "User:a", "*", AclOperation.ANY, AclPermissionType.ALLOW)).find_indefinite_field() == "Operation is ANY"
    assert AclBindingFilter(ResourcePatternFilter(ResourceType.TOPIC, "x", PatternType.MATCH)).find_indefinite_field() \
        == "Resource pattern type is MATCH."
    assert AclBindingFilter(entry_filter=AccessControlEntryFilter(operation=AclOperation.UNKNOWN)).is_unknown()


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_filter_encoding_round_trips(version: int) -> None:
    f = AclBindingFilter(ResourcePatternFilter(ResourceType.TOPIC, "orders", PatternType.ANY),
                         AccessControlEntryFilter("User:alice", None, AclOperation.READ, AclPermissionType.ANY))
    body = _filter_body(f, version)
    back = _round_trip(DescribeAclsRequest, body, version)
    # v0 has no pattern type: ANY goes as LITERAL (read back as the v0 default, LITERAL)
    assert back["pattern_type_filter"] == (PatternType.LITERAL if version == 0 else PatternType.ANY)
    assert (back["resource_type_filter"], back["resource_name_filter"], back["principal_filter"],
            back["host_filter"], back["operation"], back["permission_type"]) == (2, "orders", "User:alice", None, 3, 1)
    deleted = _round_trip(DeleteAclsRequest, {"filters": [body]}, version)
    assert deleted["filters"][0] == back


def test_v0_refuses_non_literal_filters() -> None:
    f = AclBindingFilter(ResourcePatternFilter(ResourceType.TOPIC, "o", PatternType.PREFIXED))
    with pytest.raises(UnsupportedVersionError, match="Version 0 only supports literal resource pattern types"):
        _filter_body(f, 0)
    assert _filter_body(f, 1)["pattern_type_filter"] == PatternType.PREFIXED


def test_binding_from_response_entry() -> None:
    creation = {"resource_type": 2, "resource_name": "orders", "resource_pattern_type": 3, "principal": "User:alice",
                "host": "*", "operation": 3, "permission_type": 3}
    back = _round_trip(CreateAclsRequest, {"creations": [creation]}, 3)["creations"][0]
    assert back == creation
    matching = {"error_code": 0, "error_message": None, "resource_type": 2, "resource_name": "orders",
                "pattern_type": 4, "principal": "User:alice", "host": "*", "operation": 3, "permission_type": 3}
    assert _binding(matching) == AclBinding(ResourcePattern(ResourceType.TOPIC, "orders", PatternType.PREFIXED),
                                            ALICE_READ)
