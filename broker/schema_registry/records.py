"""The records of ``_schemas``, Confluent Schema Registry's store, in Confluent's JSON.

One partition, ``cleanup.policy=compact``: the last value of a key is the state, a tombstone
(null value) removes it. Keys and values are UTF-8 JSON objects written without spaces; a key's
``keytype`` says what it is:

- ``{"keytype":"SCHEMA","subject":S,"version":V,"magic":1}`` -> ``{"subject":S,"version":V,
  "id":ID,["schemaType":T,]"references":[{"name":N,"subject":S2,"version":V2},...],
  "schema":"...","deleted":false}``: version V of subject S. ``schemaType`` is left out for AVRO
  (readers take its absence as AVRO); ``deleted`` true is a soft delete; a tombstone is a
  permanent delete.
- ``{"keytype":"CONFIG","subject":S|null,"magic":0}`` -> ``{"compatibilityLevel":"BACKWARD"}``:
  the compatibility level of subject S, or the global one (subject null).
- ``{"keytype":"MODE","subject":S|null,"magic":0}`` -> ``{"mode":"READWRITE"}``.
- ``{"keytype":"DELETE_SUBJECT","subject":S,"magic":0}`` -> ``{"subject":S,"version":V}``: an
  older registry's soft delete of every version of S up to V (read; this registry soft-deletes
  each version with its own SCHEMA record instead).
- ``{"keytype":"NOOP","magic":0}``: written by Confluent's registry to find the end of the topic;
  skipped.
- ``{"keytype":"MAX_ID","magic":0}`` -> ``{"id":N}``: this registry's own keytype, the largest
  id ever allocated, written beside the tombstones of a permanent delete that removes the last
  holder of that id. Confluent allocates the largest id *seen in the topic* + 1, so once the
  cleaner has removed a deleted schema's record and its tombstone, the id would be handed out
  again to a different schema (and a consumer holding old framed records would decode them with
  the wrong schema). This one key, rewritten only by such deletes, survives compaction as its
  latest value, so the high-water mark does too. Cost: a Confluent registry reading this topic
  does not know the keytype; it fails to deserialise that key, logs it and goes on (as this
  registry does with Confluent keytypes it does not know) — so it works, with Confluent's own
  reuse risk.

Unknown keytypes (``CLEAR_SUBJECT``, ``CONTEXT``, ...) are skipped on load.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

__all__ = ["Reference", "SchemaValue", "StoreRecord", "decode", "encode_config", "encode_mode",
           "encode_schema", "encode_schema_tombstone", "encode_max_id", "config_key", "mode_key", "schema_key",
           "max_id_key"]

#: Confluent's schema key has magic 1, the others 0
SCHEMA_KEY_MAGIC = 1


class Reference(NamedTuple):
    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


class SchemaValue(NamedTuple):
    subject: str
    version: int
    id: int
    schema_type: str
    references: tuple[Reference, ...]
    schema: str
    deleted: bool

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"subject": self.subject, "version": self.version, "id": self.id}
        if self.schema_type != "AVRO":
            out["schemaType"] = self.schema_type
        out["references"] = [r.to_json() for r in self.references]
        out["schema"] = self.schema
        out["deleted"] = self.deleted
        return out


class StoreRecord(NamedTuple):
    """One decoded record: its keytype, the subject (None: global), the version (SCHEMA and
    DELETE_SUBJECT) and the value (None: a tombstone): a SchemaValue, a level or mode string,
    DELETE_SUBJECT's version or MAX_ID's id."""
    keytype: str
    subject: str | None
    version: int | None
    value: SchemaValue | str | int | None


def _dump(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def schema_key(subject: str, version: int) -> bytes:
    return _dump({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": SCHEMA_KEY_MAGIC})


def config_key(subject: str | None) -> bytes:
    return _dump({"keytype": "CONFIG", "subject": subject, "magic": 0})


def mode_key(subject: str | None) -> bytes:
    return _dump({"keytype": "MODE", "subject": subject, "magic": 0})


def max_id_key() -> bytes:
    return _dump({"keytype": "MAX_ID", "magic": 0})


def encode_max_id(max_id: int) -> tuple[bytes, bytes]:
    return max_id_key(), _dump({"id": max_id})


def encode_schema(value: SchemaValue) -> tuple[bytes, bytes]:
    return schema_key(value.subject, value.version), _dump(value.to_json())


def encode_schema_tombstone(subject: str, version: int) -> tuple[bytes, None]:
    return schema_key(subject, version), None


def encode_config(subject: str | None, level: str | None) -> tuple[bytes, bytes | None]:
    return config_key(subject), None if level is None else _dump({"compatibilityLevel": level})


def encode_mode(subject: str | None, mode: str | None) -> tuple[bytes, bytes | None]:
    return mode_key(subject), None if mode is None else _dump({"mode": mode})


def decode(key: bytes, value: bytes | None) -> StoreRecord | None:
    """The record, or None for one to skip (NOOP, an unknown keytype). Raises ValueError for
    bytes that are not such a record."""
    k = json.loads(key)
    if not isinstance(k, dict):
        raise ValueError("the key is not a JSON object")
    keytype = k.get("keytype")
    subject = k.get("subject")
    if subject is not None and not isinstance(subject, str):
        raise ValueError("the key's subject is not a string")
    v = None if value is None else json.loads(value)
    if v is not None and not isinstance(v, dict):
        raise ValueError("the value is not a JSON object")
    if keytype == "SCHEMA":
        if subject is None:
            raise ValueError("a SCHEMA key without a subject")
        version = int(k["version"])
        if v is None:
            return StoreRecord(keytype, subject, version, None)
        refs = tuple(Reference(str(r["name"]), str(r["subject"]), int(r["version"])) for r in v.get("references") or ())
        return StoreRecord(keytype, subject, version, SchemaValue(
            str(v.get("subject", subject)), int(v.get("version", version)), int(v["id"]),
            str(v.get("schemaType") or "AVRO"), refs, str(v["schema"]), bool(v.get("deleted", False))))
    if keytype == "CONFIG":
        level = None if v is None else v.get("compatibilityLevel")
        return StoreRecord(keytype, subject, None, None if level is None else str(level))
    if keytype == "MODE":
        mode = None if v is None else v.get("mode")
        return StoreRecord(keytype, subject, None, None if mode is None else str(mode))
    if keytype == "DELETE_SUBJECT":
        if subject is None:
            raise ValueError("a DELETE_SUBJECT key without a subject")
        return StoreRecord(keytype, subject, None, None if v is None else int(v["version"]))
    if keytype == "MAX_ID":
        return StoreRecord(keytype, None, None, None if v is None else int(v["id"]))
    return None
