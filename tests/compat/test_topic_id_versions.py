"""Produce 12/13, OffsetCommit 10 and OffsetFetch 10 (topics by id, KIP-516 / KIP-848) as Kafka
encodes them: the requests are built and the answers read by kafka-python 3's protocol classes,
which are generated from Kafka 4.2's JSON message specs, independently of our schema tables.

No client at hand negotiates these versions by itself (measured against this broker:
librdkafka 2.16 sends Produce 10 and OffsetCommit/OffsetFetch 9; kafka-python 3.0 caps
Produce at 9 and OffsetCommit/OffsetFetch at 8 in its producer and coordinator;
@platformatic/kafka 1.35 stops at Produce 11 and OffsetCommit/OffsetFetch 9), so the requests
are sent over a plain socket at the version chosen; our own client, which does send them, is
tested in tests/client/test_producer.py and tests/client/test_group_topic_ids.py."""

from __future__ import annotations

import socket
import struct
import uuid
from typing import Any

from kafka.protocol.consumer.group import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from kafka.protocol.producer import ProduceRequest, ProduceResponse

from client.protocol.api import ApiKey, ErrorCode
from tests.server.wire import Conn, batch, create_topic


def _call(port: int, request: Any, response_class: Any, version: int) -> Any:
    """One request encoded by kafka-python at ``version``; its answer decoded by kafka-python."""
    request.with_header(correlation_id=41, client_id="kafka-python-protocol")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request.encode(version=version, header=True, framed=True))
        (size,) = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))
        frame = s.recv(size, socket.MSG_WAITALL)
    resp = response_class.decode(frame, version=version, header=True)
    assert resp.header.correlation_id == 41
    return resp


def _topic_id(port: int, name: str) -> uuid.UUID:
    with Conn(port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 7, create_topic(name, 2))["topics"][0]["error_code"] == 0
        (t,) = c.call(ApiKey.METADATA, 12, {"topics": [{"name": name}]})["topics"]
        return t["topic_id"]  # type: ignore[no-any-return]


def test_produce_12_and_13_as_kafka_encodes_them(module_broker: Any, topic: str) -> None:
    port = module_broker.port
    tid = _topic_id(port, topic)
    T, P = ProduceRequest.TopicProduceData, ProduceRequest.TopicProduceData.PartitionProduceData

    def produce(version: int, **key: Any) -> Any:
        return _call(port, ProduceRequest(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
            T(partition_data=[P(index=0, records=batch(2)), P(index=1, records=batch(1))], **key)]),
            ProduceResponse, version)

    (t,) = produce(12, name=topic).responses
    assert t.name == topic and [(p.index, p.error_code, p.base_offset) for p in t.partition_responses] == [
        (0, 0, 0), (1, 0, 0)]
    (t,) = produce(13, topic_id=tid).responses
    assert t.topic_id == tid and [(p.index, p.error_code, p.base_offset) for p in t.partition_responses] == [
        (0, 0, 2), (1, 0, 1)]
    unknown = uuid.uuid4()
    (t,) = produce(13, topic_id=unknown).responses
    assert t.topic_id == unknown
    assert [p.error_code for p in t.partition_responses] == [ErrorCode.UNKNOWN_TOPIC_ID] * 2


def test_offset_commit_and_fetch_10_as_kafka_encodes_them(module_broker: Any, topic: str) -> None:
    port = module_broker.port
    tid = _topic_id(port, topic)
    unknown = uuid.uuid4()
    group = f"{topic}-group"
    CT = OffsetCommitRequest.OffsetCommitRequestTopic
    CP = CT.OffsetCommitRequestPartition
    with Conn(port) as c:  # the group's coordinator is ready before the commit
        assert c.call(ApiKey.FIND_COORDINATOR, 3, {"key": group, "key_type": 0})["error_code"] == 0
    r = _call(port, OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="",
                                        group_instance_id=None, topics=[
        CT(topic_id=tid, partitions=[CP(partition_index=0, committed_offset=12, committed_leader_epoch=-1,
                                        committed_metadata="m"),
                                     CP(partition_index=1, committed_offset=3, committed_leader_epoch=-1,
                                        committed_metadata=None)]),
        CT(topic_id=unknown, partitions=[CP(partition_index=0, committed_offset=1, committed_leader_epoch=-1,
                                            committed_metadata="")])]), OffsetCommitResponse, 10)
    assert [(t.topic_id, [(p.partition_index, p.error_code) for p in t.partitions]) for t in r.topics] == [
        (tid, [(0, 0), (1, 0)]), (unknown, [(0, ErrorCode.UNKNOWN_TOPIC_ID)])]

    G = OffsetFetchRequest.OffsetFetchRequestGroup
    FT = G.OffsetFetchRequestTopics

    def fetch(topics: Any) -> list[tuple[uuid.UUID, int, int, str | None, int]]:
        resp = _call(port, OffsetFetchRequest(groups=[G(group_id=group, member_id=None, member_epoch=-1,
                                                        topics=topics)], require_stable=True),
                     OffsetFetchResponse, 10)
        (g,) = resp.groups
        assert g.error_code == 0
        return [(t.topic_id, p.partition_index, p.committed_offset, p.metadata, p.error_code)
                for t in g.topics for p in t.partitions]

    assert fetch([FT(topic_id=tid, partition_indexes=[0, 1]), FT(topic_id=unknown, partition_indexes=[0])]) == [
        (tid, 0, 12, "m", 0), (tid, 1, 3, "", 0), (unknown, 0, -1, "", ErrorCode.UNKNOWN_TOPIC_ID)]
    assert fetch(None) == [(tid, 0, 12, "m", 0), (tid, 1, 3, "", 0)]  # null metadata is stored as "", as Kafka does
