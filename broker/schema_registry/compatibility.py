"""Compatibility levels (Confluent's) and the check of a new schema against a subject's
versions.

BACKWARD: the new schema reads what the latest version wrote. FORWARD: the latest version
reads what the new schema writes. FULL: both. The ``_TRANSITIVE`` levels check against every
live (not soft-deleted) version instead of the latest; NONE checks nothing. Messages follow
Confluent's verbose form: one per incompatibility, then the old version, the old schema and
the level.
"""

from __future__ import annotations

from collections.abc import Sequence

from .avro import AvroSchema
from .avro_compat import check_avro

__all__ = ["LEVELS", "check"]

LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE")
DEFAULT_LEVEL = "BACKWARD"


def check(level: str, new: AvroSchema, previous: Sequence[tuple[int, AvroSchema]]) -> list[str]:
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
            found += check_avro(new, old)
        if base in ("FORWARD", "FULL"):
            found += check_avro(old, new)
        if found:
            messages += [str(i) for i in found]
            messages += [f"{{oldSchemaVersion: {version}}}", f"{{oldSchema: '{old.stored}'}}",
                         f"{{compatibility: '{level}'}}"]
    return messages
