"""broker/authorizer/acl.py: wire codes, name parsing, filter semantics (ANY, MATCH, null
fields) and the validation of a binding to create / a filter to use."""

from __future__ import annotations

import pytest

from broker.authorizer.acl import (
    CLUSTER_NAME,
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
    group_by_resource,
    validate_binding,
    validate_filter,
)
from client.protocol.api import ErrorCode

RT, PT, OP, PERM = ResourceType, PatternType, AclOperation, AclPermissionType


def binding(name: str = "orders", pattern_type: PatternType = PT.LITERAL, *, rt: ResourceType = RT.TOPIC,
            principal: str = "User:alice", host: str = "*", op: AclOperation = OP.READ,
            perm: AclPermissionType = PERM.ALLOW) -> AclBinding:
    return AclBinding(ResourcePattern(rt, name, pattern_type), AccessControlEntry(principal, host, op, perm))


def test_wire_codes_are_kafkas() -> None:
    assert [(m.name, m.value) for m in RT] == [
        ("UNKNOWN", 0), ("ANY", 1), ("TOPIC", 2), ("GROUP", 3), ("CLUSTER", 4), ("TRANSACTIONAL_ID", 5),
        ("DELEGATION_TOKEN", 6), ("USER", 7)]
    assert [(m.name, m.value) for m in PT] == [
        ("UNKNOWN", 0), ("ANY", 1), ("MATCH", 2), ("LITERAL", 3), ("PREFIXED", 4)]
    assert [(m.name, m.value) for m in OP] == [
        ("UNKNOWN", 0), ("ANY", 1), ("ALL", 2), ("READ", 3), ("WRITE", 4), ("CREATE", 5), ("DELETE", 6),
        ("ALTER", 7), ("DESCRIBE", 8), ("CLUSTER_ACTION", 9), ("DESCRIBE_CONFIGS", 10), ("ALTER_CONFIGS", 11),
        ("IDEMPOTENT_WRITE", 12), ("CREATE_TOKENS", 13), ("DESCRIBE_TOKENS", 14)]
    assert [(m.name, m.value) for m in PERM] == [("UNKNOWN", 0), ("ANY", 1), ("DENY", 2), ("ALLOW", 3)]


def test_unknown_codes_decode_to_unknown() -> None:
    assert RT(99) is RT.UNKNOWN
    assert PT(-1) is PT.UNKNOWN
    assert OP(15) is OP.UNKNOWN
    assert PERM(4) is PERM.UNKNOWN


def test_parse_names_as_the_tools_write_them() -> None:
    assert OP.parse("DescribeConfigs") is OP.DESCRIBE_CONFIGS
    assert OP.parse("describe_configs") is OP.DESCRIBE_CONFIGS
    assert OP.parse("IdempotentWrite") is OP.IDEMPOTENT_WRITE
    assert OP.parse("All") is OP.ALL
    assert RT.parse("TransactionalId") is RT.TRANSACTIONAL_ID
    assert PT.parse("prefixed") is PT.PREFIXED
    assert PERM.parse("Allow") is PERM.ALLOW
    assert OP.parse("Frobnicate") is OP.UNKNOWN


def test_str_forms() -> None:
    b = binding()
    assert str(b.pattern) == "ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)"
    assert str(b.entry) == "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"


# -- filters -------------------------------------------------------------------------------

LIT = binding("orders")
WILD = binding("*")
PRE = binding("ord", PT.PREFIXED)
PRE_OTHER = binding("pay", PT.PREFIXED)
LIT_OTHER = binding("orders-eu")
GROUP = binding("orders", rt=RT.GROUP)
ALL_BINDINGS = [LIT, WILD, PRE, PRE_OTHER, LIT_OTHER, GROUP]


def matching(f: AclBindingFilter) -> list[AclBinding]:
    return [b for b in ALL_BINDINGS if f.matches(b)]


def test_filter_any_matches_everything() -> None:
    assert matching(AclBindingFilter()) == ALL_BINDINGS


def test_filter_resource_type_and_pattern_type() -> None:
    assert matching(AclBindingFilter(ResourcePatternFilter(RT.GROUP))) == [GROUP]
    assert matching(AclBindingFilter(ResourcePatternFilter(RT.TOPIC, None, PT.PREFIXED))) == [PRE, PRE_OTHER]
    assert matching(AclBindingFilter(ResourcePatternFilter(RT.TOPIC, None, PT.LITERAL))) == [LIT, WILD, LIT_OTHER]


def test_filter_name_with_any_or_exact_pattern_type_compares_exactly() -> None:
    assert matching(AclBindingFilter(ResourcePatternFilter(RT.ANY, "orders", PT.ANY))) == [LIT, GROUP]
    assert matching(AclBindingFilter(ResourcePatternFilter(RT.TOPIC, "orders", PT.LITERAL))) == [LIT]
    assert matching(AclBindingFilter(ResourcePatternFilter(RT.TOPIC, "ord", PT.PREFIXED))) == [PRE]
    # a literal filter does not expand the wildcard
    assert matching(AclBindingFilter(ResourcePatternFilter(RT.TOPIC, "*", PT.LITERAL))) == [WILD]


def test_filter_match_finds_every_pattern_that_applies() -> None:
    f = AclBindingFilter(ResourcePatternFilter(RT.TOPIC, "orders", PT.MATCH))
    assert matching(f) == [LIT, WILD, PRE]
    f = AclBindingFilter(ResourcePatternFilter(RT.TOPIC, "orders-eu", PT.MATCH))
    assert matching(f) == [WILD, PRE, LIT_OTHER]
    f = AclBindingFilter(ResourcePatternFilter(RT.ANY, "orders", PT.MATCH))
    assert matching(f) == [LIT, WILD, PRE, GROUP]
    # MATCH with no name: everything of the type
    assert matching(AclBindingFilter(ResourcePatternFilter(RT.TOPIC, None, PT.MATCH))) == ALL_BINDINGS[:5]


def test_entry_filter_null_any_and_exact() -> None:
    alice = binding(principal="User:alice", host="10.0.0.1", op=OP.WRITE, perm=PERM.DENY)
    anyone = binding(principal="User:*", host="*")
    bs = [alice, anyone]

    def m(ef: AccessControlEntryFilter) -> list[AclBinding]:
        return [b for b in bs if AclBindingFilter(entry_filter=ef).matches(b)]

    assert m(AccessControlEntryFilter()) == bs
    assert m(AccessControlEntryFilter(principal="User:alice")) == [alice]
    assert m(AccessControlEntryFilter(principal="User:*")) == [anyone]  # no wildcard expansion in filters
    assert m(AccessControlEntryFilter(host="10.0.0.1")) == [alice]
    assert m(AccessControlEntryFilter(host="*")) == [anyone]
    assert m(AccessControlEntryFilter(operation=OP.WRITE)) == [alice]
    assert m(AccessControlEntryFilter(operation=OP.ALL)) == []  # ALL in a filter is the value ALL
    assert m(AccessControlEntryFilter(permission_type=PERM.ALLOW)) == [anyone]


def test_filter_of_a_binding_matches_exactly_it() -> None:
    f = AclBindingFilter.of(PRE)
    assert matching(f) == [PRE]


def test_group_by_resource() -> None:
    a = binding(principal="User:a")
    b = binding(principal="User:b")
    c = binding("x")
    assert group_by_resource([a, c, b]) == {a.pattern: [a.entry, b.entry], c.pattern: [c.entry]}


# -- validation ----------------------------------------------------------------------------

INVALID = int(ErrorCode.INVALID_REQUEST)


@pytest.mark.parametrize("b", [
    binding(),
    binding("ord", PT.PREFIXED, op=OP.ALL, perm=PERM.DENY),
    binding("*", principal="User:*", host="10.1.2.3"),
    binding(CLUSTER_NAME, rt=RT.CLUSTER, op=OP.IDEMPOTENT_WRITE),
    binding("txn-", PT.PREFIXED, rt=RT.TRANSACTIONAL_ID, op=OP.WRITE),
    binding("alice", rt=RT.USER, op=OP.DESCRIBE_TOKENS),
    binding("*", PT.PREFIXED),  # as Kafka's controller: the prefix "*", names starting with '*'
    binding(principal="Group:ops"),
])
def test_valid_bindings(b: AclBinding) -> None:
    assert validate_binding(b) is None


@pytest.mark.parametrize(("b", "message"), [
    (binding(rt=RT.ANY), "Invalid resourceType ANY"),
    (binding(rt=RT.UNKNOWN), "Invalid resourceType UNKNOWN"),
    (binding(pattern_type=PT.ANY), "Invalid patternType ANY"),
    (binding(pattern_type=PT.MATCH), "Invalid patternType MATCH"),
    (binding(pattern_type=PT.UNKNOWN), "Invalid patternType UNKNOWN"),
    (binding(op=OP.ANY), "Invalid operation ANY"),
    (binding(op=OP.UNKNOWN), "Invalid operation UNKNOWN"),
    (binding(perm=PERM.ANY), "Invalid permissionType ANY"),
    (binding(perm=PERM.UNKNOWN), "Invalid permissionType UNKNOWN"),
    (binding(""), "Invalid empty resource name"),
    (binding("", PT.PREFIXED), "Invalid empty resource name"),
    (binding("my-cluster", rt=RT.CLUSTER), "The only valid name for the CLUSTER resource is kafka-cluster"),
    (binding(principal="alice"), "Could not parse principal from `alice`"),
])
def test_invalid_bindings(b: AclBinding, message: str) -> None:
    err = validate_binding(b)
    assert err is not None
    assert err.error_code == INVALID
    assert err.message.startswith(message)


def test_filter_validation() -> None:
    assert validate_filter(AclBindingFilter()) is None
    assert validate_filter(AclBindingFilter(ResourcePatternFilter(RT.TOPIC, "x", PT.MATCH))) is None
    for f, msg in [
        (AclBindingFilter(ResourcePatternFilter(RT.UNKNOWN)), "Unknown patternFilter."),
        (AclBindingFilter(ResourcePatternFilter(pattern_type=PT.UNKNOWN)), "Unknown patternFilter."),
        (AclBindingFilter(entry_filter=AccessControlEntryFilter(operation=OP.UNKNOWN)), "Unknown entryFilter."),
        (AclBindingFilter(entry_filter=AccessControlEntryFilter(permission_type=PERM.UNKNOWN)),
         "Unknown entryFilter."),
    ]:
        assert validate_filter(f) == (INVALID, msg)
