"""broker/security/ssl_factory.py: server contexts from Kafka's ``ssl.*`` properties — PEM
keystore file, inline PEM key and chain, PKCS12 with a password, an encrypted PEM key with
``ssl.key.password``, wrong passwords, a JKS file refused, truststores, protocols and cipher
names (IANA's spelling mapped to OpenSSL's). Each context is checked by a TLS handshake in
memory with a client that trusts the test CA."""

from __future__ import annotations

import ssl

import pytest
import trustme
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509 import load_pem_x509_certificate

from broker.config import BROKER_DEFAULTS
from broker.security import ssl_factory
from broker.security.ssl_factory import SslConfigError, _openssl_cipher

LISTENER = "SSL"


def server_context(props: dict[str, str], listener: str) -> ssl.SSLContext:
    """The context for ``props`` over the broker's defaults (as BrokerConfig hands them)."""
    return ssl_factory.server_context({**BROKER_DEFAULTS, **props}, listener)


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def cert(ca: trustme.CA) -> trustme.LeafCert:
    return ca.issue_cert("127.0.0.1", "localhost")


def handshake(server: ssl.SSLContext, ca: trustme.CA, client_cert: trustme.LeafCert | None = None) -> ssl.SSLObject:
    """A client/server TLS handshake through memory BIOs; the server's SSLObject."""
    client_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ca.configure_trust(client_ctx)
    if client_cert is not None:
        client_cert.configure_cert(client_ctx)
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_ctx.wrap_bio(c_in, c_out, server_hostname="localhost")
    srv = server.wrap_bio(s_in, s_out, server_side=True)
    done = {"c": False, "s": False}
    for _ in range(20):
        for name, obj in (("c", client), ("s", srv)):
            if not done[name]:
                try:
                    obj.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if all(done.values()):
            # TLS 1.3: the server checks the client certificate once it reads the client's Finished
            srv.write(b"x")
            c_in.write(s_out.read())
            assert client.read(1) == b"x"
            return srv
    raise AssertionError("handshake did not finish")


def test_pem_keystore_file(tmp_path, ca, cert) -> None:
    path = tmp_path / "server.pem"
    path.write_bytes(cert.private_key_pem.bytes() + b"".join(c.bytes() for c in cert.cert_chain_pems))
    ctx = server_context({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(path)}, LISTENER)
    handshake(ctx, ca)


def test_inline_pem_key_and_chain(ca, cert) -> None:
    props = {"ssl.keystore.type": "PEM", "ssl.keystore.key": cert.private_key_pem.bytes().decode(),
             "ssl.keystore.certificate.chain": b"".join(c.bytes() for c in cert.cert_chain_pems).decode()}
    handshake(server_context(props, LISTENER), ca)
    with pytest.raises(SslConfigError, match="go together"):
        server_context({"ssl.keystore.key": props["ssl.keystore.key"]}, LISTENER)
    with pytest.raises(SslConfigError, match="ssl.keystore.location cannot be set with ssl.keystore.key"):
        server_context({**props, "ssl.keystore.location": "/nonexistent"}, LISTENER)


def _key_and_cert(cert: trustme.LeafCert):
    key = serialization.load_pem_private_key(cert.private_key_pem.bytes(), None)
    return key, load_pem_x509_certificate(cert.cert_chain_pems[0].bytes())


def test_pkcs12_keystore_with_password(tmp_path, ca, cert) -> None:
    key, x509 = _key_and_cert(cert)
    data = pkcs12.serialize_key_and_certificates(b"server", key, x509, None,
                                                 serialization.BestAvailableEncryption(b"store-pass"))
    path = tmp_path / "server.p12"
    path.write_bytes(data)
    props = {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(path), "ssl.keystore.password": "store-pass"}
    handshake(server_context(props, LISTENER), ca)
    # the type is taken from the content: a PKCS12 file declared JKS (Kafka's default) is read too
    handshake(server_context({**props, "ssl.keystore.type": "JKS"}, LISTENER), ca)
    with pytest.raises(SslConfigError, match="ssl.keystore.location: cannot open the PKCS12 file"):
        server_context({**props, "ssl.keystore.password": "wrong"}, LISTENER)


def test_pkcs12_without_a_key_is_refused(tmp_path, cert) -> None:
    _, x509 = _key_and_cert(cert)
    path = tmp_path / "certs-only.p12"
    path.write_bytes(pkcs12.serialize_key_and_certificates(None, None, None, [x509],
                                                           serialization.NoEncryption()))
    with pytest.raises(SslConfigError, match="holds no private key and certificate"):
        server_context({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(path)}, LISTENER)


def test_encrypted_pem_key_with_ssl_key_password(tmp_path, ca, cert) -> None:
    key, _ = _key_and_cert(cert)
    encrypted = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.BestAvailableEncryption(b"key-pass"))
    path = tmp_path / "server.pem"
    path.write_bytes(encrypted + b"".join(c.bytes() for c in cert.cert_chain_pems))
    props = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(path), "ssl.key.password": "key-pass"}
    handshake(server_context(props, LISTENER), ca)
    with pytest.raises(SslConfigError, match="ssl.keystore.location: cannot load .*wrong ssl.key.password"):
        server_context({**props, "ssl.key.password": "nope"}, LISTENER)


def test_jks_file_is_refused_with_how_to_convert(tmp_path) -> None:
    path = tmp_path / "server.jks"
    path.write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02" + b"\x00" * 64)
    with pytest.raises(SslConfigError, match="a JKS keystore cannot be read here; convert it to PKCS12"):
        server_context({"ssl.keystore.location": str(path)}, LISTENER)


def test_missing_or_non_pem_keystore(tmp_path) -> None:
    with pytest.raises(SslConfigError, match="ssl.keystore.location: cannot read"):
        server_context({"ssl.keystore.location": str(tmp_path / "missing.pem")}, LISTENER)
    junk = tmp_path / "junk.pem"
    junk.write_bytes(b"not a certificate")
    with pytest.raises(SslConfigError, match="ssl.keystore.location: not a PEM file"):
        server_context({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(junk)}, LISTENER)


def test_listener_prefixed_properties_win(tmp_path, ca, cert) -> None:
    path = tmp_path / "server.pem"
    path.write_bytes(cert.private_key_pem.bytes() + b"".join(c.bytes() for c in cert.cert_chain_pems))
    props = {"ssl.keystore.location": "/nonexistent", "listener.name.ssl.ssl.keystore.location": str(path)}
    handshake(server_context(props, LISTENER), ca)


def test_client_auth_required_with_pem_and_pkcs12_truststores(tmp_path, ca, cert) -> None:
    server_pem = tmp_path / "server.pem"
    server_pem.write_bytes(cert.private_key_pem.bytes() + b"".join(c.bytes() for c in cert.cert_chain_pems))
    ca_pem = tmp_path / "ca.pem"
    ca_pem.write_bytes(ca.cert_pem.bytes())
    base = {"ssl.keystore.location": str(server_pem), "ssl.client.auth": "required",
            "ssl.truststore.location": str(ca_pem)}
    client = ca.issue_cert("alice@clients", common_name="alice")
    srv = handshake(server_context(base, LISTENER), ca, client)
    assert srv.getpeercert(binary_form=True)

    ca_x509 = load_pem_x509_certificate(ca.cert_pem.bytes())
    p12 = tmp_path / "trust.p12"
    p12.write_bytes(pkcs12.serialize_key_and_certificates(None, None, None, [ca_x509],
                                                          serialization.BestAvailableEncryption(b"tp")))
    ctx = server_context({**base, "ssl.truststore.location": str(p12), "ssl.truststore.password": "tp"}, LISTENER)
    handshake(ctx, ca, client)
    inline = server_context({**base, "ssl.truststore.location": "",
                             "ssl.truststore.certificates": ca.cert_pem.bytes().decode()}, LISTENER)
    handshake(inline, ca, client)

    stranger = trustme.CA().issue_cert("mallory@x", common_name="mallory")
    with pytest.raises(ssl.SSLError):
        handshake(server_context(base, LISTENER), ca, stranger)
    with pytest.raises(ssl.SSLError):  # required: no certificate at all fails too
        handshake(server_context(base, LISTENER), ca)
    # requested: a client without a certificate is let in
    handshake(server_context({**base, "ssl.client.auth": "requested"}, LISTENER), ca)
    with pytest.raises(SslConfigError, match="ssl.client.auth: 'always' is not one of"):
        server_context({**base, "ssl.client.auth": "always"}, LISTENER)


def test_enabled_protocols(tmp_path, ca, cert) -> None:
    path = tmp_path / "server.pem"
    path.write_bytes(cert.private_key_pem.bytes() + b"".join(c.bytes() for c in cert.cert_chain_pems))
    props = {"ssl.keystore.location": str(path)}
    srv = handshake(server_context({**props, "ssl.enabled.protocols": "TLSv1.2"}, LISTENER), ca)
    assert srv.version() == "TLSv1.2"
    srv = handshake(server_context({**props, "ssl.enabled.protocols": "TLSv1.2,TLSv1.3"}, LISTENER), ca)
    assert srv.version() == "TLSv1.3"
    with pytest.raises(SslConfigError, match="ssl.enabled.protocols: TLSv1.1"):
        server_context({**props, "ssl.enabled.protocols": "TLSv1.1,TLSv1.2"}, LISTENER)
    with pytest.raises(SslConfigError, match="ssl.enabled.protocols: none given"):
        server_context({**props, "ssl.enabled.protocols": " "}, LISTENER)


@pytest.mark.parametrize("iana, openssl", [
    ("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA-AES256-GCM-SHA384"),
    ("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256"),
    ("TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA-CHACHA20-POLY1305"),
    ("TLS_DHE_RSA_WITH_AES_256_GCM_SHA384", "DHE-RSA-AES256-GCM-SHA384"),
    ("TLS_RSA_WITH_AES_128_GCM_SHA256", "AES128-GCM-SHA256"),
    ("ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384"),  # already OpenSSL's
    ("TLS_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"),  # a TLS 1.3 name: no _WITH_
])
def test_cipher_names_iana_to_openssl(iana: str, openssl: str) -> None:
    assert _openssl_cipher(iana) == openssl


def test_cipher_suites_narrow_tls12(tmp_path, ca, cert) -> None:
    path = tmp_path / "server.pem"
    path.write_bytes(cert.private_key_pem.bytes() + b"".join(c.bytes() for c in cert.cert_chain_pems))
    props = {"ssl.keystore.location": str(path), "ssl.enabled.protocols": "TLSv1.2"}
    # trustme's keys are EC: an ECDSA suite
    srv = handshake(server_context({**props, "ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"},
                                   LISTENER), ca)
    cipher = srv.cipher()
    assert cipher is not None and cipher[0] == "ECDHE-ECDSA-AES128-GCM-SHA256"
    with pytest.raises(SslConfigError, match="ssl.cipher.suites: none of TLS_FOO_WITH_BAR is available"):
        server_context({**props, "ssl.cipher.suites": "TLS_FOO_WITH_BAR"}, LISTENER)
