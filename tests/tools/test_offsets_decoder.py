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
    assert describe_offsets_record(b"\x00\x05rest", b"", 9) == " key: Unknown record type 5 at offset 9, skipping."
    from broker.group.records import GroupMetadata, MemberMetadata, encode_group_metadata_value
    gm = GroupMetadata("connect", 1, "default", "m", 5, [MemberMetadata("m", None, "c", "/h", 1, 2, b"\x01", b"\x02")])
    line = describe_offsets_record(key, encode_group_metadata_value(gm), 3)
    member = json.loads(line.split(" payload: ")[1])["data"]["members"][0]
    assert member["subscription"] == base64.b64encode(b"\x01").decode()  # not a consumer group: raw bytes
