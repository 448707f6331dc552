"""OffsetForLeaderEpoch (23), v0-4: the end offset of a leader epoch, which clients use to
validate their positions after a leader change (KIP-320) and followers to truncate.

One replica, never a leader change: every partition has been led by this broker in epoch 0
since offset 0. So epoch 0 ends at the log end offset, and any other epoch is unknown
(leader_epoch -1, end_offset -1, Kafka's UNDEFINED values). ``current_leader_epoch`` (v2+),
when given (>= 0), must be 0: above is UNKNOWN_LEADER_EPOCH (the client knows a newer leader
than this broker; cannot happen here). Unknown partitions: UNKNOWN_TOPIC_OR_PARTITION."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import CLUSTER_NAME, AclOperation, ResourceType
from ..request_context import RequestContext

API_KEY = ApiKey.OFFSET_FOR_LEADER_EPOCH
AUTHORIZATION = "CLUSTER_ACTION on the cluster, else DESCRIBE on each topic"

LEADER_EPOCH = 0
UNDEFINED = -1


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    state = ctx.state
    topics = []
    every_topic = ctx.authorize(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)
    for t in request["topics"]:
        if not every_topic and not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, t["topic"]):
            topics.append({"topic": t["topic"], "partitions": [
                {"error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "partition": p["partition"],
                 "leader_epoch": UNDEFINED, "end_offset": UNDEFINED} for p in t["partitions"]]})
            continue
        parts = []
        for p in t["partitions"]:
            resp = {"error_code": 0, "partition": p["partition"], "leader_epoch": UNDEFINED, "end_offset": UNDEFINED}
            log = state.logs.get_log(t["topic"], p["partition"])
            current = p["current_leader_epoch"]
            if log is None:
                resp["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif current > LEADER_EPOCH:
                resp["error_code"] = ErrorCode.UNKNOWN_LEADER_EPOCH
            elif p["leader_epoch"] == LEADER_EPOCH:
                resp["leader_epoch"], resp["end_offset"] = LEADER_EPOCH, log.log_end_offset
            parts.append(resp)
        topics.append({"topic": t["topic"], "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}
