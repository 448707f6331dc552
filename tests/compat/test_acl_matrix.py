"""ACLs against a broker process with real clients (issue 32): confluent-kafka, kafka-python,
aiokafka and ours (client.Producer / Consumer / Admin, and ``minibroker acls --command-config``)
over SASL_PLAINTEXT with SCRAM-SHA-256, as ``alice`` (ACLs decide) and ``admin`` (a super user).
Each case: allowed, denied, allowed by a prefix, a Deny overriding an Allow, the super user;
``allow.everyone.if.no.acl.found`` both ways; a denied producer writes nothing; a consumer
without Read on its group cannot commit; ACLs set with one client read back with the other; the
ACLs survive SIGKILL and a restart."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from broker.testing.secure import secure_broker
from tests.compat._acl import AUTHORIZER, Cluster, acl_cluster
from tests.compat._acl import unique_name as _name

ck = pytest.importorskip("confluent_kafka")
kp = pytest.importorskip("kafka")

from confluent_kafka import KafkaError
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from acl_cluster(tmp_path_factory)


def test_produce_matrix_with_confluent_kafka(cluster: Cluster) -> None:
    allowed, denied, prefixed, overridden = (cluster.topic(_name(p)) for p in ("allowed", "denied", "pre", "dn"))
    cluster.allow(ResourceType.TOPIC, allowed, AclOperation.WRITE)
    cluster.allow(ResourceType.TOPIC, prefixed[:6], AclOperation.WRITE, ResourcePatternType.PREFIXED)
    cluster.allow(ResourceType.TOPIC, overridden, AclOperation.ALL)
    cluster.allow(ResourceType.TOPIC, overridden, AclOperation.WRITE, perm=AclPermissionType.DENY,
                  principal="User:*")
    assert cluster.produce("alice", allowed) == 0
    assert cluster.produce("alice", prefixed) == 0
    assert cluster.produce("alice", denied) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert cluster.produce("alice", overridden) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert cluster.end_offset(denied) == 0 and cluster.end_offset(overridden) == 0  # denied: nothing written
    assert cluster.produce("admin", denied) == 0  # the super user
    assert cluster.end_offset(denied) == 1


def test_consumer_matrix_with_kafka_python(cluster: Cluster) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError
    from kafka.structs import OffsetAndMetadata

    topic, group, no_group = cluster.topic(_name("reads")), _name("billing"), _name("nogroup")
    p = KafkaProducer(**cluster.kafka_python("admin"))
    p.send(topic, b"one").get(timeout=30)
    p.close()
    cluster.allow(ResourceType.TOPIC, topic, AclOperation.READ)
    cluster.allow(ResourceType.GROUP, group, AclOperation.READ)
    tp = TopicPartition(topic, 0)

    c = KafkaConsumer(**cluster.kafka_python("alice"), group_id=group, enable_auto_commit=False,
                      auto_offset_reset="earliest")
    c.assign([tp])
    records = c.poll(timeout_ms=10000)
    assert [r.value for r in records.get(tp, [])] == [b"one"]
    c.commit({tp: OffsetAndMetadata(1, "", -1)})
    assert c.committed(tp) == 1
    c.close()

    # Read on the topic, nothing on the group: no commit
    c = KafkaConsumer(**cluster.kafka_python("alice"), group_id=no_group, enable_auto_commit=False)
    c.assign([tp])
    with pytest.raises(GroupAuthorizationFailedError):
        c.commit({tp: OffsetAndMetadata(1, "", -1)})
    c.close()

    # a topic alice may not read
    other = cluster.topic(_name("closed"))
    p = KafkaProducer(**cluster.kafka_python("alice"), max_block_ms=5000)
    with pytest.raises(TopicAuthorizationFailedError):
        p.send(other, b"x").get(timeout=10)
    p.close()
    assert cluster.end_offset(other) == 0


def test_acl_admin_round_trips_between_clients(cluster: Cluster) -> None:
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePattern,
        ResourcePatternFilter,
    )
    from kafka.admin import ResourceType as KResourceType

    name = _name("rt")
    admin = KafkaAdminClient(**cluster.kafka_python("admin"))
    try:
        result = admin.create_acls([ACL("User:bob", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                                        ResourcePattern(KResourceType.TOPIC, name, ACLResourcePatternType.PREFIXED))])
        assert not result["failed"]
        found = cluster.admin().describe_acls(AclBindingFilter(
            ResourceType.TOPIC, name + "-x", ResourcePatternType.MATCH, None, None, AclOperation.ANY,
            AclPermissionType.ANY)).result(timeout=30)
        assert [(b.name, b.resource_pattern_type, b.principal) for b in found] == [
            (name, ResourcePatternType.PREFIXED, "User:bob")]
        acls, error = admin.describe_acls(ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                                    ResourcePatternFilter(KResourceType.TOPIC, name,
                                                                          ACLResourcePatternType.ANY)))
        assert len(acls) == 1
        deleted = admin.delete_acls([ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                               ResourcePatternFilter(KResourceType.TOPIC, name,
                                                                     ACLResourcePatternType.ANY))])
        assert len(deleted[0][1]) == 1
    finally:
        admin.close()
    # alice has no Alter on the cluster
    alice = AdminClient(cluster.rdk("alice"))
    fs = alice.create_acls([AclBinding(
        ResourceType.TOPIC, name, ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.ALL,
        AclPermissionType.ALLOW)])
    for f in fs.values():
        with pytest.raises(ck.KafkaException) as e:
            f.result(timeout=30)
        assert e.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED


def test_acls_survive_sigkill_and_restart(cluster: Cluster) -> None:
    topic = cluster.topic(_name("durable"))
    cluster.allow(ResourceType.TOPIC, topic, AclOperation.WRITE)
    before = cluster.admin().describe_acls(AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
        AclPermissionType.ANY)).result(timeout=30)
    cluster.broker.kill()
    cluster.broker.start()
    after = cluster.admin().describe_acls(AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
        AclPermissionType.ANY)).result(timeout=30)
    assert sorted(map(str, after)) == sorted(map(str, before))
    assert cluster.produce("alice", topic) == 0
    assert cluster.produce("alice", cluster.topic(_name("other"))) == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_allow_everyone_if_no_acl_found(tmp_path) -> None:
    broker, _ = secure_broker(str(tmp_path), AUTHORIZER, "super.users=User:admin",
                              "allow.everyone.if.no.acl.found=true")
    try:
        c = Cluster(broker)
        free, guarded = c.topic(_name("free")), c.topic(_name("guarded"))
        c.allow(ResourceType.TOPIC, guarded, AclOperation.WRITE, principal="User:bob")
        assert c.produce("alice", free) == 0  # no ACL applies: allowed
        assert c.produce("alice", guarded) == KafkaError.TOPIC_AUTHORIZATION_FAILED  # bob's applies, not alice's
    finally:
        assert broker.stop() == 0, broker.log_text()


def _matrix_topics(cluster: Cluster, tag: str) -> tuple[str, str, str, str]:
    """allowed (Write), denied (nothing), prefixed (a PREFIXED Write), overridden (All, and a
    Deny of Write for User:*) for alice."""
    allowed, denied, prefixed, overridden = (cluster.topic(_name(f"{tag}{p}")) for p in ("ok", "no", "pre", "dn"))
    cluster.allow(ResourceType.TOPIC, allowed, AclOperation.WRITE)
    cluster.allow(ResourceType.TOPIC, prefixed[:len(tag) + 3], AclOperation.WRITE, ResourcePatternType.PREFIXED)
    cluster.allow(ResourceType.TOPIC, overridden, AclOperation.ALL)
    cluster.allow(ResourceType.TOPIC, overridden, AclOperation.WRITE, perm=AclPermissionType.DENY,
                  principal="User:*")
    return allowed, denied, prefixed, overridden


async def test_produce_and_commit_matrix_with_aiokafka(cluster: Cluster) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError
    from aiokafka.structs import OffsetAndMetadata

    allowed, denied, prefixed, overridden = _matrix_topics(cluster, "aio")

    async def produce(user: str, topic: str) -> None:
        p = AIOKafkaProducer(**cluster.ours(user), request_timeout_ms=10000)
        await p.start()
        try:
            await p.send_and_wait(topic, b"v", partition=0)
        finally:
            await p.stop()

    await produce("alice", allowed)
    await produce("alice", prefixed)
    for topic in (denied, overridden):
        with pytest.raises(TopicAuthorizationFailedError):
            await produce("alice", topic)
        assert cluster.end_offset(topic) == 0  # denied: nothing written
    await produce("admin", denied)  # the super user
    assert cluster.end_offset(denied) == 1

    # Read on the topic and the group: commit; Read on the topic only: no commit
    group, no_group = _name("aiogroup"), _name("aionogroup")
    cluster.allow(ResourceType.TOPIC, allowed, AclOperation.READ)
    cluster.allow(ResourceType.GROUP, group, AclOperation.READ)
    tp = TopicPartition(allowed, 0)
    c = AIOKafkaConsumer(**cluster.ours("alice"), group_id=group, enable_auto_commit=False)
    await c.start()
    try:
        c.assign([tp])
        await c.commit({tp: OffsetAndMetadata(1, "")})
        assert await c.committed(tp) == 1
    finally:
        await c.stop()
    c = AIOKafkaConsumer(**cluster.ours("alice"), group_id=no_group, enable_auto_commit=False)
    await c.start()
    try:
        c.assign([tp])
        with pytest.raises(GroupAuthorizationFailedError):
            await c.commit({tp: OffsetAndMetadata(1, "")})
    finally:
        await c.stop()


async def test_produce_and_commit_matrix_with_our_client(cluster: Cluster) -> None:
    from client import Consumer, OffsetAndMetadata, Producer
    from client.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError

    allowed, denied, prefixed, overridden = _matrix_topics(cluster, "our")

    async def produce(user: str, topic: str) -> int:
        async with Producer(**cluster.ours(user), request_timeout_ms=10000, max_block_ms=10000,
                            delivery_timeout_ms=15000) as p:
            return (await p.send(topic, b"v", partition=0)).offset

    assert await produce("alice", allowed) == 0
    assert await produce("alice", prefixed) == 0
    for topic in (denied, overridden):
        with pytest.raises(TopicAuthorizationFailedError):
            await produce("alice", topic)
        assert cluster.end_offset(topic) == 0  # denied: nothing written
    assert await produce("admin", denied) == 0  # the super user
    assert cluster.end_offset(denied) == 1

    group, no_group = _name("ourgroup"), _name("ournogroup")
    cluster.allow(ResourceType.TOPIC, allowed, AclOperation.READ)
    cluster.allow(ResourceType.GROUP, group, AclOperation.READ)
    async with Consumer(**cluster.ours("alice"), group_id=group, enable_auto_commit=False,
                        auto_offset_reset="earliest") as c:
        c.assign([(allowed, 0)])
        records = await c.getmany(timeout_ms=10000)
        assert [r.value for rs in records.values() for r in rs] == [b"v"]
        await c.commit({(allowed, 0): 1})
        assert (await c.committed([(allowed, 0)]))[(allowed, 0)] == OffsetAndMetadata(1)
    async with Consumer(**cluster.ours("alice"), group_id=no_group, enable_auto_commit=False) as c:
        c.assign([(allowed, 0)])
        with pytest.raises(GroupAuthorizationFailedError):
            await c.commit({(allowed, 0): 1})
    # Read on the group, not on the topic: nothing is read (the record the super user wrote
    # stays unseen) and getmany raises, as Java's poll() throws TopicAuthorizationException.
    async with Consumer(**cluster.ours("alice"), group_id=group, enable_auto_commit=False,
                        auto_offset_reset="earliest") as c:
        c.assign([(denied, 0)])
        with pytest.raises(TopicAuthorizationFailedError):
            for _ in range(20):  # the refused position lookup is reported at the next getmany
                assert await c.getmany(timeout_ms=500) == {}


async def test_acl_admin_calls_of_our_client(cluster: Cluster) -> None:
    from client import Admin
    from client.acl import AccessControlEntry, AclBindingFilter, PatternType, ResourcePattern, ResourcePatternFilter
    from client.acl import AclBinding as OurBinding
    from client.acl import AclOperation as Op
    from client.acl import AclPermissionType as Perm
    from client.acl import ResourceType as RT
    from client.errors import ClusterAuthorizationFailedError

    name = _name("adm")
    binding = OurBinding(ResourcePattern(RT.TOPIC, name, PatternType.PREFIXED),
                         AccessControlEntry("User:bob", "*", Op.READ, Perm.ALLOW))
    by_match = AclBindingFilter(ResourcePatternFilter(RT.TOPIC, name + "-x", PatternType.MATCH))
    async with Admin(**cluster.ours("admin")) as admin:
        await admin.create_acls([binding])
        assert await admin.describe_acls(by_match) == [binding]
        # ... and confluent-kafka reads it back
        found = cluster.admin().describe_acls(_ck_match_filter(name)).result(timeout=30)
        assert [(b.name, b.resource_pattern_type, b.principal, b.operation) for b in found] == [
            (name, ResourcePatternType.PREFIXED, "User:bob", AclOperation.READ)]
    async with Admin(**cluster.ours("alice")) as alice:  # no Alter / Describe on the cluster
        with pytest.raises(ClusterAuthorizationFailedError):
            await alice.create_acls([binding._replace(entry=binding.entry._replace(principal="User:alice"))])
        with pytest.raises(ClusterAuthorizationFailedError):
            await alice.describe_acls(by_match)
        with pytest.raises(ClusterAuthorizationFailedError):
            await alice.delete_acls([binding.to_filter()])
    async with Admin(**cluster.ours("admin")) as admin:
        assert await admin.describe_acls(by_match) == [binding]  # alice's refusals changed nothing
        assert await admin.delete_acls([binding.to_filter()]) == {binding.to_filter(): [binding]}
        assert await admin.describe_acls(by_match) == []


def _ck_match_filter(prefix: str) -> AclBindingFilter:
    """confluent-kafka's filter of every topic ACL whose pattern applies to ``prefix-x``."""
    return AclBindingFilter(ResourceType.TOPIC, prefix + "-x", ResourcePatternType.MATCH, None, None,
                            AclOperation.ANY, AclPermissionType.ANY)


def _acls_cli(cluster: Cluster, properties: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "broker", "acls", "--bootstrap-server", cluster.bootstrap,
                           "--command-config", properties, *args],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)


def _client_properties(path: Any, user: str) -> str:
    """A Kafka client.properties for SASL_PLAINTEXT with SCRAM-SHA-256, as kafka-acls.sh takes."""
    from broker.testing.secure import USERS

    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                    f'username="{user}" password="{USERS[user]}";\n')
    return str(path)


def test_minibroker_acls_over_sasl_then_alice_produces(cluster: Cluster, tmp_path) -> None:
    admin_props = _client_properties(tmp_path / "admin.properties", "admin")
    alice_props = _client_properties(tmp_path / "alice.properties", "alice")
    topic = cluster.topic(_name("cli"))
    assert cluster.produce("alice", topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED

    add = _acls_cli(cluster, admin_props, "--add", "--allow-principal", "User:alice", "--producer", "--topic", topic)
    assert add.returncode == 0, add.stderr
    assert f"Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name={topic}, patternType=LITERAL)`" \
        in add.stdout
    assert cluster.produce("alice", topic) == 0
    listed = _acls_cli(cluster, admin_props, "--list", "--topic", topic)
    assert listed.returncode == 0, listed.stderr
    for op in ("WRITE", "DESCRIBE", "CREATE"):
        assert f"(principal=User:alice, host=*, operation={op}, permissionType=ALLOW)" in listed.stdout

    # alice herself may not change ACLs: kafka-acls.sh's error line, exit status 1
    refused = _acls_cli(cluster, alice_props, "--add", "--allow-principal", "User:alice", "--operation", "All",
                        "--topic", topic + "-more")
    assert refused.returncode == 1
    # "Adding ACLs for resource ..." comes first, as AclCommand prints it before sending
    error = refused.stdout.splitlines()[-1]
    assert error.startswith("Error while executing ACL command:") and "Cluster authorization failed." in error, \
        (refused.stdout, refused.stderr)

    # a Deny added by the CLI overrides the Allow; removing everything leaves alice with nothing
    deny = _acls_cli(cluster, admin_props, "--add", "--deny-principal", "User:alice", "--operation", "Write",
                     "--topic", topic)
    assert deny.returncode == 0, deny.stderr
    assert cluster.produce("alice", topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    removed = _acls_cli(cluster, admin_props, "--remove", "--force", "--topic", topic)
    assert removed.returncode == 0, removed.stderr
    assert _acls_cli(cluster, admin_props, "--list", "--topic", topic).stdout.strip() == ""
    assert cluster.produce("alice", topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert cluster.end_offset(topic) == 1
