"""Tests for ``client/group/protocol.py``: our consumer-protocol bytes are those kafka-python
writes (an independent implementation of Kafka's ConsumerProtocol schemas), both ways."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment as KpAssignment
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as KpSubscription

from client.group.protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from client.protocol.primitives import DecodeError
from client.structs import TopicPartition

names = st.text(st.characters(min_codepoint=33, max_codepoint=0x2FFF), min_size=1, max_size=8)
tps = st.lists(st.tuples(names, st.integers(0, 50)), max_size=6, unique=True).map(
    lambda xs: sorted(TopicPartition(t, p) for t, p in xs))


def _kp_partitions(cls, parts):
    by: dict[str, list[int]] = {}
    for t, p in parts:
        by.setdefault(t, []).append(p)
    return [cls.TopicPartition(topic=t, partitions=sorted(ps)) for t, ps in sorted(by.items())]


@given(topics=st.lists(names, max_size=5), user_data=st.none() | st.binary(max_size=10), owned=tps,
       gen=st.integers(-1, 1000), rack=st.none() | names, version=st.integers(0, 3))
def test_subscription_matches_kafka_python(topics, user_data, owned, gen, rack, version):
    sub = Subscription(topics, user_data, owned if version >= 1 else [], gen if version >= 2 else -1,
                       rack if version >= 3 else None, version)
    ours = encode_subscription(sub)
    theirs = KpSubscription(topics=topics, user_data=user_data,
                            owned_partitions=_kp_partitions(KpSubscription, sub.owned_partitions),
                            generation_id=sub.generation_id, rack_id=sub.rack_id, version=version)
    assert ours == bytes(theirs.encode(version=version))
    assert decode_subscription(ours) == sub


@given(parts=tps, user_data=st.none() | st.binary(max_size=10))
def test_assignment_matches_kafka_python(parts, user_data):
    ours = encode_assignment(Assignment(parts, user_data))
    theirs = KpAssignment(assigned_partitions=_kp_partitions(KpAssignment, parts), user_data=user_data, version=0)
    assert ours == bytes(theirs.encode(version=0))
    assert decode_assignment(ours) == Assignment(parts, user_data)


def test_newer_versions_decode_with_the_known_layout_and_empty_assignment_is_nothing():
    v3 = encode_subscription(Subscription(["a"], None, [TopicPartition("a", 1)], 4, "rack", 3))
    future = b"\x00\x07" + v3[2:] + b"more fields"
    assert decode_subscription(future).topics == ["a"]
    assert decode_assignment(b"") == Assignment([])
    with pytest.raises(DecodeError):
        decode_subscription(b"\x00\x00\x00\x00\x00\x05\x00")
