"""The records of ``__consumer_offsets``, byte for byte as Kafka writes them, and the group ->
partition mapping.

Every record's key and value is an ``int16`` version followed by the message in Kafka's classic
(non-flexible) encoding: ``string`` = int16 length + UTF-8, nullable string = length -1 for
null, ``bytes`` = int32 length + bytes. Value versions 4+ are flexible (compact strings and a
tag buffer after every struct); they are read, never written. A *tombstone* is a record whose
value is null: it deletes its key (a committed offset, or a whole group).

The key's version says what the record is (Kafka calls it the record type):

==========  ===================  ============================================================
key type    key                  value
==========  ===================  ============================================================
0 or 1      OffsetCommitKey      OffsetCommitValue: one committed offset of (group, topic,
            (group, topic,       partition). Written with key version 1 and value version 3,
            partition)           or value version 1 when the commit asked for an explicit
                                 retention (``expire_timestamp``).
2           GroupMetadataKey     GroupMetadataValue: the group's generation, protocol, leader
            (group)              and members with their subscription and assignment. Written
                                 with key version 2 and value version 3.
3-8, 16     KIP-848 consumer     ConsumerGroupMetadata (3), ConsumerGroupPartitionMetadata (4,
            group records        read but never written: Kafka 4.1+ stopped writing it),
            (consumer_records)   ConsumerGroupMemberMetadata (5), ...TargetAssignmentMetadata
                                 (6), ...TargetAssignmentMember (7), ...CurrentMemberAssignment
                                 (8), ConsumerGroupRegularExpression (16). Keys in the classic
                                 encoding, values version 0 in the flexible encoding; layouts
                                 in broker/group/consumer_records.py.
9-15, 17+   share and streams    not decoded: ``decode_key`` answers None and a loader skips
            group records        them.
==========  ===================  ============================================================

Value layouts (classic encoding)::

    OffsetCommitValue v0: offset int64 | metadata string | commit_timestamp int64
                      v1: offset int64 | metadata string | commit_timestamp int64 | expire_timestamp int64
                      v2: offset int64 | metadata string | commit_timestamp int64
                      v3: offset int64 | leader_epoch int32 | metadata string | commit_timestamp int64

    GroupMetadataValue v0-3: protocol_type string | generation int32 | protocol string? |
        leader string? | current_state_timestamp int64 (v2+) | members: int32 count, each:
        member_id string | group_instance_id string? (v3+) | client_id string |
        client_host string | rebalance_timeout int32 (v1+) | session_timeout int32 |
        subscription bytes | assignment bytes

A group's record is written when it is created (generation 0, no protocol, no members), when
a leader's SyncGroup stores the assignment, and when a rebalance ends with no members.

Partitioning: group ``g`` lives in partition ``abs(javaHashCode(g)) % offsets.topic.num.partitions``,
where Java's ``String.hashCode`` runs over UTF-16 code units (a character outside the BMP
counts as its two surrogates) and ``abs(Integer.MIN_VALUE)`` is taken as 0, as Kafka's
``Utils.abs`` does. Tools that read this topic (Burrow, kafka-consumer-groups, a Kafka broker
taking the data over) find each group where Kafka would put it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from client.protocol.primitives import DecodeError, Reader
from client.protocol.schema import NULL, Array, Message
from client.protocol.schema import Field as F

from .consumer_records import ConsumerGroupKey, decode_key_fields

__all__ = [
    "CONSUMER_OFFSETS", "OFFSET_COMMIT_KEY_TYPES", "GROUP_METADATA_KEY_TYPE", "java_string_hash", "partition_for",
    "OffsetCommitKey", "GroupMetadataKey", "MemberMetadata", "GroupMetadata", "OffsetAndMetadata",
    "encode_offset_commit_key", "encode_offset_commit_value", "encode_group_metadata_key",
    "encode_group_metadata_value", "decode_key", "decode_offset_commit_value", "decode_group_metadata_value",
]

CONSUMER_OFFSETS = "__consumer_offsets"
OFFSET_COMMIT_KEY_TYPES = (0, 1)
GROUP_METADATA_KEY_TYPE = 2

# No API key: these are record schemas, not requests. "valid" is what can be read.
_OFFSET_COMMIT_KEY = Message("OffsetCommitKey", -1, "0-1", "none", [
    F("group", "string"), F("topic", "string"), F("partition", "int32"),
])
_GROUP_METADATA_KEY = Message("GroupMetadataKey", -1, "2", "none", [F("group", "string")])
_OFFSET_COMMIT_VALUE = Message("OffsetCommitValue", -1, "0-4", "4+", [
    F("offset", "int64"),
    F("leader_epoch", "int32", "3+", default=-1),
    F("metadata", "string"),
    F("commit_timestamp", "int64"),
    F("expire_timestamp", "int64", "1", default=-1),
])
_GROUP_METADATA_VALUE = Message("GroupMetadataValue", -1, "0-4", "4+", [
    F("protocol_type", "string"),
    F("generation", "int32"),
    F("protocol", "string", nullable="0+"),
    F("leader", "string", nullable="0+"),
    F("current_state_timestamp", "int64", "2+", default=-1),
    F("members", Array([
        F("member_id", "string"),
        F("group_instance_id", "string", "3+", nullable="3+", default=NULL),
        F("client_id", "string"),
        F("client_host", "string"),
        F("rebalance_timeout", "int32", "1+", default=-1),
        F("session_timeout", "int32"),
        F("subscription", "bytes"),
        F("assignment", "bytes"),
    ])),
])

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_METADATA_VALUE_VERSION = 3


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode``: ``h = 31 * h + c`` over UTF-16 code units, as a signed int32."""
    b = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(b), 2):
        h = (31 * h + ((b[i] << 8) | b[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition of a group (Kafka's ``Utils.abs(hash) % n``)."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


class OffsetCommitKey(NamedTuple):
    group: str
    topic: str
    partition: int


class GroupMetadataKey(NamedTuple):
    group: str


class OffsetAndMetadata(NamedTuple):
    """One committed offset: what OffsetFetch answers. ``expire_timestamp`` is -1 unless the
    commit asked for a retention (OffsetCommit v2-v4 ``retention_time_ms``)."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1


class MemberMetadata(NamedTuple):
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


class GroupMetadata(NamedTuple):
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: list[MemberMetadata]


def _prefixed(message: Message, version: int, value: dict[str, Any]) -> bytes:
    w = message.encode(value, version)
    return version.to_bytes(2, "big", signed=True) + bytes(w.buf)


def encode_offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return _prefixed(_OFFSET_COMMIT_KEY, OFFSET_COMMIT_KEY_VERSION,
                     {"group": group, "topic": topic, "partition": partition})


def encode_offset_commit_value(om: OffsetAndMetadata) -> bytes:
    """Value v3, or v1 when the commit carries an explicit expiry (as Kafka chooses)."""
    version = OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY if om.expire_timestamp >= 0 else OFFSET_COMMIT_VALUE_VERSION
    return _prefixed(_OFFSET_COMMIT_VALUE, version, om._asdict())


def encode_group_metadata_key(group: str) -> bytes:
    return _prefixed(_GROUP_METADATA_KEY, GROUP_METADATA_KEY_VERSION, {"group": group})


def encode_group_metadata_value(gm: GroupMetadata) -> bytes:
    value = gm._asdict()
    value["members"] = [m._asdict() for m in gm.members]
    return _prefixed(_GROUP_METADATA_VALUE, GROUP_METADATA_VALUE_VERSION, value)


def _version_and_reader(data: bytes | memoryview) -> tuple[int, Reader]:
    r = Reader(data)
    return r.int16(), r


def decode_key(data: bytes | memoryview) -> OffsetCommitKey | GroupMetadataKey | ConsumerGroupKey | None:
    """The key of a ``__consumer_offsets`` record: the classic keys, or a KIP-848 key tuple of
    consumer_records for types 3-8 and 16; None for the types minibroker does not decode
    (share and streams groups), which a loader skips. Raises DecodeError when the bytes do not
    parse."""
    version, r = _version_and_reader(data)
    if version in OFFSET_COMMIT_KEY_TYPES:
        k = _OFFSET_COMMIT_KEY.decode(r, version)
        return OffsetCommitKey(k["group"], k["topic"], k["partition"])
    if version == GROUP_METADATA_KEY_TYPE:
        return GroupMetadataKey(_GROUP_METADATA_KEY.decode(r, version)["group"])
    if version < 0:
        raise DecodeError(f"negative record type {version}")
    return decode_key_fields(version, r)


def _check_version(message: Message, version: int) -> None:
    lo, hi = message.valid
    if not lo <= version <= hi:
        raise DecodeError(f"{message.name} version {version} is unknown")


def decode_offset_commit_value(data: bytes | memoryview) -> OffsetAndMetadata:
    version, r = _version_and_reader(data)
    _check_version(_OFFSET_COMMIT_VALUE, version)
    v = _OFFSET_COMMIT_VALUE.decode(r, version)
    return OffsetAndMetadata(v["offset"], v["leader_epoch"], v["metadata"], v["commit_timestamp"],
                             v["expire_timestamp"])


def decode_group_metadata_value(data: bytes | memoryview) -> GroupMetadata:
    version, r = _version_and_reader(data)
    _check_version(_GROUP_METADATA_VALUE, version)
    v = _GROUP_METADATA_VALUE.decode(r, version)
    members = [MemberMetadata(m["member_id"], m["group_instance_id"], m["client_id"], m["client_host"],
                              m["rebalance_timeout"], m["session_timeout"], bytes(m["subscription"]),
                              bytes(m["assignment"]))
               for m in v["members"]]
    return GroupMetadata(v["protocol_type"], v["generation"], v["protocol"], v["leader"],
                         v["current_state_timestamp"], members)
