"""SCRAM credential admin (DescribeUserScramCredentials, AlterUserScramCredentials) through
confluent-kafka's AdminClient (librdkafka) and kafka-python 3's KafkaAdminClient against a
broker process: the credentials they create are those the broker stores (the keys derived from
their salted passwords), and they read Kafka's error codes and messages. aiokafka has no such
calls. Our own Admin: tests/client/test_admin_scram.py."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from broker.security.scram_credentials import ScramCredentialStore
from client.protocol.api import ErrorCode
from client.security.scram import make_credential
from tests.broker_process import BrokerProcess

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _user(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _code(future: Any) -> int:
    exc = future.exception(timeout=10)
    return -999 if exc is None else int(exc.args[0].code())


def test_confluent_kafka_admin(tmp_path) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    data = str(tmp_path / "data")
    alice, ghost = _user("alice"), _user("ghost")
    with BrokerProcess(data).start() as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap, "socket.timeout.ms": 5000})
        futures = admin.alter_user_scram_credentials([
            UserScramCredentialUpsertion(alice, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"ck-pw",
                                         b"ck-salt"),
            UserScramCredentialUpsertion(ghost, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 100), b"pw")])
        assert futures[alice].result(timeout=10) is None
        assert _code(futures[ghost]) == ErrorCode.UNACCEPTABLE_CREDENTIAL
        assert "Too few iterations" in str(futures[ghost].exception())

        every = admin.describe_user_scram_credentials().result(timeout=10)
        assert list(every) == [alice]
        (info,) = every[alice].scram_credential_infos
        assert (info.mechanism, info.iterations) == (ScramMechanism.SCRAM_SHA_512, 8192)
        per_user = admin.describe_user_scram_credentials([alice, ghost])
        assert per_user[alice].result(timeout=10).user == alice
        assert _code(per_user[ghost]) == ErrorCode.RESOURCE_NOT_FOUND
        assert "Attempt to describe a user credential that does not exist" in str(per_user[ghost].exception())

        futures = admin.alter_user_scram_credentials([UserScramCredentialDeletion(ghost, ScramMechanism.SCRAM_SHA_256)])
        assert _code(futures[ghost]) == ErrorCode.RESOURCE_NOT_FOUND
        futures = admin.alter_user_scram_credentials([
            UserScramCredentialDeletion(alice, ScramMechanism.SCRAM_SHA_512),
            UserScramCredentialUpsertion(alice, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"x")])
        assert _code(futures[alice]) == ErrorCode.DUPLICATE_RESOURCE
    assert ScramCredentialStore(data).get(alice, "SCRAM-SHA-512") == make_credential(
        "SCRAM-SHA-512", b"ck-pw", b"ck-salt", 8192)
    with BrokerProcess(data).start() as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap, "socket.timeout.ms": 5000})
        futures = admin.alter_user_scram_credentials([UserScramCredentialDeletion(alice, ScramMechanism.SCRAM_SHA_512)])
        assert futures[alice].result(timeout=10) is None
        assert admin.describe_user_scram_credentials().result(timeout=10) == {}


def test_kafka_python_admin(tmp_path) -> None:
    from kafka.admin import (
        KafkaAdminClient,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    data = str(tmp_path / "data")
    bob, empty = _user("bob"), ""
    with BrokerProcess(data).start() as b:
        admin = KafkaAdminClient(bootstrap_servers=b.bootstrap, request_timeout_ms=10000)
        try:
            result = admin.alter_user_scram_credentials([
                UserScramCredentialUpsertion(bob, ScramMechanism.SCRAM_SHA_256, "kp-pw", iterations=5000,
                                             salt=b"kp-salt"),
                UserScramCredentialUpsertion(empty, "SCRAM-SHA-512", "pw")])
            assert result == {bob: None, empty: "Username must not be empty"}
            assert admin.describe_user_scram_credentials() == {
                bob: {"error": None, "credential_infos": [{"mechanism": ScramMechanism.SCRAM_SHA_256,
                                                           "iterations": 5000}]}}
            described = admin.describe_user_scram_credentials([bob, bob])
            assert described[bob]["error"].startswith("Cannot describe SCRAM credentials for the same user twice")
            result = admin.alter_user_scram_credentials([UserScramCredentialDeletion(bob, ScramMechanism.SCRAM_SHA_512)])
            assert result == {bob: "Attempt to delete a user credential that does not exist"}
            # kafka-python sends UNKNOWN (0) as is in a deletion
            result = admin.alter_user_scram_credentials([UserScramCredentialDeletion(bob, ScramMechanism.UNKNOWN)])
            assert result == {bob: "Unknown SCRAM mechanism"}
        finally:
            admin.close()
    assert ScramCredentialStore(data).get(bob, "SCRAM-SHA-256") == make_credential(
        "SCRAM-SHA-256", b"kp-pw", b"kp-salt", 5000)

