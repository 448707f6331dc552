"""ACLs against a broker process with real clients (issue 32): confluent-kafka and kafka-python
over SASL_PLAINTEXT with SCRAM-SHA-256, as ``alice`` (ACLs decide) and ``admin`` (a super user).
Each case: allowed, denied, allowed by a prefix, a Deny overriding an Allow, the super user;
``allow.everyone.if.no.acl.found`` both ways; a denied producer writes nothing; a consumer
without Read on its group cannot commit; ACLs set with one client read back with the other; the
ACLs survive SIGKILL and a restart."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from broker.testing.secure import SecureBroker, secure_broker

ck = pytest.importorskip("confluent_kafka")
kp = pytest.importorskip("kafka")

from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

AUTHORIZER = "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
LISTENER, MECHANISM = "SASL_PLAINTEXT", "SCRAM-SHA-256"
TOPIC_DENIED, GROUP_DENIED = 29, 30


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class Cluster:
    def __init__(self, broker: SecureBroker) -> None:
        self.broker = broker

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.broker.listener_ports[LISTENER]}"

    def rdk(self, user: str) -> dict[str, Any]:
        return {"bootstrap.servers": self.bootstrap, **self.broker.setup.client_properties(LISTENER, MECHANISM, user)}

    def kafka_python(self, user: str) -> dict[str, Any]:
        props = self.broker.setup.client_properties(LISTENER, MECHANISM, user)
        return {"bootstrap_servers": self.bootstrap, "security_protocol": LISTENER, "sasl_mechanism": MECHANISM,
                "sasl_plain_username": user, "sasl_plain_password": props["sasl.password"]}

    def admin(self) -> AdminClient:
        """The super user's admin client (kept: a dropped AdminClient fails its futures)."""
        if getattr(self, "_admin", None) is None or self._admin_port != self.broker.listener_ports[LISTENER]:
            self._admin = AdminClient(self.rdk("admin"))
            self._admin_port = self.broker.listener_ports[LISTENER]
        return self._admin

    def allow(self, rtype: ResourceType, name: str, op: AclOperation, pattern: ResourcePatternType =
              ResourcePatternType.LITERAL, perm: AclPermissionType = AclPermissionType.ALLOW,
              principal: str = "User:alice") -> None:
        fs = self.admin().create_acls([AclBinding(rtype, name, pattern, principal, "*", op, perm)])
        for f in fs.values():
            f.result(timeout=30)

    def topic(self, name: str) -> str:
        for f in self.admin().create_topics([NewTopic(name, 1, 1)]).values():
            f.result(timeout=30)
        return name

    def produce(self, user: str, topic: str) -> int:
        """Produce one record as ``user``: 0 or the delivery error's code."""
        p = Producer({**self.rdk(user), "message.timeout.ms": 8000, "enable.idempotence": False})
        out: list[int] = []
        p.produce(topic, b"v", callback=lambda err, msg: out.append(0 if err is None else err.code()))
        p.flush(20)
        return out[0] if out else -1

    def end_offset(self, topic: str) -> int:
        """The topic's log end offset, read by the super user."""
        from kafka import KafkaConsumer, TopicPartition
        c = KafkaConsumer(**self.kafka_python("admin"))
        try:
            tp = TopicPartition(topic, 0)
            return int(c.end_offsets([tp])[tp])
        finally:
            c.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    broker, _ = secure_broker(str(tmp_path_factory.mktemp("acls")), AUTHORIZER, "super.users=User:admin")
    try:
        yield Cluster(broker)
    finally:
        rc = broker.stop()
        assert rc == 0, f"broker exited with {rc}:\n{broker.log_text()}"


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
