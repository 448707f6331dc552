"""broker/authorizer/standard_authorizer.py: Kafka's StandardAuthorizer rules case by case
(super users, DENY wins, LITERAL / wildcard / PREFIXED patterns, principal and host wildcards,
ALL, implied operations, allow.everyone.if.no.acl.found both ways), incremental index changes,
authorize_by_resource_type, and 10,000 ACLs checked against a plain scan."""

from __future__ import annotations

import random

import pytest

from broker.authorizer.acl import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from broker.authorizer.standard_authorizer import (
    AUTHORIZER_CLASS_NAME,
    CACHE_SIZE,
    StandardAuthorizer,
    parse_super_users,
)
from broker.request_context import ANONYMOUS, KafkaPrincipal

RT, PT, OP, PERM = ResourceType, PatternType, AclOperation, AclPermissionType
ALLOW, DENY = PERM.ALLOW, PERM.DENY
HOST = "10.0.0.1"


def acl(name: str, op: AclOperation, perm: AclPermissionType = ALLOW, *, pt: PatternType = PT.LITERAL,
        rt: ResourceType = RT.TOPIC, principal: str = "User:alice", host: str = "*") -> AclBinding:
    return AclBinding(ResourcePattern(rt, name, pt), AccessControlEntry(principal, host, op, perm))


def authorizer(*acls: AclBinding, allow_everyone: bool = False, super_users: tuple[str, ...] = ()
               ) -> StandardAuthorizer:
    a = StandardAuthorizer(super_users=super_users, allow_everyone_if_no_acl_found=allow_everyone)
    a.acls_loaded(list(acls))
    return a


def can(a: StandardAuthorizer, op: AclOperation, name: str = "orders", *, rt: ResourceType = RT.TOPIC,
        principal: str = "User:alice", host: str = HOST) -> bool:
    return a.authorize(principal, host, op, rt, name)


def test_no_acls_denies_by_default_and_allow_everyone_allows() -> None:
    assert not can(authorizer(), OP.READ)
    assert can(authorizer(allow_everyone=True), OP.READ)


def test_allow_everyone_only_when_no_acl_applies_to_the_resource() -> None:
    # an ACL for someone else on the resource: the resource has ACLs, so deny
    a = authorizer(acl("orders", OP.READ, principal="User:bob"), allow_everyone=True)
    assert not can(a, OP.READ)
    # ... also for another operation than the one ACL'd
    a = authorizer(acl("orders", OP.WRITE), allow_everyone=True)
    assert not can(a, OP.READ)
    # ... and from another host
    a = authorizer(acl("orders", OP.READ, host="10.9.9.9"), allow_everyone=True)
    assert not can(a, OP.READ)
    # an ACL on another resource does not count
    a = authorizer(acl("payments", OP.READ, principal="User:bob"), allow_everyone=True)
    assert can(a, OP.READ)
    # nor one on another resource type with the same name
    a = authorizer(acl("orders", OP.READ, rt=RT.GROUP, principal="User:bob"), allow_everyone=True)
    assert can(a, OP.READ)
    # a prefixed ACL that applies counts
    a = authorizer(acl("ord", OP.READ, pt=PT.PREFIXED, principal="User:bob"), allow_everyone=True)
    assert not can(a, OP.READ)
    assert can(a, OP.READ, "payments")
    # so does the wildcard
    a = authorizer(acl("*", OP.READ, principal="User:bob"), allow_everyone=True)
    assert not can(a, OP.READ, "anything")


def test_literal_allow() -> None:
    a = authorizer(acl("orders", OP.READ))
    assert can(a, OP.READ)
    assert not can(a, OP.WRITE)
    assert not can(a, OP.READ, "orders-eu")  # a literal is not a prefix
    assert not can(a, OP.READ, "order")
    assert not can(a, OP.READ, principal="User:bob")
    assert not can(a, OP.READ, rt=RT.GROUP)


def test_deny_wins_over_allow() -> None:
    a = authorizer(acl("orders", OP.READ), acl("orders", OP.READ, DENY))
    assert not can(a, OP.READ)
    # a DENY on a prefix overrides a literal ALLOW, a literal DENY a wildcard ALLOW
    a = authorizer(acl("orders", OP.READ), acl("ord", OP.READ, DENY, pt=PT.PREFIXED))
    assert not can(a, OP.READ)
    a = authorizer(acl("*", OP.READ), acl("orders", OP.READ, DENY))
    assert not can(a, OP.READ)
    assert can(a, OP.READ, "payments")
    # DENY ALL denies every operation; a DENY for User:* denies alice
    a = authorizer(acl("orders", OP.ALL), acl("orders", OP.ALL, DENY, principal="User:*"))
    assert not can(a, OP.WRITE)
    # a DENY for another principal or another operation does not
    a = authorizer(acl("orders", OP.READ), acl("orders", OP.READ, DENY, principal="User:bob"),
                   acl("orders", OP.WRITE, DENY))
    assert can(a, OP.READ)
    assert not can(a, OP.READ, principal="User:bob")


def test_prefixed_patterns() -> None:
    a = authorizer(acl("ord", OP.WRITE, pt=PT.PREFIXED))
    assert can(a, OP.WRITE, "orders")
    assert can(a, OP.WRITE, "ord")  # a name is a prefix of itself
    assert not can(a, OP.WRITE, "or")
    assert not can(a, OP.WRITE, "payments-ord")
    # several prefixes of different lengths; the longest does not hide the others
    a = authorizer(acl("o", OP.READ, pt=PT.PREFIXED), acl("orders-", OP.READ, DENY, pt=PT.PREFIXED))
    assert can(a, OP.READ, "orders")
    assert not can(a, OP.READ, "orders-eu")
    assert can(a, OP.READ, "other")


def test_prefixed_star_is_a_literal_prefix_not_a_wildcard() -> None:
    a = authorizer(acl("*", OP.READ, pt=PT.PREFIXED))
    assert not can(a, OP.READ, "orders")
    assert can(a, OP.READ, "*orders")


def test_wildcard_resource_and_principal() -> None:
    a = authorizer(acl("*", OP.READ, principal="User:*"))
    assert can(a, OP.READ, "anything", principal="User:bob")
    assert can(a, OP.READ, "anything", principal="User:ANONYMOUS")
    assert not can(a, OP.READ, "anything", rt=RT.GROUP)
    # User:* matches any principal type (Kafka's wildcard principal is User:*)
    assert can(a, OP.READ, principal="Group:ops")
    # a principal named "*" of another type is not a wildcard
    a = authorizer(acl("orders", OP.READ, principal="Group:*"))
    assert not can(a, OP.READ, principal="Group:ops")


def test_hosts() -> None:
    a = authorizer(acl("orders", OP.READ, host=HOST))
    assert can(a, OP.READ, host=HOST)
    assert not can(a, OP.READ, host="10.0.0.2")
    a = authorizer(acl("orders", OP.READ), acl("orders", OP.READ, DENY, host="10.0.0.2"))
    assert can(a, OP.READ, host=HOST)
    assert not can(a, OP.READ, host="10.0.0.2")


def test_all_allows_every_operation() -> None:
    a = authorizer(acl("orders", OP.ALL))
    for op in (OP.READ, OP.WRITE, OP.CREATE, OP.DELETE, OP.ALTER, OP.DESCRIBE, OP.DESCRIBE_CONFIGS,
               OP.ALTER_CONFIGS):
        assert can(a, op), op


@pytest.mark.parametrize("op", [OP.READ, OP.WRITE, OP.DELETE, OP.ALTER])
def test_describe_is_implied_by_read_write_delete_alter(op: AclOperation) -> None:
    a = authorizer(acl("orders", op))
    assert can(a, OP.DESCRIBE)
    assert not can(a, OP.DESCRIBE_CONFIGS)


@pytest.mark.parametrize("op", [OP.CREATE, OP.DESCRIBE_CONFIGS, OP.ALTER_CONFIGS, OP.CLUSTER_ACTION,
                                OP.IDEMPOTENT_WRITE])
def test_describe_is_not_implied_by_others(op: AclOperation) -> None:
    assert not can(authorizer(acl("orders", op)), OP.DESCRIBE)


def test_describe_configs_implied_by_alter_configs_only() -> None:
    assert can(authorizer(acl("orders", OP.ALTER_CONFIGS)), OP.DESCRIBE_CONFIGS)
    assert not can(authorizer(acl("orders", OP.ALTER)), OP.DESCRIBE_CONFIGS)
    assert not can(authorizer(acl("orders", OP.ALTER_CONFIGS)), OP.ALTER)


def test_implication_is_one_way() -> None:
    a = authorizer(acl("orders", OP.DESCRIBE))
    assert not can(a, OP.READ)
    a = authorizer(acl("orders", OP.DESCRIBE_CONFIGS))
    assert not can(a, OP.ALTER_CONFIGS)


def test_deny_of_an_implying_operation_does_not_deny_describe() -> None:
    a = authorizer(acl("orders", OP.DESCRIBE), acl("orders", OP.READ, DENY))
    assert can(a, OP.DESCRIBE)
    assert not can(a, OP.READ)
    a = authorizer(acl("orders", OP.DESCRIBE_CONFIGS), acl("orders", OP.ALTER_CONFIGS, DENY))
    assert can(a, OP.DESCRIBE_CONFIGS)


def test_deny_describe_denies_describe_despite_an_implying_allow() -> None:
    a = authorizer(acl("orders", OP.READ), acl("orders", OP.DESCRIBE, DENY))
    assert not can(a, OP.DESCRIBE)
    assert can(a, OP.READ)
    a = authorizer(acl("orders", OP.ALTER_CONFIGS), acl("orders", OP.DESCRIBE_CONFIGS, DENY))
    assert not can(a, OP.DESCRIBE_CONFIGS)


def test_super_users_bypass_denies() -> None:
    a = authorizer(acl("*", OP.ALL, DENY, principal="User:*"), super_users=("User:admin",))
    assert can(a, OP.WRITE, principal="User:admin")
    assert can(a, OP.CLUSTER_ACTION, CLUSTER_NAME, rt=RT.CLUSTER, principal="User:admin")
    assert not can(a, OP.WRITE, principal="User:bob")


def test_super_users_from_properties() -> None:
    assert parse_super_users("User:admin;User:ops") == {"User:admin", "User:ops"}
    assert parse_super_users(" User:admin ; ;User:ops;") == {"User:admin", "User:ops"}
    assert parse_super_users(None) == frozenset()
    a = StandardAuthorizer.from_properties({"super.users": "User:admin;User:ops",
                                            "allow.everyone.if.no.acl.found": "TRUE"})
    assert a.super_users == {"User:admin", "User:ops"}
    assert a.allow_everyone_if_no_acl_found
    b = StandardAuthorizer.from_properties({})
    assert not b.allow_everyone_if_no_acl_found and not b.super_users
    with pytest.raises(ValueError, match="allow.everyone.if.no.acl.found"):
        StandardAuthorizer.from_properties({"allow.everyone.if.no.acl.found": "yes"})
    assert AUTHORIZER_CLASS_NAME == "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def test_principal_objects_as_the_request_context_has_them() -> None:
    a = authorizer(acl("orders", OP.READ, principal="User:ANONYMOUS"), super_users=("User:admin",))
    assert a.authorize(ANONYMOUS, HOST, OP.READ, RT.TOPIC, "orders")
    assert a.authorize(KafkaPrincipal("User", "admin"), HOST, OP.DELETE, RT.TOPIC, "orders")
    assert not a.authorize(KafkaPrincipal("User", "bob"), HOST, OP.READ, RT.TOPIC, "orders")


def test_other_resource_types() -> None:
    a = authorizer(acl(CLUSTER_NAME, OP.IDEMPOTENT_WRITE, rt=RT.CLUSTER),
                   acl("billing", OP.READ, rt=RT.GROUP),
                   acl("txn-", OP.WRITE, pt=PT.PREFIXED, rt=RT.TRANSACTIONAL_ID))
    assert can(a, OP.IDEMPOTENT_WRITE, CLUSTER_NAME, rt=RT.CLUSTER)
    assert not can(a, OP.CLUSTER_ACTION, CLUSTER_NAME, rt=RT.CLUSTER)
    assert can(a, OP.READ, "billing", rt=RT.GROUP)
    assert can(a, OP.DESCRIBE, "billing", rt=RT.GROUP)
    assert can(a, OP.WRITE, "txn-1", rt=RT.TRANSACTIONAL_ID)
    assert can(a, OP.DESCRIBE, "txn-1", rt=RT.TRANSACTIONAL_ID)
    assert not can(a, OP.WRITE, "billing", rt=RT.TOPIC)


def test_authorize_many_and_authorized_operations() -> None:
    a = authorizer(acl("orders", OP.READ), acl("orders", OP.ALTER_CONFIGS))
    assert a.authorize_many("User:alice", HOST, [(OP.READ, RT.TOPIC, "orders"), (OP.WRITE, RT.TOPIC, "orders"),
                                                 (OP.DESCRIBE, RT.TOPIC, "orders")]) == [True, False, True]
    bits = a.authorized_operations("User:alice", HOST, RT.TOPIC, "orders")
    assert bits == (1 << OP.READ) | (1 << OP.DESCRIBE) | (1 << OP.DESCRIBE_CONFIGS) | (1 << OP.ALTER_CONFIGS)
    assert a.authorized_operations("User:alice", HOST, RT.TOPIC, "orders", [OP.WRITE, OP.READ]) == 1 << OP.READ


def test_changes_update_the_index_and_drop_cached_decisions() -> None:
    allow = acl("ord", OP.READ, pt=PT.PREFIXED)
    deny = acl("orders", OP.READ, DENY)
    a = authorizer()
    assert not can(a, OP.READ)
    a.acls_changed([allow], [])
    assert can(a, OP.READ) and a.acl_count == 1
    a.acls_changed([deny], [])
    assert not can(a, OP.READ) and a.acl_count == 2
    a.acls_changed([], [deny])
    assert can(a, OP.READ) and a.acl_count == 1
    a.acls_changed([allow], [])  # already there: nothing changes
    assert a.acl_count == 1
    a.acls_changed([], [allow])
    assert not can(a, OP.READ) and a.acl_count == 0
    a.acls_changed([], [allow])  # absent: nothing changes
    assert a.acl_count == 0
    assert not can(a, OP.READ)
    a.allow_everyone_if_no_acl_found = True  # drops the cached decision
    assert can(a, OP.READ)  # no ACL left on the resource at all
    a.acls_loaded([deny])
    assert not can(a, OP.READ) and a.acl_count == 1
    with pytest.raises(ValueError):
        a.acls_changed([acl("x", OP.READ, pt=PT.MATCH)], [])


def test_prefix_lengths_follow_removals() -> None:
    p1 = acl("ab", OP.READ, pt=PT.PREFIXED)
    p2 = acl("ab", OP.WRITE, pt=PT.PREFIXED)
    a = authorizer(p1, p2)
    a.acls_changed([], [p1])
    assert can(a, OP.WRITE, "abc") and not can(a, OP.READ, "abc")
    a.acls_changed([], [p2])
    assert not can(a, OP.WRITE, "abc")
    a.acls_changed([p1], [])
    assert can(a, OP.READ, "abc")


def test_cache_is_bounded() -> None:
    a = authorizer(acl("t", OP.READ, pt=PT.PREFIXED))
    for i in range(CACHE_SIZE + 10):
        assert can(a, OP.READ, f"t{i}")
    assert len(a._cache) <= CACHE_SIZE


def test_authorize_by_resource_type() -> None:
    def by_type(*acls: AclBinding, allow_everyone: bool = False) -> bool:
        return authorizer(*acls, allow_everyone=allow_everyone).authorize_by_resource_type(
            "User:alice", HOST, OP.WRITE, RT.TOPIC)

    assert not by_type()
    assert by_type(allow_everyone=True)  # no ACL on "hardcode"
    assert by_type(acl("orders", OP.WRITE))
    assert by_type(acl("ord", OP.WRITE, pt=PT.PREFIXED))
    assert by_type(acl("*", OP.ALL))
    assert not by_type(acl("orders", OP.READ))  # no implied operations, other operation
    assert not by_type(acl("orders", OP.WRITE, principal="User:bob"))
    assert not by_type(acl("orders", OP.WRITE, rt=RT.GROUP))
    assert not by_type(acl("orders", OP.WRITE), acl("orders", OP.WRITE, DENY))
    assert not by_type(acl("orders", OP.WRITE), acl("or", OP.WRITE, DENY, pt=PT.PREFIXED))
    assert not by_type(acl("orders-", OP.WRITE, pt=PT.PREFIXED), acl("or", OP.WRITE, DENY, pt=PT.PREFIXED))
    assert by_type(acl("orders", OP.WRITE), acl("payments", OP.WRITE, DENY))
    assert by_type(acl("orders", OP.WRITE), acl("orders-eu", OP.WRITE, DENY, pt=PT.PREFIXED))
    # a literal DENY does not dominate a PREFIXED ALLOW of the same name
    assert by_type(acl("ord", OP.WRITE, pt=PT.PREFIXED), acl("ord", OP.WRITE, DENY))
    # a DENY on the wildcard denies, whatever the order
    assert not by_type(acl("*", OP.WRITE), acl("*", OP.WRITE, DENY))
    assert not by_type(acl("orders", OP.WRITE), acl("*", OP.ALL, DENY, principal="User:*"))
    assert authorizer(acl("*", OP.ALL, DENY, principal="User:*"), super_users=("User:alice",)) \
        .authorize_by_resource_type("User:alice", HOST, OP.WRITE, RT.TOPIC)


# -- 10,000 ACLs against a plain scan ------------------------------------------------------

_IMPLIED = {OP.DESCRIBE: {OP.READ, OP.WRITE, OP.DELETE, OP.ALTER}, OP.DESCRIBE_CONFIGS: {OP.ALTER_CONFIGS}}


def reference(acls: list[AclBinding], allow_everyone: bool, principal: str, host: str, op: AclOperation,
              rt: ResourceType, name: str) -> bool:
    """The rules written as a scan of every ACL, independently of the index."""
    applicable = [e for (prt, pname, ppt), e in acls if prt == rt and (
        (pname == name or pname == "*") if ppt == PT.LITERAL else name.startswith(pname))]
    if not applicable:
        return allow_everyone
    matched = [e for e in applicable if e.principal in (principal, "User:*") and e.host in (host, "*")]
    if any(e.permission_type == DENY and e.operation in (op, OP.ALL) for e in matched):
        return False
    return any(e.permission_type == ALLOW and (e.operation in (op, OP.ALL) or e.operation in _IMPLIED.get(op, ()))
               for e in matched)


@pytest.mark.parametrize("allow_everyone", [False, True])
def test_ten_thousand_acls_half_prefixed_decide_as_a_scan(allow_everyone: bool) -> None:
    rng = random.Random(32)
    words = ["orders", "payments", "billing", "users", "events", "logs", "audit", "metrics"]
    principals = ["User:alice", "User:bob", "User:carol", "User:*"]
    hosts = ["*", "*", "*", "10.0.0.1", "10.0.0.2"]
    ops = [OP.READ, OP.WRITE, OP.DESCRIBE, OP.ALL, OP.ALTER_CONFIGS, OP.DESCRIBE_CONFIGS, OP.DELETE, OP.CREATE]

    def name() -> str:
        return f"{rng.choice(words)}-{rng.randrange(300)}" + ("" if rng.random() < 0.5 else f".{rng.randrange(9)}")

    def random_acl(prefixed: bool) -> AclBinding:
        if prefixed:
            n = name()
            n = n[:rng.randrange(1, len(n) + 1)]
        else:
            n = name() if rng.random() > 0.001 else "*"
        return acl(n, rng.choice(ops), DENY if rng.random() < 0.15 else ALLOW,
                   pt=PT.PREFIXED if prefixed else PT.LITERAL, rt=RT.TOPIC if rng.random() < 0.8 else RT.GROUP,
                   principal=rng.choice(principals), host=rng.choice(hosts))

    literal: set[AclBinding] = set()
    prefixed: set[AclBinding] = set()
    while len(literal) < 5_000:
        literal.add(random_acl(False))
    while len(prefixed) < 5_000:
        prefixed.add(random_acl(True))
    acl_list = sorted(literal | prefixed)
    assert len(acl_list) == 10_000
    a = authorizer(*acl_list, allow_everyone=allow_everyone)
    assert a.acl_count == 10_000

    allowed = denied = 0
    for _ in range(1_000):
        q = (rng.choice(principals[:3] + ["User:dave"]), rng.choice(["10.0.0.1", "10.0.0.2", "10.0.0.3"]),
             rng.choice(ops[:3] + ops[4:]), RT.TOPIC if rng.random() < 0.8 else RT.GROUP,
             name() if rng.random() < 0.9 else f"zzz-{rng.randrange(100)}")
        expected = reference(acl_list, allow_everyone, *q)
        assert a.authorize(*q) == expected, q
        allowed += expected
        denied += not expected
    assert allowed > 30 and denied > 30  # both outcomes exercised

    # remove a quarter incrementally: decisions follow
    gone = acl_list[::4]
    a.acls_changed([], gone)
    kept = [b for i, b in enumerate(acl_list) if i % 4]
    assert a.acl_count == len(kept)
    for _ in range(300):
        q = (rng.choice(principals[:3]), rng.choice(["10.0.0.1", "10.0.0.2"]), rng.choice(ops[:3]), RT.TOPIC,
             name())
        assert a.authorize(*q) == reference(kept, allow_everyone, *q), q
