"""broker/socket_server.py's security against a broker process (``broker.testing.secure``:
PLAINTEXT, SSL with mutual TLS, SASL_SSL and SASL_PLAINTEXT listeners), through raw sockets:

- a failed login (PLAIN and SCRAM: a wrong password, an unknown user; OAUTHBEARER: an expired
  token) is answered with SASL_AUTHENTICATION_FAILED and Kafka's message no earlier than
  ``connection.failed.authentication.delay.ms`` (KIP-306), then the connection closes, while
  another client is served as fast as usual during the delay;
- a client certificate from another CA fails the TLS handshake, after the same delay (Kafka
  closes a failed TLS handshake at once; here both kinds of failed authentication wait), as
  does a plaintext client on a TLS port; a TLS client on a plaintext port is closed at once:
  never a hang;
- before the login, a request other than ApiVersions/SaslHandshake/SaslAuthenticate closes the
  connection unanswered and is not served; a frame above ``sasl.server.max.receive.size``
  closes it too;
- ``connections.authentication.timeout.ms`` closes a connection that does not log in;
- KIP-368 with ``connections.max.reauth.ms``: the session lifetime is told, a raw client that
  does not re-authenticate is disconnected at its first request after expiry, our client
  (which re-authenticates) keeps working;
- SaslHandshake v0's raw token framing with PLAIN.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
import time
from collections.abc import Iterator
from typing import Any

import pytest

from broker.testing.process import BrokerProcess
from broker.testing.secure import SecureSetup, secure_broker, unsecured_token
from broker.testing.wire import CLOSED, Conn, batch, create_topic, metadata, produce
from client.protocol.api import ApiKey, ErrorCode
from client.security.sasl import OAuthBearerClient, PlainClient, SaslClientMechanism, ScramClient

DELAY_MS = 300
REAUTH_MS = 1500
AUTH_TIMEOUT_MS = 600
MAX_RECEIVE = 65536


def stop(b: BrokerProcess) -> None:
    rc = b.stop()
    log = b.log_text()
    assert rc == 0, f"broker exited with {rc}:\n{log[-5000:]}"
    assert "Traceback" not in log, log[-5000:]


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, SecureSetup]]:
    b, setup = secure_broker(str(tmp_path_factory.mktemp("secure")),
                             f"connection.failed.authentication.delay.ms={DELAY_MS}",
                             f"sasl.server.max.receive.size={MAX_RECEIVE}")
    try:
        yield b, setup
    finally:
        stop(b)


@pytest.fixture(scope="module")
def expiring(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, SecureSetup]]:
    """Short sessions and a short authentication timeout."""
    b, setup = secure_broker(str(tmp_path_factory.mktemp("expiring")), f"connections.max.reauth.ms={REAUTH_MS}",
                             f"connections.authentication.timeout.ms={AUTH_TIMEOUT_MS}")
    try:
        yield b, setup
    finally:
        stop(b)


def client_context(setup: SecureSetup, cert: str | None = None, key: str | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=setup.ca_pem)
    if cert is not None:
        ctx.load_cert_chain(cert, key)
    return ctx


def connect(b: BrokerProcess, setup: SecureSetup, listener: str, **tls: str) -> Conn:
    """A raw connection to ``listener``; TLS (handshake done) on SSL and SASL_SSL."""
    c = Conn(b.listener_ports[listener], timeout=10)
    if listener in ("SSL", "SASL_SSL"):
        c.sock = client_context(setup, **tls).wrap_socket(c.sock, server_hostname="127.0.0.1")
    return c


def handshake(c: Conn, mechanism: str, version: int = 1) -> dict[str, Any]:
    return c.call(ApiKey.SASL_HANDSHAKE, version, {"mechanism": mechanism})


def authenticate(c: Conn, token: bytes, version: int = 2) -> dict[str, Any]:
    return c.call(ApiKey.SASL_AUTHENTICATE, version, {"auth_bytes": token})


def login(c: Conn, mech: SaslClientMechanism, version: int = 2) -> dict[str, Any]:
    """A whole SaslHandshake v1 + SaslAuthenticate exchange that must succeed; the last answer."""
    assert c.call(ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})[
        "error_code"] == 0
    assert handshake(c, mech.name)["error_code"] == 0
    token: bytes | None = mech.first()
    while True:
        r = authenticate(c, token or b"", version)
        assert r["error_code"] == 0, r
        token = mech.step(r["auth_bytes"])
        if token is None:
            return r


def topic_exists(b: BrokerProcess, name: str) -> bool:
    with Conn(b.listener_ports["PLAINTEXT"]) as c:
        (t,) = c.call(ApiKey.METADATA, 12, metadata([name], auto_create=False))["topics"]
        return bool(t["error_code"] == 0)


def closed_without_answer(c: Conn, timeout: float = 3.0) -> bool:
    c.sock.settimeout(timeout)
    try:
        return c.recv_frame() is CLOSED
    except ssl.SSLError:  # an abrupt close under TLS
        return True


# ------------------------------------------------------------------ failed logins and KIP-306


def failing_exchange(c: Conn, case: str) -> bytes:
    """Drive ``case`` up to the request whose answer is the failure; returns that request's
    token (not yet sent)."""
    mechanism, user, password = {
        "plain-wrong-password": ("PLAIN", "alice", "wrong"),
        "plain-unknown-user": ("PLAIN", "mallory", "x"),
        "scram256-wrong-password": ("SCRAM-SHA-256", "alice", "wrong"),
        "scram512-unknown-user": ("SCRAM-SHA-512", "mallory", "x"),
        "oauth-expired": ("OAUTHBEARER", "alice", ""),
    }[case]
    assert handshake(c, mechanism)["error_code"] == 0
    if mechanism == "PLAIN":
        return PlainClient(user, password).first()
    if mechanism == "OAUTHBEARER":
        r = authenticate(c, OAuthBearerClient(unsecured_token(user, lifetime_s=-60)).first())
        assert r["error_code"] == 0 and r["auth_bytes"] == b'{"status":"invalid_token"}'
        return b"\x01"
    client = ScramClient(mechanism, user, password)
    if user == "mallory":
        return client.first()
    r = authenticate(c, client.first())
    assert r["error_code"] == 0
    return client.step(r["auth_bytes"]) or b""


MESSAGES = {
    "plain-wrong-password": "Authentication failed: Invalid username or password",
    "plain-unknown-user": "Authentication failed: Invalid username or password",
    "scram256-wrong-password": "Authentication failed during authentication due to invalid credentials with SASL"
                               " mechanism SCRAM-SHA-256",
    "scram512-unknown-user": "Authentication failed during authentication due to invalid credentials with SASL"
                             " mechanism SCRAM-SHA-512",
    "oauth-expired": '{"status":"invalid_token"}',
}


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
@pytest.mark.parametrize("case", list(MESSAGES))
def test_failed_login_is_answered_after_the_delay_then_closed(secure, listener: str, case: str) -> None:
    b, setup = secure
    with connect(b, setup, listener) as bad, connect(b, setup, "PLAINTEXT") as good:
        good.call(ApiKey.API_VERSIONS, 0, {})
        token = failing_exchange(bad, case)
        t0 = time.monotonic()
        cid = bad.send(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})
        # meanwhile the broker serves others as usual
        served = 0
        while time.monotonic() - t0 < DELAY_MS / 1000 * 0.6:
            s = time.monotonic()
            assert good.call(ApiKey.METADATA, 12, metadata(None))["brokers"]
            assert time.monotonic() - s < 0.15
            served += 1
        assert served >= 3
        got, r = bad.recv(ApiKey.SASL_AUTHENTICATE, 2)
        elapsed = time.monotonic() - t0
        assert got == cid
        assert elapsed >= DELAY_MS / 1000 - 0.01, elapsed
        assert r["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert r["error_message"] == MESSAGES[case]
        assert "secret" not in (r["error_message"] or "")
        assert closed_without_answer(bad)
        assert time.monotonic() - t0 < DELAY_MS / 1000 + 2


def test_unsupported_mechanism_is_answered_with_the_enabled_ones_then_closed(secure) -> None:
    b, setup = secure
    with connect(b, setup, "SASL_PLAINTEXT") as c:
        t0 = time.monotonic()
        r = handshake(c, "GSSAPI")
        assert time.monotonic() - t0 >= DELAY_MS / 1000 - 0.01
        assert r == {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                     "mechanisms": ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]}
        assert closed_without_answer(c)


def test_requests_after_a_failed_login_are_not_read(secure) -> None:
    b, setup = secure
    name = "after-failed-login"
    with connect(b, setup, "SASL_PLAINTEXT") as c:
        handshake(c, "PLAIN")
        c.send(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": PlainClient("alice", "wrong").first()})
        c.send(ApiKey.CREATE_TOPICS, 5, create_topic(name))  # pipelined behind the failure
        _, r = c.recv(ApiKey.SASL_AUTHENTICATE, 2)
        assert r["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert closed_without_answer(c)
    assert not topic_exists(b, name)


def test_good_logins_on_every_mechanism_and_listener(secure) -> None:
    b, setup = secure
    for listener in ("SASL_PLAINTEXT", "SASL_SSL"):
        for mech in (PlainClient("alice", "alice-secret"), ScramClient("SCRAM-SHA-256", "alice", "alice-secret"),
                     ScramClient("SCRAM-SHA-512", "admin", "admin-secret"),
                     OAuthBearerClient(unsecured_token("alice"))):
            with connect(b, setup, listener) as c:
                r = login(c, mech)
                assert r["session_lifetime_ms"] == 0  # connections.max.reauth.ms=0 here
                assert c.call(ApiKey.METADATA, 12, metadata(None))["brokers"]


# ------------------------------------------------------------------ TLS failures


def tls_refused(sock: socket.socket, ctx: ssl.SSLContext) -> None:
    """A TLS client on ``sock`` is refused: the handshake, or the first exchange after it
    (TLS 1.3 checks the client certificate after the client's handshake is done), fails."""
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        tls = ctx.wrap_socket(sock, server_hostname="127.0.0.1")
        tls.sendall(b"\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x00\x00\x01\xff\xff")  # ApiVersions v0
        if not tls.recv(4):
            raise ConnectionError("closed")


def test_client_certificate_from_another_ca_fails_the_handshake(secure) -> None:
    b, setup = secure
    t0 = time.monotonic()
    sock = socket.create_connection(("127.0.0.1", b.listener_ports["SSL"]), timeout=5)
    with sock:
        tls_refused(sock, client_context(setup, setup.stranger_cert, setup.stranger_key))
    assert DELAY_MS / 1000 - 0.01 <= time.monotonic() - t0 < 2
    # without any certificate (ssl.client.auth=required) too
    with socket.create_connection(("127.0.0.1", b.listener_ports["SSL"]), timeout=5) as sock:
        tls_refused(sock, client_context(setup))
    # and the good certificate gets in
    with connect(b, setup, "SSL", cert=setup.client_cert, key=setup.client_key) as c:
        assert c.call(ApiKey.METADATA, 12, metadata(None))["brokers"]


@pytest.mark.parametrize("listener", ["SSL", "SASL_SSL"])
def test_plaintext_client_on_a_tls_port_is_closed_promptly(secure, listener: str) -> None:
    b, _ = secure
    with Conn(b.listener_ports[listener]) as c:
        t0 = time.monotonic()
        c.send(ApiKey.API_VERSIONS, 0, {})
        assert c.is_closed_by_peer(timeout=3)
        assert time.monotonic() - t0 < 2


@pytest.mark.parametrize("listener", ["PLAINTEXT", "SASL_PLAINTEXT"])
def test_tls_client_on_a_plaintext_port_fails_promptly(secure, listener: str) -> None:
    b, setup = secure
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", b.listener_ports[listener]), timeout=5) as sock:
        tls_refused(sock, client_context(setup))
    assert time.monotonic() - t0 < 2


# ------------------------------------------------------------------ nothing served before the login


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
@pytest.mark.parametrize("before", ["nothing", "api-versions", "handshake"])
def test_create_topics_before_login_is_not_served(secure, listener: str, before: str) -> None:
    b, setup = secure
    name = f"unauth-{listener}-{before}".lower().replace("_", "-")
    with connect(b, setup, listener) as c:
        if before == "api-versions":
            c.call(ApiKey.API_VERSIONS, 0, {})
        elif before == "handshake":
            assert handshake(c, "PLAIN")["error_code"] == 0
        c.send(ApiKey.CREATE_TOPICS, 5, create_topic(name))
        assert closed_without_answer(c)
    assert not topic_exists(b, name)


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_metadata_first_gets_no_answer(secure, listener: str) -> None:
    b, setup = secure
    with connect(b, setup, listener) as c:
        c.send(ApiKey.METADATA, 12, metadata(["auto-created-before-login"]))
        assert closed_without_answer(c)
    assert not topic_exists(b, "auto-created-before-login")


def test_sasl_authenticate_before_the_handshake_closes(secure) -> None:
    b, setup = secure
    with connect(b, setup, "SASL_PLAINTEXT") as c:
        c.send(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": PlainClient("alice", "alice-secret").first()})
        assert closed_without_answer(c)


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_frame_above_sasl_server_max_receive_size_closes_before_login(secure, listener: str) -> None:
    b, setup = secure
    with connect(b, setup, listener) as c:
        c.sock.sendall(struct.pack(">i", MAX_RECEIVE + 1) + b"\x00" * 1024)
        assert closed_without_answer(c)


def test_large_request_is_fine_after_login(secure) -> None:
    b, setup = secure
    with connect(b, setup, "SASL_PLAINTEXT") as c:
        login(c, PlainClient("alice", "alice-secret"))
        r = c.call(ApiKey.CREATE_TOPICS, 5, create_topic("big-after-login"))
        assert r["topics"][0]["error_code"] == 0
        big = batch(n=4, value_size=MAX_RECEIVE // 2)
        assert len(big) > MAX_RECEIVE
        r = c.call(ApiKey.PRODUCE, 7, produce("big-after-login", 0, big))
        assert r["responses"][0]["partition_responses"][0]["error_code"] == 0


# ------------------------------------------------------------------ SaslHandshake v0


def test_handshake_v0_raw_plain_token_then_requests(secure) -> None:
    b, setup = secure
    for listener in ("SASL_PLAINTEXT", "SASL_SSL"):
        with connect(b, setup, listener) as c:
            assert c.call(ApiKey.API_VERSIONS, 0, {})["error_code"] == 0
            assert handshake(c, "PLAIN", version=0)["error_code"] == 0
            token = PlainClient("alice", "alice-secret").first()
            c.sock.sendall(struct.pack(">i", len(token)) + token)
            assert c.recv_frame() == b""  # the empty raw challenge
            assert c.call(ApiKey.METADATA, 12, metadata(None))["brokers"]


def test_handshake_v0_raw_wrong_password_closes_after_the_delay(secure) -> None:
    b, setup = secure
    with connect(b, setup, "SASL_PLAINTEXT") as c:
        handshake(c, "PLAIN", version=0)
        token = PlainClient("alice", "wrong").first()
        t0 = time.monotonic()
        c.sock.sendall(struct.pack(">i", len(token)) + token)
        assert closed_without_answer(c)
        assert time.monotonic() - t0 >= DELAY_MS / 1000 - 0.01


# ------------------------------------------------------------------ timeouts and KIP-368


@pytest.mark.parametrize("listener, tls_done", [("SSL", False), ("SASL_SSL", False), ("SASL_SSL", True),
                                                ("SASL_PLAINTEXT", False)])
def test_authentication_timeout_closes_a_silent_connection(expiring, listener: str, tls_done: bool) -> None:
    b, setup = expiring
    t0 = time.monotonic()
    with (connect(b, setup, listener) if tls_done else Conn(b.listener_ports[listener])) as c:
        assert closed_without_answer(c, timeout=5)
    elapsed = time.monotonic() - t0
    assert AUTH_TIMEOUT_MS / 1000 - 0.05 <= elapsed < AUTH_TIMEOUT_MS / 1000 + 2, elapsed


def test_authentication_timeout_spares_a_logged_in_connection(expiring) -> None:
    b, setup = expiring
    with connect(b, setup, "SSL", cert=setup.client_cert, key=setup.client_key) as c:
        time.sleep(AUTH_TIMEOUT_MS / 1000 + 0.3)
        assert c.call(ApiKey.API_VERSIONS, 0, {})["error_code"] == 0


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_session_lifetime_is_told_and_a_raw_client_is_cut_after_it(expiring, listener: str) -> None:
    b, setup = expiring
    with connect(b, setup, listener) as c:
        r = login(c, ScramClient("SCRAM-SHA-256", "alice", "alice-secret"), version=1)
        assert 0 < r["session_lifetime_ms"] <= REAUTH_MS
        assert c.call(ApiKey.METADATA, 12, metadata(None))["brokers"]
        time.sleep(r["session_lifetime_ms"] / 1000 + 0.2)
        c.send(ApiKey.METADATA, 12, metadata(None))
        assert closed_without_answer(c)


def test_session_lifetime_is_the_token_lifetime_when_shorter(expiring) -> None:
    b, setup = expiring
    with connect(b, setup, "SASL_PLAINTEXT") as c:
        r = login(c, OAuthBearerClient(unsecured_token("alice", lifetime_s=0.8)))
        assert 0 < r["session_lifetime_ms"] <= 800


def test_raw_client_reauthenticates_on_the_same_connection(expiring) -> None:
    b, setup = expiring
    with connect(b, setup, "SASL_PLAINTEXT") as c:
        login(c, PlainClient("alice", "alice-secret"))
        time.sleep(REAUTH_MS / 1000 * 0.5)
        assert handshake(c, "PLAIN")["error_code"] == 0
        r = authenticate(c, PlainClient("alice", "alice-secret").first())
        assert r["error_code"] == 0 and 0 < r["session_lifetime_ms"] <= REAUTH_MS
        time.sleep(REAUTH_MS / 1000 * 0.7)  # past the first session's end, inside the second's
        assert c.call(ApiKey.METADATA, 12, metadata(None))["brokers"]
        # re-authenticating as someone else fails and closes
        assert handshake(c, "PLAIN")["error_code"] == 0
        r = authenticate(c, PlainClient("admin", "admin-secret").first())
        assert r["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert "Cannot change principals" in r["error_message"]
        assert closed_without_answer(c)


@pytest.mark.slow  # ~5 s: three session lifetimes
@pytest.mark.parametrize("listener, mechanism", [("SASL_PLAINTEXT", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-512")])
def test_our_client_reauthenticates_past_several_lifetimes(expiring, listener: str, mechanism: str) -> None:
    from client import Admin

    b, setup = expiring

    async def run() -> tuple[int, int]:
        admin = Admin(f"127.0.0.1:{b.listener_ports[listener]}", security_protocol=listener,
                      ssl_context=client_context(setup) if listener == "SASL_SSL" else None,
                      sasl_mechanism=mechanism, sasl_plain_username="alice", sasl_plain_password="alice-secret")
        async with admin:
            topic = f"reauth-{mechanism.lower()}"
            await admin.create_topic(topic)
            deadline = time.monotonic() + REAUTH_MS / 1000 * 3.2
            calls = 0
            while time.monotonic() < deadline:
                assert topic in await admin.list_topics()
                calls += 1
                await asyncio.sleep(0.1)
            conns = list(admin._cluster._conns.values())  # test-only look: were sessions renewed in place?
            return calls, max(c.reauthentications for c in conns)

    calls, reauthentications = asyncio.run(run())
    assert calls > 10 and reauthentications >= 2


def test_broker_log_has_no_traceback_so_far(secure, expiring) -> None:
    for b, _ in (secure, expiring):
        assert "Traceback" not in b.log_text()
        assert b.proc is not None and b.proc.poll() is None



# ------------------------------------------------------------------ fetch over TLS


def _fetch_body(topic: str, max_bytes: int) -> dict[str, Any]:
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": max_bytes, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [{"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                                                        "log_start_offset": -1, "partition_max_bytes": max_bytes}]}],
            "forgotten_topics_data": [], "rack_id": ""}


def test_tls_fetch_replies_arrive_whole_for_a_slow_reader(secure) -> None:
    """Fetch replies over TLS to a client that reads slowly (the socket stays full, so the
    last TLS records of a reply often wait for writability): every reply arrives whole. A reply
    whose final records were encrypted but not yet taken by the socket once waited for ever."""
    b, setup = secure
    topic = "tls-slow-reader"
    with Conn(b.listener_ports["PLAINTEXT"]) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 4, create_topic(topic))["topics"][0]["error_code"] in (0, 36)
        for _ in range(24):
            resp = c.call(ApiKey.PRODUCE, 7, produce(topic, 0, batch(100, 1000)))
            assert resp["responses"][0]["partition_responses"][0]["error_code"] == 0
    for _ in range(3):
        with connect(b, setup, "SSL", cert=setup.client_cert, key=setup.client_key) as c:
            c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 10)
            cids = [c.send(ApiKey.FETCH, 11, _fetch_body(topic, 1 << 20)) for _ in range(4)]
            time.sleep(0.3)  # the broker fills the socket and waits for writability
            c.sock.settimeout(10)
            data = bytearray()
            replies = 0
            while replies < len(cids):
                chunk = c.sock.recv(8192)  # slowly: small reads with pauses
                assert chunk, "the broker closed the connection"
                data += chunk
                time.sleep(0.0002)
                while len(data) >= 4 and len(data) >= 4 + struct.unpack_from(">i", data)[0]:
                    size = struct.unpack_from(">i", data)[0]
                    assert struct.unpack_from(">i", data, 4)[0] == cids[replies]
                    assert size > 1 << 19  # a reply with ~1 MiB of records
                    del data[:4 + size]
                    replies += 1
