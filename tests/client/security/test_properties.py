"""client/security/properties.py: Kafka's client security properties to client options."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
from pathlib import Path

import pytest
import trustme
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from client.security.properties import (
    UnsecuredTokenProvider,
    check_security_properties,
    parse_jaas_config,
    parse_properties,
    security_options,
)
from client.security.sasl import OAuthBearerClient

PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";'


def test_parse_properties() -> None:
    text = ("# comment\n! also\n  a=1\nb : two words \nc\\=d=3\nlong=x\\\n    y\nempty=\nsp value\n"
            "u=\\u0041\\t\ndup=1\ndup=2\n")
    assert parse_properties(text) == {"a": "1", "b": "two words ", "c=d": "3", "long": "xy", "empty": "",
                                      "sp": "value", "u": "A\t", "dup": "2"}


def test_parse_jaas() -> None:
    j = parse_jaas_config(PLAIN_JAAS)
    assert j.module.endswith("PlainLoginModule") and j.flag == "required"
    assert j.options == {"username": "alice", "password": "alice-secret"}
    assert "alice-secret" not in repr(j)
    j = parse_jaas_config('m.Scram Required username=bob password="a \\"quoted\\" ; pass";')
    assert j.options == {"username": "bob", "password": 'a "quoted" ; pass'}


@pytest.mark.parametrize("text", ["", "m required", "m required a=1", "m maybe a=1;", "m required a 1;",
                                  "m required a=1; n required b=2;"])
def test_parse_jaas_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_jaas_config(text)


def test_plaintext_by_default() -> None:
    assert security_options({}) == {"security_protocol": "PLAINTEXT"}


@pytest.mark.parametrize("mechanism,module", [("PLAIN", "plain.PlainLoginModule"),
                                              ("SCRAM-SHA-512", "scram.ScramLoginModule")])
def test_sasl_plaintext_password(mechanism: str, module: str) -> None:
    jaas = f'org.apache.kafka.common.security.{module} required username="alice" password="alice-secret";'
    props = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism, "sasl.jaas.config": jaas}
    check_security_properties(props)
    assert security_options(props) == {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": mechanism,
                                       "sasl_plain_username": "alice", "sasl_plain_password": "alice-secret"}


@pytest.mark.parametrize("props,match", [
    ({"security.protocol": "TLS"}, "PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": PLAIN_JAAS}, "GSSAPI"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "sasl.jaas.config"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256", "sasl.jaas.config": PLAIN_JAAS},
     "ScramLoginModule"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
      "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required username=a;"}, "password"),
    ({"security.protocol": "SSL", "ssl.truststore.location": "/x.jks", "ssl.truststore.type": "JKS"}, "PKCS12"),
    ({"ssl.cipher.suites": "x"}, "ssl.cipher.suites"),
])
def test_refused(props: dict[str, str], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        check_security_properties(props)
    with pytest.raises(ValueError, match=match):
        security_options(props)


def _jwt_parts(token: str) -> tuple[dict, dict, str]:
    h, c, s = token.split(".")
    pad = lambda x: base64.urlsafe_b64decode(x + "=" * (-len(x) % 4))
    return json.loads(pad(h)), json.loads(pad(c)), s


def test_unsecured_oauthbearer_token() -> None:
    jaas = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
            'unsecuredLoginStringClaim_sub="alice" unsecuredLoginListClaim_scope="|read|write" '
            'unsecuredLoginNumberClaim_n="2" unsecuredLoginExtension_traceId="123";')
    opts = security_options({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
                             "sasl.jaas.config": jaas})
    provider = opts["sasl_oauth_token_provider"]
    assert isinstance(provider, UnsecuredTokenProvider) and opts["sasl_mechanism"] == "OAUTHBEARER"
    token = asyncio.run(provider.token())
    header, claims, signature = _jwt_parts(token)
    assert header == {"alg": "none"} and signature == ""
    assert claims["sub"] == "alice" and claims["scope"] == ["read", "write"] and claims["n"] == 2.0
    assert claims["exp"] == pytest.approx(claims["iat"] + 3600)
    assert provider.extensions() == {"traceId": "123"}
    OAuthBearerClient(token, provider.extensions())  # a valid b64token


@pytest.mark.parametrize("options,match", [({}, "StringClaim_sub"),
                                           ({"unsecuredLoginStringClaim_sub": "a",
                                             "unsecuredLoginNumberClaim_exp": "1"}, "exp"),
                                           ({"unsecuredLoginStringClaim_sub": "a",
                                             "unsecuredLoginExtension_auth": "x"}, "auth")])
def test_unsecured_token_refused(options: dict[str, str], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        UnsecuredTokenProvider(options)


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def test_ssl_pem_stores(ca: trustme.CA, tmp_path: Path) -> None:
    trust = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(trust))
    client = ca.issue_cert("client@example")
    keystore = tmp_path / "client.pem"
    keystore.write_bytes(client.private_key_pem.bytes() + b"".join(c.bytes() for c in client.cert_chain_pems))
    props = {"security.protocol": "SSL", "ssl.truststore.location": str(trust), "ssl.truststore.type": "PEM",
             "ssl.keystore.location": str(keystore), "ssl.keystore.type": "PEM"}
    check_security_properties(props)
    ctx = security_options(props)["ssl_context"]
    assert isinstance(ctx, ssl.SSLContext) and ctx.check_hostname and ctx.verify_mode == ssl.CERT_REQUIRED
    assert len(ctx.get_ca_certs()) == 1
    # no type given: PEM recognised; hostname checks off with the empty algorithm
    ctx = security_options({"security.protocol": "SSL", "ssl.truststore.location": str(trust),
                            "ssl.endpoint.identification.algorithm": ""})["ssl_context"]
    assert not ctx.check_hostname and ctx.verify_mode == ssl.CERT_REQUIRED


def test_ssl_pkcs12_stores(ca: trustme.CA, tmp_path: Path) -> None:
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem.bytes())
    trust = tmp_path / "trust.p12"
    trust.write_bytes(pkcs12.serialize_key_and_certificates(
        None, None, None, [ca_cert], serialization.BestAvailableEncryption(b"trust-pw")))
    client = ca.issue_cert("client@example")
    key = serialization.load_pem_private_key(client.private_key_pem.bytes(), None)
    cert = x509.load_pem_x509_certificate(client.cert_chain_pems[0].bytes())
    keystore = tmp_path / "client.p12"
    keystore.write_bytes(pkcs12.serialize_key_and_certificates(
        b"client", key, cert, None, serialization.BestAvailableEncryption(b"key-pw")))  # type: ignore[arg-type]
    props = {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.jaas.config": PLAIN_JAAS,
             "ssl.truststore.location": str(trust), "ssl.truststore.type": "PKCS12",
             "ssl.truststore.password": "trust-pw", "ssl.keystore.location": str(keystore),
             "ssl.keystore.type": "PKCS12", "ssl.keystore.password": "key-pw"}
    opts = security_options(props)
    assert len(opts["ssl_context"].get_ca_certs()) == 1 and opts["sasl_plain_username"] == "alice"
    with pytest.raises(ValueError, match="wrong password"):
        security_options({**props, "ssl.keystore.password": "nope"})
