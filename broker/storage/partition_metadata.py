"""Topic ids (KIP-516) and the ``partition.metadata`` file that keeps them in each partition dir.

A topic id is a random 128-bit UUID given to a topic when it is created; it tells a topic
apart from an older topic of the same name that was deleted. Text form: the 16 bytes in
URL-safe base64 without padding (22 characters), as Kafka's ``Uuid.toString``. Kafka never
hands out the all-zero id (it means "no id" on the wire) nor the one with only the last bit
set (its metadata topic), nor an id whose text form starts with ``-`` (it would read as a
command-line option); ``new_topic_id`` draws again in those cases, as Kafka does.

File format (UTF-8, no trailing newline), exactly as Kafka writes it::

    version: 0
    topic_id: <22-character id>

Written once, when the partition directory is created (or, for a directory made before topic
ids existed, at the next start), through ``<file>.tmp``, fsync and rename, so a crash leaves no
file or a whole one. Never rewritten afterwards: every partition of a topic holds the same id.
"""

from __future__ import annotations

import base64
import os
import uuid

from .errors import KafkaStorageError
from .fileutil import atomic_write

__all__ = ["PARTITION_METADATA_FILE", "new_topic_id", "topic_id_to_str", "topic_id_from_str",
           "read_partition_metadata", "write_partition_metadata"]

PARTITION_METADATA_FILE = "partition.metadata"
VERSION = 0

_ZERO = uuid.UUID(int=0)
_METADATA_TOPIC_ID = uuid.UUID(int=1)


def topic_id_to_str(topic_id: uuid.UUID) -> str:
    """Kafka's text form: URL-safe base64 of the 16 bytes, no ``=`` padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode("ascii")


def topic_id_from_str(text: str) -> uuid.UUID:
    """Inverse of ``topic_id_to_str``; ValueError for anything that is not 16 bytes."""
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"a topic id is 16 bytes, {text!r} is {len(raw)}")
    return uuid.UUID(bytes=raw)


def new_topic_id() -> uuid.UUID:
    while True:
        candidate = uuid.uuid4()
        if candidate not in (_ZERO, _METADATA_TOPIC_ID) and not topic_id_to_str(candidate).startswith("-"):
            return candidate


def read_partition_metadata(partition_dir: str) -> uuid.UUID | None:
    """The topic id in ``partition_dir/partition.metadata``, or None when there is no such file.
    KafkaStorageError for a file that does not parse (Kafka refuses to load such a log too)."""
    path = os.path.join(partition_dir, PARTITION_METADATA_FILE)
    try:
        with open(path, "rb") as f:
            text = f.read(4096).decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise KafkaStorageError(f"cannot read {path}: {e}") from None
    lines = text.splitlines()
    try:
        key, _, version = lines[0].partition(":")
        if key != "version" or int(version) != VERSION:
            raise ValueError(f"unknown version line {lines[0]!r}")
        key, _, value = lines[1].partition(":")
        if key != "topic_id":
            raise ValueError(f"expected topic_id, found {lines[1]!r}")
        return topic_id_from_str(value.strip())
    except (IndexError, ValueError) as e:
        raise KafkaStorageError(f"malformed {path}: {e}") from None


def write_partition_metadata(partition_dir: str, topic_id: uuid.UUID) -> None:
    atomic_write(os.path.join(partition_dir, PARTITION_METADATA_FILE),
                 f"version: {VERSION}\ntopic_id: {topic_id_to_str(topic_id)}".encode())
