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

KIP-848 consumer-group records (types 3-8 and 16, broker/group/consumer_records.py) are printed
as Kafka 4.x's generated JSON converters write them::

    key: {"type":"8","data":{"groupId":"g","memberId":"m"}}
    payload: {"version":"0","data":{"memberEpoch":3,"previousMemberEpoch":2,"state":0,
      "assignedPartitions":[{"topicId":"AAECAwQFBgcICQoLDA0ODw","partitions":[0,1]}],
      "partitionsPendingRevocation":[]}}

Topic ids as Kafka's ``Uuid.toString()`` (URL-safe base64 without padding), a tagged field
only when it differs from its default (``metadataHash`` when not 0, ``classicMemberMetadata``
when not null), ``metadata`` bytes in base64. Share-group (9-15) and streams-group (17+)
records, which Kafka 4.x would decode too, are reported as unknown types.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from client.protocol.primitives import DecodeError, Reader

from ..group.consumer_records import (
    RECORD_TYPES,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataValue,
    ConsumerGroupValue,
    decode_key_fields,
    decode_value,
)
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


def _uuid(topic_id: bytes) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe base64, no padding."""
    return base64.urlsafe_b64encode(topic_id).rstrip(b"=").decode()


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(w.capitalize() for w in rest)


def _assignment_json(tps: dict[bytes, list[int]]) -> list[dict[str, Any]]:
    return [{"topicId": _uuid(tid), "partitions": parts} for tid, parts in tps.items()]


def _consumer_group_value_json(v: ConsumerGroupValue) -> dict[str, Any]:
    """The value as Kafka's generated ``*JsonConverter.write`` (version 0) renders it."""
    if isinstance(v, ConsumerGroupMetadataValue):
        out: dict[str, Any] = {"epoch": v.epoch}
        if v.metadata_hash != 0:  # tagged, default 0
            out["metadataHash"] = v.metadata_hash
        return out
    if isinstance(v, ConsumerGroupPartitionMetadataValue):
        return {"topics": [{"topicId": _uuid(t.topic_id), "topicName": t.topic_name, "numPartitions": t.num_partitions,
                            "partitionMetadata": [{"partition": p, "racks": racks} for p, racks in t.partition_metadata]}
                           for t in v.topics]}
    if isinstance(v, ConsumerGroupMemberMetadataValue):
        out = {_camel(f): getattr(v, f) for f in v._fields if f != "classic_member_metadata"}
        cm = v.classic_member_metadata
        if cm is not None:  # tagged, default null
            out["classicMemberMetadata"] = {
                "sessionTimeoutMs": cm.session_timeout_ms,
                "supportedProtocols": [{"name": p.name, "metadata": _b64(p.metadata)} for p in cm.supported_protocols]}
        return out
    if isinstance(v, ConsumerGroupTargetAssignmentMetadataValue):
        return {"assignmentEpoch": v.assignment_epoch}
    if isinstance(v, ConsumerGroupTargetAssignmentMemberValue):
        return {"topicPartitions": _assignment_json(v.topic_partitions)}
    if isinstance(v, ConsumerGroupCurrentMemberAssignmentValue):
        return {"memberEpoch": v.member_epoch, "previousMemberEpoch": v.previous_member_epoch, "state": v.state,
                "assignedPartitions": _assignment_json(v.assigned_partitions),
                "partitionsPendingRevocation": _assignment_json(v.partitions_pending_revocation)}
    if isinstance(v, ConsumerGroupRegularExpressionValue):
        return {"topics": v.topics, "version": v.version, "timestamp": v.timestamp}
    raise TypeError(type(v).__name__)


def _describe_consumer_group_record(kind: int, r: Reader, value: bytes | None) -> str:
    key = decode_key_fields(kind, r)
    if key is None:  # not reached: the caller checked kind against RECORD_TYPES
        raise DecodeError(f"record type {kind} is not a consumer-group record")
    line = f" key: {_json({'type': str(kind), 'data': {_camel(f): getattr(key, f) for f in key._fields}})}"
    if value is None:
        return line + " payload: <DELETE>"
    version = int.from_bytes(value[:2], "big", signed=True)
    data = _consumer_group_value_json(decode_value(key, value))
    return line + f" payload: {_json({'version': str(version), 'data': data})}"


def describe_offsets_record(key: bytes | None, value: bytes | None, offset: int) -> str:
    """The `` key: ... payload: ...`` part of a record line (or Kafka's skip message)."""
    if key is None:
        return f" key: Failed to decode message at offset {offset} using offset topic decoder (message had a missing key)"
    try:
        r = Reader(key)
        kind = r.int16()
        if kind in RECORD_TYPES:
            return _describe_consumer_group_record(kind, r, value)
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
