"""Kafka's *consumer protocol*: the bytes consumers put in JoinGroup's protocol metadata and in
SyncGroup's assignments (protocol type ``"consumer"``). The broker never reads them; every
member of a group must agree on them, so these are Kafka's layouts exactly, which lets our
consumers share a group with the Java client, librdkafka, kafka-python and aiokafka.

Both are ``int16 version`` followed by a non-flexible encoding (``string`` = int16 length +
UTF-8, ``bytes`` = int32 length + bytes, -1 = null; arrays = int32 count + elements)::

    ConsumerProtocolSubscription
      v0: int16 version | [string] topics | bytes? user_data
      v1: + [string topic, [int32] partitions] owned_partitions
      v2: + int32 generation_id (-1 when unknown)
      v3: + string? rack_id

    ConsumerProtocolAssignment (v0-v3 share one layout)
      int16 version | [string topic, [int32] partitions] assigned_partitions | bytes? user_data

A reader parses a newer version with the layout it knows and ignores what follows (Kafka's
rule: new versions only append fields), so a v3 subscription from a Java client decodes here.
An empty assignment (the broker's answer for a member the leader gave nothing) decodes as no
partitions.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from client.protocol.primitives import DecodeError, Reader, Writer
from client.structs import TopicPartition

__all__ = ["CONSUMER_PROTOCOL_TYPE", "Subscription", "Assignment", "encode_subscription",
           "decode_subscription", "encode_assignment", "decode_assignment"]

CONSUMER_PROTOCOL_TYPE = "consumer"


class Subscription(NamedTuple):
    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: list[TopicPartition] = []
    generation_id: int = -1
    rack_id: str | None = None
    version: int = 1


class Assignment(NamedTuple):
    partitions: list[TopicPartition]
    user_data: bytes | None = None
    version: int = 0


def _write_partitions(w: Writer, tps: Iterable[TopicPartition]) -> None:
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    w.int32(len(by_topic))
    for t in sorted(by_topic):
        w.string(t)
        ps = sorted(by_topic[t])
        w.int32(len(ps))
        for p in ps:
            w.int32(p)


def _read_partitions(r: Reader) -> list[TopicPartition]:
    out = []
    for _ in range(max(r.array_length(), 0)):
        topic = r.string()
        for _ in range(max(r.array_length(), 0)):
            out.append(TopicPartition(topic, r.int32()))
    return out


def encode_subscription(sub: Subscription) -> bytes:
    """``sub`` in the layout of ``sub.version`` (0-3)."""
    v = sub.version
    if not 0 <= v <= 3:
        raise ValueError(f"ConsumerProtocolSubscription version {v} is not 0-3")
    w = Writer()
    w.int16(v)
    w.int32(len(sub.topics))
    for t in sub.topics:
        w.string(t)
    w.nullable_bytes(sub.user_data)
    if v >= 1:
        _write_partitions(w, sub.owned_partitions)
    if v >= 2:
        w.int32(sub.generation_id)
    if v >= 3:
        w.nullable_string(sub.rack_id)
    return bytes(w.buf)


def decode_subscription(data: bytes | memoryview) -> Subscription:
    """DecodeError on bytes that are not a subscription."""
    r = Reader(data)
    v = r.int16()
    if v < 0:
        raise DecodeError(f"ConsumerProtocolSubscription version {v}")
    topics = [r.string() for _ in range(max(r.array_length(), 0))]
    ud = r.nullable_bytes()
    owned = _read_partitions(r) if v >= 1 else []
    gen = r.int32() if v >= 2 else -1
    rack = r.nullable_string() if v >= 3 else None
    return Subscription(topics, None if ud is None else bytes(ud), owned, gen, rack, v)


def encode_assignment(a: Assignment) -> bytes:
    w = Writer()
    w.int16(a.version)
    _write_partitions(w, a.partitions)
    w.nullable_bytes(a.user_data)
    return bytes(w.buf)


def decode_assignment(data: bytes | memoryview) -> Assignment:
    if len(data) == 0:
        return Assignment([])
    r = Reader(data)
    v = r.int16()
    if v < 0:
        raise DecodeError(f"ConsumerProtocolAssignment version {v}")
    parts = _read_partitions(r)
    ud = r.nullable_bytes() if r.remaining >= 4 else None
    return Assignment(parts, None if ud is None else bytes(ud), v)
