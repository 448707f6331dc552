"""DescribeProducers (61), v0: the idempotent producers each partition has state for (the
partition's producer state: epoch, last sequence, the timestamp of its last batch; the
coordinator epoch and the open transaction's first offset, -1 without transactions).
Unknown partitions: UNKNOWN_TOPIC_OR_PARTITION."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..request_context import RequestContext

API_KEY = ApiKey.DESCRIBE_PRODUCERS
AUTHORIZATION = "READ on each topic"


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    state = ctx.state
    topics = []
    for t in request["topics"]:
        parts = []
        if not ctx.authorize(AclOperation.READ, ResourceType.TOPIC, t["name"]):
            topics.append({"name": t["name"], "partitions": [
                {"partition_index": i, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                 "error_message": "Topic authorization failed.", "active_producers": []}
                for i in t["partition_indexes"]]})
            continue
        for index in t["partition_indexes"]:
            resp: dict[str, Any] = {"partition_index": index, "error_code": 0, "error_message": None,
                                    "active_producers": []}
            log = state.logs.get_log(t["name"], index)
            if log is None:
                resp["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                resp["error_message"] = "This server does not host this topic-partition."
            else:
                resp["active_producers"] = [
                    {"producer_id": e.producer_id, "producer_epoch": e.producer_epoch, "last_sequence": e.last_seq,
                     "last_timestamp": e.last_timestamp, "coordinator_epoch": e.coordinator_epoch,
                     "current_txn_start_offset": e.current_txn_first_offset}
                    for e in sorted(log.producer_state.producers.values(), key=lambda e: e.producer_id)]
            parts.append(resp)
        topics.append({"name": t["name"], "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}
