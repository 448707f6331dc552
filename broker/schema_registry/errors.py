"""The registry's errors: one exception, ``RegistryError``, carrying Confluent's error code, and
one constructor per code with Confluent's message.

Confluent answers an error with ``{"error_code": N, "message": "..."}`` and an HTTP status made
of the code's first three digits (40401 -> 404, 42201 -> 422, 50001 -> 500); the incompatible
schema error is the bare 409.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ErrorCode", "RegistryError"]


class ErrorCode(IntEnum):
    BAD_REQUEST = 400
    NOT_FOUND = 404
    INCOMPATIBLE_SCHEMA = 409
    SUBJECT_NOT_FOUND = 40401
    VERSION_NOT_FOUND = 40402
    SCHEMA_NOT_FOUND = 40403
    SUBJECT_SOFT_DELETED = 40404
    SUBJECT_NOT_SOFT_DELETED = 40405
    SCHEMA_VERSION_SOFT_DELETED = 40406
    SCHEMA_VERSION_NOT_SOFT_DELETED = 40407
    SUBJECT_LEVEL_COMPATIBILITY_NOT_CONFIGURED = 40408
    SUBJECT_LEVEL_MODE_NOT_CONFIGURED = 40409
    INVALID_SCHEMA = 42201
    INVALID_VERSION = 42202
    INVALID_COMPATIBILITY_LEVEL = 42203
    INVALID_MODE = 42204
    OPERATION_NOT_PERMITTED = 42205
    REFERENCE_EXISTS = 42206
    ID_DOES_NOT_MATCH = 42207
    STORE_ERROR = 50001
    OPERATION_TIMEOUT = 50002
    REQUEST_FORWARDING_FAILED = 50003


class RegistryError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def status(self) -> int:
        return int(str(int(self.code))[:3])

    def body(self) -> dict[str, object]:
        return {"error_code": int(self.code), "message": self.message}

    # -- Confluent's messages --

    @classmethod
    def subject_not_found(cls, subject: str) -> RegistryError:
        return cls(ErrorCode.SUBJECT_NOT_FOUND, f"Subject '{subject}' not found.")

    @classmethod
    def version_not_found(cls, version: int | str) -> RegistryError:
        return cls(ErrorCode.VERSION_NOT_FOUND, f"Version {version} not found.")

    @classmethod
    def schema_not_found(cls, schema_id: int | None = None) -> RegistryError:
        return cls(ErrorCode.SCHEMA_NOT_FOUND,
                   "Schema not found" if schema_id is None else f"Schema {schema_id} not found")

    @classmethod
    def subject_soft_deleted(cls, subject: str) -> RegistryError:
        return cls(ErrorCode.SUBJECT_SOFT_DELETED,
                   f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently")

    @classmethod
    def subject_not_soft_deleted(cls, subject: str) -> RegistryError:
        return cls(ErrorCode.SUBJECT_NOT_SOFT_DELETED,
                   f"Subject '{subject}' was not deleted first before being permanently deleted")

    @classmethod
    def version_soft_deleted(cls, subject: str, version: int) -> RegistryError:
        return cls(ErrorCode.SCHEMA_VERSION_SOFT_DELETED,
                   f"Subject '{subject}' Version {version} was soft deleted.Set permanent=true to delete permanently")

    @classmethod
    def version_not_soft_deleted(cls, subject: str, version: int) -> RegistryError:
        return cls(ErrorCode.SCHEMA_VERSION_NOT_SOFT_DELETED,
                   f"Subject '{subject}' Version {version} was not deleted first before being permanently deleted")

    @classmethod
    def invalid_schema(cls, why: str) -> RegistryError:
        return cls(ErrorCode.INVALID_SCHEMA, f"Invalid schema: {why}")

    @classmethod
    def invalid_version(cls, version: str) -> RegistryError:
        return cls(ErrorCode.INVALID_VERSION, "The specified version '" + version + "' is not a valid version id. "
                   "Allowed values are between [1, 2^31-1] and the string \"latest\"")

    @classmethod
    def invalid_compatibility_level(cls, level: object) -> RegistryError:
        return cls(ErrorCode.INVALID_COMPATIBILITY_LEVEL,
                   f"Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive,"
                   f" forward_transitive, and full_transitive (got {level!r})")

    @classmethod
    def invalid_mode(cls, mode: object) -> RegistryError:
        return cls(ErrorCode.INVALID_MODE,
                   f"Invalid mode. Valid values are READWRITE, READONLY, READONLY_OVERRIDE and IMPORT (got {mode!r})")

    @classmethod
    def incompatible(cls, subject: str, messages: list[str]) -> RegistryError:
        return cls(ErrorCode.INCOMPATIBLE_SCHEMA, f"Schema being registered is incompatible with an earlier schema"
                   f" for subject \"{subject}\", details: [{', '.join(messages)}]")

    @classmethod
    def store_error(cls, why: str) -> RegistryError:
        return cls(ErrorCode.STORE_ERROR, f"Error while storing the schema registry's record: {why}")
