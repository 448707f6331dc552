"""RegistryState: the registry's subjects, versions, ids, compatibility levels and modes, as
replayed from ``_schemas`` — and the decisions of every request, without I/O.

Everything that changes the state goes through ``apply`` (one ``StoreRecord``), both at
start-up replay and after a write: a request's method returns the records to write (``Plan``)
and what to answer; the runtime appends them, waits for the fsync, then applies the same
records. So the state is always what a restart would rebuild from the topic.

Ids as Confluent allocates them: a schema already known (same type, stored form and
references), under any subject and even soft-deleted, keeps its id; a new one gets the largest
id seen + 1. An id is never reused, also after a permanent delete: Confluent's rule alone (the
largest id *in the topic* + 1) would hand a permanently deleted largest id out again once the
log cleaner has removed its record and tombstone, and after a restart — so a permanent delete
that removes the last holder of the largest id also writes a ``MAX_ID`` record (records.py),
one key that compaction keeps, and replay takes the largest id of both. Versions of a subject:
the largest version present + 1 (a permanently deleted last version can be reused, as in
Confluent: versions name a subject's history, ids name bytes on the wire).

Deletes as Confluent's: a soft delete rewrites the SCHEMA record with ``deleted: true`` (the
id stays resolvable); a permanent delete, allowed only after a soft delete, writes a
tombstone, and the subject's CONFIG and MODE with it when the whole subject goes.
"""

from __future__ import annotations

from collections.abc import Iterable

from .compatibility import DEFAULT_LEVEL, LEVELS, check
from .errors import ErrorCode, RegistryError
from .records import (
    Reference,
    SchemaValue,
    StoreRecord,
    encode_config,
    encode_max_id,
    encode_mode,
    encode_schema,
    encode_schema_tombstone,
)
from .schema_types import SCHEMA_TYPES, InvalidSchema, ParsedSchema, parse_schema

__all__ = ["MODES", "Plan", "RegistryState"]

MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")
_MAX_VERSION = 2**31 - 1

#: (key, value) records to append to ``_schemas``, in order, in one batch
Plan = list[tuple[bytes, bytes | None]]
Identity = tuple[str, str, tuple[Reference, ...]]


class RegistryState:
    def __init__(self) -> None:
        #: subject -> version -> its value (soft-deleted ones included), versions ascending
        self.subjects: dict[str, dict[int, SchemaValue]] = {}
        #: id -> the (subject, version) pairs holding it
        self.id_holders: dict[int, set[tuple[str, int]]] = {}
        self.identities: dict[Identity, int] = {}
        self.max_id = 0
        self.configs: dict[str | None, str] = {}
        self.modes: dict[str | None, str] = {}

    # -- replay --

    def apply(self, rec: StoreRecord) -> None:
        if rec.keytype == "SCHEMA":
            assert rec.subject is not None and rec.version is not None
            self._remove(rec.subject, rec.version)
            if isinstance(rec.value, SchemaValue):
                v = rec.value._replace(subject=rec.subject, version=rec.version)
                self.subjects.setdefault(rec.subject, {})[rec.version] = v
                versions = self.subjects[rec.subject]
                if len(versions) > 1 and next(reversed(versions)) != max(versions):  # kept ascending
                    self.subjects[rec.subject] = dict(sorted(versions.items()))
                self.id_holders.setdefault(v.id, set()).add((rec.subject, rec.version))
                self.identities.setdefault((v.schema_type, v.schema, v.references), v.id)
                self.max_id = max(self.max_id, v.id)
        elif rec.keytype == "CONFIG":
            _set(self.configs, rec.subject, rec.value)
        elif rec.keytype == "MODE":
            _set(self.modes, rec.subject, rec.value)
        elif rec.keytype == "MAX_ID" and isinstance(rec.value, int):
            self.max_id = max(self.max_id, rec.value)
        elif rec.keytype == "DELETE_SUBJECT" and rec.subject is not None and isinstance(rec.value, int):
            for version, v in self.subjects.get(rec.subject, {}).items():
                if version <= rec.value:
                    self.subjects[rec.subject][version] = v._replace(deleted=True)

    def _remove(self, subject: str, version: int) -> None:
        old = self.subjects.get(subject, {}).pop(version, None)
        if old is None:
            return
        if not self.subjects[subject]:
            del self.subjects[subject]
        holders = self.id_holders.get(old.id)
        if holders is not None:
            holders.discard((subject, version))
            if not holders:
                del self.id_holders[old.id]
                identity = (old.schema_type, old.schema, old.references)
                if self.identities.get(identity) == old.id:
                    del self.identities[identity]

    # -- reading --

    def live_versions(self, subject: str) -> list[SchemaValue]:
        return [v for v in self.subjects.get(subject, {}).values() if not v.deleted]

    def list_subjects(self, deleted: bool = False, prefix: str = "") -> list[str]:
        return sorted(s for s, versions in self.subjects.items()
                      if s.startswith(prefix) and (deleted or any(not v.deleted for v in versions.values())))

    def list_versions(self, subject: str, deleted: bool = False) -> list[int]:
        versions = [v.version for v in self.subjects.get(subject, {}).values() if deleted or not v.deleted]
        if not versions:
            raise RegistryError.subject_not_found(subject)
        return versions

    def get_version(self, subject: str, version: str, deleted: bool = False) -> SchemaValue:
        """``version``: a number or ``latest`` (-1)."""
        n = parse_version(version)
        versions = self.subjects.get(subject, {})
        if not any(deleted or not v.deleted for v in versions.values()):
            raise RegistryError.subject_not_found(subject)
        if n == -1:
            candidates = [v for v in versions.values() if deleted or not v.deleted]
            return candidates[-1]
        found = versions.get(n)
        if found is None or (found.deleted and not deleted):
            raise RegistryError.version_not_found(n)
        return found

    def schema_by_id(self, schema_id: int) -> SchemaValue:
        holders = self.id_holders.get(schema_id)
        if not holders:
            raise RegistryError.schema_not_found(schema_id)
        subject, version = min(holders)
        return self.subjects[subject][version]

    def id_versions(self, schema_id: int, deleted: bool = False) -> list[tuple[str, int]]:
        self.schema_by_id(schema_id)  # 40403
        return sorted((s, v) for s, v in self.id_holders[schema_id] if deleted or not self.subjects[s][v].deleted)

    def referenced_by(self, subject: str, version: str) -> list[int]:
        target = self.get_version(subject, version)
        return sorted({v.id for versions in self.subjects.values() for v in versions.values()
                       if not v.deleted and any(r.subject == subject and r.version == target.version
                                                for r in v.references)})

    def level(self, subject: str | None) -> str:
        return self.configs.get(subject) or self.configs.get(None) or DEFAULT_LEVEL

    def mode(self, subject: str | None) -> str:
        return self.modes.get(subject) or self.modes.get(None) or "READWRITE"

    def parse(self, text: str, schema_type: str, references: tuple[Reference, ...], normalize: bool) -> ParsedSchema:
        if schema_type not in SCHEMA_TYPES:
            raise RegistryError(ErrorCode.INVALID_SCHEMA,
                                f"Invalid schema type {schema_type}: this registry supports {', '.join(SCHEMA_TYPES)}")
        try:
            return parse_schema(text, schema_type, references, self._reference, normalize=normalize)
        except InvalidSchema as e:
            raise RegistryError.invalid_schema(str(e)) from None

    def _reference(self, ref: Reference) -> SchemaValue | None:
        v = self.subjects.get(ref.subject, {}).get(ref.version)
        return None if v is None or v.deleted else v

    def lookup(self, subject: str, schema: ParsedSchema, references: tuple[Reference, ...],
               deleted: bool = False) -> SchemaValue:
        versions = [v for v in self.subjects.get(subject, {}).values() if deleted or not v.deleted]
        if not versions:
            raise RegistryError.subject_not_found(subject)
        for v in reversed(versions):
            if (v.schema_type, v.schema, v.references) == (schema.schema_type, schema.stored, references):
                return v
        raise RegistryError.schema_not_found()

    def compatibility(self, subject: str, version: str | None, schema: ParsedSchema) -> list[str]:
        """Messages of the incompatibilities of ``schema`` with ``version`` of ``subject`` (None:
        the versions the subject's level names)."""
        level = self.level(subject)
        if version is None:
            previous = self.live_versions(subject)
        elif parse_version(version) == -1 and not self.live_versions(subject):
            return []  # nothing to be incompatible with
        else:
            previous = [self.get_version(subject, version)]
            level = level.removesuffix("_TRANSITIVE")
        return check(level, schema, [(v.version, self.parsed(v)) for v in previous])

    def parsed(self, v: SchemaValue) -> ParsedSchema:
        """A stored version, parsed (as it was valid when registered, it parses again)."""
        return parse_schema(v.schema, v.schema_type, v.references, self._reference)

    # -- writes: each returns the records to append, and what to answer --

    def register(self, subject: str, schema: ParsedSchema, references: tuple[Reference, ...],
                 schema_id: int | None = None, version: int | None = None) -> tuple[Plan, int]:
        mode = self.mode(subject)
        if mode in ("READONLY", "READONLY_OVERRIDE"):
            raise RegistryError(ErrorCode.OPERATION_NOT_PERMITTED, f"Subject {subject} is in read-only mode")
        if (schema_id is not None or version is not None) and mode != "IMPORT":
            raise RegistryError(ErrorCode.OPERATION_NOT_PERMITTED,
                                "An id or a version can be given only in IMPORT mode")
        identity = (schema.schema_type, schema.stored, references)
        for v in self.live_versions(subject):
            if (v.schema_type, v.schema, v.references) == identity and (version is None or version == v.version):
                return [], v.id
        if mode != "IMPORT":
            messages = check(self.level(subject), schema,
                             [(v.version, self.parsed(v)) for v in self.live_versions(subject)])
            if messages:
                raise RegistryError.incompatible(subject, messages)
        known = self.identities.get(identity)
        if schema_id is None:
            schema_id = known if known is not None else self.max_id + 1
        elif known is not None and known != schema_id or (known is None and schema_id in self.id_holders):
            raise RegistryError(ErrorCode.ID_DOES_NOT_MATCH,
                                f"Overwrite new schema with id {schema_id} is not permitted.")
        existing = self.subjects.get(subject, {})
        if version is None:
            version = (max(existing) if existing else 0) + 1
        elif version in existing:
            raise RegistryError(ErrorCode.INVALID_VERSION, f"Version {version} already exists in subject {subject}")
        value = SchemaValue(subject, version, schema_id, schema.schema_type, references, schema.stored, False)
        return [encode_schema(value)], schema_id

    def delete_version(self, subject: str, version: str, permanent: bool) -> tuple[Plan, int]:
        n = parse_version(version)
        versions = self.subjects.get(subject, {})
        if not versions:
            raise RegistryError.subject_not_found(subject)
        if n == -1:
            live = self.live_versions(subject)
            if not live and not permanent:
                raise RegistryError.subject_not_found(subject)
            target = live[-1] if live else list(versions.values())[-1]
        else:
            found = versions.get(n)
            if found is None:
                raise RegistryError.version_not_found(n)
            target = found
        if permanent:
            if not target.deleted:
                raise RegistryError.version_not_soft_deleted(subject, target.version)
            return [*self._keep_max_id([target]), encode_schema_tombstone(subject, target.version)], target.version
        if target.deleted:
            raise RegistryError.version_soft_deleted(subject, target.version)
        self._refuse_referenced([target])
        return [encode_schema(target._replace(deleted=True))], target.version

    def delete_subject(self, subject: str, permanent: bool) -> tuple[Plan, list[int]]:
        versions = list(self.subjects.get(subject, {}).values())
        if not versions:
            raise RegistryError.subject_not_found(subject)
        live = [v for v in versions if not v.deleted]
        if permanent:
            if live:
                raise RegistryError.subject_not_soft_deleted(subject)
            plan: Plan = [*self._keep_max_id(versions), *(encode_schema_tombstone(subject, v.version) for v in versions)]
            if subject in self.configs:
                plan.append(encode_config(subject, None))
            if subject in self.modes:
                plan.append(encode_mode(subject, None))
            return plan, [v.version for v in versions]
        if not live:
            raise RegistryError.subject_soft_deleted(subject)
        self._refuse_referenced(live)
        return [encode_schema(v._replace(deleted=True)) for v in live], [v.version for v in live]

    def _keep_max_id(self, targets: list[SchemaValue]) -> Plan:
        """The MAX_ID record when permanently deleting ``targets`` removes every holder of the
        largest id (then nothing else in the topic would remember it once compacted)."""
        holders = self.id_holders.get(self.max_id, set())
        if holders and holders <= {(t.subject, t.version) for t in targets}:
            return [encode_max_id(self.max_id)]
        return []

    def _refuse_referenced(self, targets: Iterable[SchemaValue]) -> None:
        for t in targets:
            for versions in self.subjects.values():
                for v in versions.values():
                    if not v.deleted and v.subject != t.subject and any(
                            r.subject == t.subject and r.version == t.version for r in v.references):
                        raise RegistryError(ErrorCode.REFERENCE_EXISTS, "One or more references exist to the schema "
                                            f"{{magic=1,keytype=SCHEMA,subject={t.subject},version={t.version}}}.")

    def set_config(self, subject: str | None, level: object) -> tuple[Plan, str]:
        if not isinstance(level, str) or level.upper() not in LEVELS:
            raise RegistryError.invalid_compatibility_level(level)
        return [encode_config(subject, level.upper())], level.upper()

    def delete_config(self, subject: str | None) -> tuple[Plan, str]:
        if subject is None:
            return [encode_config(None, None)], self.level(None)
        if subject not in self.configs:
            if subject not in self.subjects:
                raise RegistryError.subject_not_found(subject)
            return [], self.level(None)
        return [encode_config(subject, None)], self.configs[subject]

    def set_mode(self, subject: str | None, mode: object, force: bool = False) -> tuple[Plan, str]:
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise RegistryError.invalid_mode(mode)
        mode = mode.upper()
        if mode == "IMPORT" and not force and (self.list_subjects() if subject is None else self.live_versions(subject)):
            raise RegistryError(ErrorCode.OPERATION_NOT_PERMITTED,
                                "Cannot import since found existing subjects (force=true to import anyway)")
        return [encode_mode(subject, mode)], mode

    def delete_mode(self, subject: str | None) -> tuple[Plan, str]:
        if subject is None:
            return [encode_mode(None, None)], self.mode(None)
        if subject not in self.modes:
            if subject not in self.subjects:
                raise RegistryError.subject_not_found(subject)
            return [], self.mode(None)
        return [encode_mode(subject, None)], self.modes[subject]


def parse_version(version: str) -> int:
    """A version path parameter: 1..2^31-1, or ``latest``/-1 (returned as -1); 42202 otherwise."""
    if version == "latest":
        return -1
    try:
        n = int(version)
    except ValueError:
        raise RegistryError.invalid_version(version) from None
    if n == -1 or 1 <= n <= _MAX_VERSION:
        return n
    raise RegistryError.invalid_version(version)


def _set(table: dict[str | None, str], subject: str | None, value: object) -> None:
    if isinstance(value, str):
        table[subject] = value
    else:
        table.pop(subject, None)
