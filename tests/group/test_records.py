"""__consumer_offsets record formats and the group -> partition mapping, checked against an
independent decoder and Java's String.hashCode values."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from broker.group.records import (
    GroupMetadata,
    MemberMetadata,
    OffsetAndMetadata,
    decode_group_metadata_value,
    decode_offset_commit_value,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
    java_string_hash,
    partition_for,
)

from .kafka_offsets_decoder import decode


def test_java_string_hash_known_values() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("polygenelubricants") == -(2**31)  # Integer.MIN_VALUE
    assert java_string_hash("\U0001F600") == 0xD83D * 31 + 0xDE00  # two UTF-16 code units


def test_partition_for() -> None:
    assert partition_for("polygenelubricants", 50) == 0  # abs(MIN_VALUE) is taken as 0
    assert partition_for("hello", 50) == 99162322 % 50
    assert partition_for("Aa", 50) == partition_for("BB", 50) == 2112 % 50
    assert partition_for("x" * 7, 50) == abs(java_string_hash("x" * 7)) % 50


text = st.text(max_size=20)


@given(group=text, topic=text, partition=st.integers(0, 2**31 - 1), offset=st.integers(-1, 2**63 - 1),
       epoch=st.integers(-1, 2**31 - 1), metadata=text, ts=st.integers(0, 2**62), expire=st.booleans())
def test_offset_commit_record(group: str, topic: str, partition: int, offset: int, epoch: int, metadata: str,
                              ts: int, expire: bool) -> None:
    om = OffsetAndMetadata(offset, epoch, metadata, ts, ts + 1000 if expire else -1)
    kind, k, v = decode(encode_offset_commit_key(group, topic, partition), encode_offset_commit_value(om))
    assert kind == "offset" and k == {"group": group, "topic": topic, "partition": partition}
    assert v is not None and v["offset"] == offset and v["metadata"] == metadata and v["commit_timestamp"] == ts
    if expire:
        assert v["version"] == 1 and v["expire_timestamp"] == ts + 1000
    else:
        assert v["version"] == 3 and v["leader_epoch"] == epoch
    back = decode_offset_commit_value(encode_offset_commit_value(om))
    assert back.offset == offset and back.metadata == metadata


member = st.builds(MemberMetadata, text, st.none() | text, text, text, st.integers(0, 2**31 - 1),
                   st.integers(0, 2**31 - 1), st.binary(max_size=30), st.binary(max_size=30))


@given(group=text, ptype=text, generation=st.integers(0, 2**31 - 1), protocol=st.none() | text,
       leader=st.none() | text, members=st.lists(member, max_size=4))
def test_group_metadata_record(group: str, ptype: str, generation: int, protocol: str | None, leader: str | None,
                               members: list[MemberMetadata]) -> None:
    gm = GroupMetadata(ptype, generation, protocol, leader, 1234, members)
    kind, k, v = decode(encode_group_metadata_key(group), encode_group_metadata_value(gm))
    assert kind == "group" and k == {"group": group} and v is not None and v["version"] == 3
    assert (v["protocol_type"], v["generation"], v["protocol"], v["leader"]) == (ptype, generation, protocol, leader)
    assert [tuple(m.values()) for m in v["members"]] == [tuple(m) for m in members]
    assert decode_group_metadata_value(encode_group_metadata_value(gm)) == gm


def test_tombstones_and_key_versions() -> None:
    assert encode_offset_commit_key("g", "t", 1)[:2] == b"\x00\x01"
    assert encode_group_metadata_key("g")[:2] == b"\x00\x02"
    assert decode(encode_group_metadata_key("g"), None) == ("group", {"group": "g"}, None)
