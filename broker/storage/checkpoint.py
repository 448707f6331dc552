"""Kafka's offset checkpoint files and clean-shutdown marker.

``recovery-point-offset-checkpoint`` and ``log-start-offset-checkpoint`` (Kafka's
``CheckpointFile`` with ``OffsetCheckpointFile`` entries), plain text::

    0                        version
    <N>                      number of entries
    <topic> <partition> <offset>     N lines

Written to ``<name>.tmp``, fsync'd, renamed over the old file, then the directory is fsync'd,
so a crash leaves either the old or the new file. A file that does not parse is treated as
empty (logged): the recovery point then falls to 0 and the logs are re-validated.

``.kafka_cleanshutdown`` holds ``{"version":0,"brokerEpoch":N}``; its presence at startup
means the previous shutdown flushed and closed every log.
"""

from __future__ import annotations

import json
import logging
import os

from .fileutil import atomic_write

__all__ = ["read_offset_checkpoint", "write_offset_checkpoint", "write_clean_shutdown_marker",
           "CLEAN_SHUTDOWN_FILE", "RECOVERY_POINT_CHECKPOINT", "LOG_START_OFFSET_CHECKPOINT"]

logger = logging.getLogger(__name__)

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"


class CheckpointError(ValueError):
    pass


def _parse(text: str, path: str) -> dict[tuple[str, int], int]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) < 2:
        raise CheckpointError(f"{path}: missing version or count line")
    if lines[0].strip() != "0":
        raise CheckpointError(f"{path}: unrecognized version {lines[0]!r}")
    try:
        count = int(lines[1])
    except ValueError:
        raise CheckpointError(f"{path}: bad entry count {lines[1]!r}") from None
    entries = lines[2:]
    if count != len(entries):
        raise CheckpointError(f"{path}: expected {count} entries but found {len(entries)}")
    out: dict[tuple[str, int], int] = {}
    for line in entries:
        parts = line.split(" ")
        if len(parts) != 3:
            raise CheckpointError(f"{path}: malformed line {line!r}")
        try:
            out[(parts[0], int(parts[1]))] = int(parts[2])
        except ValueError:
            raise CheckpointError(f"{path}: malformed line {line!r}") from None
    return out


def read_offset_checkpoint(path: str) -> dict[tuple[str, int], int]:
    """Entries of a checkpoint file; empty (with a warning) when missing or malformed."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as e:
        logger.warning("cannot read checkpoint %s (%s); treating it as empty", path, e)
        return {}
    try:
        return _parse(text, path)
    except CheckpointError as e:
        logger.warning("malformed checkpoint file %s (%s); treating it as empty", path, e)
        return {}


def write_offset_checkpoint(path: str, entries: dict[tuple[str, int], int]) -> None:
    lines = ["0", str(len(entries))]
    lines += [f"{t} {p} {o}" for (t, p), o in sorted(entries.items())]
    atomic_write(path, ("\n".join(lines) + "\n").encode("utf-8"))


def write_clean_shutdown_marker(log_dir: str, broker_epoch: int = -1) -> None:
    atomic_write(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE),
                 json.dumps({"version": 0, "brokerEpoch": broker_epoch}, separators=(",", ":")).encode())
