"""SCRAM (RFC 5802, with SHA-256 and SHA-512 as RFC 7677 and Kafka use them): the key
derivations both sides compute, and the attribute syntax of its messages.

Kafka's mechanisms are ``SCRAM-SHA-256`` and ``SCRAM-SHA-512``; a credential is stored as
``(salt, iterations, StoredKey, ServerKey)``, never the password:

    SaltedPassword = PBKDF2-HMAC-H(password, salt, iterations)
    ClientKey      = HMAC(SaltedPassword, "Client Key")
    StoredKey      = H(ClientKey)
    ServerKey      = HMAC(SaltedPassword, "Server Key")
    ClientProof    = ClientKey XOR HMAC(StoredKey, AuthMessage)
    ServerSignature = HMAC(ServerKey, AuthMessage)

where ``AuthMessage = client-first-message-bare + "," + server-first-message + "," +
client-final-message-without-proof``. Kafka bounds iterations to 4096..16384.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import NamedTuple

__all__ = ["MECHANISMS", "MIN_ITERATIONS", "MAX_ITERATIONS", "ScramCredential", "digest_of", "salted_password",
           "client_key", "stored_key", "server_key", "hmac_of", "xor", "make_credential", "parse_attributes",
           "saslname_escape", "saslname_unescape"]

#: Kafka's SCRAM mechanisms, their hash, and the type number AlterUserScramCredentials uses.
MECHANISMS: dict[str, str] = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MECHANISM_TYPES: dict[str, int] = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
#: Kafka's bounds on a credential's iterations (ScramMechanism.minIterations, maxIterations)
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384


class ScramCredential(NamedTuple):
    """What a server keeps for one user and mechanism (no password)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def digest_of(mechanism: str) -> str:
    """``sha256``/``sha512`` for a Kafka SCRAM mechanism name (KeyError for another)."""
    return MECHANISMS[mechanism]


def hmac_of(digest: str, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, digest).digest()


def salted_password(digest: str, password: bytes, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(digest, password, salt, iterations)


def client_key(digest: str, salted: bytes) -> bytes:
    return hmac_of(digest, salted, b"Client Key")


def stored_key(digest: str, key: bytes) -> bytes:
    return hashlib.new(digest, key).digest()


def server_key(digest: str, salted: bytes) -> bytes:
    return hmac_of(digest, salted, b"Server Key")


def xor(a: bytes, b: bytes) -> bytes:
    if len(a) != len(b):
        raise ValueError("SCRAM proof of the wrong length")
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


def make_credential(mechanism: str, password: bytes, salt: bytes, iterations: int) -> ScramCredential:
    """The stored form of ``password`` (what AlterUserScramCredentials' salted password gives too)."""
    digest = digest_of(mechanism)
    salted = salted_password(digest, password, salt, iterations)
    return credential_from_salted(mechanism, salted, salt, iterations)


def credential_from_salted(mechanism: str, salted: bytes, salt: bytes, iterations: int) -> ScramCredential:
    digest = digest_of(mechanism)
    return ScramCredential(salt, stored_key(digest, client_key(digest, salted)), server_key(digest, salted), iterations)


def parse_attributes(message: str) -> dict[str, str]:
    """``a=1,b=2`` -> {"a": "1", "b": "2"}; ValueError on an attribute without ``=`` or a repeated one."""
    out: dict[str, str] = {}
    for part in message.split(","):
        name, eq, value = part.partition("=")
        if not eq or len(name) != 1 or name in out:
            raise ValueError(f"invalid SCRAM attribute {part!r}")
        out[name] = value
    return out


def saslname_escape(name: str) -> str:
    """RFC 5802's saslname: ``=`` and ``,`` in a user name are sent as ``=3D`` and ``=2C``."""
    return name.replace("=", "=3D").replace(",", "=2C")


def saslname_unescape(name: str) -> str:
    """The inverse of ``saslname_escape``; ValueError on a ``=`` not followed by 2C or 3D."""
    if "=" in name.replace("=2C", "").replace("=3D", ""):
        raise ValueError(f"invalid saslname {name!r}")
    return name.replace("=2C", ",").replace("=3D", "=")
