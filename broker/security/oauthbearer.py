"""SASL/OAUTHBEARER (RFC 7628, Kafka's KIP-255) on the server, with the two validators Kafka
ships.

The client's message is ``<gs2 header>\\x01auth=Bearer <token>\\x01[key=value\\x01...]\\x01``
(the gs2 header ``n,,`` or ``n,a=<authzid>,``; ``key=value`` pairs are SASL extensions, which
are accepted and ignored here). The token is a JWT, ``base64url(header).base64url(claims).
base64url(signature)``, validated by:

- **unsecured** (Kafka's default, for tests; ``alg`` must be ``none`` and the signature empty):
  options from the listener's OAuthBearerLoginModule JAAS entry —
  ``unsecuredValidatorPrincipalClaimName`` (``sub``), ``unsecuredValidatorScopeClaimName``
  (``scope``), ``unsecuredValidatorRequiredScope`` (comma-separated, none by default),
  ``unsecuredValidatorAllowableClockSkewMs`` (0);
- **signed** (Kafka's OAuthBearerValidatorCallbackHandler), when
  ``sasl.oauthbearer.jwks.endpoint.url`` is set (a ``file:`` URL here: the broker makes no
  outbound HTTP): RS256/384/512, PS256/384/512 or ES256/384/512, checked with the JWKS key of
  the token's ``kid`` (or the only key); ``sasl.oauthbearer.expected.audience`` (comma-separated:
  the ``aud`` claim must name one), ``sasl.oauthbearer.expected.issuer``,
  ``sasl.oauthbearer.sub.claim.name``, ``sasl.oauthbearer.scope.claim.name`` and
  ``sasl.oauthbearer.clock.skew.seconds`` (30).

Both require ``exp`` (seconds since the epoch); a token past it (beyond the skew), before its
``nbf``, or with a bad signature fails. A failure is answered as RFC 7628 says: a JSON challenge
``{"status":"invalid_token"}``; the client replies ``\\x01`` and the login fails with that JSON as
the message (Kafka's behaviour). The session may last until ``exp`` (``lifetime_ms``).
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from .sasl_mechanism import SaslAuthenticationError, SaslServerMechanism

__all__ = ["OAuthBearerServer", "TokenValidator", "UnsecuredValidator", "JwksValidator", "TokenError",
           "load_jwks"]


class TokenError(Exception):
    """An invalid token; ``status`` goes into the JSON challenge, the message to the debug log."""

    def __init__(self, message: str, status: str = "invalid_token", scope: str | None = None) -> None:
        super().__init__(message)
        self.status, self.scope = status, scope


def _b64url(part: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        raise TokenError("a token part is not base64url") from None


def _split(token: str) -> tuple[dict[str, Any], dict[str, Any], bytes, bytes]:
    """(header, claims, signed bytes, signature) of a compact JWT."""
    parts = token.split(".")
    if len(parts) != 3:
        raise TokenError("a token has 3 dot-separated parts")
    try:
        header = json.loads(_b64url(parts[0]))
        claims = json.loads(_b64url(parts[1]))
    except (ValueError, UnicodeDecodeError):
        raise TokenError("a token part is not JSON") from None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise TokenError("a token's header and claims are JSON objects")
    return header, claims, f"{parts[0]}.{parts[1]}".encode(), _b64url(parts[2])


class TokenValidator:
    """Validates a token string; returns (principal name, expiry in ms since the epoch)."""

    def __init__(self, principal_claim: str, scope_claim: str, required_scope: list[str], skew_ms: int,
                 now_ms: Callable[[], int] | None = None) -> None:
        self.principal_claim, self.scope_claim = principal_claim, scope_claim
        self.required_scope, self.skew_ms = required_scope, skew_ms
        self.now_ms = now_ms or (lambda: int(time.time() * 1000))

    def verify_signature(self, header: dict[str, Any], signed: bytes, signature: bytes) -> None:
        raise NotImplementedError

    def validate(self, token: str) -> tuple[str, int]:
        header, claims, signed, signature = _split(token)
        self.verify_signature(header, signed, signature)
        now = self.now_ms()
        exp = claims.get("exp")
        if not isinstance(exp, (int, float)) or isinstance(exp, bool):
            raise TokenError("the token has no numeric exp claim")
        exp_ms = int(exp * 1000)
        if now > exp_ms + self.skew_ms:
            raise TokenError("the token has expired")
        nbf = claims.get("nbf")
        if isinstance(nbf, (int, float)) and now + self.skew_ms < nbf * 1000:
            raise TokenError("the token is not valid yet")
        principal = claims.get(self.principal_claim)
        if not isinstance(principal, str) or not principal.strip():
            raise TokenError(f"the token has no string {self.principal_claim} claim")
        self.check_claims(claims)
        scope = claims.get(self.scope_claim, [])
        granted = set(scope.split() if isinstance(scope, str) else scope if isinstance(scope, list) else [])
        missing = [s for s in self.required_scope if s not in granted]
        if missing:
            raise TokenError("the token lacks a required scope", "insufficient_scope", " ".join(self.required_scope))
        return principal, exp_ms

    def check_claims(self, claims: dict[str, Any]) -> None:
        pass


class UnsecuredValidator(TokenValidator):
    """Kafka's OAuthBearerUnsecuredValidatorCallbackHandler: ``alg: none``, no signature."""

    @classmethod
    def from_options(cls, options: Mapping[str, str], now_ms: Callable[[], int] | None = None) -> UnsecuredValidator:
        required = [s.strip() for s in options.get("unsecuredValidatorRequiredScope", "").split(",") if s.strip()]
        try:
            skew = int(options.get("unsecuredValidatorAllowableClockSkewMs", "0") or 0)
        except ValueError:
            raise ValueError("sasl.jaas.config: unsecuredValidatorAllowableClockSkewMs is not a number") from None
        return cls(options.get("unsecuredValidatorPrincipalClaimName", "sub") or "sub",
                   options.get("unsecuredValidatorScopeClaimName", "scope") or "scope", required, skew, now_ms)

    def verify_signature(self, header: dict[str, Any], signed: bytes, signature: bytes) -> None:
        if header.get("alg") != "none" or signature:
            raise TokenError("an unsecured token has alg none and no signature")


def load_jwks(url: str) -> dict[str, Any]:
    """The keys of a JWKS document at a ``file:`` URL, by ``kid`` (a key without one: "")."""
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    u = urlsplit(url)
    if u.scheme != "file":
        raise ValueError(f"sasl.oauthbearer.jwks.endpoint.url: only file: URLs are read here, got {url!r}")
    try:
        with open(unquote(u.path), "rb") as f:
            document = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"sasl.oauthbearer.jwks.endpoint.url: cannot read a JWKS from {url!r}: {e}") from None
    curves = {"P-256": ec.SECP256R1(), "P-384": ec.SECP384R1(), "P-521": ec.SECP521R1()}
    keys: dict[str, Any] = {}

    def number(value: str) -> int:
        return int.from_bytes(_b64url(value), "big")

    for jwk in document.get("keys", []) if isinstance(document, dict) else []:
        try:
            if jwk.get("kty") == "RSA":
                key: Any = rsa.RSAPublicNumbers(number(jwk["e"]), number(jwk["n"])).public_key()
            elif jwk.get("kty") == "EC" and jwk.get("crv") in curves:
                key = ec.EllipticCurvePublicNumbers(number(jwk["x"]), number(jwk["y"]),
                                                    curves[jwk["crv"]]).public_key()
            else:
                continue
        except (KeyError, TokenError, ValueError):
            raise ValueError(f"sasl.oauthbearer.jwks.endpoint.url: a malformed key in {url!r}") from None
        keys[str(jwk.get("kid", ""))] = key
    if not keys:
        raise ValueError(f"sasl.oauthbearer.jwks.endpoint.url: no RSA or EC key in {url!r}")
    return keys


class JwksValidator(TokenValidator):
    """Kafka's OAuthBearerValidatorCallbackHandler with a local JWKS."""

    def __init__(self, keys: dict[str, Any], audience: list[str], issuer: str, principal_claim: str,
                 scope_claim: str, skew_ms: int, now_ms: Callable[[], int] | None = None) -> None:
        super().__init__(principal_claim, scope_claim, [], skew_ms, now_ms)
        self.keys, self.audience, self.issuer = keys, audience, issuer

    def verify_signature(self, header: dict[str, Any], signed: bytes, signature: bytes) -> None:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa, utils

        alg = header.get("alg")
        if not isinstance(alg, str) or alg[:2] not in ("RS", "PS", "ES") or alg[2:] not in ("256", "384", "512"):
            raise TokenError(f"unsupported token algorithm {alg!r}")
        kid = header.get("kid")
        key = self.keys.get(str(kid)) if kid is not None else (next(iter(self.keys.values()))
                                                               if len(self.keys) == 1 else None)
        if key is None:
            raise TokenError("no key in the JWKS for the token's kid")
        digest = {"256": hashes.SHA256(), "384": hashes.SHA384(), "512": hashes.SHA512()}[alg[2:]]
        try:
            if alg.startswith("ES"):
                if not isinstance(key, ec.EllipticCurvePublicKey) or \
                        key.curve.key_size != {"256": 256, "384": 384, "512": 521}[alg[2:]]:
                    raise TokenError(f"an {alg} token needs an EC key on its curve (RFC 7518)")
                half = len(signature) // 2
                der = utils.encode_dss_signature(int.from_bytes(signature[:half], "big"),
                                                 int.from_bytes(signature[half:], "big"))
                key.verify(der, signed, ec.ECDSA(digest))
            else:
                if not isinstance(key, rsa.RSAPublicKey):
                    raise TokenError("an RS or PS token needs an RSA key")
                pad: padding.AsymmetricPadding = (padding.PKCS1v15() if alg.startswith("RS") else
                                                  padding.PSS(padding.MGF1(digest), padding.PSS.DIGEST_LENGTH))
                key.verify(signature, signed, pad, digest)
        except InvalidSignature:
            raise TokenError("the token's signature does not verify") from None

    def check_claims(self, claims: dict[str, Any]) -> None:
        if self.audience:
            aud = claims.get("aud")
            given = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
            if not any(a in self.audience for a in given):
                raise TokenError("the token's audience is not an expected one")
        if self.issuer and claims.get("iss") != self.issuer:
            raise TokenError("the token's issuer is not the expected one")


class OAuthBearerServer(SaslServerMechanism):
    name = "OAUTHBEARER"

    def __init__(self, validator: TokenValidator) -> None:
        super().__init__()
        self.validator = validator
        self._error: str | None = None
        self.reason = ""  # why the last token was refused (for the broker's debug log)

    def evaluate(self, token: bytes) -> bytes:
        if self._error is not None:
            if token == b"\x01":
                raise SaslAuthenticationError(self._error)
            raise SaslAuthenticationError("Authentication failed: expected %x01 after an error challenge")
        if self.complete:
            raise SaslAuthenticationError("Authentication failed: OAUTHBEARER authentication already complete")
        try:
            text = token.decode("utf-8")
            gs2, sep, rest = text.partition("\x01")
            flag, _, authz = gs2.partition(",")
            if not sep or flag not in ("n", "y") or not gs2.endswith(","):
                raise TokenError("malformed client message")
            fields = dict(kv.partition("=")[::2] for kv in rest.split("\x01") if kv)
            auth = fields.get("auth", "")
            if not auth.startswith("Bearer ") and not auth.lower().startswith("bearer "):
                raise TokenError("no Bearer token in the client message")
            principal, exp_ms = self.validator.validate(auth[7:].strip())
            authz = authz.rstrip(",")
            if authz and authz != f"a={principal}":
                raise TokenError("the authorization id differs from the token's principal")
        except (TokenError, UnicodeDecodeError) as e:
            status = e.status if isinstance(e, TokenError) else "invalid_token"
            scope = e.scope if isinstance(e, TokenError) else None
            self.reason = str(e)
            body: dict[str, str] = {"status": status}
            if scope:
                body["scope"] = scope
            self._error = json.dumps(body, separators=(",", ":"))
            return self._error.encode()
        self.authorization_id = principal
        self.lifetime_ms = max(0, exp_ms - self.validator.now_ms())
        self.complete = True
        return b""
