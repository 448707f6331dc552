"""client/security/sasl.py: the client's mechanisms against RFC examples and hand-built servers."""

from __future__ import annotations

import base64

import pytest

from client.errors import SaslAuthenticationFailedError
from client.security import scram
from client.security.sasl import OAuthBearerClient, PlainClient, ScramClient

# RFC 7677 §3: SCRAM-SHA-256 with user "user", password "pencil"
RFC_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
RFC_CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def test_plain_is_one_message() -> None:
    m = PlainClient("alice", "alice-secret")
    assert m.first() == b"\0alice\0alice-secret"
    assert not m.complete
    assert m.step(b"") is None and m.complete
    assert "secret" not in repr(m)


@pytest.mark.parametrize("user,password", [("", "x"), ("a\0b", "x"), ("a", "x\0")])
def test_plain_refuses_bad_credentials(user: str, password: str) -> None:
    with pytest.raises(ValueError):
        PlainClient(user, password)


def test_scram_sha_256_rfc7677_exchange() -> None:
    m = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=RFC_NONCE)
    assert m.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert m.step(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    assert not m.complete
    assert m.step(RFC_SERVER_FINAL) is None
    assert m.complete


def test_scram_forged_server_signature_is_refused() -> None:
    m = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=RFC_NONCE)
    m.first()
    m.step(RFC_SERVER_FIRST)
    forged = b"v=" + base64.b64encode(b"\0" * 32)
    with pytest.raises(SaslAuthenticationFailedError, match="signature"):
        m.step(forged)
    assert not m.complete


@pytest.mark.parametrize("challenge,match", [
    (b"e=invalid-proof", "invalid-proof"),
    (b"r=other,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "nonce"),
    (b"r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "nonce"),
    (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1000", "iterations"),
    (b"r=rOprNGfwEbeRWgbNEkqOxyz,i=4096", "lacks"),
    (b"garbage", "invalid"),
])
def test_scram_bad_server_first(challenge: bytes, match: str) -> None:
    m = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=RFC_NONCE)
    m.first()
    with pytest.raises(SaslAuthenticationFailedError, match=match):
        m.step(challenge)


def test_scram_server_final_error_is_raised_with_its_message() -> None:
    m = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=RFC_NONCE)
    m.first()
    m.step(RFC_SERVER_FIRST)
    with pytest.raises(SaslAuthenticationFailedError, match="other-error"):
        m.step(b"e=other-error")


def test_scram_sha_512_against_a_server_built_from_a_credential() -> None:
    """A SCRAM-SHA-512 server computed from the stored credential alone accepts the proof."""
    salt = b"0123456789abcdef"
    cred = scram.make_credential("SCRAM-SHA-512", b"alice-secret", salt, 4096)
    m = ScramClient("SCRAM-SHA-512", "al=i,ce", "alice-secret")
    first = m.first().decode()
    assert first.startswith("n,,n=al=3Di=2Cce,r=")
    bare = first[3:]
    cnonce = scram.parse_attributes(bare)["r"]
    server_first = f"r={cnonce}srv,s={base64.b64encode(salt).decode()},i=4096"
    final = m.step(server_first.encode())
    assert final is not None
    without_proof, _, proof_attr = final.decode().rpartition(",p=")
    auth = f"{bare},{server_first},{without_proof}".encode()
    proof = base64.b64decode(proof_attr)
    client_key = scram.xor(proof, scram.hmac_of("sha512", cred.stored_key, auth))
    assert scram.stored_key("sha512", client_key) == cred.stored_key
    sig = scram.hmac_of("sha512", cred.server_key, auth)
    assert m.step(b"v=" + base64.b64encode(sig)) is None and m.complete


def test_scram_fresh_nonces() -> None:
    a = ScramClient("SCRAM-SHA-256", "u", "p").first()
    b = ScramClient("SCRAM-SHA-256", "u", "p").first()
    assert a != b and b"," not in a.split(b"r=")[1]


def test_scram_unknown_mechanism() -> None:
    with pytest.raises(ValueError, match="SCRAM-SHA-256"):
        ScramClient("SCRAM-SHA-1", "u", "p")


def test_oauthbearer_initial_response() -> None:
    m = OAuthBearerClient("eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.")
    assert m.first() == b"n,,\x01auth=Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.\x01\x01"
    assert m.step(b"") is None and m.complete


def test_oauthbearer_extensions() -> None:
    m = OAuthBearerClient("tok", {"traceId": "123", "logicalCluster": "lkc-1"})
    assert m.first() == b"n,,\x01auth=Bearer tok\x01traceId=123\x01logicalCluster=lkc-1\x01\x01"


@pytest.mark.parametrize("ext", [{"auth": "x"}, {"a1": "x"}, {"a": ""}, {"a": "\x01"}])
def test_oauthbearer_invalid_extensions(ext: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        OAuthBearerClient("tok", ext)


def test_oauthbearer_bad_token() -> None:
    with pytest.raises(ValueError):
        OAuthBearerClient("has space")


def test_oauthbearer_error_challenge_is_answered_with_0x01() -> None:
    m = OAuthBearerClient("tok")
    m.first()
    assert m.step(b'{"status":"invalid_token"}') == b"\x01"
    assert not m.complete and m.error_challenge == '{"status":"invalid_token"}'
    with pytest.raises(SaslAuthenticationFailedError, match="invalid_token"):
        m.step(b'{"status":"invalid_token"}')
