"""The records of ``__share_group_state`` (KIP-932's share coordinator), byte for byte as Kafka
4.2 writes them (``share-coordinator/src/main/resources/common/message/Share*.json``), and the
share-partition -> state-topic partition mapping.

A record's key is the int16 *record type* (the schema's ``apiKey``; Kafka 3.9/4.0 called it the
key version, with the same numbers) followed by the key in the classic encoding: ``string`` =
int16 length + UTF-8, ``uuid`` = 16 bytes. Both record types share one key layout, the
share-partition (group_id string, topic_id uuid, partition int32); the type tells them apart,
so a share-partition has two keys in the compacted topic, its last snapshot and its last update.

A value is an int16 version, always 0, followed by the message in the flexible encoding:
compact arrays (unsigned varint of length + 1), then a tag buffer (uvarint count, then per
field uvarint tag, uvarint size and the bytes) after every struct, each state batch included.
A null value (tombstone) deletes its key.

====  ==============  ======================================================================
type  record          value v0, fields in wire order
====  ==============  ======================================================================
0     ShareSnapshot   snapshot_epoch int32 | state_epoch int32 | leader_epoch int32 |
                      start_offset int64 | create_timestamp int64 | write_timestamp int64 |
                      state_batches [first_offset int64, last_offset int64,
                      delivery_state int8, delivery_count int16, tag buffer] | tag buffer
                      (tag 0: delivery_complete_count int32, default -1, KIP-1226, 4.2+)
1     ShareUpdate     snapshot_epoch int32 | leader_epoch int32 | start_offset int64 (-1: not
                      moved) | state_batches [as above] | tag buffer (tag 0:
                      delivery_complete_count int32, default -1)
====  ==============  ======================================================================

``delivery_state``: 0 Available, 2 Acknowledged, 4 Archived (1 Acquired is never persisted).
A snapshot is the whole state of a share-partition; an update carries the batches that changed
since, which a reader folds over the snapshot (broker/share/persister.py). Kafka 3.9/4.0 wrote
the same bytes except the tagged field; 4.0's snapshot timestamps were already there. Unknown
tags are skipped on read, so records of a later Kafka load.

Partitioning (``partition_for``): Kafka's share coordinator places a share-partition by the
string ``"<group>:<topic id>:<partition>"`` (``SharePartitionKey.asCoordinatorKey``, the topic
id as ``Uuid.toString()``: URL-safe base64 without padding), in partition
``Utils.abs(key.hashCode()) % share.coordinator.state.topic.num.partitions``. That string is
also what a client would send as FindCoordinator's key (key type 2, SHARE).
"""

from __future__ import annotations

import base64
import uuid
from typing import Any, NamedTuple

from client.protocol.primitives import DecodeError, Reader
from client.protocol.schema import Array, Message
from client.protocol.schema import Field as F

from ..group.records import java_string_hash

__all__ = [
    "SHARE_GROUP_STATE", "SHARE_SNAPSHOT", "SHARE_UPDATE", "VALUE_VERSION", "NO_OFFSET",
    "AVAILABLE", "ACKNOWLEDGED", "ARCHIVED",
    "SharePartitionKey", "StateBatch", "ShareSnapshotValue", "ShareUpdateValue", "ShareStateValue",
    "coordinator_key", "partition_for", "topic_id_str",
    "encode_key", "encode_value", "decode_key", "decode_value",
]

SHARE_GROUP_STATE = "__share_group_state"

# Record types: the key's int16 prefix.
SHARE_SNAPSHOT = 0
SHARE_UPDATE = 1
#: the only value version of both records (the schemas' ``validVersions``)
VALUE_VERSION = 0
#: an update's start_offset when it does not move the start offset
NO_OFFSET = -1

# Delivery states as persisted (Kafka's RecordState ids).
AVAILABLE = 0
ACKNOWLEDGED = 2
ARCHIVED = 4


class SharePartitionKey(NamedTuple):
    """A share-partition: a share group's view of one topic partition. ``topic_id`` is the 16
    raw bytes of the topic's uuid."""

    group_id: str
    topic_id: bytes
    partition: int


class StateBatch(NamedTuple):
    """Offsets ``first_offset..last_offset`` (inclusive) in one delivery state and count."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


class ShareSnapshotValue(NamedTuple):
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    create_timestamp: int
    write_timestamp: int
    state_batches: list[StateBatch]
    #: offsets >= start_offset whose delivery is complete; -1 unknown (not written)
    delivery_complete_count: int = -1


class ShareUpdateValue(NamedTuple):
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: list[StateBatch]
    delivery_complete_count: int = -1


ShareStateValue = ShareSnapshotValue | ShareUpdateValue

# -- schemas (record schemas, not requests: no API key of the request kind) --

_KEY = Message("SharePartitionKey", -1, "0", "none", [
    F("group_id", "string"), F("topic_id", "uuid"), F("partition", "int32"),
])
_STATE_BATCHES = Array([
    F("first_offset", "int64"),
    F("last_offset", "int64"),
    F("delivery_state", "int8"),
    F("delivery_count", "int16"),
])
_SNAPSHOT_VALUE = Message("ShareSnapshotValue", -1, "0", "0+", [
    F("snapshot_epoch", "int32"),
    F("state_epoch", "int32"),
    F("leader_epoch", "int32"),
    F("start_offset", "int64"),
    F("delivery_complete_count", "int32", default=-1, tag=0, tagged_versions="0+"),
    F("create_timestamp", "int64"),
    F("write_timestamp", "int64"),
    F("state_batches", _STATE_BATCHES),
])
_UPDATE_VALUE = Message("ShareUpdateValue", -1, "0", "0+", [
    F("snapshot_epoch", "int32"),
    F("leader_epoch", "int32"),
    F("start_offset", "int64"),
    F("delivery_complete_count", "int32", default=-1, tag=0, tagged_versions="0+"),
    F("state_batches", _STATE_BATCHES),
])


def topic_id_str(topic_id: bytes) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(topic_id).decode().rstrip("=")


def coordinator_key(key: SharePartitionKey) -> str:
    """``"<group>:<topic id>:<partition>"``, the string a share-partition is placed by."""
    return f"{key.group_id}:{topic_id_str(key.topic_id)}:{key.partition}"


def partition_for(key: SharePartitionKey, num_partitions: int) -> int:
    """The ``__share_group_state`` partition of ``key`` (Kafka's ``Utils.abs(hash) % n``,
    ``abs(Integer.MIN_VALUE)`` taken as 0)."""
    h = java_string_hash(coordinator_key(key))
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


def encode_key(record_type: int, key: SharePartitionKey) -> bytes:
    """int16 record type (SHARE_SNAPSHOT or SHARE_UPDATE) + the key (classic encoding)."""
    if record_type not in (SHARE_SNAPSHOT, SHARE_UPDATE):
        raise ValueError(f"not a share-state record type: {record_type}")
    body = _KEY.encode({"group_id": key.group_id, "topic_id": uuid.UUID(bytes=bytes(key.topic_id)),
                        "partition": key.partition}, 0).buf
    return record_type.to_bytes(2, "big") + bytes(body)


def _batches_out(batches: list[StateBatch]) -> list[dict[str, Any]]:
    return [b._asdict() for b in batches]


def _batches_in(entries: list[dict[str, Any]]) -> list[StateBatch]:
    return [StateBatch(e["first_offset"], e["last_offset"], e["delivery_state"], e["delivery_count"])
            for e in entries]


def encode_value(value: ShareStateValue) -> bytes:
    """int16 version 0 + the value (flexible encoding)."""
    d = value._asdict()
    d["state_batches"] = _batches_out(value.state_batches)
    schema = _SNAPSHOT_VALUE if isinstance(value, ShareSnapshotValue) else _UPDATE_VALUE
    return VALUE_VERSION.to_bytes(2, "big") + bytes(schema.encode(d, VALUE_VERSION).buf)


def decode_key(data: bytes | memoryview) -> tuple[int, SharePartitionKey] | None:
    """(record type, share-partition) of a key; None for a record type this module does not
    know (a later Kafka's), which a loader skips. Raises DecodeError on malformed bytes."""
    r = Reader(data)
    kind = r.int16()
    if kind not in (SHARE_SNAPSHOT, SHARE_UPDATE):
        return None
    k = _KEY.decode(r, 0)
    return kind, SharePartitionKey(k["group_id"], k["topic_id"].bytes, k["partition"])


def decode_value(record_type: int, data: bytes | memoryview) -> ShareStateValue:
    """The value of a record of ``record_type`` (not a tombstone). Raises DecodeError on an
    unknown version or malformed bytes."""
    r = Reader(data)
    version = r.int16()
    schema = _SNAPSHOT_VALUE if record_type == SHARE_SNAPSHOT else _UPDATE_VALUE
    if version != VALUE_VERSION:
        raise DecodeError(f"{schema.name} version {version} is unknown")
    d = schema.decode(r, version)
    batches = _batches_in(d["state_batches"])
    if record_type == SHARE_SNAPSHOT:
        return ShareSnapshotValue(d["snapshot_epoch"], d["state_epoch"], d["leader_epoch"], d["start_offset"],
                                  d["create_timestamp"], d["write_timestamp"], batches,
                                  d["delivery_complete_count"])
    return ShareUpdateValue(d["snapshot_epoch"], d["leader_epoch"], d["start_offset"], batches,
                            d["delivery_complete_count"])
