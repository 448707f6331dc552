"""The KIP-848 consumer-group records of ``__consumer_offsets``, byte for byte as Kafka 4.x
writes them (``group-coordinator/src/main/resources/common/message/ConsumerGroup*.json``).

A record's key is the int16 *record type* (the schema's ``apiKey``) followed by the key
message in the classic encoding (``string`` = int16 length + UTF-8); keys have no version of
their own and are never flexible. A value is an int16 version, always 0 here, followed by the
message in the flexible encoding: compact strings and arrays (unsigned varint of length + 1,
0 = null), ``uuid`` = 16 bytes, and a tag buffer (uvarint count, then uvarint tag, uvarint size
and the bytes per field) after every struct. A tagged field is written only when it differs
from its default; unknown tags are skipped on read, so a newer Kafka's additions load. A null
value is a tombstone: it deletes its key.

========  ==========================================  =======================================
type      key (fields)                                value v0 (fields in wire order)
========  ==========================================  =======================================
3         ConsumerGroupMetadataKey (group_id)         epoch int32; tag 0: metadata_hash int64
                                                      (default 0, KIP-1101, written by 4.1+)
4         ConsumerGroupPartitionMetadataKey           topics [topic_id uuid, topic_name string,
          (group_id)                                  num_partitions int32, partition_metadata
                                                      [partition int32, racks [string]]].
                                                      Written by Kafka 3.x/4.0 only: read (and
                                                      printed), never written here.
5         ConsumerGroupMemberMetadataKey              instance_id string?, rack_id string?,
          (group_id, member_id)                       client_id string, client_host string,
                                                      subscribed_topic_names [string],
                                                      subscribed_topic_regex string?,
                                                      rebalance_timeout_ms int32,
                                                      server_assignor string?; tag 0:
                                                      classic_member_metadata? (session_timeout_ms
                                                      int32, supported_protocols [name string,
                                                      metadata bytes])
6         ConsumerGroupTargetAssignmentMetadataKey    assignment_epoch int32
          (group_id)
7         ConsumerGroupTargetAssignmentMemberKey      topic_partitions [topic_id uuid,
          (group_id, member_id)                       partitions [int32]]
8         ConsumerGroupCurrentMemberAssignmentKey     member_epoch int32, previous_member_epoch
          (group_id, member_id)                       int32, state int8, assigned_partitions and
                                                      partitions_pending_revocation, each
                                                      [topic_id uuid, partitions [int32]]
16        ConsumerGroupRegularExpressionKey           topics [string], version int64,
          (group_id, regular_expression)              timestamp int64
========  ==========================================  =======================================

Kafka's trunk after 4.2 adds tagged fields that are skipped here, so a value rewritten by
minibroker loses them: CreationTimeMs (tag 1 of ConsumerGroupMetadataValue, KIP-1282),
AssignmentTimestamp (tag 0 of TargetAssignmentMetadataValue, KIP-1263) and AssignmentEpochs
(tag 0 of each current-assignment TopicPartitions, KIP-1251). Model them when they ship.

``?`` marks a nullable field. ``state`` is Kafka's ``MemberState``: 0 STABLE,
1 UNREVOKED_PARTITIONS, 2 UNRELEASED_PARTITIONS, 127 UNKNOWN. Types 9-15 (share groups) and
17+ (streams groups) are not decoded here. The group coordinator replays these records; it
does not depend on this module's encoding, and this module knows nothing of the coordinator.

The keys are NamedTuples, so keys of different types with equal fields compare (and hash)
equal: ``ConsumerGroupMetadataKey("g") == ConsumerGroupTargetAssignmentMetadataKey("g")``.
Dispatch on the type (``isinstance``/``record_type``), and do not mix key types in one dict.

Topic ids are the 16 raw bytes of the uuid. A map of topic id -> partitions is written as one
array element per entry, in the dict's order; on read, a topic id listed twice keeps its last
entry (Kafka's replay puts each entry into a map, with the same result).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, NamedTuple

from client.protocol.primitives import DecodeError, Reader
from client.protocol.schema import NULL, Array, Message, Struct
from client.protocol.schema import Field as F

__all__ = [
    "CONSUMER_GROUP_METADATA", "CONSUMER_GROUP_PARTITION_METADATA", "CONSUMER_GROUP_MEMBER_METADATA",
    "CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA", "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER",
    "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT", "CONSUMER_GROUP_REGULAR_EXPRESSION", "RECORD_TYPES",
    "VALUE_VERSION",
    "ConsumerGroupMetadataKey", "ConsumerGroupPartitionMetadataKey", "ConsumerGroupMemberMetadataKey",
    "ConsumerGroupTargetAssignmentMetadataKey", "ConsumerGroupTargetAssignmentMemberKey",
    "ConsumerGroupCurrentMemberAssignmentKey", "ConsumerGroupRegularExpressionKey",
    "ConsumerGroupMetadataValue", "ConsumerGroupPartitionMetadataValue", "TopicMetadata",
    "ConsumerGroupMemberMetadataValue", "ClassicMemberMetadata", "ClassicProtocol",
    "ConsumerGroupTargetAssignmentMetadataValue", "ConsumerGroupTargetAssignmentMemberValue",
    "ConsumerGroupCurrentMemberAssignmentValue", "ConsumerGroupRegularExpressionValue",
    "ConsumerGroupKey", "ConsumerGroupValue", "TopicPartitions",
    "record_type", "encode_key", "encode_value", "decode_key_fields", "decode_value",
]

# Record types: the key's int16 prefix, the ``apiKey`` of Kafka's schemas.
CONSUMER_GROUP_METADATA = 3
CONSUMER_GROUP_PARTITION_METADATA = 4
CONSUMER_GROUP_MEMBER_METADATA = 5
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
CONSUMER_GROUP_REGULAR_EXPRESSION = 16

#: the only value version of every record here (the schemas' ``validVersions``)
VALUE_VERSION = 0

#: topic id (16 bytes) -> partition indexes
TopicPartitions = dict[bytes, list[int]]


class ConsumerGroupMetadataKey(NamedTuple):
    group_id: str


class ConsumerGroupPartitionMetadataKey(NamedTuple):
    group_id: str


class ConsumerGroupMemberMetadataKey(NamedTuple):
    group_id: str
    member_id: str


class ConsumerGroupTargetAssignmentMetadataKey(NamedTuple):
    group_id: str


class ConsumerGroupTargetAssignmentMemberKey(NamedTuple):
    group_id: str
    member_id: str


class ConsumerGroupCurrentMemberAssignmentKey(NamedTuple):
    group_id: str
    member_id: str


class ConsumerGroupRegularExpressionKey(NamedTuple):
    group_id: str
    regular_expression: str


class ConsumerGroupMetadataValue(NamedTuple):
    """The group epoch; ``metadata_hash`` (4.1+) hashes the subscribed topics' metadata."""

    epoch: int
    metadata_hash: int = 0


class TopicMetadata(NamedTuple):
    topic_id: bytes
    topic_name: str
    num_partitions: int
    #: (partition, its racks); deprecated since Kafka 4.0, usually empty
    partition_metadata: list[tuple[int, list[str]]]


class ConsumerGroupPartitionMetadataValue(NamedTuple):
    """The subscribed topics' metadata, as Kafka 3.x/4.0 stored it (4.1+ no longer writes it)."""

    topics: list[TopicMetadata]


class ClassicProtocol(NamedTuple):
    name: str
    metadata: bytes


class ClassicMemberMetadata(NamedTuple):
    """What a member that joined with the classic protocol (JoinGroup) told the group."""

    session_timeout_ms: int
    supported_protocols: list[ClassicProtocol]


class ConsumerGroupMemberMetadataValue(NamedTuple):
    """A member's subscription. Fields in Kafka's order (instance id before rack id)."""

    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic_member_metadata: ClassicMemberMetadata | None = None


class ConsumerGroupTargetAssignmentMetadataValue(NamedTuple):
    assignment_epoch: int


class ConsumerGroupTargetAssignmentMemberValue(NamedTuple):
    topic_partitions: TopicPartitions


class ConsumerGroupCurrentMemberAssignmentValue(NamedTuple):
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: TopicPartitions
    partitions_pending_revocation: TopicPartitions


class ConsumerGroupRegularExpressionValue(NamedTuple):
    """The topics a regular expression resolved to, at metadata image ``version``, at
    ``timestamp`` (ms)."""

    topics: list[str]
    version: int
    timestamp: int


ConsumerGroupKey = (ConsumerGroupMetadataKey | ConsumerGroupPartitionMetadataKey | ConsumerGroupMemberMetadataKey
                    | ConsumerGroupTargetAssignmentMetadataKey | ConsumerGroupTargetAssignmentMemberKey
                    | ConsumerGroupCurrentMemberAssignmentKey | ConsumerGroupRegularExpressionKey)
ConsumerGroupValue = (ConsumerGroupMetadataValue | ConsumerGroupPartitionMetadataValue
                      | ConsumerGroupMemberMetadataValue | ConsumerGroupTargetAssignmentMetadataValue
                      | ConsumerGroupTargetAssignmentMemberValue | ConsumerGroupCurrentMemberAssignmentValue
                      | ConsumerGroupRegularExpressionValue)

# -- schemas (no API key: record schemas, not requests) --

_GROUP_KEY = Message("ConsumerGroupKey", -1, "0", "none", [F("group_id", "string")])
_MEMBER_KEY = Message("ConsumerGroupMemberKey", -1, "0", "none", [F("group_id", "string"), F("member_id", "string")])
_REGEX_KEY = Message("ConsumerGroupRegularExpressionKey", -1, "0", "none",
                     [F("group_id", "string"), F("regular_expression", "string")])

_TOPIC_PARTITIONS = Array([F("topic_id", "uuid"), F("partitions", Array("int32"))])

_METADATA_VALUE = Message("ConsumerGroupMetadataValue", -1, "0", "0+", [
    F("epoch", "int32"),
    F("metadata_hash", "int64", default=0, tag=0, tagged_versions="0+"),
])
_PARTITION_METADATA_VALUE = Message("ConsumerGroupPartitionMetadataValue", -1, "0", "0+", [
    F("topics", Array([
        F("topic_id", "uuid"),
        F("topic_name", "string"),
        F("num_partitions", "int32"),
        F("partition_metadata", Array([F("partition", "int32"), F("racks", Array("string"))])),
    ])),
])
_MEMBER_METADATA_VALUE = Message("ConsumerGroupMemberMetadataValue", -1, "0", "0+", [
    F("instance_id", "string", nullable="0+"),
    F("rack_id", "string", nullable="0+"),
    F("client_id", "string"),
    F("client_host", "string"),
    F("subscribed_topic_names", Array("string")),
    F("subscribed_topic_regex", "string", nullable="0+"),
    F("rebalance_timeout_ms", "int32", default=-1),
    F("server_assignor", "string", nullable="0+"),
    F("classic_member_metadata", Struct([
        F("session_timeout_ms", "int32"),
        F("supported_protocols", Array([F("name", "string"), F("metadata", "bytes")])),
    ]), nullable="0+", default=NULL, tag=0, tagged_versions="0+"),
])
_TARGET_ASSIGNMENT_METADATA_VALUE = Message("ConsumerGroupTargetAssignmentMetadataValue", -1, "0", "0+", [
    F("assignment_epoch", "int32"),
])
_TARGET_ASSIGNMENT_MEMBER_VALUE = Message("ConsumerGroupTargetAssignmentMemberValue", -1, "0", "0+", [
    F("topic_partitions", _TOPIC_PARTITIONS),
])
_CURRENT_MEMBER_ASSIGNMENT_VALUE = Message("ConsumerGroupCurrentMemberAssignmentValue", -1, "0", "0+", [
    F("member_epoch", "int32"),
    F("previous_member_epoch", "int32"),
    F("state", "int8"),
    F("assigned_partitions", _TOPIC_PARTITIONS),
    F("partitions_pending_revocation", _TOPIC_PARTITIONS),
])
_REGULAR_EXPRESSION_VALUE = Message("ConsumerGroupRegularExpressionValue", -1, "0", "0+", [
    F("topics", Array("string")),
    F("version", "int64"),
    F("timestamp", "int64"),
])


# -- dict <-> tuple conversions (the schemas speak dicts; uuid.UUID <-> 16 bytes) --

def _tp_out(tps: TopicPartitions) -> list[dict[str, Any]]:
    return [{"topic_id": uuid.UUID(bytes=bytes(tid)), "partitions": parts} for tid, parts in tps.items()]


def _tp_in(entries: list[dict[str, Any]]) -> TopicPartitions:
    return {e["topic_id"].bytes: e["partitions"] for e in entries}


def _member_out(v: ConsumerGroupMemberMetadataValue) -> dict[str, Any]:
    d = v._asdict()
    cm = v.classic_member_metadata
    if cm is not None:
        d["classic_member_metadata"] = {
            "session_timeout_ms": cm.session_timeout_ms,
            "supported_protocols": [{"name": n, "metadata": m} for n, m in cm.supported_protocols]}
    return d


def _member_in(d: dict[str, Any]) -> ConsumerGroupMemberMetadataValue:
    cm = d["classic_member_metadata"]
    classic = None if cm is None else ClassicMemberMetadata(
        cm["session_timeout_ms"], [ClassicProtocol(p["name"], bytes(p["metadata"])) for p in cm["supported_protocols"]])
    return ConsumerGroupMemberMetadataValue(
        d["instance_id"], d["rack_id"], d["client_id"], d["client_host"], d["subscribed_topic_names"],
        d["subscribed_topic_regex"], d["rebalance_timeout_ms"], d["server_assignor"], classic)


def _partition_metadata_in(d: dict[str, Any]) -> ConsumerGroupPartitionMetadataValue:
    return ConsumerGroupPartitionMetadataValue([
        TopicMetadata(t["topic_id"].bytes, t["topic_name"], t["num_partitions"],
                      [(p["partition"], p["racks"]) for p in t["partition_metadata"]])
        for t in d["topics"]])


class _Record(NamedTuple):
    key_type: type
    key_schema: Message
    value_type: type
    value_schema: Message
    #: value tuple -> schema dict; None: never written (decode only)
    value_out: Callable[[Any], dict[str, Any]] | None
    value_in: Callable[[dict[str, Any]], Any]


def _plain_out(v: Any) -> dict[str, Any]:
    return dict(v._asdict())


_RECORDS: dict[int, _Record] = {
    CONSUMER_GROUP_METADATA: _Record(
        ConsumerGroupMetadataKey, _GROUP_KEY, ConsumerGroupMetadataValue, _METADATA_VALUE, _plain_out,
        lambda d: ConsumerGroupMetadataValue(d["epoch"], d["metadata_hash"])),
    CONSUMER_GROUP_PARTITION_METADATA: _Record(
        ConsumerGroupPartitionMetadataKey, _GROUP_KEY, ConsumerGroupPartitionMetadataValue,
        _PARTITION_METADATA_VALUE, None, _partition_metadata_in),
    CONSUMER_GROUP_MEMBER_METADATA: _Record(
        ConsumerGroupMemberMetadataKey, _MEMBER_KEY, ConsumerGroupMemberMetadataValue, _MEMBER_METADATA_VALUE,
        _member_out, _member_in),
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: _Record(
        ConsumerGroupTargetAssignmentMetadataKey, _GROUP_KEY, ConsumerGroupTargetAssignmentMetadataValue,
        _TARGET_ASSIGNMENT_METADATA_VALUE, _plain_out,
        lambda d: ConsumerGroupTargetAssignmentMetadataValue(d["assignment_epoch"])),
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: _Record(
        ConsumerGroupTargetAssignmentMemberKey, _MEMBER_KEY, ConsumerGroupTargetAssignmentMemberValue,
        _TARGET_ASSIGNMENT_MEMBER_VALUE, lambda v: {"topic_partitions": _tp_out(v.topic_partitions)},
        lambda d: ConsumerGroupTargetAssignmentMemberValue(_tp_in(d["topic_partitions"]))),
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: _Record(
        ConsumerGroupCurrentMemberAssignmentKey, _MEMBER_KEY, ConsumerGroupCurrentMemberAssignmentValue,
        _CURRENT_MEMBER_ASSIGNMENT_VALUE,
        lambda v: {"member_epoch": v.member_epoch, "previous_member_epoch": v.previous_member_epoch,
                   "state": v.state, "assigned_partitions": _tp_out(v.assigned_partitions),
                   "partitions_pending_revocation": _tp_out(v.partitions_pending_revocation)},
        lambda d: ConsumerGroupCurrentMemberAssignmentValue(
            d["member_epoch"], d["previous_member_epoch"], d["state"], _tp_in(d["assigned_partitions"]),
            _tp_in(d["partitions_pending_revocation"]))),
    CONSUMER_GROUP_REGULAR_EXPRESSION: _Record(
        ConsumerGroupRegularExpressionKey, _REGEX_KEY, ConsumerGroupRegularExpressionValue,
        _REGULAR_EXPRESSION_VALUE, _plain_out,
        lambda d: ConsumerGroupRegularExpressionValue(d["topics"], d["version"], d["timestamp"])),
}

#: record type -> Kafka's record name (``ConsumerGroupMetadata``, ...)
RECORD_TYPES: dict[int, str] = {t: r.key_type.__name__.removesuffix("Key") for t, r in _RECORDS.items()}
_TYPE_OF_KEY: dict[type, int] = {r.key_type: t for t, r in _RECORDS.items()}
_TYPE_OF_VALUE: dict[type, int] = {r.value_type: t for t, r in _RECORDS.items()}


def record_type(key: ConsumerGroupKey) -> int:
    """The record type of a key tuple (3-8 or 16)."""
    t = _TYPE_OF_KEY.get(type(key))
    if t is None:
        raise TypeError(f"not a consumer-group record key: {key!r}")
    return t


def encode_key(key: ConsumerGroupKey) -> bytes:
    """int16 record type + the key's fields (classic encoding)."""
    t = record_type(key)
    return t.to_bytes(2, "big") + bytes(_RECORDS[t].key_schema.encode(key._asdict(), 0).buf)


def encode_value(value: ConsumerGroupValue) -> bytes:
    """int16 version 0 + the value (flexible encoding). ConsumerGroupPartitionMetadataValue is
    refused: Kafka 4.1+ does not write it, and neither does minibroker."""
    t = _TYPE_OF_VALUE.get(type(value))
    rec = None if t is None else _RECORDS[t]
    if rec is None or rec.value_out is None:
        raise TypeError(f"not a consumer-group record value minibroker writes: {type(value).__name__}")
    return VALUE_VERSION.to_bytes(2, "big") + bytes(rec.value_schema.encode(rec.value_out(value), VALUE_VERSION).buf)


def decode_key_fields(kind: int, r: Reader) -> ConsumerGroupKey | None:
    """The key of record type ``kind`` from ``r`` (positioned after the type); None when
    ``kind`` is not a consumer-group record type. Raises DecodeError on malformed bytes."""
    rec = _RECORDS.get(kind)
    if rec is None:
        return None
    k = rec.key_schema.decode(r, 0)
    key: ConsumerGroupKey = rec.key_type(**k)
    return key


def decode_value(key: ConsumerGroupKey, data: bytes | memoryview) -> ConsumerGroupValue:
    """The value of ``key``'s record type (not None: a tombstone has no bytes to decode).
    Raises DecodeError on an unknown version or malformed bytes, TypeError when ``key`` is not
    a consumer-group key."""
    rec = _RECORDS[record_type(key)]
    r = Reader(data)
    version = r.int16()
    if version != VALUE_VERSION:
        raise DecodeError(f"{rec.value_schema.name} version {version} is unknown")
    value: ConsumerGroupValue = rec.value_in(rec.value_schema.decode(r, version))
    return value
