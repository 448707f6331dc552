"""dump-log --offsets-decoder on the __consumer_offsets files a real group leaves behind."""

from __future__ import annotations

import base64
import glob
import io
import json
import os
import re
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer

from broker.group.records import partition_for
from broker.testing import BrokerProcess, create_topic
from broker.tools.dump_log import dump_files
from broker.tools.offsets_decoder import describe_offsets_record


def test_a_group_and_its_commits_decoded_as_kafka_prints_them(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    with BrokerProcess(data) as b:
        create_topic(b.bootstrap_servers, "t", 2)
        p = Producer({"bootstrap.servers": b.bootstrap_servers})
        for i in range(10):
            p.produce("t", b"v", partition=i % 2)
        p.flush(10)
        c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "dump-g", "client.id": "dumper",
                      "auto.offset.reset": "earliest", "enable.auto.commit": False})
        c.subscribe(["t"])
        got = 0
        deadline = time.monotonic() + 30
        while got < 10 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got += 1
        c.commit(asynchronous=False)
        c.close()
    out = io.StringIO()
    files = sorted(glob.glob(os.path.join(data, f"__consumer_offsets-{partition_for('dump-g', 50)}", "*.log")))
    assert dump_files(files, offsets_decoder=True, out=out) == 0
    text = out.getvalue()
    keys = [json.loads(k) for k in re.findall(r" key: (\{.*?\}) payload:", text)]
    payloads = [v for v in re.findall(r" payload: (.*)$", text, re.M)]
    offsets = [(k["data"]["partition"], json.loads(v)) for k, v in zip(keys, payloads, strict=True)
               if k["type"] == "1"]
    assert sorted((p, v["data"]["offset"]) for p, v in offsets) == [(0, 5), (1, 5)]
    assert all(v["version"] == "3" and set(v["data"]) == {"offset", "leaderEpoch", "metadata", "commitTimestamp"}
               for _, v in offsets)
    groups = [json.loads(v) for k, v in zip(keys, payloads, strict=True) if k["type"] == "2" and v != "<DELETE>"]
    assert groups[0]["data"]["protocolType"] == "" and groups[0]["data"]["members"] == []  # the new group
    stable = [g for g in groups if g["data"]["members"]][0]["data"]
    assert stable["protocolType"] == "consumer" and stable["protocol"] == "range"
    member = stable["members"][0]
    assert member["clientId"] == "dumper" and member["clientHost"] == "/127.0.0.1"
    assert member["subscription"]["topics"] == ["t"]
    assert member["assignment"]["assignedPartitions"] == [{"topic": "t", "partitions": [0, 1]}]


def test_tombstones_unknown_types_and_foreign_bytes() -> None:
    key = b"\x00\x02\x00\x01g"
    assert describe_offsets_record(key, None, 7) == ' key: {"type":"2","data":{"group":"g"}} payload: <DELETE>'
    assert describe_offsets_record(b"\x00\x63rest", b"", 9) == " key: Unknown record type 99 at offset 9, skipping."
    assert describe_offsets_record(b"\x00\x0b\x00\x01g", b"", 9) == " key: Unknown record type 11 at offset 9, skipping."
    assert describe_offsets_record(b"\x00\x05rest", b"", 9).startswith(" key: Error at offset 9, skipping. ")
    from broker.group.records import GroupMetadata, MemberMetadata, encode_group_metadata_value
    gm = GroupMetadata("connect", 1, "default", "m", 5, [MemberMetadata("m", None, "c", "/h", 1, 2, b"\x01", b"\x02")])
    line = describe_offsets_record(key, encode_group_metadata_value(gm), 3)
    member = json.loads(line.split(" payload: ")[1])["data"]["members"][0]
    assert member["subscription"] == base64.b64encode(b"\x01").decode()  # not a consumer group: raw bytes


# -- KIP-848 consumer-group records --

TID = bytes(range(16))
TID_TEXT = "AAECAwQFBgcICQoLDA0ODw"  # Kafka's Uuid.toString(): URL-safe base64, no padding


def _kip848_records() -> list[tuple[bytes, bytes | None]]:
    from broker.group import consumer_records as cr
    return [
        (cr.encode_key(cr.ConsumerGroupMetadataKey("g")), cr.encode_value(cr.ConsumerGroupMetadataValue(4))),
        (cr.encode_key(cr.ConsumerGroupMetadataKey("g")), cr.encode_value(cr.ConsumerGroupMetadataValue(5, -7))),
        (cr.encode_key(cr.ConsumerGroupMemberMetadataKey("g", "m")), cr.encode_value(cr.ConsumerGroupMemberMetadataValue(
            None, "r1", "c", "/h", ["t"], None, 300000, "uniform"))),
        (cr.encode_key(cr.ConsumerGroupMemberMetadataKey("g", "m2")), cr.encode_value(cr.ConsumerGroupMemberMetadataValue(
            "i", None, "c", "/h", [], "t.*", 100, None,
            cr.ClassicMemberMetadata(45000, [cr.ClassicProtocol("range", b"\x01\x02")])))),
        (cr.encode_key(cr.ConsumerGroupTargetAssignmentMetadataKey("g")),
         cr.encode_value(cr.ConsumerGroupTargetAssignmentMetadataValue(5))),
        (cr.encode_key(cr.ConsumerGroupTargetAssignmentMemberKey("g", "m")),
         cr.encode_value(cr.ConsumerGroupTargetAssignmentMemberValue({TID: [0, 1]}))),
        (cr.encode_key(cr.ConsumerGroupCurrentMemberAssignmentKey("g", "m")),
         cr.encode_value(cr.ConsumerGroupCurrentMemberAssignmentValue(5, 4, 1, {TID: [0]}, {TID: [1]}))),
        (cr.encode_key(cr.ConsumerGroupRegularExpressionKey("g", "t.*")),
         cr.encode_value(cr.ConsumerGroupRegularExpressionValue(["t1"], 42, 1700000000000))),
        # written by Kafka 3.x/4.0 only: TopicId, TopicName "t", NumPartitions 2, no rack metadata
        (b"\x00\x04\x00\x01g", b"\x00\x00\x02" + TID + b"\x02t\x00\x00\x00\x02\x01\x00\x00"),
        (cr.encode_key(cr.ConsumerGroupMemberMetadataKey("g", "m")), None),
    ]


KIP848_LINES = [
    ' key: {"type":"3","data":{"groupId":"g"}} payload: {"version":"0","data":{"epoch":4}}',
    ' key: {"type":"3","data":{"groupId":"g"}} payload: {"version":"0","data":{"epoch":5,"metadataHash":-7}}',
    ' key: {"type":"5","data":{"groupId":"g","memberId":"m"}} payload: {"version":"0","data":{"instanceId":null,'
    '"rackId":"r1","clientId":"c","clientHost":"/h","subscribedTopicNames":["t"],"subscribedTopicRegex":null,'
    '"rebalanceTimeoutMs":300000,"serverAssignor":"uniform"}}',
    ' key: {"type":"5","data":{"groupId":"g","memberId":"m2"}} payload: {"version":"0","data":{"instanceId":"i",'
    '"rackId":null,"clientId":"c","clientHost":"/h","subscribedTopicNames":[],"subscribedTopicRegex":"t.*",'
    '"rebalanceTimeoutMs":100,"serverAssignor":null,"classicMemberMetadata":{"sessionTimeoutMs":45000,'
    '"supportedProtocols":[{"name":"range","metadata":"AQI="}]}}}',
    ' key: {"type":"6","data":{"groupId":"g"}} payload: {"version":"0","data":{"assignmentEpoch":5}}',
    ' key: {"type":"7","data":{"groupId":"g","memberId":"m"}} payload: {"version":"0","data":{"topicPartitions":'
    f'[{{"topicId":"{TID_TEXT}","partitions":[0,1]}}]}}}}',
    ' key: {"type":"8","data":{"groupId":"g","memberId":"m"}} payload: {"version":"0","data":{"memberEpoch":5,'
    f'"previousMemberEpoch":4,"state":1,"assignedPartitions":[{{"topicId":"{TID_TEXT}","partitions":[0]}}],'
    f'"partitionsPendingRevocation":[{{"topicId":"{TID_TEXT}","partitions":[1]}}]}}}}',
    ' key: {"type":"16","data":{"groupId":"g","regularExpression":"t.*"}} payload: {"version":"0","data":'
    '{"topics":["t1"],"version":42,"timestamp":1700000000000}}',
    ' key: {"type":"4","data":{"groupId":"g"}} payload: {"version":"0","data":{"topics":[{"topicId":'
    f'"{TID_TEXT}","topicName":"t","numPartitions":2,"partitionMetadata":[]}}]}}}}',
    ' key: {"type":"5","data":{"groupId":"g","memberId":"m"}} payload: <DELETE>',
]


def test_consumer_group_records_printed_as_kafka_4_prints_them() -> None:
    lines = [describe_offsets_record(k, v, i) for i, (k, v) in enumerate(_kip848_records())]
    assert lines == KIP848_LINES
    for line in lines:  # every part is JSON
        key, _, payload = line.removeprefix(" key: ").partition(" payload: ")
        json.loads(key)
        assert payload == "<DELETE>" or json.loads(payload)["version"] == "0"
    bad = describe_offsets_record(b"\x00\x03\x00\x01g", b"\x00\x01\x00\x00\x00\x01\x00", 4)
    assert bad == " key: Error at offset 4, skipping. ConsumerGroupMetadataValue version 1 is unknown"


def test_dump_log_of_a_segment_with_consumer_group_records(tmp_path: Path) -> None:
    from broker.storage.segment import LogSegment
    from client.records import Record, build_batch

    d = tmp_path / "__consumer_offsets-0"
    d.mkdir()
    seg = LogSegment.open(str(d), 0)
    seg.append(build_batch([Record(i, 1700000000000, k, v) for i, (k, v) in enumerate(_kip848_records())]))
    seg.close()
    out = io.StringIO()
    assert dump_files([str(d / "00000000000000000000.log")], offsets_decoder=True, out=out) == 0
    records = [line for line in out.getvalue().splitlines() if line.startswith("| offset: ")]
    assert [line[line.index(" key: "):] for line in records] == KIP848_LINES
    assert [int(line.split()[2]) for line in records] == list(range(len(KIP848_LINES)))
