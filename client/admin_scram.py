"""Admin operations on SCRAM credentials (KIP-554; ``Admin`` inherits them):
describe_user_scram_credentials and alter_user_scram_credentials, as Kafka's Java admin's
``describeUserScramCredentials`` / ``alterUserScramCredentials`` (``minibroker users``,
``kafka-configs.sh --entity-type users``).

::

    async with Admin("127.0.0.1:9092") as admin:
        await admin.alter_user_scram_credentials(
            upsertions=[UserScramCredentialUpsertion("alice", ScramMechanism.SCRAM_SHA_512, "secret", 8192)],
            deletions=[UserScramCredentialDeletion("bob", ScramMechanism.SCRAM_SHA_256)])
        print(await admin.describe_user_scram_credentials(["alice"]))

The password never leaves the client: an upsertion sends a salt (32 random bytes unless one is
given) and the salted password, PBKDF2-HMAC of the mechanism's hash (client/security/scram.py),
from which the broker derives the keys it keeps. DescribeUserScramCredentials goes to any
broker, AlterUserScramCredentials to the controller, as Kafka's admin sends them. The broker
processes every user of a request; the first user's error is then raised as the
``KafkaError`` subclass of its code (ResourceNotFoundError, DuplicateResourceError,
UnacceptableCredentialError, UnsupportedSaslMechanismError) with the broker's message.
"""

from __future__ import annotations

import enum
import secrets
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, NamedTuple

from client.cluster import Cluster
from client.conn import BrokerConnection
from client.errors import error_for_code
from client.protocol.api import ApiKey, ErrorCode, error_name
from client.security.scram import MAX_ITERATIONS, MIN_ITERATIONS, digest_of, salted_password

__all__ = ["ScramAdmin", "ScramMechanism", "ScramCredentialInfo", "UserScramCredentialsDescription",
           "UserScramCredentialUpsertion", "UserScramCredentialDeletion", "SALT_BYTES"]

#: the length of the random salt an upsertion gets when it names none
SALT_BYTES = 32


class ScramMechanism(enum.IntEnum):
    """Kafka's ScramMechanism: the type numbers the APIs carry (0: one this side does not know)."""

    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def mechanism_name(self) -> str:
        """``SCRAM-SHA-256`` / ``SCRAM-SHA-512`` (``UNKNOWN`` for UNKNOWN)."""
        return self.name.replace("_", "-")

    @classmethod
    def of(cls, mechanism: ScramMechanism | int | str) -> ScramMechanism:
        """A mechanism from its type number or its name (``SCRAM-SHA-512``, ``scram_sha_512``);
        UNKNOWN for any other."""
        if isinstance(mechanism, str):
            return cls.__members__.get(mechanism.upper().replace("-", "_"), cls.UNKNOWN)
        return cls(mechanism) if mechanism in cls._value2member_map_ else cls.UNKNOWN


class ScramCredentialInfo(NamedTuple):
    mechanism: ScramMechanism
    iterations: int


class UserScramCredentialsDescription(NamedTuple):
    """A user's SCRAM credentials: one per mechanism it has (never the salt or keys)."""

    name: str
    credential_infos: list[ScramCredentialInfo]


class UserScramCredentialUpsertion(NamedTuple):
    """Create or replace ``user``'s credential for ``mechanism``. ``salt``: None for
    ``SALT_BYTES`` random bytes (what a caller should want)."""

    user: str
    mechanism: ScramMechanism | int | str
    password: str | bytes
    iterations: int = MIN_ITERATIONS
    salt: bytes | None = None


class UserScramCredentialDeletion(NamedTuple):
    user: str
    mechanism: ScramMechanism | int | str


def _upsertion_body(u: UserScramCredentialUpsertion) -> dict[str, Any]:
    mechanism = ScramMechanism.of(u.mechanism)
    if mechanism is ScramMechanism.UNKNOWN:
        # Kafka's admin fails such a user without sending it: there is no hash to salt with
        raise error_for_code(ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                             f"cannot alter the SCRAM credential of user {u.user!r}: unknown mechanism {u.mechanism!r}")
    salt = secrets.token_bytes(SALT_BYTES) if u.salt is None else u.salt
    password = u.password.encode() if isinstance(u.password, str) else u.password
    salted = b""
    # Out of bounds, the broker refuses the iterations (UNACCEPTABLE_CREDENTIAL) before it looks
    # at the salted password: skip the PBKDF2 run, which could take hours (or fail, for <= 0).
    if MIN_ITERATIONS <= u.iterations <= MAX_ITERATIONS:
        salted = salted_password(digest_of(mechanism.mechanism_name), password, salt, u.iterations)
    return {"name": u.user, "mechanism": int(mechanism), "iterations": u.iterations, "salt": salt,
            "salted_password": salted}


class ScramAdmin(ABC):
    """The SCRAM credential operations of ``Admin``, which provides the connection plumbing."""

    _cluster: Cluster

    @abstractmethod
    async def _request(self, conn_getter: Callable[[], Awaitable[BrokerConnection]], api_key: ApiKey,
                       body: dict[str, Any]) -> dict[str, Any]:
        """One request on the connection ``conn_getter`` gives, answered with its body."""

    async def describe_user_scram_credentials(self, users: Iterable[str] | None = None
                                              ) -> dict[str, UserScramCredentialsDescription]:
        """``{user: description}`` of the users named (None or none: every user with a
        credential). A user without any credential raises ResourceNotFoundError, a user named
        twice DuplicateResourceError."""
        names = None if users is None else list(users)
        body = {"users": [{"name": n} for n in names] if names else None}
        resp = await self._request(self._cluster.any_connection, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, body)
        if resp["error_code"]:
            raise error_for_code(resp["error_code"], "cannot describe SCRAM credentials: "
                                 + (resp["error_message"] or error_name(resp["error_code"])))
        out: dict[str, UserScramCredentialsDescription] = {}
        for r in resp["results"]:
            if r["error_code"]:
                raise error_for_code(r["error_code"], f"cannot describe the SCRAM credentials of user {r['user']!r}: "
                                     + (r["error_message"] or error_name(r["error_code"])))
            out[r["user"]] = UserScramCredentialsDescription(
                r["user"], [ScramCredentialInfo(ScramMechanism.of(c["mechanism"]), c["iterations"])
                            for c in r["credential_infos"]])
        return out

    async def alter_user_scram_credentials(self, upsertions: Iterable[UserScramCredentialUpsertion] = (),
                                           deletions: Iterable[UserScramCredentialDeletion] = ()) -> None:
        """Apply the upsertions and deletions (a user at most once in all of them). The broker
        applies every valid user's change and refuses the others; the first refusal is then
        raised (see the module docstring). An upsertion with a mechanism this client does not
        know raises UnsupportedSaslMechanismError before anything is sent."""
        body = {"upsertions": [_upsertion_body(u) for u in upsertions],
                "deletions": [{"name": d.user, "mechanism": int(ScramMechanism.of(d.mechanism))} for d in deletions]}
        if not body["upsertions"] and not body["deletions"]:
            return
        resp = await self._request(self._cluster.controller_connection, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, body)
        for r in resp["results"]:
            if r["error_code"]:
                raise error_for_code(r["error_code"], f"cannot alter the SCRAM credentials of user {r['user']!r}: "
                                     + (r["error_message"] or error_name(r["error_code"])))
