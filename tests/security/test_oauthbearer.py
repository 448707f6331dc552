"""broker/security/oauthbearer.py: the OAUTHBEARER server with the unsecured validator (valid,
expired, no exp, an alg other than none, a required scope missing -> the insufficient_scope JSON
challenge, then the client's ``\\x01`` failing with that JSON) and the JWKS validator with keys
made here (RSA and EC P-256 in a JWKS file; RS256, PS256 and ES256 tokens signed in the test:
valid, a bad signature, an unknown kid, a wrong audience or issuer, expired beyond the clock
skew, valid within it)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa, utils

from broker.security.oauthbearer import (
    JwksValidator,
    OAuthBearerServer,
    TokenError,
    UnsecuredValidator,
    load_jwks,
)
from broker.security.sasl_mechanism import SaslAuthenticationError
from client.security.sasl import OAuthBearerClient

NOW_MS = 1_700_000_000_000
NOW = NOW_MS // 1000


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jpart(obj: dict[str, Any]) -> str:
    return b64(json.dumps(obj).encode())


def unsecured(claims: dict[str, Any], header: dict[str, Any] | None = None, signature: str = "") -> str:
    return f"{jpart(header or {'alg': 'none'})}.{jpart(claims)}.{signature}"


def message(token: str, authz: str = "") -> bytes:
    return f"n,{authz},\x01auth=Bearer {token}\x01\x01".encode()


def unsecured_server(**options: str) -> OAuthBearerServer:
    return OAuthBearerServer(UnsecuredValidator.from_options(options, now_ms=lambda: NOW_MS))


def refused(server: OAuthBearerServer, token: str) -> dict[str, Any]:
    """The JSON challenge for a refused token; the ``\\x01`` that follows fails with it."""
    challenge = server.evaluate(message(token))
    assert challenge and not server.complete
    with pytest.raises(SaslAuthenticationError) as e:
        server.evaluate(b"\x01")
    assert str(e.value) == challenge.decode()
    out: dict[str, Any] = json.loads(challenge)
    return out


# ------------------------------------------------------------------ unsecured


def test_unsecured_valid_token_with_the_client_mechanism() -> None:
    server = unsecured_server()
    client = OAuthBearerClient(unsecured({"sub": "alice", "exp": NOW + 60}), {"traceId": "x"})
    assert server.evaluate(client.first()) == b""
    assert client.step(b"") is None and client.complete
    assert server.complete and server.authorization_id == "alice"
    assert server.lifetime_ms == 60_000


def test_unsecured_authzid_must_be_the_principal() -> None:
    token = unsecured({"sub": "alice", "exp": NOW + 60})
    server = unsecured_server()
    assert server.evaluate(message(token, "a=alice")) == b"" and server.complete
    server = unsecured_server()
    challenge = server.evaluate(message(token, "a=bob"))
    assert json.loads(challenge) == {"status": "invalid_token"}
    assert server.reason == "the authorization id differs from the token's principal"


@pytest.mark.parametrize("claims, header, reason", [
    ({"sub": "alice", "exp": NOW - 1}, None, "the token has expired"),
    ({"sub": "alice"}, None, "no numeric exp claim"),
    ({"sub": "alice", "exp": "tomorrow"}, None, "no numeric exp claim"),
    ({"sub": "alice", "exp": True}, None, "no numeric exp claim"),
    ({"sub": "alice", "exp": NOW + 60}, {"alg": "HS256"}, "alg none"),
    ({"sub": "alice", "exp": NOW + 60, "nbf": NOW + 30}, None, "not valid yet"),
    ({"exp": NOW + 60}, None, "no string sub claim"),
    ({"sub": " ", "exp": NOW + 60}, None, "no string sub claim"),
])
def test_unsecured_invalid_tokens(claims: dict[str, Any], header: dict[str, Any] | None, reason: str) -> None:
    server = unsecured_server()
    assert refused(server, unsecured(claims, header)) == {"status": "invalid_token"}
    assert reason in server.reason


def test_unsecured_token_with_a_signature_is_refused() -> None:
    server = unsecured_server()
    assert refused(server, unsecured({"sub": "a", "exp": NOW + 60}, signature="c2ln")) == {"status": "invalid_token"}


def test_unsecured_clock_skew_option() -> None:
    token = unsecured({"sub": "alice", "exp": NOW - 1})
    server = unsecured_server(unsecuredValidatorAllowableClockSkewMs="5000")
    assert server.evaluate(message(token)) == b"" and server.complete
    assert server.lifetime_ms == 0  # already past exp: the session ends at once


def test_required_scope_missing_gives_insufficient_scope() -> None:
    options = {"unsecuredValidatorRequiredScope": "read,write"}
    server = unsecured_server(**options)
    body = refused(server, unsecured({"sub": "alice", "exp": NOW + 60, "scope": "read"}))
    assert body == {"status": "insufficient_scope", "scope": "read write"}
    ok = unsecured_server(**options)
    assert ok.evaluate(message(unsecured({"sub": "alice", "exp": NOW + 60, "scope": "write read x"}))) == b""
    ok = unsecured_server(**options)  # a JSON list of scopes is accepted too
    assert ok.evaluate(message(unsecured({"sub": "alice", "exp": NOW + 60, "scope": ["read", "write"]}))) == b""


def test_custom_principal_and_scope_claims() -> None:
    server = unsecured_server(unsecuredValidatorPrincipalClaimName="client_id",
                              unsecuredValidatorScopeClaimName="scp", unsecuredValidatorRequiredScope="kafka")
    assert server.evaluate(message(unsecured({"client_id": "svc", "exp": NOW + 60, "scp": "kafka"}))) == b""
    assert server.authorization_id == "svc"


def test_bad_skew_option_is_a_config_error() -> None:
    with pytest.raises(ValueError, match="unsecuredValidatorAllowableClockSkewMs"):
        UnsecuredValidator.from_options({"unsecuredValidatorAllowableClockSkewMs": "soon"})


def test_follow_up_other_than_x01_after_the_error_challenge() -> None:
    server = unsecured_server()
    assert server.evaluate(message(unsecured({"sub": "a", "exp": NOW - 1})))
    with pytest.raises(SaslAuthenticationError, match="expected %x01 after an error challenge"):
        server.evaluate(b"again")


def test_client_answers_the_error_challenge_with_x01() -> None:
    server = unsecured_server()
    client = OAuthBearerClient(unsecured({"sub": "a", "exp": NOW - 1}))
    answer = client.step(server.evaluate(client.first()))
    assert answer == b"\x01"
    with pytest.raises(SaslAuthenticationError, match='"status":"invalid_token"'):
        server.evaluate(answer)


@pytest.mark.parametrize("raw", [
    b"n,,auth=Bearer x\x01\x01",  # no \x01 after the gs2 header
    b"p=x,,\x01auth=Bearer x\x01\x01",
    b"n,,\x01auth=Basic abc\x01\x01",
    b"n,,\x01\x01",
    b"n,,\x01auth=Bearer a.b\x01\x01",  # two parts
    b"n,,\x01auth=Bearer !!.!!.\x01\x01",  # not base64url
    b"n,,\x01auth=Bearer " + b64(b"[1]").encode() + b"." + b64(b"{}").encode() + b".\x01\x01",  # header not object
    b"n,,\x01auth=Bearer " + b64(b"{").encode() + b".e30.\x01\x01",  # not JSON
    b"\xff\xfe",
    b"",
])
def test_malformed_client_messages_get_the_invalid_token_challenge(raw: bytes) -> None:
    server = unsecured_server()
    assert json.loads(server.evaluate(raw)) == {"status": "invalid_token"}
    with pytest.raises(SaslAuthenticationError):
        server.evaluate(b"\x01")


def test_no_message_after_success() -> None:
    server = unsecured_server()
    token = message(unsecured({"sub": "a", "exp": NOW + 60}))
    server.evaluate(token)
    with pytest.raises(SaslAuthenticationError, match="already complete"):
        server.evaluate(token)


# ------------------------------------------------------------------ JWKS


@pytest.fixture(scope="module")
def keys() -> dict[str, Any]:
    return {"rsa-1": rsa.generate_private_key(65537, 2048), "ec-1": ec.generate_private_key(ec.SECP256R1())}


def jwk(kid: str, key: Any) -> dict[str, Any]:
    pub = key.public_key().public_numbers()
    if isinstance(key, rsa.RSAPrivateKey):
        return {"kty": "RSA", "kid": kid, "use": "sig", "n": b64(pub.n.to_bytes((pub.n.bit_length() + 7) // 8, "big")),
                "e": b64(pub.e.to_bytes(3, "big"))}
    return {"kty": "EC", "kid": kid, "crv": "P-256", "x": b64(pub.x.to_bytes(32, "big")),
            "y": b64(pub.y.to_bytes(32, "big"))}


@pytest.fixture(scope="module")
def jwks_url(keys: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("jwks") / "jwks.json"
    path.write_text(json.dumps({"keys": [jwk(k, v) for k, v in keys.items()] + [{"kty": "oct", "k": "c2VjcmV0"}]}))
    return f"file://{path}"


def sign(alg: str, key: Any, claims: dict[str, Any], kid: str | None) -> str:
    header = {"alg": alg, "typ": "JWT", **({"kid": kid} if kid is not None else {})}
    signed = f"{jpart(header)}.{jpart(claims)}".encode()
    if alg == "RS256":
        sig = key.sign(signed, padding.PKCS1v15(), hashes.SHA256())
    elif alg == "PS256":
        sig = key.sign(signed, padding.PSS(padding.MGF1(hashes.SHA256()), 32), hashes.SHA256())
    else:
        r, s = utils.decode_dss_signature(key.sign(signed, ec.ECDSA(hashes.SHA256())))
        sig = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    return f"{signed.decode()}.{b64(sig)}"


CLAIMS = {"sub": "svc-orders", "aud": "kafka", "iss": "https://idp.example", "exp": NOW + 300, "iat": NOW}
ALGS = [("RS256", "rsa-1"), ("PS256", "rsa-1"), ("ES256", "ec-1")]


def jwks_server(url: str, audience: list[str] | None = None, issuer: str = "https://idp.example",
                skew_s: int = 30) -> OAuthBearerServer:
    validator = JwksValidator(load_jwks(url), ["kafka"] if audience is None else audience, issuer, "sub", "scope",
                              skew_s * 1000, now_ms=lambda: NOW_MS)
    return OAuthBearerServer(validator)


def test_load_jwks_reads_rsa_and_ec_keys_and_skips_others(jwks_url: str) -> None:
    assert sorted(load_jwks(jwks_url)) == ["ec-1", "rsa-1"]
    with pytest.raises(ValueError, match="only file: URLs"):
        load_jwks("https://idp.example/jwks")
    with pytest.raises(ValueError, match="cannot read a JWKS"):
        load_jwks("file:///nonexistent/jwks.json")


def test_load_jwks_errors(tmp_path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text('{"keys": [{"kty": "oct", "k": "eA"}]}')
    with pytest.raises(ValueError, match="no RSA or EC key"):
        load_jwks(f"file://{empty}")
    bad = tmp_path / "bad.json"
    bad.write_text('{"keys": [{"kty": "RSA", "kid": "x", "n": "AQAB"}]}')
    with pytest.raises(ValueError, match="a malformed key"):
        load_jwks(f"file://{bad}")


@pytest.mark.parametrize("alg, kid", ALGS)
def test_jwks_valid_token(keys: dict[str, Any], jwks_url: str, alg: str, kid: str) -> None:
    server = jwks_server(jwks_url)
    assert server.evaluate(message(sign(alg, keys[kid], CLAIMS, kid))) == b""
    assert server.complete and server.authorization_id == "svc-orders" and server.lifetime_ms == 300_000


@pytest.mark.parametrize("alg, kid", ALGS)
def test_jwks_bad_signature(keys: dict[str, Any], jwks_url: str, alg: str, kid: str) -> None:
    token = sign(alg, keys[kid], CLAIMS, kid)
    head, claims, sig = token.split(".")
    forged = f"{head}.{jpart({**CLAIMS, 'sub': 'admin'})}.{sig}"
    server = jwks_server(jwks_url)
    assert refused(server, forged) == {"status": "invalid_token"}
    assert "signature does not verify" in server.reason


def test_jwks_key_from_another_signer(jwks_url: str) -> None:
    other = rsa.generate_private_key(65537, 2048)
    server = jwks_server(jwks_url)
    assert refused(server, sign("RS256", other, CLAIMS, "rsa-1")) == {"status": "invalid_token"}


def test_jwks_unknown_kid_and_kind_mismatch(keys: dict[str, Any], jwks_url: str) -> None:
    server = jwks_server(jwks_url)
    refused(server, sign("RS256", keys["rsa-1"], CLAIMS, "rsa-2"))
    assert "no key in the JWKS" in server.reason
    server = jwks_server(jwks_url)  # no kid and several keys: no key to pick
    refused(server, sign("RS256", keys["rsa-1"], CLAIMS, None))
    assert "no key in the JWKS" in server.reason
    server = jwks_server(jwks_url)
    refused(server, sign("ES256", keys["ec-1"], CLAIMS, "rsa-1"))
    assert "needs an EC key" in server.reason


def test_jwks_single_key_without_kid(keys: dict[str, Any], tmp_path) -> None:
    path = tmp_path / "one.json"
    one = jwk("x", keys["ec-1"])
    del one["kid"]
    path.write_text(json.dumps({"keys": [one]}))
    server = jwks_server(f"file://{path}")
    assert server.evaluate(message(sign("ES256", keys["ec-1"], CLAIMS, None))) == b"" and server.complete


@pytest.mark.parametrize("alg", ["none", "HS256", "RS1", None])
def test_jwks_refuses_other_algorithms(keys: dict[str, Any], jwks_url: str, alg: str | None) -> None:
    server = jwks_server(jwks_url)
    token = unsecured(CLAIMS, {"alg": alg, "kid": "rsa-1"}) if alg != "HS256" else \
        unsecured(CLAIMS, {"alg": alg, "kid": "rsa-1"}, signature=b64(b"x" * 32))
    refused(server, token)
    assert "unsupported token algorithm" in server.reason


def test_jwks_audience(keys: dict[str, Any], jwks_url: str) -> None:
    server = jwks_server(jwks_url)
    refused(server, sign("RS256", keys["rsa-1"], {**CLAIMS, "aud": "other"}, "rsa-1"))
    assert "audience" in server.reason
    server = jwks_server(jwks_url)
    refused(server, sign("RS256", keys["rsa-1"], {k: v for k, v in CLAIMS.items() if k != "aud"}, "rsa-1"))
    server = jwks_server(jwks_url, audience=["a", "kafka"])
    assert server.evaluate(message(sign("RS256", keys["rsa-1"], {**CLAIMS, "aud": ["x", "kafka"]}, "rsa-1"))) == b""
    server = jwks_server(jwks_url, audience=[])  # none expected: any audience
    assert server.evaluate(message(sign("RS256", keys["rsa-1"], {**CLAIMS, "aud": "other"}, "rsa-1"))) == b""


def test_jwks_issuer(keys: dict[str, Any], jwks_url: str) -> None:
    server = jwks_server(jwks_url)
    refused(server, sign("ES256", keys["ec-1"], {**CLAIMS, "iss": "https://evil.example"}, "ec-1"))
    assert "issuer" in server.reason
    server = jwks_server(jwks_url, issuer="")
    assert server.evaluate(message(sign("ES256", keys["ec-1"], {**CLAIMS, "iss": "anyone"}, "ec-1"))) == b""


def test_jwks_expiry_and_clock_skew(keys: dict[str, Any], jwks_url: str) -> None:
    within = sign("PS256", keys["rsa-1"], {**CLAIMS, "exp": NOW - 20}, "rsa-1")
    beyond = sign("PS256", keys["rsa-1"], {**CLAIMS, "exp": NOW - 31}, "rsa-1")
    server = jwks_server(jwks_url, skew_s=30)
    assert server.evaluate(message(within)) == b"" and server.complete
    server = jwks_server(jwks_url, skew_s=30)
    refused(server, beyond)
    assert "expired" in server.reason
    server = jwks_server(jwks_url, skew_s=0)
    refused(server, within)
    not_yet = sign("RS256", keys["rsa-1"], {**CLAIMS, "nbf": NOW + 20}, "rsa-1")
    assert jwks_server(jwks_url, skew_s=30).evaluate(message(not_yet)) == b""
    server = jwks_server(jwks_url, skew_s=10)
    refused(server, not_yet)
    assert "not valid yet" in server.reason


def test_token_error_carries_status_and_scope() -> None:
    e = TokenError("x", "insufficient_scope", "a b")
    assert (str(e), e.status, e.scope) == ("x", "insufficient_scope", "a b")


def test_jwks_es_token_needs_a_key_on_its_curve(tmp_path) -> None:
    """RFC 7518: ES256 is ECDSA on P-256; a P-384 key of the JWKS does not verify an ES256 token."""
    p384 = ec.generate_private_key(ec.SECP384R1())
    path = tmp_path / "p384.json"
    pub = p384.public_key().public_numbers()
    path.write_text(json.dumps({"keys": [{"kty": "EC", "kid": "ec-384", "crv": "P-384", "x": b64(pub.x.to_bytes(48, "big")),
                                          "y": b64(pub.y.to_bytes(48, "big"))}]}))
    server = jwks_server(f"file://{path}")
    header = {"alg": "ES256", "typ": "JWT", "kid": "ec-384"}
    signed = f"{jpart(header)}.{jpart(CLAIMS)}".encode()
    r, s = utils.decode_dss_signature(p384.sign(signed, ec.ECDSA(hashes.SHA256())))
    token = f"{signed.decode()}.{b64(r.to_bytes(48, 'big') + s.to_bytes(48, 'big'))}"
    assert refused(server, token) == {"status": "invalid_token"}
    assert "needs an EC key on its curve" in server.reason
