"""client/admin_acls.py against a real broker process: without an authorizer every ACL call
raises SecurityDisabledError with Kafka's message; with the authorizer on (tests/client/
acl_broker.py), create / describe / delete round trips with filters (ANY, MATCH, prefixed), and
the checks made before anything is sent."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from client import Admin
from client.acl import (
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
)
from client.errors import InvalidRequestError, SecurityDisabledError
from client.sync import SyncAdmin
from tests.broker_process import BrokerProcess
from tests.client.acl_broker import authorizer_broker

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
ORDERS = ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL)
ORD_PREFIX = ResourcePattern(ResourceType.TOPIC, "ord", PatternType.PREFIXED)
BILLING = ResourcePattern(ResourceType.GROUP, "billing", PatternType.LITERAL)


def _ace(principal: str, op: AclOperation, permission: AclPermissionType = ALLOW, host: str = "*") -> AccessControlEntry:
    return AccessControlEntry(principal, host, op, permission)


@pytest.fixture(scope="module")
def acl_broker(tmp_path_factory) -> Iterator[BrokerProcess]:
    yield from authorizer_broker(str(tmp_path_factory.mktemp("acl") / "data"))


async def test_without_authorizer_security_disabled(module_broker) -> None:
    binding = AclBinding(ORDERS, _ace("User:alice", AclOperation.READ))
    async with Admin(module_broker.bootstrap) as admin:
        with pytest.raises(SecurityDisabledError, match="No Authorizer is configured."):
            await admin.create_acls([binding])
        with pytest.raises(SecurityDisabledError, match="cannot describe ACLs: No Authorizer is configured."):
            await admin.describe_acls()
        with pytest.raises(SecurityDisabledError, match="No Authorizer is configured."):
            await admin.delete_acls([AclBindingFilter()])
    with SyncAdmin(module_broker.bootstrap) as sync, pytest.raises(SecurityDisabledError):
        sync.describe_acls()


async def test_checked_before_sending(module_broker) -> None:
    async with Admin(module_broker.bootstrap) as admin:
        with pytest.raises(InvalidRequestError, match="Invalid ACL creation: Operation is ANY"):
            await admin.create_acls([AclBinding(ORDERS, _ace("User:a", AclOperation.ANY))])
        with pytest.raises(InvalidRequestError, match="Invalid ACL creation: Resource pattern type is MATCH."):
            await admin.create_acls([AclBinding(ORDERS._replace(pattern_type=PatternType.MATCH),
                                                _ace("User:a", AclOperation.READ))])
        with pytest.raises(InvalidRequestError, match="must not contain UNKNOWN elements"):
            await admin.describe_acls(AclBindingFilter(ResourcePatternFilter(ResourceType.UNKNOWN)))
        await admin.create_acls([])
        assert await admin.delete_acls([]) == {}


async def test_create_describe_delete_round_trip(acl_broker) -> None:
    alice_read = AclBinding(ORDERS, _ace("User:alice", AclOperation.READ))
    bob_deny = AclBinding(ORDERS, _ace("User:bob", AclOperation.WRITE, DENY, host="10.0.0.1"))
    prefixed = AclBinding(ORD_PREFIX, _ace("User:carol", AclOperation.DESCRIBE))
    group = AclBinding(BILLING, _ace("User:alice", AclOperation.READ))
    cluster = AclBinding(ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME), _ace("User:app", AclOperation.IDEMPOTENT_WRITE))
    every = {alice_read, bob_deny, prefixed, group, cluster}
    async with Admin(acl_broker.bootstrap) as admin:
        await admin.create_acls([alice_read, bob_deny, prefixed, group, cluster, alice_read])
        await admin.create_acls([alice_read])  # already there: no error
        assert set(await admin.describe_acls()) == every
        assert len(await admin.describe_acls()) == len(every)
        # LITERAL orders only; MATCH adds the prefix that applies; ANY type by principal
        assert set(await admin.describe_acls(AclBindingFilter(ORDERS.to_filter()))) == {alice_read, bob_deny}
        match = ResourcePatternFilter(ResourceType.TOPIC, "orders", PatternType.MATCH)
        assert set(await admin.describe_acls(AclBindingFilter(match))) == {alice_read, bob_deny, prefixed}
        assert set(await admin.describe_acls(AclBindingFilter(
            entry_filter=AccessControlEntryFilter(principal="User:alice")))) == {alice_read, group}
        assert await admin.describe_acls(AclBindingFilter(ResourcePatternFilter(ResourceType.TOPIC, "nothing"))) == []

        f_alice = AclBindingFilter(entry_filter=AccessControlEntryFilter(principal="User:alice"))
        f_prefix = AclBindingFilter(ORD_PREFIX.to_filter())
        f_none = AclBindingFilter(ResourcePatternFilter(ResourceType.GROUP, "ghost", PatternType.LITERAL))
        deleted = await admin.delete_acls([f_alice, f_prefix, f_none, f_alice])
        assert list(deleted) == [f_alice, f_prefix, f_none]
        assert set(deleted[f_alice]) == {alice_read, group}
        assert deleted[f_prefix] == [prefixed] and deleted[f_none] == []
        assert set(await admin.describe_acls()) == {bob_deny, cluster}

        with pytest.raises(InvalidRequestError):  # the cluster has one name
            await admin.create_acls([AclBinding(ResourcePattern(ResourceType.CLUSTER, "other"),
                                                _ace("User:a", AclOperation.ALTER))])
        with pytest.raises(InvalidRequestError):  # a principal is type:name
            await admin.create_acls([AclBinding(ORDERS, _ace("alice", AclOperation.READ))])
        await admin.delete_acls([AclBindingFilter()])
        assert await admin.describe_acls() == []
    with SyncAdmin(acl_broker.bootstrap) as sync:
        sync.create_acls([alice_read])
        assert sync.describe_acls(AclBindingFilter(ORDERS.to_filter())) == [alice_read]
        assert sync.delete_acls([alice_read.to_filter()]) == {alice_read.to_filter(): [alice_read]}
