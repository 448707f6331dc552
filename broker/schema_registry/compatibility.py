"""Compatibility levels (Confluent's) and the check of a new schema against a subject's
versions, for every schema type.

BACKWARD: the new schema reads what the latest version wrote. FORWARD: the latest version
reads what the new schema writes. FULL: both. The ``_TRANSITIVE`` levels check against every
live (not soft-deleted) version instead of the latest; NONE checks nothing. Each type has its
reader-against-writer checker (avro_compat, json_compat, protobuf_compat); a version of another
type than the new schema is an incompatibility of its own. Messages follow Confluent's verbose
form: one per incompatibility, then the old version, the old schema and the level.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .avro_compat import Incompatibility, check_avro
from .json_compat import check_json
from .protobuf_compat import check_protobuf
from .schema_types import ParsedSchema

__all__ = ["LEVELS", "check", "check_pair"]

LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE")
DEFAULT_LEVEL = "BACKWARD"

_CHECKERS: dict[str, Callable[[Any, Any], list[Incompatibility]]] = {
    "AVRO": check_avro, "JSON": check_json, "PROTOBUF": check_protobuf}


def check_pair(reader: ParsedSchema, writer: ParsedSchema) -> list[Incompatibility]:
    """Why ``reader`` cannot read what ``writer`` wrote (empty: it can)."""
    if reader.schema_type != writer.schema_type:
        return [Incompatibility("TYPE_MISMATCH", "/", f"Incompatible because of different schema type: "
                                f"{reader.schema_type} and {writer.schema_type}", "")]
    return _CHECKERS[reader.schema_type](reader, writer)


def check(level: str, new: ParsedSchema, previous: Sequence[tuple[int, ParsedSchema]]) -> list[str]:
    """The messages saying why ``new`` is not compatible at ``level`` with ``previous``
    ((version, schema), oldest first); empty when it is. A non-transitive level checks only
    the last of ``previous``."""
    if level == "NONE" or not previous:
        return []
    against = previous if level.endswith("_TRANSITIVE") else previous[-1:]
    base = level.removesuffix("_TRANSITIVE")
    messages: list[str] = []
    for version, old in reversed(against):  # newest first, as Confluent reports
        found = []
        if base in ("BACKWARD", "FULL"):
            found += check_pair(new, old)
        if base in ("FORWARD", "FULL"):
            found += check_pair(old, new)
        if found:
            messages += [str(i) for i in found]
            messages += [f"{{oldSchemaVersion: {version}}}", f"{{oldSchema: '{old.stored}'}}",
                         f"{{compatibility: '{level}'}}"]
    return messages
