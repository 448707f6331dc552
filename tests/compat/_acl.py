"""What the ACL tests against a broker process share (tests/compat/test_acl_matrix.py,
tests/compat/test_acl_api_matrix.py): a broker with the StandardAuthorizer and ``super.users=
User:admin`` whose SASL_PLAINTEXT listener takes SCRAM-SHA-256 for ``alice`` (ACLs decide) and
``admin`` (a super user), and ``Cluster``, the client settings of each client family for a
user, and the super user's ACL and topic calls (confluent-kafka's AdminClient)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from typing import Any

import pytest

from broker.testing.secure import SecureBroker, secure_broker

pytest.importorskip("confluent_kafka")

from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

AUTHORIZER = "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
LISTENER, MECHANISM = "SASL_PLAINTEXT", "SCRAM-SHA-256"


def unique_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class Cluster:
    def __init__(self, broker: SecureBroker) -> None:
        self.broker = broker
        #: the users ``add_user`` made (``alice`` and ``admin`` are the broker's own, USERS)
        self.passwords: dict[str, str] = {}

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.broker.listener_ports[LISTENER]}"

    def rdk(self, user: str) -> dict[str, Any]:
        """librdkafka's settings (confluent-kafka) for ``user``."""
        return {"bootstrap.servers": self.bootstrap,
                **self.broker.setup.client_properties(LISTENER, MECHANISM, user, self.passwords.get(user))}

    def kafka_python(self, user: str) -> dict[str, Any]:
        props = self.rdk(user)
        return {"bootstrap_servers": self.bootstrap, "security_protocol": LISTENER, "sasl_mechanism": MECHANISM,
                "sasl_plain_username": user, "sasl_plain_password": props["sasl.password"]}

    def ours(self, user: str) -> dict[str, Any]:
        """Our clients' and aiokafka's keyword options (the same names as kafka-python's)."""
        cfg = self.kafka_python(user)
        return {"bootstrap_servers": cfg.pop("bootstrap_servers"), **cfg}

    def admin(self) -> AdminClient:
        """The super user's admin client (kept: a dropped AdminClient fails its futures)."""
        if getattr(self, "_admin", None) is None or self._admin_port != self.broker.listener_ports[LISTENER]:
            self._admin = AdminClient(self.rdk("admin"))
            self._admin_port = self.broker.listener_ports[LISTENER]
        return self._admin

    @staticmethod
    def binding(rtype: ResourceType, name: str, op: AclOperation,
                pattern: ResourcePatternType = ResourcePatternType.LITERAL,
                perm: AclPermissionType = AclPermissionType.ALLOW, principal: str = "User:alice") -> AclBinding:
        return AclBinding(rtype, name, pattern, principal, "*", op, perm)

    def create_acls(self, bindings: Iterable[AclBinding]) -> None:
        """Create ACLs as the super user."""
        bindings = list(bindings)
        if bindings:
            for f in self.admin().create_acls(bindings).values():
                f.result(timeout=30)

    def delete_acls(self, bindings: Iterable[AclBinding]) -> None:
        """Delete exactly these ACLs as the super user."""
        filters = [AclBindingFilter(b.restype, b.name, b.resource_pattern_type, b.principal, b.host, b.operation,
                                    b.permission_type) for b in bindings]
        if filters:
            for f in self.admin().delete_acls(filters).values():
                f.result(timeout=30)

    def allow(self, rtype: ResourceType, name: str, op: AclOperation, pattern: ResourcePatternType =
              ResourcePatternType.LITERAL, perm: AclPermissionType = AclPermissionType.ALLOW,
              principal: str = "User:alice") -> None:
        self.create_acls([self.binding(rtype, name, op, pattern, perm, principal)])

    def topic(self, name: str, partitions: int = 1) -> str:
        for f in self.admin().create_topics([NewTopic(name, partitions, 1)]).values():
            f.result(timeout=30)
        return name

    def add_user(self, prefix: str) -> str:
        """A new SCRAM-SHA-256 user (no ACLs name it yet), made by the super user."""
        user, password = unique_name(prefix), uuid.uuid4().hex
        fs = self.admin().alter_user_scram_credentials([UserScramCredentialUpsertion(
            user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), password.encode())])
        fs[user].result(timeout=30)
        self.passwords[user] = password
        return user

    def produce(self, user: str, topic: str) -> int:
        """Produce one record as ``user`` with confluent-kafka: 0 or the delivery error's code."""
        from confluent_kafka import Producer

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


def acl_cluster(tmp_path_factory: pytest.TempPathFactory, *overrides: str) -> Iterator[Cluster]:
    """The body of a module fixture: the broker for the module, stopped at its end (and the
    module fails if the broker did not exit 0)."""
    broker, _ = secure_broker(str(tmp_path_factory.mktemp("acls")), AUTHORIZER, "super.users=User:admin",
                              *overrides)
    try:
        yield Cluster(broker)
    finally:
        rc = broker.stop()
        assert rc == 0, f"broker exited with {rc}:\n{broker.log_text()}"
