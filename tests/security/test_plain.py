"""broker/security/plain.py: SASL/PLAIN on the server with users from the JAAS options —
success (with and without an authzid), a wrong password, an unknown user, an authzid that is not
the user, malformed messages; Kafka's messages, never the password."""

from __future__ import annotations

import pytest

from broker.security.plain import PlainServer, plain_users
from broker.security.sasl_mechanism import SaslAuthenticationError
from client.security.sasl import PlainClient

USERS = plain_users({"username": "admin", "password": "admin-secret", "user_admin": "admin-secret",
                     "user_alice": "alice-secret"})


def test_plain_users_reads_only_user_options() -> None:
    assert USERS == {"admin": b"admin-secret", "alice": b"alice-secret"}


def test_success_with_the_client_mechanism() -> None:
    server, client = PlainServer(USERS), PlainClient("alice", "alice-secret")
    assert server.evaluate(client.first()) == b""
    assert client.step(b"") is None and client.complete
    assert server.complete and server.authorization_id == "alice" and server.lifetime_ms is None


def test_authzid_equal_to_the_user_is_accepted() -> None:
    server = PlainServer(USERS)
    server.evaluate(b"alice\x00alice\x00alice-secret")
    assert server.authorization_id == "alice"


@pytest.mark.parametrize("token, message", [
    (b"\x00alice\x00wrong", "Authentication failed: Invalid username or password"),
    (b"\x00mallory\x00alice-secret", "Authentication failed: Invalid username or password"),
    (b"admin\x00alice\x00alice-secret", "Client requested an authorization id that is different from username"),
    (b"\x00\x00alice-secret", "Authentication failed: username not specified"),
    (b"\x00alice\x00", "Authentication failed: password not specified"),
    (b"alice-secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
    (b"\x00alice\x00alice-secret\x00extra", "expected 3 tokens, got 4"),
    (b"\x00\xff\xfe\x00alice-secret", "Invalid username or password"),
    (b"", "expected 3 tokens, got 1"),
])
def test_failures(token: bytes, message: str) -> None:
    server = PlainServer(USERS)
    with pytest.raises(SaslAuthenticationError, match=message) as e:
        server.evaluate(token)
    assert "secret" not in str(e.value) and not server.complete


def test_a_second_message_after_success_fails() -> None:
    server = PlainServer(USERS)
    server.evaluate(b"\x00alice\x00alice-secret")
    with pytest.raises(SaslAuthenticationError, match="already complete"):
        server.evaluate(b"\x00alice\x00alice-secret")
