"""HTTP Basic authentication of the registry against the broker's SCRAM users
(``schema.registry.authentication=basic``, broker/schema_registry/auth.py): the header parsing
and the password check without I/O, then a broker process with users seeded by
``serve --add-scram`` and confluent-kafka's ``SchemaRegistryClient`` (``basic.auth.user.info``)."""

from __future__ import annotations

import asyncio
import base64
import json
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator

import pytest

from broker.schema_registry.auth import BasicAuthenticator, parse_basic
from broker.testing import BrokerProcess
from client.security.scram import ScramCredential, make_credential

SCHEMA = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})


def basic(user_info: str) -> str:
    return "Basic " + base64.b64encode(user_info.encode()).decode()


def test_parse_basic() -> None:
    assert parse_basic(basic("alice:pa:ss")) == ("alice", "pa:ss")
    assert parse_basic(basic("alice:")) == ("alice", "")
    for bad in (None, "", "Bearer x", "Basic !!!", basic("no-colon"), basic(":pw")):
        assert parse_basic(bad) is None


class Store:
    def __init__(self) -> None:
        self.creds: dict[tuple[str, str], ScramCredential] = {}

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self.creds.get((user, mechanism))


def test_password_checked_against_the_stored_key_and_cache_follows_the_store() -> None:
    store = Store()
    store.creds[("alice", "SCRAM-SHA-512")] = make_credential("SCRAM-SHA-512", b"secret", b"salt" * 4, 4096)
    auth = BasicAuthenticator(store)
    run = asyncio.run
    assert run(auth.authenticate(basic("alice:secret"))) == "alice"
    assert run(auth.authenticate(basic("alice:secret"))) == "alice"  # from the cache
    assert run(auth.authenticate(basic("alice:wrong"))) is None
    assert run(auth.authenticate(basic("bob:secret"))) is None
    store.creds[("alice", "SCRAM-SHA-512")] = make_credential("SCRAM-SHA-512", b"new", b"salt" * 4, 4096)
    assert run(auth.authenticate(basic("alice:secret"))) is None  # the cached success is for the old credential
    assert run(auth.authenticate(basic("alice:new"))) == "alice"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    seeds = ["--add-scram", "SCRAM-SHA-256=[name=alice,password=alice-secret]",
             "--add-scram", "SCRAM-SHA-512=[name=bob,password=bob-secret,iterations=8192]"]
    b = BrokerProcess(str(tmp_path_factory.mktemp("auth") / "data"), schema_registry=True,
                      overrides=["schema.registry.authentication=basic"], extra_args=seeds).start()
    try:
        yield b
    finally:
        assert b.stop() == 0, b.log_text()


def _get(url: str, authorization: str | None) -> tuple[int, dict[str, str], bytes]:
    headers = {"Authorization": authorization} if authorization else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


@pytest.mark.slow
def test_unauthenticated_requests_get_confluents_401(secured: BrokerProcess) -> None:
    url = secured.schema_registry_url + "/subjects"
    for authorization in (None, basic("alice:wrong"), basic("carol:alice-secret"), "Bearer token"):
        status, headers, body = _get(url, authorization)
        assert status == 401, authorization
        assert json.loads(body) == {"error_code": 401, "message": "Unauthorized"}
        assert headers["WWW-Authenticate"] == 'Basic realm="SchemaRegistry"'
    assert _get(url, basic("alice:alice-secret"))[0] == 200
    assert _get(url, basic("bob:bob-secret"))[0] == 200


@pytest.mark.slow
def test_confluent_client_with_basic_auth_user_info(secured: BrokerProcess) -> None:
    sr = pytest.importorskip("confluent_kafka.schema_registry")
    subject = f"auth-{uuid.uuid4().hex[:6]}"
    good = sr.SchemaRegistryClient({"url": secured.schema_registry_url, "basic.auth.user.info": "alice:alice-secret"})
    schema_id = good.register_schema(subject, sr.Schema(SCHEMA, "AVRO"))
    assert good.get_latest_version(subject).schema_id == schema_id
    bad = sr.SchemaRegistryClient({"url": secured.schema_registry_url, "basic.auth.user.info": "alice:nope"})
    with pytest.raises(sr.error.SchemaRegistryError) as e:
        bad.get_subjects()
    assert e.value.http_status_code == 401 and e.value.error_code == 401
