"""``dump-log --share-state-decoder`` (broker/tools/share_state_decoder.py): the lines Kafka's
DumpLogSegments prints for ``__share_group_state`` records, on segment files a broker wrote."""

from __future__ import annotations

import io
from pathlib import Path

from broker.share.persister import ShareStateStore
from broker.share.state_records import (
    SHARE_SNAPSHOT,
    SharePartitionKey,
    ShareUpdateValue,
    StateBatch,
    encode_key,
    encode_value,
)
from broker.storage.config import LogConfig
from broker.storage.log import Log
from broker.tools.dump_log import dump_files
from broker.tools.share_state_decoder import describe_share_state_record
from client.records.record import build_batch

KEY = SharePartitionKey("g", bytes(range(16)), 0)
K = '{"type":"%d","data":{"groupId":"g","topicId":"AAECAwQFBgcICQoLDA0ODw","partition":0}}'


def test_lines() -> None:
    s = ShareStateStore(clock=lambda: 1700000000000)
    (k, v), = s.write(KEY, 0, 1, 10, [StateBatch(10, 12, 2, 1)])
    assert describe_share_state_record(k, v, 0) == (
        " key: " + K % 0 + ' payload: {"version":"0","data":{"snapshotEpoch":0,"stateEpoch":0,"leaderEpoch":1,'
        '"startOffset":10,"createTimestamp":1700000000000,"writeTimestamp":1700000000000,'
        '"stateBatches":[{"firstOffset":10,"lastOffset":12,"deliveryState":2,"deliveryCount":1}]}}')
    u = encode_value(ShareUpdateValue(0, -1, -1, [], 3))
    assert describe_share_state_record(encode_key(1, KEY), u, 1) == (
        " key: " + K % 1 + ' payload: {"version":"0","data":{"snapshotEpoch":0,"leaderEpoch":-1,"startOffset":-1,'
        '"deliveryCompleteCount":3,"stateBatches":[]}}')
    assert describe_share_state_record(encode_key(SHARE_SNAPSHOT, KEY), None, 2) == " key: " + K % 0 + " payload: <DELETE>"
    assert describe_share_state_record(b"\x00\x09xx", None, 3) == " key: Unknown record type 9 at offset 3, skipping."
    assert describe_share_state_record(None, None, 4).startswith(" key: Failed to decode message at offset 4")
    assert describe_share_state_record(encode_key(0, KEY), b"\x00\x00\x01", 5).startswith(" key: Error at offset 5")


def test_dump_files(tmp_path: Path) -> None:
    d = tmp_path / "__share_group_state-0"
    log = Log.load(str(d), "__share_group_state", 0, LogConfig())
    s = ShareStateStore(clock=lambda: 5)
    log.append(build_batch(s.write(KEY, 0, 0, 0, [])))
    log.append(build_batch(s.delete_key(KEY)))
    log.flush()
    log.close()
    out, err = io.StringIO(), io.StringIO()
    assert dump_files([str(d / "00000000000000000000.log")], out=out, err=err, share_state_decoder=True) == 0
    lines = [line for line in out.getvalue().splitlines() if line.startswith("| ")]
    assert len(lines) == 3
    assert lines[0].endswith(" key: " + K % 0 + ' payload: {"version":"0","data":{"snapshotEpoch":0,"stateEpoch":0,'
                             '"leaderEpoch":0,"startOffset":0,"createTimestamp":5,"writeTimestamp":5,"stateBatches":[]}}')
    assert lines[1].endswith(" key: " + K % 1 + " payload: <DELETE>")
    assert lines[2].endswith(" key: " + K % 0 + " payload: <DELETE>")
