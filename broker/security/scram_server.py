"""SASL/SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) on the server.

Exchange (``client/security/scram.py`` has the key derivations):
1. client-first ``gs2-header client-first-bare``: ``n,,n=<saslname>,r=<client nonce>`` (the
   gs2 header ``n`` or ``y``, no channel binding; an authzid ``a=`` must equal the user;
   extensions are refused, delegation tokens do not exist here) -> server-first
   ``r=<client nonce><server nonce>,s=<base64 salt>,i=<iterations>``;
2. client-final ``c=<base64 gs2 header>,r=<nonce>,p=<base64 proof>`` (the nonce must end with
   the server-first's, as Kafka checks it) -> server-final
   ``v=<base64 ServerSignature>`` once ``H(proof XOR HMAC(StoredKey, AuthMessage))`` equals
   StoredKey (compared in constant time).
An unknown user fails at the first message, a wrong proof at the second; both get Kafka's
message for a SCRAM failure, which does not say which.
"""

from __future__ import annotations

import base64
import binascii
import secrets
from typing import Protocol

from client.security import scram

from .sasl_mechanism import SaslAuthenticationError, SaslServerMechanism, constant_time_equal

__all__ = ["ScramServer", "ScramCredentialSource"]


class ScramCredentialSource(Protocol):
    def get(self, user: str, mechanism: str) -> scram.ScramCredential | None: ...


class ScramServer(SaslServerMechanism):
    def __init__(self, mechanism: str, credentials: ScramCredentialSource) -> None:
        super().__init__()
        self.name = mechanism
        self.digest = scram.digest_of(mechanism)
        self.credentials = credentials
        self._state = 0
        self._client_first_bare = self._server_first = self._nonce = ""
        self._gs2 = ""
        self._credential: scram.ScramCredential | None = None
        self._user = ""

    def _fail(self, why: str = "") -> SaslAuthenticationError:
        # Kafka's SaslServerAuthenticator words every SCRAM failure this way (``why`` is for the
        # broker's debug log only, kept off the wire)
        e = SaslAuthenticationError(f"Authentication failed during authentication due to invalid credentials with"
                                    f" SASL mechanism {self.name}")
        e.__cause__ = ValueError(why) if why else None
        return e

    def evaluate(self, token: bytes) -> bytes:
        try:
            message = token.decode("utf-8")
        except UnicodeDecodeError:
            raise self._fail("not UTF-8") from None
        if self._state == 0:
            return self._client_first(message)
        if self._state == 1:
            return self._client_final(message)
        raise self._fail("unexpected message after the exchange")

    def _client_first(self, message: str) -> bytes:
        gs2_flag, sep, rest = message.partition(",")
        authzid, sep2, bare = rest.partition(",")
        if not sep or not sep2 or gs2_flag not in ("n", "y"):
            raise self._fail("channel binding is not supported" if gs2_flag.startswith("p=") else "bad gs2 header")
        try:
            attrs = scram.parse_attributes(bare)
            user = scram.saslname_unescape(attrs["n"])
            client_nonce = attrs["r"]
        except (ValueError, KeyError):
            raise self._fail("bad client-first message") from None
        if set(attrs) - {"n", "r"}:
            raise self._fail("extensions are not supported")
        if authzid and authzid != f"a={scram.saslname_escape(user)}":
            raise self._fail("authorization id differs from the user")
        credential = self.credentials.get(user, self.name)
        if credential is None or not client_nonce:
            raise self._fail("unknown user")
        self._user, self._credential, self._gs2 = user, credential, message[: len(gs2_flag) + len(authzid) + 2]
        self._nonce = client_nonce + base64.b64encode(secrets.token_bytes(18)).decode().replace("/", "-")
        self._client_first_bare = bare
        self._server_first = (f"r={self._nonce},s={base64.b64encode(credential.salt).decode()},"
                              f"i={credential.iterations}")
        self._state = 1
        return self._server_first.encode()

    def _client_final(self, message: str) -> bytes:
        without_proof, sep, proof_attr = message.rpartition(",p=")
        try:
            attrs = scram.parse_attributes(without_proof)
            proof = base64.b64decode(proof_attr, validate=True)
            binding = base64.b64decode(attrs["c"], validate=True)
        except (ValueError, KeyError, binascii.Error):
            raise self._fail("bad client-final message") from None
        # Kafka's server checks that the nonce *ends with* its own (ScramSaslServer): librdkafka
        # before 2.x sends its client nonce again in front of the combined one
        if not sep or not attrs.get("r", "").endswith(self._nonce) or binding != self._gs2.encode():
            raise self._fail("nonce or channel binding mismatch")
        credential = self._credential
        assert credential is not None
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = scram.hmac_of(self.digest, credential.stored_key, auth_message)
        try:
            client_key = scram.xor(proof, signature)
        except ValueError:
            raise self._fail("proof of the wrong length") from None
        if not constant_time_equal(scram.stored_key(self.digest, client_key), credential.stored_key):
            raise self._fail("invalid proof")
        self._state = 2
        self.complete = True
        self.authorization_id = self._user
        server_signature = scram.hmac_of(self.digest, credential.server_key, auth_message)
        return b"v=" + base64.b64encode(server_signature)
