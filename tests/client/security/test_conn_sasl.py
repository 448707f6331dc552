"""client/conn.py's login against a fake SASL broker (tests/client/security/fake_broker.py):
each mechanism, TLS, the broker's errors surfacing with their messages, and KIP-368
re-authentication on the same connection with no other request in between."""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

import pytest
import trustme

from client.conn import BrokerConnection
from client.errors import KafkaConnectionError, SaslAuthenticationFailedError, UnsupportedSaslMechanismError
from client.protocol.api import ApiKey
from client.security.config import SecurityConfig
from tests.client.security.fake_broker import FakeSaslBroker


class Tokens:
    def __init__(self, *tokens: str, extensions: dict[str, str] | None = None) -> None:
        self.tokens = list(tokens)
        self._extensions = extensions

    async def token(self) -> str:
        return self.tokens.pop(0) if len(self.tokens) > 1 else self.tokens[0]

    def extensions(self) -> dict[str, str]:
        return self._extensions or {}


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def _contexts(ca: trustme.CA) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server)
    client = ssl.create_default_context()
    ca.configure_trust(client)
    return server, client


async def _connect(b: FakeSaslBroker, **options: Any) -> BrokerConnection:
    return await BrokerConnection.connect("127.0.0.1", b.port, security=SecurityConfig(**options))


async def _metadata(conn: BrokerConnection) -> dict[str, Any]:
    return await conn.request(ApiKey.METADATA, conn.pick_version(ApiKey.METADATA), {"topics": []})


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
async def test_login_with_a_password(mechanism: str) -> None:
    async with FakeSaslBroker() as b:
        conn = await _connect(b, security_protocol="SASL_PLAINTEXT", sasl_mechanism=mechanism,
                              sasl_plain_username="alice", sasl_plain_password="alice-secret")
        assert (await _metadata(conn))["cluster_id"] == "fake"
        assert b.logins == [f"{mechanism}:alice"]
        assert conn.session_lifetime_ms == 0
        await conn.close()


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
async def test_wrong_password_raises_the_brokers_message(mechanism: str) -> None:
    async with FakeSaslBroker() as b:
        with pytest.raises(SaslAuthenticationFailedError, match="authentication with 127.0.0.1:.* failed: Authentication failed"):
            await _connect(b, security_protocol="SASL_PLAINTEXT", sasl_mechanism=mechanism,
                           sasl_plain_username="alice", sasl_plain_password="wrong")


async def test_unsupported_mechanism_lists_the_brokers() -> None:
    async with FakeSaslBroker(mechanisms=("SCRAM-SHA-512",)) as b:
        with pytest.raises(UnsupportedSaslMechanismError, match="does not enable SASL mechanism PLAIN; it enables SCRAM-SHA-512"):
            await _connect(b, security_protocol="SASL_PLAINTEXT", sasl_plain_username="alice",
                           sasl_plain_password="alice-secret")


async def test_forged_server_signature_is_refused() -> None:
    async with FakeSaslBroker() as b:
        b.forge_signature = b"\0" * 32
        with pytest.raises(SaslAuthenticationFailedError, match="signature"):
            await _connect(b, security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
                           sasl_plain_username="alice", sasl_plain_password="alice-secret")


async def test_oauthbearer_with_extensions() -> None:
    async with FakeSaslBroker() as b:
        conn = await _connect(b, security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
                              sasl_oauth_token_provider=Tokens("tok.en.", extensions={"traceId": "1"}))
        assert b.logins == ["OAUTHBEARER:tok.en."]
        assert b.oauth_messages == ["n,,\x01auth=Bearer tok.en.\x01traceId=1\x01\x01"]
        await conn.close()


async def test_oauthbearer_refused_token() -> None:
    async with FakeSaslBroker() as b:
        with pytest.raises(SaslAuthenticationFailedError, match="invalid_token: the token is bad"):
            await _connect(b, security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
                           sasl_oauth_token_provider=Tokens("bad"))


async def test_tls(ca: trustme.CA) -> None:
    server, client = _contexts(ca)
    async with FakeSaslBroker(ssl_context=server) as b:
        conn = await _connect(b, security_protocol="SASL_SSL", ssl_context=client, sasl_mechanism="SCRAM-SHA-512",
                              sasl_plain_username="alice", sasl_plain_password="alice-secret")
        assert conn._transport is not None and conn._transport.get_extra_info("ssl_object") is not None
        assert (await _metadata(conn))["cluster_id"] == "fake"
        await conn.close()
        # SSL alone: no login; the fake broker refuses requests before one, so ApiVersions only
        conn = await _connect(b, security_protocol="SSL", ssl_context=client)
        assert conn.api_versions
        await conn.close()


async def test_tls_untrusted_certificate(ca: trustme.CA) -> None:
    server, _ = _contexts(ca)
    async with FakeSaslBroker(ssl_context=server) as b:
        with pytest.raises(KafkaConnectionError, match="not trusted"):
            await _connect(b, security_protocol="SSL", ssl_context=ssl.create_default_context())


async def test_reauthentication_before_the_session_expires() -> None:
    """With a 300 ms session the connection logs in again about every 270 ms while requests
    keep flowing; none of them is written between a handshake and the end of its login."""
    async with FakeSaslBroker(session_lifetime_ms=300) as b:
        conn = await _connect(b, security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
                              sasl_plain_username="alice", sasl_plain_password="alice-secret")
        assert conn.session_lifetime_ms == 300
        loop = asyncio.get_running_loop()
        end = loop.time() + 1.0
        answered = 0

        async def flow() -> None:
            nonlocal answered
            while loop.time() < end:
                await _metadata(conn)
                answered += 1

        await asyncio.gather(*(flow() for _ in range(4)))
        assert conn.reauthentications >= 2
        assert b.violations == []
        assert conn.connected and answered > 10
        assert b.logins == ["SCRAM-SHA-256:alice"] * (1 + conn.reauthentications)
        await conn.close()


async def test_reauthentication_asks_the_token_provider_again() -> None:
    async with FakeSaslBroker(session_lifetime_ms=200) as b:
        conn = await _connect(b, security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
                              sasl_oauth_token_provider=Tokens("one", "two"))
        await asyncio.sleep(0.3)
        assert b.logins[:2] == ["OAUTHBEARER:one", "OAUTHBEARER:two"]
        assert conn.connected
        await conn.close()


async def test_failed_reauthentication_fails_the_connection() -> None:
    async with FakeSaslBroker(session_lifetime_ms=200) as b:
        conn = await _connect(b, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                              sasl_plain_username="alice", sasl_plain_password="alice-secret")
        b.users["alice"] = "changed"
        await asyncio.sleep(0.3)
        assert not conn.connected
        with pytest.raises(SaslAuthenticationFailedError):
            await _metadata(conn)
        await conn.close()


async def test_admin_logs_in_through_its_cluster(ca: trustme.CA) -> None:
    """The clients' options reach every connection their cluster makes."""
    from client.admin import Admin

    server, client = _contexts(ca)
    async with FakeSaslBroker(ssl_context=server) as b:
        admin = Admin(f"127.0.0.1:{b.port}", security_protocol="SASL_SSL", ssl_context=client,
                      sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="alice", sasl_plain_password="alice-secret")
        await admin.start()
        assert b.logins == ["SCRAM-SHA-512:alice"] and ApiKey.METADATA in b.requests
        await admin.close()
