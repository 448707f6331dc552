"""``dump-log --share-state-decoder``: ``__share_group_state`` records (broker/share/
state_records.py) as Kafka 4.x's DumpLogSegments prints them (its coordinator record parser and
the schemas' generated JSON converters), one JSON object for the key and one for the payload::

    key: {"type":"0","data":{"groupId":"g","topicId":"AAECAwQFBgcICQoLDA0ODw","partition":0}}
    payload: {"version":"0","data":{"snapshotEpoch":0,"stateEpoch":0,"leaderEpoch":1,
      "startOffset":10,"createTimestamp":1700000000000,"writeTimestamp":1700000000000,
      "stateBatches":[{"firstOffset":10,"lastOffset":12,"deliveryState":2,"deliveryCount":1}]}}

The key's ``type`` is the record type (0 ShareSnapshot, 1 ShareUpdate); fields in schema order;
``deliveryCompleteCount`` (tagged) only when it is not -1; topic ids as Kafka's
``Uuid.toString()``; a tombstone's payload is ``<DELETE>``. Where Kafka's tool reports an
unknown type or an undecodable record, the line says so and the dump goes on.
"""

from __future__ import annotations

import json
from typing import Any

from client.protocol.primitives import DecodeError

from ..share.state_records import ShareSnapshotValue, decode_key, decode_value, topic_id_str

__all__ = ["describe_share_state_record"]


def _json(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def describe_share_state_record(key: bytes | None, value: bytes | None, offset: int) -> str:
    """The `` key: ... payload: ...`` part of a record line (module docstring)."""
    if key is None:
        return (f" key: Failed to decode message at offset {offset} using share group state decoder"
                " (message had a missing key)")
    try:
        decoded = decode_key(key)
        if decoded is None:
            kind = int.from_bytes(key[:2], "big", signed=True)
            return f" key: Unknown record type {kind} at offset {offset}, skipping."
        kind, k = decoded
        line = f" key: {_json({'type': str(kind), 'data': {'groupId': k.group_id, 'topicId': topic_id_str(k.topic_id), 'partition': k.partition}})}"
        if value is None:
            return line + " payload: <DELETE>"
        v = decode_value(kind, value)
        data: dict[str, Any] = {"snapshotEpoch": v.snapshot_epoch}
        if isinstance(v, ShareSnapshotValue):
            data["stateEpoch"] = v.state_epoch
        data["leaderEpoch"] = v.leader_epoch
        data["startOffset"] = v.start_offset
        if v.delivery_complete_count != -1:
            data["deliveryCompleteCount"] = v.delivery_complete_count
        if isinstance(v, ShareSnapshotValue):
            data["createTimestamp"] = v.create_timestamp
            data["writeTimestamp"] = v.write_timestamp
        data["stateBatches"] = [{"firstOffset": b.first_offset, "lastOffset": b.last_offset,
                                 "deliveryState": b.delivery_state, "deliveryCount": b.delivery_count}
                                for b in v.state_batches]
        return line + f" payload: {_json({'version': '0', 'data': data})}"
    except (DecodeError, ValueError) as e:
        return f" key: Error at offset {offset}, skipping. {e}"
