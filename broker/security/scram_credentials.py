"""SCRAM credentials (KIP-554), kept durably in the data directory: what
AlterUserScramCredentials changes, DescribeUserScramCredentials lists and the SCRAM mechanism
looks up when a client authenticates.

A credential is Kafka's ``(salt, StoredKey, ServerKey, iterations)`` for one user and one
mechanism (``SCRAM-SHA-256``, ``SCRAM-SHA-512``): never the password, nor the salted password
(client/security/scram.py derives the keys). A user has at most one credential per mechanism.

File: ``<log.dir>/scram-credentials.json`` (minibroker's own; Kafka keeps these as
UserScramCredentialRecords in its metadata log), replaced whole by ``atomic_write`` on every
change (``scram-credentials.json.tmp``, fsync, rename, fsync of the directory), so a crash
leaves the old set or the new one, never a mix; a leftover ``.tmp`` is a torn write and is
removed, unread, at start-up. The file is created with mode 0600: its keys are enough to run
an offline dictionary attack on the passwords, and a ServerKey lets its holder pose as the
broker. Format, one credential per line, sorted by user then mechanism, bytes in base64
(standard alphabet, padded)::

    {"version": 1, "credentials": [
    {"user": "alice", "mechanism": "SCRAM-SHA-256", "iterations": 8192, "salt": "...", "stored_key": "...", "server_key": "..."}
    ]}

A missing file is the empty set. A file that cannot be read as this format (bad JSON, another
version, an unknown mechanism, iterations outside 4096..16384, keys of the wrong length for the
mechanism's hash, a user and mechanism twice) stops start-up with ``ScramCredentialFileError``,
one line naming the file: never a silent empty set, which would lock every user out, nor a
partial one.

Changes write the new set first and replace the set in memory only once it is durable: if the
write fails (OSError) nothing changed, in memory or on disk, and the error propagates. They
run synchronously on the caller's thread (the event loop, for the handlers): two fsyncs of a
file of a few hundred bytes per user, for an admin operation that is rare; the alternative, a
worker thread, would need a lock to keep two concurrent alterations from losing one another's
changes, and the SCRAM mechanism's lookups would then race with the swap. Reads are dict
lookups.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import secrets
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from client.security.scram import (
    MAX_ITERATIONS,
    MECHANISM_TYPES,
    MECHANISMS,
    MIN_ITERATIONS,
    ScramCredential,
    credential_from_salted,
    make_credential,
)

from ..storage.fileutil import atomic_write, read_atomic_file

__all__ = ["ScramCredentialStore", "ScramCredentialFileError", "ScramSeed", "parse_add_scram", "CREDENTIALS_FILE",
           "FORMAT_VERSION", "validate_credential", "apply_seeds"]

CREDENTIALS_FILE = "scram-credentials.json"
FORMAT_VERSION = 1
#: the file's permissions: owner read/write only (see the module docstring)
FILE_MODE = 0o600


class ScramCredentialFileError(Exception):
    """The credentials file exists but cannot be read (the message names it, on one line)."""


def validate_credential(user: str, mechanism: str, credential: ScramCredential) -> None:
    """ValueError unless ``credential`` may be stored for ``user`` and ``mechanism``: a non-empty
    user name, one of Kafka's mechanisms, iterations within Kafka's bounds, and keys as long
    as the mechanism's hash."""
    if not user:
        raise ValueError("Username must not be empty")
    if mechanism not in MECHANISMS:
        raise ValueError(f"Unknown SCRAM mechanism {mechanism!r}")
    if not MIN_ITERATIONS <= credential.iterations <= MAX_ITERATIONS:
        raise ValueError(f"iterations {credential.iterations} outside {MIN_ITERATIONS}..{MAX_ITERATIONS}")
    size = hashlib.new(MECHANISMS[mechanism]).digest_size
    if len(credential.stored_key) != size or len(credential.server_key) != size:
        raise ValueError(f"keys of a {mechanism} credential are {size} bytes long")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(value: object, field: str) -> bytes:
    if not isinstance(value, str):
        raise ValueError(f"{field}: not a string")
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error:
        raise ValueError(f"{field}: not base64") from None


def encode(credentials: dict[tuple[str, str], ScramCredential]) -> bytes:
    """The file's content for ``credentials`` ((user, mechanism) -> credential)."""
    lines = [json.dumps({"user": user, "mechanism": mech, "iterations": c.iterations, "salt": _b64(c.salt),
                         "stored_key": _b64(c.stored_key), "server_key": _b64(c.server_key)}, ensure_ascii=False)
             for (user, mech), c in sorted(credentials.items())]
    body = ",\n".join(lines)
    return (f'{{"version": {FORMAT_VERSION}, "credentials": [\n{body}\n]}}\n' if lines
            else f'{{"version": {FORMAT_VERSION}, "credentials": []}}\n').encode()


def decode(data: bytes) -> dict[tuple[str, str], ScramCredential]:
    """The credentials of a file's content; ValueError saying what is wrong."""
    doc = json.loads(data)
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    if doc.get("version") != FORMAT_VERSION:
        raise ValueError(f"unsupported version {doc.get('version')!r} (this broker reads version {FORMAT_VERSION})")
    entries = doc.get("credentials")
    if not isinstance(entries, list):
        raise ValueError('"credentials" is not a list')
    out: dict[tuple[str, str], ScramCredential] = {}
    for i, e in enumerate(entries):
        try:
            if not isinstance(e, dict):
                raise ValueError("not a JSON object")
            user, mech, iterations = e.get("user"), e.get("mechanism"), e.get("iterations")
            if not isinstance(user, str) or not isinstance(mech, str):
                raise ValueError("user and mechanism must be strings")
            if type(iterations) is not int:
                raise ValueError("iterations must be an integer")
            cred = ScramCredential(_unb64(e.get("salt"), "salt"), _unb64(e.get("stored_key"), "stored_key"),
                                   _unb64(e.get("server_key"), "server_key"), iterations)
            validate_credential(user, mech, cred)
            if (user, mech) in out:
                raise ValueError(f"a second {mech} credential for user {user!r}")
        except ValueError as err:
            raise ValueError(f"credential #{i}: {err}") from None
        out[(user, mech)] = cred
    return out


class ScramCredentialStore:
    """The durable SCRAM credentials of one data directory (see the module docstring)."""

    def __init__(self, log_dir: str) -> None:
        self.path = os.path.join(log_dir, CREDENTIALS_FILE)
        self._credentials: dict[tuple[str, str], ScramCredential] = self._load()

    def _load(self) -> dict[tuple[str, str], ScramCredential]:
        data = read_atomic_file(self.path, "the SCRAM credentials file", ScramCredentialFileError)
        if data is None:
            return {}
        try:
            return decode(data)
        except (ValueError, UnicodeDecodeError) as e:
            reason = str(e).replace("\n", " ")
            raise ScramCredentialFileError(f"the SCRAM credentials file {self.path} is corrupt ({reason}); restore"
                                           " it from a backup, or remove it to start with no credentials") from e

    def __len__(self) -> int:
        return len(self._credentials)

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        """``user``'s credential for ``mechanism`` (``SCRAM-SHA-256``/``-512``), or None."""
        return self._credentials.get((user, mechanism))

    def users(self) -> list[str]:
        """Every user with at least one credential, sorted."""
        return sorted({user for user, _ in self._credentials})

    def describe(self, users: list[str] | None) -> dict[str, list[tuple[str, int]]]:
        """``{user: [(mechanism, iterations)]}`` for ``users`` (None: every user), mechanisms in
        Kafka's type order (SHA-256, then SHA-512). A user without credentials is left out:
        the caller decides what that means (DescribeUserScramCredentials: RESOURCE_NOT_FOUND)."""
        wanted = self.users() if users is None else users
        out: dict[str, list[tuple[str, int]]] = {}
        for user in wanted:
            found = [(m, c.iterations) for m in sorted(MECHANISM_TYPES, key=MECHANISM_TYPES.__getitem__)
                     if (c := self._credentials.get((user, m))) is not None]
            if found:
                out[user] = found
        return out

    def upsert(self, user: str, mechanism: str, credential: ScramCredential) -> None:
        """Store ``credential`` as ``user``'s for ``mechanism`` (replacing any), durably;
        ValueError if ``validate_credential`` refuses it."""
        self.alter([(user, mechanism, credential)], [])

    def delete(self, user: str, mechanism: str) -> bool:
        """Remove ``user``'s credential for ``mechanism``, durably; False if there was none."""
        if (user, mechanism) not in self._credentials:
            return False
        self.alter([], [(user, mechanism)])
        return True

    def alter(self, upsertions: Iterable[tuple[str, str, ScramCredential]],
              deletions: Iterable[tuple[str, str]]) -> None:
        """Apply every deletion, then every upsertion, with one durable write (all or nothing:
        ValueError before anything is written if a credential is refused; a deletion of a
        credential that does not exist removes nothing)."""
        new = dict(self._credentials)
        for user, mechanism in deletions:
            new.pop((user, mechanism), None)
        for user, mechanism, credential in upsertions:
            validate_credential(user, mechanism, credential)
            new[(user, mechanism)] = ScramCredential(*credential)
        if new == self._credentials:
            return
        atomic_write(self.path, encode(new), FILE_MODE)  # the commit point: raises before anything changed
        self._credentials = new


class ScramSeed(NamedTuple):
    """One ``--add-scram`` value, parsed: the credential to store for ``user`` and ``mechanism``."""

    user: str
    mechanism: str
    credential: ScramCredential


#: ``--add-scram``'s keys inside the brackets (Kafka's ScramParser)
_SEED_KEYS = ("name", "password", "salt", "saltedpassword", "iterations")


def _seed_salt() -> bytes:
    return secrets.token_bytes(32)


def parse_add_scram(value: str) -> ScramSeed:
    """A credential from ``kafka-storage format --add-scram``'s syntax:
    ``MECHANISM=[name=NAME,password=PASSWORD]``, with optional ``iterations=N`` (default 4096,
    within 4096..16384), ``salt=BASE64`` (default 32 random bytes), and ``saltedpassword=BASE64``
    (with ``salt``) in place of ``password``. A value may be quoted (``password="a b"``); a comma
    always separates components, as in Kafka. ValueError with Kafka's wording otherwise."""
    value = value.strip()
    mechanism, eq, config = value.partition("=")
    if not eq:
        raise ValueError(f"Failed to find equals sign in SCRAM argument '{value}'")
    if mechanism not in MECHANISMS:
        raise ValueError(f"The add-scram mechanism {mechanism} is not supported.")
    if not config.startswith("["):
        raise ValueError("Expected configuration string to start with [")
    if not config.endswith("]"):
        raise ValueError("Expected configuration string to end with ]")
    components: dict[str, str] = {}
    for part in config[1:-1].split(","):
        key, eq, v = part.partition("=")
        if not eq:
            # Kafka's message quotes the component; it may be the tail of a password holding a comma
            raise ValueError("No equals sign found in a SCRAM component (a comma always separates components)")
        if len(v) >= 2 and v.startswith('"') and v.endswith('"'):
            v = v[1:-1]
        components[key] = v
    unknown = sorted(set(components) - set(_SEED_KEYS))
    if unknown:
        raise ValueError(f"Unknown SCRAM configurations: {', '.join(unknown)}")
    name = components.get("name")
    if name is None:
        raise ValueError("You must supply 'name' to add-scram")
    if not name:
        raise ValueError("Username must not be empty")
    salt = _seed_salt()
    if "salt" in components:
        try:
            salt = base64.b64decode(components["salt"], validate=True)
        except binascii.Error:
            raise ValueError(f"Failed to decode given salt: {components['salt']}") from None
    iterations = MIN_ITERATIONS
    if "iterations" in components:
        try:
            iterations = int(components["iterations"])
        except ValueError:
            raise ValueError(f"Failed to parse iterations count: {components['iterations']}") from None
    if iterations < MIN_ITERATIONS:
        raise ValueError(f"The 'iterations' value must be >= {MIN_ITERATIONS} for add-scram using {mechanism}")
    if iterations > MAX_ITERATIONS:
        raise ValueError(f"The 'iterations' value must be <= {MAX_ITERATIONS} for add-scram using {mechanism}")
    if "password" in components:
        credential = make_credential(mechanism, components["password"].encode(), salt, iterations)
    elif "saltedpassword" not in components:
        raise ValueError("You must supply one of 'password' or 'saltedpassword' to add-scram")
    elif "salt" not in components:
        raise ValueError("You must supply 'salt' with 'saltedpassword' to add-scram")
    else:
        try:
            salted = base64.b64decode(components["saltedpassword"], validate=True)
        except binascii.Error:
            # the value is a secret: name the component, not its content
            raise ValueError("Failed to decode given saltedpassword (not base64)") from None
        credential = credential_from_salted(mechanism, salted, salt, iterations)
    return ScramSeed(name, mechanism, credential)


def apply_seeds(store: ScramCredentialStore, seeds: Sequence[ScramSeed]) -> None:
    """Store every seed with one durable write (a later seed for the same user and mechanism
    wins, as it would with one write each)."""
    store.alter([(s.user, s.mechanism, s.credential) for s in seeds], [])
