"""Hypothesis against the SASL login of a live broker (``broker.testing.secure``), on its
SASL_PLAINTEXT and SASL_SSL listeners: random sequences of ApiVersions, SaslHandshake (any
version, known and unknown mechanisms, v0's raw token frames) and SaslAuthenticate (any version,
random or almost-right auth bytes: wrong passwords, SCRAM first messages, expired and malformed
OAUTHBEARER tokens, RFC 7628's ``\\x01``), raw junk and requests of other APIs interleaved,
pipelined on one connection that is then half-closed.

Invariants:
- the broker never crashes: after each example a good client logs in and is served;
- nothing is served before a login: examples without a valid credential end with CreateTopics
  and auto-creating Metadata requests for sentinel topics that must never appear (examples that
  may log in, re-authentication included, send other APIs but not the sentinels);
- the broker's log holds no traceback.

The broker runs with ``connection.failed.authentication.delay.ms=0`` (the examples do not
wait out KIP-306's delay) and ``connections.max.reauth.ms`` set (SaslHandshake after a login
starts a re-authentication). Bounded to ~30 s.
"""

from __future__ import annotations

import socket
import ssl
import struct
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.testing.process import BrokerProcess
from broker.testing.secure import SecureSetup, secure_broker, unsecured_token
from broker.testing.wire import Conn, create_topic, metadata, request_bytes
from client.protocol.api import SUPPORTED_VERSIONS, ApiKey
from client.protocol.messages import REQUESTS
from client.security.sasl import OAuthBearerClient, PlainClient, ScramClient
from tests.protocol.strategies import message_values

SENTINEL_CREATE = "sasl-fuzz-created"
SENTINEL_AUTO = "sasl-fuzz-auto-created"
TARGET = "sasl-fuzz-target"
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI", "", "plain", "SCRAM-SHA-1",
              "OAUTHBEARER\x00"]
#: other APIs interleaved: read-only or confined to TARGET (after a login they are served)
OTHER_APIS = [ApiKey.METADATA, ApiKey.LIST_OFFSETS, ApiKey.FIND_COORDINATOR, ApiKey.LIST_GROUPS,
              ApiKey.DESCRIBE_GROUPS, ApiKey.DESCRIBE_CLUSTER, ApiKey.OFFSET_FETCH, ApiKey.DESCRIBE_CONFIGS,
              ApiKey.HEARTBEAT, ApiKey.INIT_PRODUCER_ID]


@pytest.fixture(scope="module")
def fuzz(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, SecureSetup]]:
    b, setup = secure_broker(str(tmp_path_factory.mktemp("sasl-fuzz")), "connection.failed.authentication.delay.ms=0",
                             "connections.max.reauth.ms=60000", "auto.create.topics.enable=true",
                             log_level="WARNING")
    try:
        with Conn(b.listener_ports["PLAINTEXT"]) as c:
            assert c.call(ApiKey.CREATE_TOPICS, 5, create_topic(TARGET))["topics"][0]["error_code"] == 0
        yield b, setup
    finally:
        rc = b.stop()
        log = b.log_text()
        assert rc == 0, f"broker exited with {rc}:\n{log[-5000:]}"


# ------------------------------------------------------------------ strategies

cids = st.integers(-(1 << 31), (1 << 31) - 1)


def framed(raw: bytes) -> bytes:
    return struct.pack(">i", len(raw)) + raw


@st.composite
def api_versions(draw: st.DrawFn) -> bytes:
    version = draw(st.integers(-1, 5))
    body = {"client_software_name": "fuzz", "client_software_version": "1"}
    if 0 <= version <= 4 and draw(st.booleans()):
        return request_bytes(ApiKey.API_VERSIONS, version, draw(cids), body if version >= 3 else {})
    return request_bytes(ApiKey.API_VERSIONS, version, draw(cids), draw(st.binary(max_size=20)))


@st.composite
def sasl_handshake(draw: st.DrawFn) -> bytes:
    version = draw(st.sampled_from([0, 1, 1, 2, -1]))
    mechanism = draw(st.sampled_from(MECHANISMS) | st.text(max_size=12))
    if version in (0, 1):
        return request_bytes(ApiKey.SASL_HANDSHAKE, version, draw(cids), {"mechanism": mechanism})
    return request_bytes(ApiKey.SASL_HANDSHAKE, version, draw(cids), draw(st.binary(max_size=20)))


def _scram_first(user: str) -> bytes:
    return ScramClient("SCRAM-SHA-256", user, "x", nonce="fuzznonce").first()


BAD_TOKENS = [
    PlainClient("alice", "wrong").first(), PlainClient("mallory", "x").first(), b"\x00alice\x00", b"alice",
    _scram_first("alice"), _scram_first("mallory"), b"c=biws,r=fuzznonce,p=AAAA", b"p=tls-unique,,n=alice,r=x",
    OAuthBearerClient(unsecured_token("alice", lifetime_s=-10)).first(), b"n,,\x01auth=Bearer x.y.z\x01\x01",
    b"\x01", b"", b"\xff" * 8,
]


@st.composite
def bad_token(draw: st.DrawFn) -> bytes:
    return draw(st.sampled_from(BAD_TOKENS) | st.binary(max_size=64))


@st.composite
def sasl_authenticate(draw: st.DrawFn) -> bytes:
    version = draw(st.sampled_from([0, 1, 2, 2, 3, -1]))
    token = draw(bad_token())
    if 0 <= version <= 2:
        return request_bytes(ApiKey.SASL_AUTHENTICATE, version, draw(cids), {"auth_bytes": token})
    return request_bytes(ApiKey.SASL_AUTHENTICATE, version, draw(cids), draw(st.binary(max_size=20)))


@st.composite
def raw_token_frame(draw: st.DrawFn) -> bytes:
    """A frame as v0's raw token (or anything that is not a request header)."""
    return framed(draw(bad_token()))


@st.composite
def junk(draw: st.DrawFn) -> bytes:
    size = draw(st.sampled_from([0, -1, 1, 3, 1 << 20, (1 << 31) - 1]) | st.integers(-10, 100))
    return struct.pack(">i", size) + draw(st.binary(max_size=40))


@st.composite
def other_request(draw: st.DrawFn) -> bytes:
    key = draw(st.sampled_from(OTHER_APIS))
    lo, hi = SUPPORTED_VERSIONS[key]
    version = draw(st.integers(lo, hi))
    try:
        return request_bytes(key, version, draw(cids), draw(message_values(REQUESTS[key], version)))
    except (ValueError, OverflowError, struct.error):  # a drawn value the encoder refuses
        return request_bytes(ApiKey.METADATA, 12, draw(cids), metadata([TARGET], auto_create=False))


def sentinels() -> bytes:
    return (request_bytes(ApiKey.CREATE_TOPICS, 5, 77, create_topic(SENTINEL_CREATE)) +
            request_bytes(ApiKey.METADATA, 12, 78, metadata([SENTINEL_AUTO], auto_create=True)))


@st.composite
def good_login(draw: st.DrawFn) -> bytes:
    """A complete PLAIN login, v1 (SaslAuthenticate) or v0 (a raw token frame)."""
    token = PlainClient("alice", "alice-secret").first()
    if draw(st.booleans()):
        return (request_bytes(ApiKey.SASL_HANDSHAKE, 1, 1, {"mechanism": "PLAIN"}) +
                request_bytes(ApiKey.SASL_AUTHENTICATE, draw(st.integers(0, 2)), 2, {"auth_bytes": token}))
    return request_bytes(ApiKey.SASL_HANDSHAKE, 0, 1, {"mechanism": "PLAIN"}) + framed(token)


@st.composite
def sequences(draw: st.DrawFn) -> tuple[str, bool, bytes]:
    listener = draw(st.sampled_from(["SASL_PLAINTEXT", "SASL_SSL"]))
    may_login = draw(st.booleans())
    steps = [api_versions(), sasl_handshake(), sasl_authenticate(), raw_token_frame(), junk(), other_request()]
    if may_login:
        steps.append(good_login())
    parts = draw(st.lists(st.one_of(*steps), min_size=1, max_size=8))
    data = b"".join(parts)
    if not may_login:
        data += sentinels()
    return listener, may_login, data


# ------------------------------------------------------------------ the exchange and checks


def exchange(b: BrokerProcess, setup: SecureSetup, listener: str, data: bytes) -> None:
    """Send ``data`` on a fresh connection, half-close, read until the broker closes."""
    sock: Any = socket.create_connection(("127.0.0.1", b.listener_ports[listener]), timeout=5)
    try:
        if listener == "SASL_SSL":
            sock = ssl.create_default_context(cafile=setup.ca_pem).wrap_socket(sock, server_hostname="127.0.0.1")
        try:
            sock.sendall(data)
            socket.socket.shutdown(sock, socket.SHUT_WR)  # TCP's half-close, under TLS too
        except OSError:
            return  # the broker may already have closed on the first bad frame
        deadline = time.monotonic() + 5
        while True:
            try:
                if not sock.recv(1 << 16):
                    return
            except (ConnectionResetError, ssl.SSLError, OSError):
                return
            assert time.monotonic() < deadline, "the broker neither answered nor closed"
    finally:
        sock.close()


def topic_exists(c: Conn, name: str) -> bool:
    (t,) = c.call(ApiKey.METADATA, 12, metadata([name], auto_create=False))["topics"]
    return bool(t["error_code"] == 0)


def good_client_served(b: BrokerProcess) -> None:
    with Conn(b.listener_ports["SASL_PLAINTEXT"]) as c:
        assert c.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})["error_code"] == 0
        r = c.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": PlainClient("alice", "alice-secret").first()})
        assert r["error_code"] == 0
        assert c.call(ApiKey.METADATA, 12, metadata(None))["brokers"]


@pytest.mark.slow
@settings(max_examples=1500, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])
@given(case=sequences())
def test_random_sasl_sequences_never_hurt_the_broker(fuzz, case: tuple[str, bool, bytes]) -> None:
    b, setup = fuzz
    listener, _, data = case
    exchange(b, setup, listener, data)
    assert b.proc is not None and b.proc.poll() is None, b.log_text()[-5000:]
    with Conn(b.listener_ports["PLAINTEXT"]) as c:
        assert not topic_exists(c, SENTINEL_CREATE), f"CreateTopics served before a login on {listener}: {data!r}"
        assert not topic_exists(c, SENTINEL_AUTO), f"Metadata served before a login on {listener}: {data!r}"
    good_client_served(b)


def test_after_fuzzing_the_broker_serves_and_logged_no_traceback(fuzz) -> None:
    b, _ = fuzz
    good_client_served(b)
    assert "Traceback" not in b.log_text(), b.log_text()[-5000:]
