"""client/security/config.py: the security options' checks, and their way down from Producer,
Consumer and Admin (and the blocking wrappers) to the cluster's connections."""

from __future__ import annotations

import ssl

import pytest

from client.admin import Admin
from client.consumer import Consumer
from client.producer import Producer
from client.security.config import SecurityConfig
from client.security.sasl import OAuthBearerClient, PlainClient, ScramClient


class Provider:
    async def token(self) -> str:
        return "tok"

    async def extensions(self) -> dict[str, str]:
        return {"traceId": "7"}


def test_default_is_plaintext() -> None:
    c = SecurityConfig()
    assert c.security_protocol == "PLAINTEXT" and c.sasl_mechanism == "PLAIN"
    assert not c.use_ssl and not c.use_sasl


@pytest.mark.parametrize("options,match", [
    ({"security_protocol": "TLS"}, "PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
    ({"security_protocol": "SSL"}, "needs an ssl_context"),
    ({"security_protocol": "SASL_SSL", "sasl_plain_username": "a", "sasl_plain_password": "b"}, "ssl_context"),
    ({"security_protocol": "SSL", "ssl_context": "yes"}, "ssl.SSLContext"),
    ({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "GSSAPI"}, "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER"),
    ({"security_protocol": "SASL_PLAINTEXT"}, "sasl_plain_username"),
    ({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-256", "sasl_plain_username": "a"}, "password"),
    ({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "OAUTHBEARER"}, "token_provider"),
])
def test_invalid_options(options: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        SecurityConfig(**options)


def test_password_not_in_repr() -> None:
    c = SecurityConfig("SASL_PLAINTEXT", sasl_plain_username="alice", sasl_plain_password="alice-secret")
    assert "alice-secret" not in repr(c)


async def test_mechanisms() -> None:
    plain = await SecurityConfig("SASL_PLAINTEXT", sasl_plain_username="a", sasl_plain_password="b").new_mechanism()
    assert isinstance(plain, PlainClient)
    scram = await SecurityConfig("SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="a",
                                 sasl_plain_password="b").new_mechanism()
    assert isinstance(scram, ScramClient) and scram.name == "SCRAM-SHA-512"
    oauth = await SecurityConfig("SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
                                 sasl_oauth_token_provider=Provider()).new_mechanism()
    assert isinstance(oauth, OAuthBearerClient)
    assert oauth.first() == b"n,,\x01auth=Bearer tok\x01traceId=7\x01\x01"


@pytest.mark.parametrize("make", [Producer, Consumer, Admin])
def test_clients_take_the_options(make) -> None:
    ctx = ssl.create_default_context()
    client = make("127.0.0.1:1", security_protocol="SASL_SSL", ssl_context=ctx, sasl_mechanism="SCRAM-SHA-256",
                  sasl_plain_username="alice", sasl_plain_password="alice-secret")
    assert client._cluster.security == SecurityConfig("SASL_SSL", ctx, "SCRAM-SHA-256", "alice", "alice-secret")
    with pytest.raises(ValueError, match="ssl_context"):
        make("127.0.0.1:1", security_protocol="SSL")
