"""broker/security/authenticator.py: the per-connection SASL state machine on a real
ListenerSecurity — which requests each state accepts, SaslHandshake v0 (raw tokens) and v1,
an unsupported mechanism, failures with Kafka's error codes, re-authentication (KIP-368) with
the same principal, another principal or another mechanism, and the session lifetime
``min(connections.max.reauth.ms, the credential's lifetime)`` on a fake clock."""

from __future__ import annotations

import pytest

from broker.config import BROKER_DEFAULTS
from broker.security.authenticator import AuthenticationFailed, SaslAuthenticator, State
from broker.security.listener_security import ListenerSecurity
from broker.security.listeners import EndPoint
from broker.security.principal import KafkaPrincipal
from broker.testing.secure import unsecured_token
from client.protocol.api import ApiKey, ErrorCode
from client.security import scram
from client.security.sasl import OAuthBearerClient, ScramClient

API_VERSIONS, HANDSHAKE, AUTHENTICATE = int(ApiKey.API_VERSIONS), int(ApiKey.SASL_HANDSHAKE), int(ApiKey.SASL_AUTHENTICATE)
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret"'
              ' user_bob="bob-secret";')
ENDPOINT = EndPoint("SASL_PLAINTEXT", "127.0.0.1", 0, "SASL_PLAINTEXT")


class Credentials:
    def get(self, user: str, mechanism: str) -> scram.ScramCredential | None:
        if user != "alice":
            return None
        return scram.make_credential(mechanism, b"alice-secret", b"0123456789abcdef", 4096)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def security(**props: str) -> ListenerSecurity:
    merged = {**BROKER_DEFAULTS, "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,OAUTHBEARER",
              "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS, **props}
    return ListenerSecurity(merged, ENDPOINT, Credentials())


def plain(user: str = "alice", password: str = "alice-secret") -> bytes:
    return f"\x00{user}\x00{password}".encode()


def login(auth: SaslAuthenticator, token: bytes = b"", version: int = 1, mechanism: str = "PLAIN") -> dict:
    assert auth.handshake(version, mechanism)["error_code"] == 0
    return auth.authenticate(2, token or plain())


def test_order_before_the_handshake() -> None:
    auth = SaslAuthenticator(security())
    assert auth.state is State.HANDSHAKE_OR_VERSIONS
    assert auth.accepts(API_VERSIONS) and auth.accepts(HANDSHAKE)
    for key in (AUTHENTICATE, int(ApiKey.METADATA), int(ApiKey.CREATE_TOPICS), int(ApiKey.PRODUCE), 1000):
        assert not auth.accepts(key)
    auth.saw_api_versions()
    assert auth.state is State.HANDSHAKE
    assert auth.accepts(HANDSHAKE) and not auth.accepts(API_VERSIONS) and not auth.accepts(AUTHENTICATE)
    auth.saw_api_versions()  # only the first moves the state
    assert auth.state is State.HANDSHAKE


def test_handshake_v1_then_authenticate() -> None:
    auth = SaslAuthenticator(security())
    answer = auth.handshake(1, "PLAIN")
    assert answer == {"error_code": 0, "mechanisms": ["PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"]}
    assert auth.state is State.AUTHENTICATE and not auth.raw
    assert auth.accepts(AUTHENTICATE) and not auth.accepts(HANDSHAKE) and not auth.accepts(API_VERSIONS)
    answer = auth.authenticate(1, plain())
    assert answer == {"error_code": 0, "error_message": None, "auth_bytes": b"", "session_lifetime_ms": 0}
    assert auth.complete and auth.principal == KafkaPrincipal("User", "alice")
    assert auth.accepts(int(ApiKey.METADATA)) and auth.expires_at is None and not auth.expired()
    assert not auth.can_reauthenticate()  # connections.max.reauth.ms=0


def test_scram_over_several_authenticate_requests() -> None:
    auth = SaslAuthenticator(security())
    auth.handshake(1, "SCRAM-SHA-256")
    client = ScramClient("SCRAM-SHA-256", "alice", "alice-secret")
    first = auth.authenticate(2, client.first())
    assert first["error_code"] == 0 and not auth.complete and auth.accepts(AUTHENTICATE)
    final = auth.authenticate(2, client.step(first["auth_bytes"]) or b"")
    assert final["error_code"] == 0 and auth.complete
    assert client.step(final["auth_bytes"]) is None and client.complete


def test_handshake_v0_is_raw() -> None:
    auth = SaslAuthenticator(security())
    auth.handshake(0, "PLAIN")
    assert auth.raw and not auth.accepts(AUTHENTICATE)  # tokens come as raw frames, not requests
    assert auth.raw_token(plain()) == b""
    assert auth.complete and auth.principal == KafkaPrincipal("User", "alice")


def test_raw_failure_has_no_response() -> None:
    auth = SaslAuthenticator(security())
    auth.handshake(0, "PLAIN")
    with pytest.raises(AuthenticationFailed) as e:
        auth.raw_token(plain(password="wrong"))
    assert e.value.response is None and auth.state is State.FAILED
    assert "Invalid username or password" in str(e.value)


@pytest.mark.parametrize("mechanism", ["GSSAPI", "SCRAM-SHA-512", "plain", ""])
def test_unsupported_mechanism(mechanism: str) -> None:
    auth = SaslAuthenticator(security())
    with pytest.raises(AuthenticationFailed) as e:
        auth.handshake(1, mechanism)
    assert e.value.response == {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                                "mechanisms": ["PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"]}
    assert auth.state is State.FAILED and not any(auth.accepts(k) for k in (API_VERSIONS, HANDSHAKE, AUTHENTICATE))


@pytest.mark.parametrize("token, message", [
    (plain(password="wrong"), "Authentication failed: Invalid username or password"),
    (plain(user="mallory"), "Authentication failed: Invalid username or password"),
    (b"junk", "Invalid SASL/PLAIN response"),
])
def test_failed_authenticate_answers_sasl_authentication_failed(token: bytes, message: str) -> None:
    auth = SaslAuthenticator(security())
    auth.handshake(1, "PLAIN")
    with pytest.raises(AuthenticationFailed) as e:
        auth.authenticate(2, token)
    response = e.value.response
    assert response is not None and response["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED == 58
    assert message in response["error_message"] and response["session_lifetime_ms"] == 0
    assert auth.state is State.FAILED and auth.principal is None
    assert str(e.value).startswith("PLAIN: ")


def test_scram_failure_reason_for_the_log_is_kept_off_the_wire() -> None:
    auth = SaslAuthenticator(security())
    auth.handshake(1, "SCRAM-SHA-256")
    with pytest.raises(AuthenticationFailed) as e:
        auth.authenticate(2, b"n,,n=mallory,r=abc")
    assert "unknown user" in str(e.value)
    assert e.value.response is not None and "unknown user" not in e.value.response["error_message"]


def test_session_lifetime_is_reauth_ms_and_expires_on_the_clock() -> None:
    clock = Clock()
    auth = SaslAuthenticator(security(**{"connections.max.reauth.ms": "2000"}), clock=clock)
    answer = login(auth)
    assert answer["session_lifetime_ms"] == 2000
    assert auth.can_reauthenticate() and not auth.expired()
    clock.t += 1.999
    assert not auth.expired()
    clock.t += 0.001
    assert auth.expired()


def test_session_lifetime_is_the_token_lifetime_when_shorter() -> None:
    clock = Clock()
    auth = SaslAuthenticator(security(**{"connections.max.reauth.ms": "60000"}), clock=clock)
    token = OAuthBearerClient(unsecured_token("alice", lifetime_s=5)).first()
    answer = login(auth, token, mechanism="OAUTHBEARER")
    assert 4000 <= answer["session_lifetime_ms"] <= 5000
    auth = SaslAuthenticator(security(**{"connections.max.reauth.ms": "1500"}), clock=clock)
    answer = login(auth, OAuthBearerClient(unsecured_token("alice", lifetime_s=5)).first(), mechanism="OAUTHBEARER")
    assert answer["session_lifetime_ms"] == 1500


def test_token_lifetime_is_ignored_when_sessions_do_not_expire() -> None:
    auth = SaslAuthenticator(security())
    answer = login(auth, OAuthBearerClient(unsecured_token("alice", lifetime_s=5)).first(), mechanism="OAUTHBEARER")
    assert answer["session_lifetime_ms"] == 0 and auth.expires_at is None


def test_reauth_capable_follows_the_authenticate_version() -> None:
    auth = SaslAuthenticator(security())
    auth.handshake(1, "PLAIN")
    auth.authenticate(0, plain())
    assert not auth.reauth_capable
    auth = SaslAuthenticator(security())
    auth.handshake(1, "PLAIN")
    auth.authenticate(1, plain())
    assert auth.reauth_capable


def test_reauthentication_with_the_same_principal_renews_the_session() -> None:
    clock = Clock()
    auth = SaslAuthenticator(security(**{"connections.max.reauth.ms": "2000"}), clock=clock)
    login(auth)
    clock.t += 1.5
    auth.begin_reauthentication()
    assert auth.state is State.HANDSHAKE and auth.reauthenticating
    assert auth.accepts(HANDSHAKE) and not auth.accepts(int(ApiKey.METADATA))
    answer = login(auth)
    assert answer["session_lifetime_ms"] == 2000 and auth.complete
    clock.t += 1.9
    assert not auth.expired()


def test_reauthentication_as_another_principal_fails() -> None:
    auth = SaslAuthenticator(security(**{"connections.max.reauth.ms": "2000"}), clock=Clock())
    login(auth)
    auth.begin_reauthentication()
    auth.handshake(1, "PLAIN")
    with pytest.raises(AuthenticationFailed) as e:
        auth.authenticate(2, plain("bob", "bob-secret"))
    assert e.value.response is not None
    assert e.value.response["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert "Cannot change principals during re-authentication from User:alice: User:bob" in \
        e.value.response["error_message"]
    assert auth.state is State.FAILED and auth.principal == KafkaPrincipal("User", "alice")


def test_reauthentication_with_another_mechanism_is_an_illegal_state() -> None:
    auth = SaslAuthenticator(security(**{"connections.max.reauth.ms": "2000"}), clock=Clock())
    login(auth)
    auth.begin_reauthentication()
    with pytest.raises(AuthenticationFailed) as e:
        auth.handshake(1, "SCRAM-SHA-256")
    assert e.value.response == {"error_code": ErrorCode.ILLEGAL_SASL_STATE,
                                "mechanisms": ["PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"]}
    assert auth.state is State.FAILED
