"""broker/security/scram_server.py driven by the client's ScramClient (client/security/sasl.py)
for SCRAM-SHA-256 and SCRAM-SHA-512: success (the server's signature verifies on the client),
a wrong password, an unknown user, a tampered nonce, a tampered proof, channel binding refused,
extensions and malformed messages; every failure has Kafka's one message."""

from __future__ import annotations

import base64

import pytest

from broker.security.sasl_mechanism import SaslAuthenticationError
from broker.security.scram_server import ScramServer
from client.errors import SaslAuthenticationFailedError
from client.security import scram
from client.security.sasl import ScramClient

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
SALT = b"salt-of-sixteen!"


class Credentials:
    def __init__(self, users: dict[str, str], iterations: int = 4096) -> None:
        self.creds = {(u, m): scram.make_credential(m, p.encode(), SALT, iterations)
                      for u, p in users.items() for m in MECHANISMS}

    def get(self, user: str, mechanism: str) -> scram.ScramCredential | None:
        return self.creds.get((user, mechanism))


CREDS = Credentials({"alice": "alice-secret", "bob,=x": "bob-secret"})


def failure(mechanism: str) -> str:
    return ("Authentication failed during authentication due to invalid credentials with SASL mechanism "
            + mechanism)


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("user, password", [("alice", "alice-secret"), ("bob,=x", "bob-secret")])
def test_success_and_the_server_signature_verifies(mechanism: str, user: str, password: str) -> None:
    server, client = ScramServer(mechanism, CREDS), ScramClient(mechanism, user, password)
    server_first = server.evaluate(client.first())
    assert server_first.startswith(b"r=") and b",s=" + base64.b64encode(SALT) + b",i=4096" in server_first
    server_final = server.evaluate(client.step(server_first) or b"")
    assert server.complete and server.authorization_id == user
    assert server_final.startswith(b"v=")
    assert client.step(server_final) is None and client.complete


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_forged_server_signature_is_caught_by_the_client(mechanism: str) -> None:
    server, client = ScramServer(mechanism, CREDS), ScramClient(mechanism, "alice", "alice-secret")
    server_final = server.evaluate(client.step(server.evaluate(client.first())) or b"")
    sig = bytearray(base64.b64decode(server_final[2:]))
    sig[0] ^= 1
    with pytest.raises(SaslAuthenticationFailedError, match="signature is wrong"):
        client.step(b"v=" + base64.b64encode(bytes(sig)))


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_wrong_password_fails_at_the_final_message(mechanism: str) -> None:
    server, client = ScramServer(mechanism, CREDS), ScramClient(mechanism, "alice", "wrong")
    final = client.step(server.evaluate(client.first())) or b""
    with pytest.raises(SaslAuthenticationError) as e:
        server.evaluate(final)
    assert str(e.value) == failure(mechanism) and not server.complete


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_unknown_user_fails_at_the_first_message_with_the_same_message(mechanism: str) -> None:
    server, client = ScramServer(mechanism, CREDS), ScramClient(mechanism, "mallory", "x")
    with pytest.raises(SaslAuthenticationError) as e:
        server.evaluate(client.first())
    assert str(e.value) == failure(mechanism)


def test_credential_of_the_other_mechanism_is_not_used() -> None:
    only256 = Credentials({})
    only256.creds[("carol", "SCRAM-SHA-256")] = scram.make_credential("SCRAM-SHA-256", b"pw", SALT, 4096)
    server, client = ScramServer("SCRAM-SHA-512", only256), ScramClient("SCRAM-SHA-512", "carol", "pw")
    with pytest.raises(SaslAuthenticationError):
        server.evaluate(client.first())


def _exchange(mechanism: str) -> tuple[ScramServer, bytes]:
    server, client = ScramServer(mechanism, CREDS), ScramClient(mechanism, "alice", "alice-secret")
    return server, client.step(server.evaluate(client.first())) or b""


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_tampered_nonce(mechanism: str) -> None:
    server, final = _exchange(mechanism)
    attrs = final.decode().split(",")
    attrs[1] = attrs[1][:-1] + ("A" if attrs[1][-1] != "A" else "B")
    with pytest.raises(SaslAuthenticationError, match=failure(mechanism)):
        server.evaluate(",".join(attrs).encode())


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_tampered_proof(mechanism: str) -> None:
    server, final = _exchange(mechanism)
    head, _, proof = final.decode().rpartition(",p=")
    raw = bytearray(base64.b64decode(proof))
    raw[-1] ^= 0x80
    with pytest.raises(SaslAuthenticationError, match=failure(mechanism)):
        server.evaluate(f"{head},p={base64.b64encode(bytes(raw)).decode()}".encode())
    server, final = _exchange(mechanism)
    with pytest.raises(SaslAuthenticationError):  # a proof of the wrong length
        server.evaluate(f"{head.split(',r=')[0]},r={head.split(',r=')[1]},p={base64.b64encode(b'short').decode()}"
                        .encode())


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_tampered_channel_binding_attribute(mechanism: str) -> None:
    server, final = _exchange(mechanism)
    tampered = final.replace(b"c=biws", b"c=" + base64.b64encode(b"y,,"))
    with pytest.raises(SaslAuthenticationError):
        server.evaluate(tampered)


@pytest.mark.parametrize("first", [
    b"p=tls-server-end-point,,n=alice,r=abc",  # channel binding
    b"n,,n=alice,r=abc,ext=1",  # an extension
    b"n,,n=alice",  # no nonce
    b"n,,n=alice,r=",  # an empty nonce
    b"x,,n=alice,r=abc",  # a bad gs2 flag
    b"n,a=bob,n=alice,r=abc",  # an authzid that is not the user
    b"n=alice,r=abc",  # no gs2 header
    b"\xff\xfe",
    b"",
])
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_bad_client_first(mechanism: str, first: bytes) -> None:
    with pytest.raises(SaslAuthenticationError) as e:
        ScramServer(mechanism, CREDS).evaluate(first)
    assert str(e.value) == failure(mechanism)


def test_channel_binding_refusal_is_explained_in_the_log_reason() -> None:
    with pytest.raises(SaslAuthenticationError) as e:
        ScramServer("SCRAM-SHA-256", CREDS).evaluate(b"p=tls-unique,,n=alice,r=abc")
    assert "channel binding is not supported" in str(e.value.__cause__)


def test_matching_authzid_and_y_flag_are_accepted() -> None:
    server = ScramServer("SCRAM-SHA-256", CREDS)
    assert server.evaluate(b"y,a=alice,n=alice,r=abc").startswith(b"r=abc")


@pytest.mark.parametrize("final", [b"c=biws,r=x", b"c=biws,p=!!!", b"garbage", b"c=###,r=x,p=AAAA"])
def test_bad_client_final(final: bytes) -> None:
    server, _ = _exchange("SCRAM-SHA-256")
    with pytest.raises(SaslAuthenticationError):
        server.evaluate(final)


def test_no_message_after_the_exchange() -> None:
    server, client = ScramServer("SCRAM-SHA-256", CREDS), ScramClient("SCRAM-SHA-256", "alice", "alice-secret")
    final = client.step(server.evaluate(client.first())) or b""
    server.evaluate(final)
    with pytest.raises(SaslAuthenticationError):
        server.evaluate(final)
