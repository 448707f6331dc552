"""KIP-848 consumer-group records (broker/group/consumer_records.py): round trips, an
independent ``struct``-based decoder written from Kafka's ConsumerGroup*.json schemas (so a
mistake shared with client/protocol/schema.py would show), hand-derived bytes per record type,
forward compatibility (unknown tags) and the loader's path."""

from __future__ import annotations

import contextlib
import struct
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.group import runtime
from broker.group.consumer_records import (
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
    CONSUMER_GROUP_MEMBER_METADATA,
    CONSUMER_GROUP_METADATA,
    CONSUMER_GROUP_PARTITION_METADATA,
    CONSUMER_GROUP_REGULAR_EXPRESSION,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
    RECORD_TYPES,
    ClassicMemberMetadata,
    ClassicProtocol,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    TopicMetadata,
    decode_value,
    encode_key,
    encode_value,
    record_type,
)
from broker.group.records import GroupMetadataKey, decode_key, encode_group_metadata_key
from broker.storage.record_reader import LoggedRecord
from client.protocol.primitives import DecodeError
from client.records.record import Record

# -- an independent decoder: Kafka's flexible encoding, byte by byte --


class _R:
    def __init__(self, b: bytes) -> None:
        self.b, self.p = b, 0

    def take(self, fmt: str) -> Any:
        v = struct.unpack_from(">" + fmt, self.b, self.p)[0]
        self.p += struct.calcsize(">" + fmt)
        return v

    def raw(self, n: int) -> bytes:
        assert self.p + n <= len(self.b), "runs past the end"
        out = self.b[self.p:self.p + n]
        self.p += n
        return out

    def uvarint(self) -> int:
        out = shift = 0
        while True:
            byte = self.raw(1)[0]
            out |= (byte & 0x7F) << shift
            if byte < 0x80:
                return out
            shift += 7

    def string(self) -> str:  # classic: int16 length
        return self.raw(self.take("h")).decode()

    def cstring(self, nullable: bool = False) -> str | None:  # compact: uvarint length + 1, 0 = null
        n = self.uvarint() - 1
        if n < 0:
            assert nullable, "null in a non-nullable compact string"
            return None
        return self.raw(n).decode()

    def cbytes(self) -> bytes:
        n = self.uvarint() - 1
        assert n >= 0
        return self.raw(n)

    def carray(self, elem: Any) -> list[Any]:
        n = self.uvarint() - 1
        assert n >= 0, "null array"
        return [elem() for _ in range(n)]

    def tags(self) -> dict[int, bytes]:
        """A tag buffer: {tag: raw bytes}; tags must come in increasing order."""
        out: dict[int, bytes] = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            assert not out or tag > max(out), "tags out of order"
            out[tag] = self.raw(self.uvarint())
        return out

    def done(self) -> None:
        assert self.p == len(self.b), f"{len(self.b) - self.p} trailing bytes"


def _topic_partitions(r: _R) -> list[tuple[bytes, list[int], dict[int, bytes]]]:
    def one() -> tuple[bytes, list[int], dict[int, bytes]]:
        return r.raw(16), r.carray(lambda: r.take("i")), r.tags()
    return r.carray(one)


def kafka_decode_key(b: bytes) -> tuple[int, list[str]]:
    """(record type, the key's strings): every KIP-848 key is strings only."""
    r = _R(b)
    kind = r.take("h")
    n = {3: 1, 4: 1, 5: 2, 6: 1, 7: 2, 8: 2, 16: 2}[kind]
    out = [r.string() for _ in range(n)]
    r.done()
    return kind, out


def kafka_decode_value(kind: int, b: bytes) -> dict[str, Any]:
    """The fields of a version-0 value, ``tags`` for the top-level tag buffer."""
    r = _R(b)
    assert r.take("h") == 0, "value version"
    v: dict[str, Any] = {}
    if kind == 3:
        v["epoch"] = r.take("i")
    elif kind == 5:
        v["instance_id"] = r.cstring(True)
        v["rack_id"] = r.cstring(True)
        v["client_id"] = r.cstring()
        v["client_host"] = r.cstring()
        v["subscribed_topic_names"] = r.carray(r.cstring)
        v["subscribed_topic_regex"] = r.cstring(True)
        v["rebalance_timeout_ms"] = r.take("i")
        v["server_assignor"] = r.cstring(True)
    elif kind == 6:
        v["assignment_epoch"] = r.take("i")
    elif kind == 7:
        v["topic_partitions"] = _topic_partitions(r)
    elif kind == 8:
        v["member_epoch"] = r.take("i")
        v["previous_member_epoch"] = r.take("i")
        v["state"] = r.take("b")
        v["assigned_partitions"] = _topic_partitions(r)
        v["partitions_pending_revocation"] = _topic_partitions(r)
    elif kind == 16:
        v["topics"] = r.carray(r.cstring)
        v["version"] = r.take("q")
        v["timestamp"] = r.take("q")
    else:
        raise AssertionError(kind)
    v["tags"] = r.tags()
    r.done()
    return v


def kafka_decode_metadata_hash(raw: bytes) -> int:
    r = _R(raw)
    h = r.take("q")
    r.done()
    return int(h)


def kafka_decode_classic_member(raw: bytes) -> dict[str, Any]:
    """ClassicMemberMetadata: SessionTimeoutMs int32, SupportedProtocols [Name, Metadata]."""
    r = _R(raw)

    def protocol() -> tuple[str | None, bytes]:
        name, metadata = r.cstring(), r.cbytes()
        assert r.tags() == {}
        return name, metadata

    out = {"session_timeout_ms": r.take("i"), "supported_protocols": r.carray(protocol)}
    assert r.tags() == {}
    r.done()
    return out


# -- round trips, checked by the independent decoder --

text = st.text(max_size=12)
ntext = st.none() | text
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
topic_partitions = st.dictionaries(st.binary(min_size=16, max_size=16), st.lists(st.integers(0, 2**31 - 1), max_size=4),
                                   max_size=3)


def _no_tags(tps: list[tuple[bytes, list[int], dict[int, bytes]]]) -> dict[bytes, list[int]]:
    assert all(tags == {} for _, _, tags in tps)
    return {tid: parts for tid, parts, _ in tps}


@given(group=text, member=text, regex=text)
def test_keys(group: str, member: str, regex: str) -> None:
    keys = [ConsumerGroupMetadataKey(group), ConsumerGroupPartitionMetadataKey(group),
            ConsumerGroupMemberMetadataKey(group, member), ConsumerGroupTargetAssignmentMetadataKey(group),
            ConsumerGroupTargetAssignmentMemberKey(group, member), ConsumerGroupCurrentMemberAssignmentKey(group, member),
            ConsumerGroupRegularExpressionKey(group, regex)]
    for key in keys:
        b = encode_key(key)
        assert kafka_decode_key(b) == (record_type(key), list(key))
        back = decode_key(b)
        assert back == key and type(back) is type(key)


@given(epoch=int32, metadata_hash=int64)
def test_group_metadata_value(epoch: int, metadata_hash: int) -> None:
    value = ConsumerGroupMetadataValue(epoch, metadata_hash)
    b = encode_value(value)
    v = kafka_decode_value(3, b)
    assert v["epoch"] == epoch
    # MetadataHash is tagged (tag 0, default 0): written only when it is not 0
    assert set(v["tags"]) == ({0} if metadata_hash else set())
    if metadata_hash:
        assert kafka_decode_metadata_hash(v["tags"][0]) == metadata_hash
    assert decode_value(ConsumerGroupMetadataKey("g"), b) == value


classic = st.builds(ClassicMemberMetadata, int32,
                    st.lists(st.builds(ClassicProtocol, text, st.binary(max_size=8)), max_size=3))


@given(instance_id=ntext, rack_id=ntext, client_id=text, client_host=text, names=st.lists(text, max_size=4),
       regex=ntext, rebalance=int32, assignor=ntext, cm=st.none() | classic)
def test_member_metadata_value(instance_id: str | None, rack_id: str | None, client_id: str, client_host: str,
                               names: list[str], regex: str | None, rebalance: int, assignor: str | None,
                               cm: ClassicMemberMetadata | None) -> None:
    value = ConsumerGroupMemberMetadataValue(instance_id, rack_id, client_id, client_host, names, regex, rebalance,
                                             assignor, cm)
    b = encode_value(value)
    v = kafka_decode_value(5, b)
    assert (v["instance_id"], v["rack_id"], v["client_id"], v["client_host"], v["subscribed_topic_names"],
            v["subscribed_topic_regex"], v["rebalance_timeout_ms"], v["server_assignor"]) == \
        (instance_id, rack_id, client_id, client_host, names, regex, rebalance, assignor)
    if cm is None:
        assert v["tags"] == {}  # a null ClassicMemberMetadata (its default) is not written
    else:
        assert set(v["tags"]) == {0}
        assert kafka_decode_classic_member(v["tags"][0]) == {
            "session_timeout_ms": cm.session_timeout_ms,
            "supported_protocols": [(p.name, p.metadata) for p in cm.supported_protocols]}
    assert decode_value(ConsumerGroupMemberMetadataKey("g", "m"), b) == value


@given(epoch=int32)
def test_target_assignment_metadata_value(epoch: int) -> None:
    b = encode_value(ConsumerGroupTargetAssignmentMetadataValue(epoch))
    assert kafka_decode_value(6, b) == {"assignment_epoch": epoch, "tags": {}}
    assert decode_value(ConsumerGroupTargetAssignmentMetadataKey("g"), b) == (epoch,)


@given(tps=topic_partitions)
def test_target_assignment_member_value(tps: dict[bytes, list[int]]) -> None:
    b = encode_value(ConsumerGroupTargetAssignmentMemberValue(tps))
    v = kafka_decode_value(7, b)
    assert v["tags"] == {} and _no_tags(v["topic_partitions"]) == tps
    assert [tid for tid, _, _ in v["topic_partitions"]] == list(tps)  # the dict's order
    assert decode_value(ConsumerGroupTargetAssignmentMemberKey("g", "m"), b) == (tps,)


@given(epoch=int32, previous=int32, state=st.sampled_from([0, 1, 2, 127]), assigned=topic_partitions,
       pending=topic_partitions)
def test_current_member_assignment_value(epoch: int, previous: int, state: int, assigned: dict[bytes, list[int]],
                                         pending: dict[bytes, list[int]]) -> None:
    value = ConsumerGroupCurrentMemberAssignmentValue(epoch, previous, state, assigned, pending)
    b = encode_value(value)
    v = kafka_decode_value(8, b)
    assert (v["member_epoch"], v["previous_member_epoch"], v["state"]) == (epoch, previous, state)
    assert _no_tags(v["assigned_partitions"]) == assigned and _no_tags(v["partitions_pending_revocation"]) == pending
    assert v["tags"] == {}
    assert decode_value(ConsumerGroupCurrentMemberAssignmentKey("g", "m"), b) == value


@given(topics=st.lists(text, max_size=5), version=int64, timestamp=int64)
def test_regular_expression_value(topics: list[str], version: int, timestamp: int) -> None:
    value = ConsumerGroupRegularExpressionValue(topics, version, timestamp)
    b = encode_value(value)
    assert kafka_decode_value(16, b) == {"topics": topics, "version": version, "timestamp": timestamp, "tags": {}}
    assert decode_value(ConsumerGroupRegularExpressionKey("g", ".*"), b) == value


def test_record_types_are_kafkas_api_keys() -> None:
    assert RECORD_TYPES == {3: "ConsumerGroupMetadata", 4: "ConsumerGroupPartitionMetadata",
                            5: "ConsumerGroupMemberMetadata", 6: "ConsumerGroupTargetAssignmentMetadata",
                            7: "ConsumerGroupTargetAssignmentMember", 8: "ConsumerGroupCurrentMemberAssignment",
                            16: "ConsumerGroupRegularExpression"}
    assert (CONSUMER_GROUP_METADATA, CONSUMER_GROUP_PARTITION_METADATA, CONSUMER_GROUP_MEMBER_METADATA,
            CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
            CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, CONSUMER_GROUP_REGULAR_EXPRESSION) == (3, 4, 5, 6, 7, 8, 16)


# -- bytes derived by hand from the JSON schemas --

TID = bytes(range(16))  # topic id 000102...0f
TID2 = bytes(range(16, 32))
GRP = "0003" "677270"  # GroupId "grp": int16 length 3 + UTF-8 (keys are never flexible)
M1 = "0002" "6d31"  # MemberId "m1"


def _hex(s: str) -> bytes:
    return bytes.fromhex(s.replace(" ", ""))


def test_known_bytes_group_metadata() -> None:
    key = ConsumerGroupMetadataKey("grp")
    assert encode_key(key) == _hex("0003" + GRP)  # record type 3
    hashed = _hex(
        "0000"          # value version 0
        "00000007"      # Epoch int32 7
        "01"            # tag buffer: 1 tagged field
        "00 08"         # tag 0 (MetadataHash), 8 bytes
        "0102030405060708")  # MetadataHash int64
    assert encode_value(ConsumerGroupMetadataValue(7, 0x0102030405060708)) == hashed
    assert decode_value(key, hashed) == (7, 0x0102030405060708)
    plain = _hex("0000" "00000007" "00")  # MetadataHash 0 is the default: an empty tag buffer
    assert encode_value(ConsumerGroupMetadataValue(7)) == plain


def test_known_bytes_partition_metadata_read_not_written() -> None:
    key_bytes = _hex("0004" + GRP)  # record type 4
    key = decode_key(key_bytes)
    assert key == ConsumerGroupPartitionMetadataKey("grp") and encode_key(key) == key_bytes
    value = _hex(
        "0000"          # value version 0
        "02"            # Topics: compact array of 1 (length + 1)
        + TID.hex() +   # TopicId uuid
        "04 666f6f"     # TopicName compact string "foo" (3 + 1)
        "00000002"      # NumPartitions int32 2
        "03"            # PartitionMetadata: 2 elements
        "00000000"      # . Partition 0
        "02 03 7231"    # . Racks: 1 element, "r1"
        "00"            # . its tag buffer
        "00000001"      # . Partition 1
        "01"            # . Racks: empty
        "00"            # . its tag buffer
        "00"            # TopicMetadata's tag buffer
        "00")           # the value's tag buffer
    assert decode_value(key, value) == ConsumerGroupPartitionMetadataValue(
        [TopicMetadata(TID, "foo", 2, [(0, ["r1"]), (1, [])])])
    with pytest.raises(TypeError):  # Kafka 4.1+ does not write it, neither do we
        encode_value(ConsumerGroupPartitionMetadataValue([]))


def test_known_bytes_member_metadata() -> None:
    key = ConsumerGroupMemberMetadataKey("grp", "m1")
    assert encode_key(key) == _hex("0005" + GRP + M1)
    value = ConsumerGroupMemberMetadataValue(
        instance_id=None, rack_id="r1", client_id="c", client_host="/h", subscribed_topic_names=["foo", "bar"],
        subscribed_topic_regex=None, rebalance_timeout_ms=300000, server_assignor="uniform",
        classic_member_metadata=ClassicMemberMetadata(45000, [ClassicProtocol("range", b"\x00\x01")]))
    expected = _hex(
        "0000"          # value version 0
        "00"            # InstanceId: null
        "03 7231"       # RackId "r1"
        "02 63"         # ClientId "c"
        "03 2f68"       # ClientHost "/h"
        "03 04666f6f 04626172"  # SubscribedTopicNames: 2 elements, "foo", "bar"
        "00"            # SubscribedTopicRegex: null
        "000493e0"      # RebalanceTimeoutMs 300000
        "08 756e69666f726d"  # ServerAssignor "uniform"
        "01"            # tag buffer: 1 field
        "00 10"         # tag 0 (ClassicMemberMetadata), 16 bytes:
        "0000afc8"      # . SessionTimeoutMs 45000
        "02"            # . SupportedProtocols: 1 element
        "06 72616e6765"  # . . Name "range"
        "03 0001"       # . . Metadata: compact bytes, 2 bytes
        "00"            # . . ClassicProtocol's tag buffer
        "00")           # . ClassicMemberMetadata's tag buffer
    assert encode_value(value) == expected
    assert decode_value(key, expected) == value


def test_known_bytes_target_assignment() -> None:
    key = ConsumerGroupTargetAssignmentMetadataKey("grp")
    assert encode_key(key) == _hex("0006" + GRP)
    assert encode_value(ConsumerGroupTargetAssignmentMetadataValue(10)) == _hex("0000" "0000000a" "00")
    member = ConsumerGroupTargetAssignmentMemberKey("grp", "m1")
    assert encode_key(member) == _hex("0007" + GRP + M1)
    expected = _hex(
        "0000"          # value version 0
        "02"            # TopicPartitions: 1 element
        + TID.hex() +   # TopicId
        "03 00000000 00000002"  # Partitions: [0, 2]
        "00"            # TopicPartition's tag buffer
        "00")           # the value's tag buffer
    assert encode_value(ConsumerGroupTargetAssignmentMemberValue({TID: [0, 2]})) == expected
    assert decode_value(member, expected) == ({TID: [0, 2]},)


def test_known_bytes_current_member_assignment() -> None:
    key = ConsumerGroupCurrentMemberAssignmentKey("grp", "m1")
    assert encode_key(key) == _hex("0008" + GRP + M1)
    value = ConsumerGroupCurrentMemberAssignmentValue(5, 4, 1, {TID: [1]}, {TID2: [3]})
    expected = _hex(
        "0000"          # value version 0
        "00000005"      # MemberEpoch
        "00000004"      # PreviousMemberEpoch
        "01"            # State int8: 1 = UNREVOKED_PARTITIONS
        "02" + TID.hex() + "02 00000001" "00"    # AssignedPartitions: [TID: [1]], element tags
        "02" + TID2.hex() + "02 00000003" "00"   # PartitionsPendingRevocation: [TID2: [3]]
        "00")           # the value's tag buffer
    assert encode_value(value) == expected
    assert decode_value(key, expected) == value


def test_known_bytes_regular_expression() -> None:
    key = ConsumerGroupRegularExpressionKey("grp", "t.*")
    assert encode_key(key) == _hex("0010" + GRP + "0003 742e2a")  # record type 16, RegularExpression "t.*"
    value = ConsumerGroupRegularExpressionValue(["t1"], 42, 1700000000000)
    expected = _hex(
        "0000"          # value version 0
        "02 03 7431"    # Topics: 1 element, "t1"
        "000000000000002a"  # Version int64 42
        "0000018bcfe56800"  # Timestamp int64 1700000000000
        "00")           # tag buffer
    assert encode_value(value) == expected
    assert decode_value(key, expected) == value


# -- forward compatibility and errors --

def test_unknown_tagged_fields_are_skipped() -> None:
    # Kafka after 4.2 adds tagged fields: CreationTimeMs (tag 1) to ConsumerGroupMetadataValue and
    # AssignmentEpochs (tag 0, []int32) to each TopicPartitions of the current assignment.
    metadata = _hex("0000" "00000007" "02" "00 08 0000000000000009" "01 08 0000018bcfe56800")
    assert decode_value(ConsumerGroupMetadataKey("g"), metadata) == (7, 9)
    current = _hex("0000" "00000005" "00000004" "00"
                   "02" + TID.hex() + "02 00000001" "01 00 05 02 00000003"  # element tag 0: [3]
                   "01"                                                    # nothing pending
                   "01 07 03 616263")                                      # tag 7 at the top: "abc"
    assert decode_value(ConsumerGroupCurrentMemberAssignmentKey("g", "m"), current) == (5, 4, 0, {TID: [1]}, {})


def test_errors() -> None:
    key = ConsumerGroupMetadataKey("g")
    with pytest.raises(DecodeError, match="version 1"):
        decode_value(key, _hex("0001" "00000007" "00"))
    with pytest.raises(DecodeError):
        decode_value(key, _hex("0000" "000000"))
    with pytest.raises(DecodeError):
        decode_key(_hex("0005" "0001 67"))  # the member id is missing
    with pytest.raises(TypeError):
        encode_key(GroupMetadataKey("g"))  # type: ignore[arg-type]
    assert decode_key(_hex("0009" "0001 67")) is None  # a share group's record: not decoded
    assert decode_key(_hex("0011" "0001 67")) is None  # a streams group's record (17)


KEYS = {3: ConsumerGroupMetadataKey("g"), 4: ConsumerGroupPartitionMetadataKey("g"),
        5: ConsumerGroupMemberMetadataKey("g", "m"), 6: ConsumerGroupTargetAssignmentMetadataKey("g"),
        7: ConsumerGroupTargetAssignmentMemberKey("g", "m"), 8: ConsumerGroupCurrentMemberAssignmentKey("g", "m"),
        16: ConsumerGroupRegularExpressionKey("g", "r")}


@given(kind=st.sampled_from(sorted(KEYS)), data=st.binary(max_size=64))
def test_random_bytes_raise_only_decode_error(kind: int, data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        decode_key(kind.to_bytes(2, "big") + data)
    with contextlib.suppress(DecodeError):
        decode_value(KEYS[kind], b"\x00\x00" + data)


# -- the loader's path --

def test_loader_decodes_and_hands_them_to_the_coordinator() -> None:
    records = [
        (encode_key(ConsumerGroupMetadataKey("g")), encode_value(ConsumerGroupMetadataValue(3, 1))),
        (encode_key(ConsumerGroupTargetAssignmentMemberKey("g", "m")), None),  # a tombstone
        (encode_group_metadata_key("classic"), None),
        (b"\x00\x0b\x00\x01g", b"\x00\x00\x00"),  # ShareGroupMetadata: skipped
    ]
    chunk = [LoggedRecord(-1, -1, False, Record(i, 0, k, v)) for i, (k, v) in enumerate(records)]
    parsed = runtime._decode(0, chunk)
    assert parsed == [(ConsumerGroupMetadataKey("g"), ConsumerGroupMetadataValue(3, 1), -1),
                      (ConsumerGroupTargetAssignmentMemberKey("g", "m"), None, -1),
                      (GroupMetadataKey("classic"), None, -1)]

    class Consumer:
        def __init__(self) -> None:
            self.replayed: list[Any] = []

        def replay(self, key: Any, value: Any) -> None:
            self.replayed.append((key, value))

    class Coordinator:
        def __init__(self) -> None:
            self.groups: list[Any] = []
            self.consumer = Consumer()

        def replay_group(self, group: str, value: Any) -> None:
            self.groups.append((group, value))

    rt = runtime.GroupRuntime.__new__(runtime.GroupRuntime)  # only _replay's coordinator is needed
    rt.coordinator = c = Coordinator()  # type: ignore[assignment]
    rt._replay(0, parsed)
    assert c.groups == [("classic", None)]
    assert c.consumer.replayed == [(ConsumerGroupMetadataKey("g"), ConsumerGroupMetadataValue(3, 1)),
                                   (ConsumerGroupTargetAssignmentMemberKey("g", "m"), None)]
