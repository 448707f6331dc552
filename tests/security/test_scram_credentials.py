"""broker/security/scram_credentials.py: get / upsert / delete / describe, the file format and
its durability (reopen after a write, a torn temp file ignored, a failed write changes
nothing), the file's permissions, a corrupt file refused with one line naming it, and
``--add-scram``'s syntax."""

from __future__ import annotations

import base64
import json
import os
import stat

import pytest

from broker.security import scram_credentials as store_module
from broker.security.scram_credentials import (
    CREDENTIALS_FILE,
    ScramCredentialFileError,
    ScramCredentialStore,
    apply_seeds,
    parse_add_scram,
)
from client.security.scram import make_credential, salted_password

SALT = b"0123456789abcdef0123456789abcdef"


def cred(password: str = "secret", mechanism: str = "SCRAM-SHA-256", iterations: int = 4096):
    return make_credential(mechanism, password.encode(), SALT, iterations)


def test_empty_directory_is_an_empty_store(tmp_path) -> None:
    store = ScramCredentialStore(str(tmp_path))
    assert len(store) == 0 and store.get("alice", "SCRAM-SHA-256") is None
    assert store.describe(None) == {} and store.describe(["alice"]) == {}
    assert not os.path.exists(tmp_path / CREDENTIALS_FILE)  # nothing written until a change


def test_upsert_get_describe_delete_and_reopen(tmp_path) -> None:
    store = ScramCredentialStore(str(tmp_path))
    a256, a512, b512 = cred("a"), cred("a", "SCRAM-SHA-512", 8192), cred("b", "SCRAM-SHA-512")
    store.upsert("alice", "SCRAM-SHA-512", a512)
    store.upsert("alice", "SCRAM-SHA-256", a256)
    store.upsert("bob", "SCRAM-SHA-512", b512)
    assert store.get("alice", "SCRAM-SHA-256") == a256 and store.get("alice", "SCRAM-SHA-512") == a512
    assert store.get("bob", "SCRAM-SHA-256") is None
    assert store.describe(None) == {"alice": [("SCRAM-SHA-256", 4096), ("SCRAM-SHA-512", 8192)],
                                    "bob": [("SCRAM-SHA-512", 4096)]}
    assert store.describe(["bob", "carol"]) == {"bob": [("SCRAM-SHA-512", 4096)]}

    reopened = ScramCredentialStore(str(tmp_path))
    assert reopened.get("alice", "SCRAM-SHA-512") == a512 and reopened.get("bob", "SCRAM-SHA-512") == b512
    assert reopened.describe(None) == store.describe(None)

    replaced = cred("new", iterations=16384)
    store.upsert("alice", "SCRAM-SHA-256", replaced)
    assert store.delete("bob", "SCRAM-SHA-512") is True
    assert store.delete("bob", "SCRAM-SHA-512") is False
    assert store.delete("alice", "SCRAM-SHA-384") is False
    reopened = ScramCredentialStore(str(tmp_path))
    assert reopened.get("alice", "SCRAM-SHA-256") == replaced
    assert reopened.users() == ["alice"] and reopened.get("bob", "SCRAM-SHA-512") is None


def test_file_format_never_holds_the_password(tmp_path) -> None:
    store = ScramCredentialStore(str(tmp_path))
    store.upsert("ålice", "SCRAM-SHA-256", cred("hunter2-password"))
    raw = (tmp_path / CREDENTIALS_FILE).read_bytes()
    salted = salted_password("sha256", b"hunter2-password", SALT, 4096)
    assert b"hunter2-password" not in raw and base64.b64encode(salted) not in raw
    doc = json.loads(raw)
    assert doc["version"] == 1
    (entry,) = doc["credentials"]
    assert entry["user"] == "ålice" and entry["mechanism"] == "SCRAM-SHA-256" and entry["iterations"] == 4096
    assert base64.b64decode(entry["salt"]) == SALT
    assert base64.b64decode(entry["stored_key"]) == cred("hunter2-password").stored_key
    assert stat.S_IMODE(os.stat(tmp_path / CREDENTIALS_FILE).st_mode) & 0o077 == 0  # owner only


def test_a_torn_temp_file_is_ignored_and_removed(tmp_path) -> None:
    store = ScramCredentialStore(str(tmp_path))
    store.upsert("alice", "SCRAM-SHA-256", cred())
    # a crash after writing part of the next version, before the rename
    (tmp_path / (CREDENTIALS_FILE + ".tmp")).write_bytes(b'{"version": 1, "credentials": [{"user": "mall')
    reopened = ScramCredentialStore(str(tmp_path))
    assert reopened.get("alice", "SCRAM-SHA-256") == cred()
    assert not os.path.exists(tmp_path / (CREDENTIALS_FILE + ".tmp"))


def test_a_failed_write_changes_nothing(tmp_path, monkeypatch) -> None:
    store = ScramCredentialStore(str(tmp_path))
    store.upsert("alice", "SCRAM-SHA-256", cred())

    def full(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store_module, "atomic_write", full)
    with pytest.raises(OSError):
        store.upsert("bob", "SCRAM-SHA-256", cred())
    with pytest.raises(OSError):
        store.delete("alice", "SCRAM-SHA-256")
    assert store.get("bob", "SCRAM-SHA-256") is None and store.get("alice", "SCRAM-SHA-256") == cred()
    monkeypatch.undo()
    assert ScramCredentialStore(str(tmp_path)).users() == ["alice"]


def test_alter_is_all_or_nothing(tmp_path) -> None:
    store = ScramCredentialStore(str(tmp_path))
    store.upsert("alice", "SCRAM-SHA-256", cred())
    with pytest.raises(ValueError, match="iterations"):
        store.alter([("bob", "SCRAM-SHA-256", cred()), ("carol", "SCRAM-SHA-256", cred()._replace(iterations=100))],
                    [("alice", "SCRAM-SHA-256")])
    assert store.users() == ["alice"] and ScramCredentialStore(str(tmp_path)).users() == ["alice"]
    store.alter([("bob", "SCRAM-SHA-512", cred(mechanism="SCRAM-SHA-512"))], [("alice", "SCRAM-SHA-256")])
    assert ScramCredentialStore(str(tmp_path)).describe(None) == {"bob": [("SCRAM-SHA-512", 4096)]}


@pytest.mark.parametrize(("user", "mechanism", "credential", "message"), [
    ("", "SCRAM-SHA-256", cred(), "Username must not be empty"),
    ("alice", "SCRAM-SHA-1", cred(), "Unknown SCRAM mechanism"),
    ("alice", "SCRAM-SHA-256", cred()._replace(iterations=4095), "iterations"),
    ("alice", "SCRAM-SHA-256", cred()._replace(iterations=16385), "iterations"),
    ("alice", "SCRAM-SHA-512", cred(), "64 bytes"),  # SHA-256's keys under SHA-512's name
])
def test_upsert_refuses_what_kafka_refuses(tmp_path, user, mechanism, credential, message) -> None:
    store = ScramCredentialStore(str(tmp_path))
    with pytest.raises(ValueError, match=message):
        store.upsert(user, mechanism, credential)
    assert len(store) == 0 and not os.path.exists(tmp_path / CREDENTIALS_FILE)


def _entry(**changes: object) -> dict[str, object]:
    c = cred()
    entry: dict[str, object] = {"user": "alice", "mechanism": "SCRAM-SHA-256", "iterations": 4096,
                                "salt": base64.b64encode(c.salt).decode(),
                                "stored_key": base64.b64encode(c.stored_key).decode(),
                                "server_key": base64.b64encode(c.server_key).decode()}
    entry.update(changes)
    return entry


@pytest.mark.parametrize(("content", "reason"), [
    (b'{"version": 1, "credentials": [', "Expecting"),
    (b"\xff\xfe", "Expecting value"),
    (b'{"version": 2, "credentials": []}', "unsupported version 2"),
    (b'{"version": 1, "credentials": {}}', "is not a list"),
    (json.dumps({"version": 1, "credentials": [_entry(mechanism="PLAIN")]}).encode(), "Unknown SCRAM mechanism"),
    (json.dumps({"version": 1, "credentials": [_entry(iterations="4096")]}).encode(), "integer"),
    (json.dumps({"version": 1, "credentials": [_entry(iterations=1)]}).encode(), "iterations"),
    (json.dumps({"version": 1, "credentials": [_entry(salt="%%%")]}).encode(), "salt: not base64"),
    (json.dumps({"version": 1, "credentials": [_entry(stored_key="AAAA")]}).encode(), "32 bytes"),
    (json.dumps({"version": 1, "credentials": [_entry(), _entry()]}).encode(), "a second SCRAM-SHA-256"),
])
def test_a_corrupt_file_refuses_to_load_with_one_line(tmp_path, content, reason) -> None:
    (tmp_path / CREDENTIALS_FILE).write_bytes(content)
    with pytest.raises(ScramCredentialFileError) as info:
        ScramCredentialStore(str(tmp_path))
    message = str(info.value)
    assert "\n" not in message and str(tmp_path / CREDENTIALS_FILE) in message and reason in message


# -- --add-scram (kafka-storage format's syntax)


def test_add_scram_with_a_password() -> None:
    seed = parse_add_scram("SCRAM-SHA-256=[name=alice,password=alice-secret]")
    assert (seed.user, seed.mechanism, seed.credential.iterations) == ("alice", "SCRAM-SHA-256", 4096)
    assert len(seed.credential.salt) == 32
    assert seed.credential == make_credential("SCRAM-SHA-256", b"alice-secret", seed.credential.salt, 4096)
    assert parse_add_scram("SCRAM-SHA-256=[name=alice,password=alice-secret]").credential.salt != seed.credential.salt


def test_add_scram_with_salt_iterations_and_quotes() -> None:
    salt = base64.b64encode(b"pepper").decode()
    seed = parse_add_scram(f' SCRAM-SHA-512=[name="bob",password="a b=c",iterations=8192,salt="{salt}"] ')
    assert seed == ("bob", "SCRAM-SHA-512", make_credential("SCRAM-SHA-512", b"a b=c", b"pepper", 8192))


def test_add_scram_with_a_salted_password() -> None:
    salted = salted_password("sha256", b"pw", b"pepper", 4096)
    seed = parse_add_scram("SCRAM-SHA-256=[name=carol,salt=" + base64.b64encode(b"pepper").decode()
                           + ",saltedpassword=" + base64.b64encode(salted).decode() + "]")
    assert seed.credential == make_credential("SCRAM-SHA-256", b"pw", b"pepper", 4096)


@pytest.mark.parametrize(("value", "message"), [
    ("SCRAM-SHA-256", "Failed to find equals sign in SCRAM argument 'SCRAM-SHA-256'"),
    ("SCRAM-SHA-1=[name=a,password=b]", "The add-scram mechanism SCRAM-SHA-1 is not supported."),
    ("SCRAM-SHA-256=name=a,password=b]", "Expected configuration string to start with ["),
    ("SCRAM-SHA-256=[name=a,password=b", "Expected configuration string to end with ]"),
    ("SCRAM-SHA-256=[password=b]", "You must supply 'name' to add-scram"),
    ("SCRAM-SHA-256=[name=,password=b]", "Username must not be empty"),
    ("SCRAM-SHA-256=[name=a]", "You must supply one of 'password' or 'saltedpassword' to add-scram"),
    ("SCRAM-SHA-256=[name=a,saltedpassword=AAAA]", "You must supply 'salt' with 'saltedpassword' to add-scram"),
    ("SCRAM-SHA-256=[name=a,password=b,iterations=x]", "Failed to parse iterations count: x"),
    ("SCRAM-SHA-256=[name=a,password=b,iterations=4095]", "The 'iterations' value must be >= 4096"),
    ("SCRAM-SHA-512=[name=a,password=b,iterations=16385]", "The 'iterations' value must be <= 16384"),
    ("SCRAM-SHA-256=[name=a,password=b,salt=%%]", "Failed to decode given salt: %%"),
    ("SCRAM-SHA-256=[name=a,password=b,colour=red]", "Unknown SCRAM configurations: colour"),
])
def test_add_scram_refuses_malformed_values(value, message) -> None:
    with pytest.raises(ValueError) as info:
        parse_add_scram(value)
    assert str(info.value) == message or str(info.value).startswith(message)


def test_add_scram_never_echoes_a_password() -> None:
    with pytest.raises(ValueError) as info:
        parse_add_scram("SCRAM-SHA-256=[name=a,password=top,secret]")  # a comma splits the password
    assert "secret" not in str(info.value) and "comma" in str(info.value)


def test_seeds_replace_existing_credentials(tmp_path) -> None:
    store = ScramCredentialStore(str(tmp_path))
    store.upsert("alice", "SCRAM-SHA-256", cred("old"))
    seeds = [parse_add_scram("SCRAM-SHA-256=[name=alice,password=new,iterations=8192]"),
             parse_add_scram("SCRAM-SHA-512=[name=bob,password=b]")]
    apply_seeds(store, seeds)
    reopened = ScramCredentialStore(str(tmp_path))
    assert reopened.get("alice", "SCRAM-SHA-256") == seeds[0].credential != cred("old")
    assert reopened.describe(None) == {"alice": [("SCRAM-SHA-256", 8192)], "bob": [("SCRAM-SHA-512", 4096)]}
