"""``dump-log --offsets-decoder``: ``__consumer_offsets`` records as Kafka's DumpLogSegments
prints them, one JSON object for the key and one for the payload::

    key: {"type":"1","data":{"group":"g","topic":"t","partition":0}}
    payload: {"version":"3","data":{"offset":5,"leaderEpoch":-1,"metadata":"","commitTimestamp":1700000000000}}

The key's ``type`` is its version (0/1 offset commit, 2 group metadata); a tombstone's payload
is ``<DELETE>``. Field names are the record schemas' (camelCase), only the fields the record's
version has. In a group record of protocol type "consumer", each member's ``subscription`` and
``assignment`` are decoded as Kafka's ConsumerProtocolSubscription (int16 version, topics,
user data, then v1+ owned partitions, v2+ generation id, v3+ rack id) and
ConsumerProtocolAssignment (int16 version, assigned partitions, user data); bytes that do not
parse as such, and all other bytes fields, are printed in base64, as Kafka's JSON converters do.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from client.protocol.primitives import DecodeError, Reader

from ..group.records import (
    GROUP_METADATA_KEY_TYPE,
    OFFSET_COMMIT_KEY_TYPES,
    decode_group_metadata_value,
    decode_offset_commit_value,
)

__all__ = ["describe_offsets_record"]


def _json(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _topic_partitions(r: Reader) -> list[dict[str, Any]]:
    out = []
    for _ in range(r.array_length()):
        topic = r.string()
        out.append({"topic": topic, "partitions": [r.int32() for _ in range(r.array_length())]})
    return out


def _subscription(data: bytes) -> Any:
    try:
        r = Reader(data)
        version = r.int16()
        sub: dict[str, Any] = {"topics": [r.string() for _ in range(r.array_length())]}
        user = r.nullable_bytes()
        sub["userData"] = _b64(None if user is None else bytes(user))
        if version >= 1:
            sub["ownedPartitions"] = _topic_partitions(r)
        if version >= 2:
            sub["generationId"] = r.int32()
        if version >= 3:
            sub["rackId"] = r.nullable_string()
        return sub
    except DecodeError:
        return _b64(data)


def _assignment(data: bytes) -> Any:
    try:
        r = Reader(data)
        r.int16()
        out: dict[str, Any] = {"assignedPartitions": _topic_partitions(r)}
        user = r.nullable_bytes()
        out["userData"] = _b64(None if user is None else bytes(user))
        return out
    except DecodeError:
        return _b64(data)


def describe_offsets_record(key: bytes | None, value: bytes | None, offset: int) -> str:
    """The `` key: ... payload: ...`` part of a record line (or Kafka's skip message)."""
    if key is None:
        return f" key: Failed to decode message at offset {offset} using offset topic decoder (message had a missing key)"
    try:
        r = Reader(key)
        kind = r.int16()
        if kind in OFFSET_COMMIT_KEY_TYPES:
            k = {"group": r.string(), "topic": r.string(), "partition": r.int32()}
        elif kind == GROUP_METADATA_KEY_TYPE:
            k = {"group": r.string()}
        else:
            return f" key: Unknown record type {kind} at offset {offset}, skipping."
        line = f" key: {_json({'type': str(kind), 'data': k})}"
        if value is None:
            return line + " payload: <DELETE>"
        version = int.from_bytes(value[:2], "big", signed=True)
        data: dict[str, Any]
        if kind in OFFSET_COMMIT_KEY_TYPES:
            om = decode_offset_commit_value(value)
            data = {"offset": om.offset}
            if version >= 3:
                data["leaderEpoch"] = om.leader_epoch
            data["metadata"] = om.metadata
            data["commitTimestamp"] = om.commit_timestamp
            if version == 1:
                data["expireTimestamp"] = om.expire_timestamp
        else:
            gm = decode_group_metadata_value(value)
            consumer = gm.protocol_type == "consumer"
            members = []
            for m in gm.members:
                md: dict[str, Any] = {"memberId": m.member_id}
                if version >= 3:
                    md["groupInstanceId"] = m.group_instance_id
                md["clientId"] = m.client_id
                md["clientHost"] = m.client_host
                if version >= 1:
                    md["rebalanceTimeout"] = m.rebalance_timeout
                md["sessionTimeout"] = m.session_timeout
                md["subscription"] = _subscription(m.subscription) if consumer else _b64(m.subscription)
                md["assignment"] = _assignment(m.assignment) if consumer else _b64(m.assignment)
                members.append(md)
            data = {"protocolType": gm.protocol_type, "generation": gm.generation, "protocol": gm.protocol,
                    "leader": gm.leader}
            if version >= 2:
                data["currentStateTimestamp"] = gm.current_state_timestamp
            data["members"] = members
        return line + f" payload: {_json({'version': str(version), 'data': data})}"
    except (DecodeError, ValueError) as e:
        return f" key: Error at offset {offset}, skipping. {e}"
