"""client/admin_scram.py against a real broker process (and so broker/handlers/
describe_user_scram_credentials.py and alter_user_scram_credentials.py): credentials created,
replaced, described and deleted, durable across a restart, and every error Kafka answers, with
Kafka's codes and messages."""

from __future__ import annotations

import uuid

import pytest

from broker.security.scram_credentials import ScramCredentialStore
from client import Admin
from client.admin import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
    UserScramCredentialUpsertion,
)
from client.errors import (  # type: ignore[attr-defined]
    DuplicateResourceError,
    ResourceNotFoundError,
    UnacceptableCredentialError,
    UnsupportedSaslMechanismError,
)
from client.protocol.api import ApiKey, ErrorCode
from client.security.scram import make_credential
from tests.broker_process import BrokerProcess

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512


def _user(prefix: str = "u") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def _alter_raw(admin: Admin, upsertions: list[dict], deletions: list[dict]) -> list[tuple[str, int, str | None]]:
    resp = await admin._request(admin._cluster.controller_connection, ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
                                {"upsertions": upsertions, "deletions": deletions})
    return [(r["user"], r["error_code"], r["error_message"]) for r in resp["results"]]


def _up(name: str, mechanism: int = 1, iterations: int = 4096) -> dict:
    return {"name": name, "mechanism": mechanism, "iterations": iterations, "salt": b"s" * 32,
            "salted_password": b"p" * 32}


async def test_create_describe_replace_delete_and_restart(tmp_path) -> None:
    data = str(tmp_path / "data")
    alice, bob = _user("alice"), _user("bob")
    with BrokerProcess(data).start() as b:
        async with Admin(b.bootstrap) as admin:
            assert await admin.describe_user_scram_credentials() == {}
            await admin.alter_user_scram_credentials(upsertions=[
                UserScramCredentialUpsertion(alice, SHA512, "secret", 8192),
                UserScramCredentialUpsertion(bob, "SCRAM-SHA-256", b"pw", salt=b"pepper")])
            await admin.alter_user_scram_credentials(upsertions=[UserScramCredentialUpsertion(alice, SHA256, "x")])
            assert await admin.describe_user_scram_credentials() == {
                alice: UserScramCredentialsDescription(alice, [ScramCredentialInfo(SHA256, 4096),
                                                               ScramCredentialInfo(SHA512, 8192)]),
                bob: UserScramCredentialsDescription(bob, [ScramCredentialInfo(SHA256, 4096)])}
            assert list(await admin.describe_user_scram_credentials([bob])) == [bob]
            # replacing keeps one credential per mechanism
            await admin.alter_user_scram_credentials(upsertions=[UserScramCredentialUpsertion(alice, SHA512, "s2", 16384)])
            await admin.alter_user_scram_credentials(deletions=[UserScramCredentialDeletion(alice, SHA256)])
            assert (await admin.describe_user_scram_credentials([alice]))[alice].credential_infos == [
                ScramCredentialInfo(SHA512, 16384)]
    # the broker derived the keys from the salted password: what a SCRAM login checks against
    assert ScramCredentialStore(data).get(bob, "SCRAM-SHA-256") == make_credential("SCRAM-SHA-256", b"pw", b"pepper", 4096)
    with BrokerProcess(data).start() as b:
        async with Admin(b.bootstrap) as admin:
            assert {u: d.credential_infos for u, d in (await admin.describe_user_scram_credentials()).items()} == {
                alice: [ScramCredentialInfo(SHA512, 16384)], bob: [ScramCredentialInfo(SHA256, 4096)]}


async def test_describe_errors(module_broker) -> None:
    alice, ghost = _user("alice"), _user("ghost")
    async with Admin(module_broker.bootstrap) as admin:
        await admin.alter_user_scram_credentials(upsertions=[UserScramCredentialUpsertion(alice, SHA256, "pw")])
        with pytest.raises(ResourceNotFoundError, match=f"Attempt to describe a user credential that does not exist: {ghost}"):
            await admin.describe_user_scram_credentials([alice, ghost])
        with pytest.raises(DuplicateResourceError,
                           match="Cannot describe SCRAM credentials for the same user twice in a single request"):
            await admin.describe_user_scram_credentials([alice, alice])
        resp = await admin._request(admin._cluster.any_connection, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
                                    {"users": [{"name": ghost}, {"name": alice}, {"name": ghost}]})
        assert resp["error_code"] == 0
        assert [(r["user"], r["error_code"], r["credential_infos"]) for r in resp["results"]] == [
            (ghost, ErrorCode.DUPLICATE_RESOURCE, []), (alice, 0, [{"mechanism": 1, "iterations": 4096}])]
        every = await admin._request(admin._cluster.any_connection, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
                                     {"users": []})  # empty, as null: every user
        assert alice in [r["user"] for r in every["results"]]


async def test_alter_errors_with_kafkas_codes_and_messages(module_broker) -> None:
    alice, ghost, dup, mixed = _user("alice"), _user("ghost"), _user("dup"), _user("mixed")
    async with Admin(module_broker.bootstrap) as admin:
        await admin.alter_user_scram_credentials(upsertions=[UserScramCredentialUpsertion(alice, SHA256, "pw")])
        few, many, empty, unknown = _user("few"), _user("many"), "", _user("unknown")
        results = await _alter_raw(
            admin,
            upsertions=[_up(few, iterations=4095), _up(many, iterations=16385), _up(empty), _up(unknown, mechanism=3),
                        _up(dup), _up(dup, mechanism=2), _up(mixed)],
            deletions=[{"name": ghost, "mechanism": 1}, {"name": alice, "mechanism": 2},
                       {"name": mixed, "mechanism": 1}, {"name": _user("zero"), "mechanism": 0}])
        by_user = {u: (code, message) for u, code, message in results}
        assert by_user[few] == (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        assert by_user[many] == (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        assert by_user[empty] == (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
        assert by_user[unknown] == (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
        assert by_user[dup] == (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")
        assert by_user[ghost] == (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
        assert by_user[alice] == by_user[ghost]  # alice has SHA-256, not SHA-512
        assert by_user[mixed][0] == ErrorCode.RESOURCE_NOT_FOUND  # its deletion failed first: the upsertion is ignored
        assert all(code for code, _ in by_user.values()) and len(results) == len(by_user) == 9  # one per user
        assert [code for u, code, _ in results if u.startswith("zero")] == [ErrorCode.UNSUPPORTED_SASL_MECHANISM]
        # nothing refused was stored; alice's credential is untouched
        described = await admin.describe_user_scram_credentials()
        assert not {few, many, unknown, dup, mixed} & set(described)
        assert described[alice].credential_infos == [ScramCredentialInfo(SHA256, 4096)]

        # a user in both the deletions and the upsertions: refused, nothing of it done
        results = await _alter_raw(admin, [_up(alice, mechanism=2)], [{"name": alice, "mechanism": 1}])
        assert results == [(alice, ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the"
                                                                 " same request")]
        assert (await admin.describe_user_scram_credentials([alice]))[alice].credential_infos == [
            ScramCredentialInfo(SHA256, 4096)]

        # accepted users are applied alongside refused ones; the admin raises the refusal
        ok = _user("ok")
        with pytest.raises(UnacceptableCredentialError, match="Too few iterations"):
            await admin.alter_user_scram_credentials(upsertions=[UserScramCredentialUpsertion(ok, SHA512, "pw"),
                                                                 UserScramCredentialUpsertion(_user(), SHA256, "pw", 1)])
        assert ok in await admin.describe_user_scram_credentials([ok])
        with pytest.raises(ResourceNotFoundError, match="does not exist"):
            await admin.alter_user_scram_credentials(deletions=[UserScramCredentialDeletion(ok, SHA256)])
        with pytest.raises(UnsupportedSaslMechanismError, match="Unknown SCRAM mechanism"):
            await admin.alter_user_scram_credentials(deletions=[UserScramCredentialDeletion(ok, "SCRAM-SHA-1")])
        with pytest.raises(DuplicateResourceError):
            await admin.alter_user_scram_credentials(upsertions=[UserScramCredentialUpsertion(ok, SHA256, "a")],
                                                     deletions=[UserScramCredentialDeletion(ok, SHA512)])
        with pytest.raises(UnacceptableCredentialError, match="Username must not be empty"):
            await admin.alter_user_scram_credentials(upsertions=[UserScramCredentialUpsertion("", SHA256, "a")])
        # a mechanism the client cannot hash for fails before anything is sent
        with pytest.raises(UnsupportedSaslMechanismError, match="unknown mechanism"):
            await admin.alter_user_scram_credentials(upsertions=[UserScramCredentialUpsertion(ok, "SCRAM-MD5", "a")])
        assert (await admin.describe_user_scram_credentials([ok]))[ok].credential_infos == [
            ScramCredentialInfo(SHA512, 4096)]
