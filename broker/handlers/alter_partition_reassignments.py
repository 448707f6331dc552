"""AlterPartitionReassignments (45), v0-1, answered as a one-broker Kafka cluster does.

Per partition: replicas ``[this broker]`` is the current assignment (success, nothing to
move); another broker id, an empty list or a repeated id is INVALID_REPLICA_ASSIGNMENT; null
(cancel) is NO_REASSIGNMENT_IN_PROGRESS; an unknown topic or partition is
UNKNOWN_TOPIC_OR_PARTITION. Messages are Kafka's. v1's ``allow_replication_factor_change`` is
echoed; with one broker no valid assignment changes a replication factor (every partition has
the one replica), so false refuses nothing more."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..request_context import RequestContext
from ..state import BrokerState
from .authz import AclOperation, cluster_allows

API_KEY = ApiKey.ALTER_PARTITION_REASSIGNMENTS
AUTHORIZATION = "ALTER on the cluster"


def _check(state: BrokerState, topics: dict[str, Any], name: str, partition: int,
           replicas: list[int] | None) -> tuple[int, str | None]:
    info = topics.get(name)
    if info is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {name}."
    if not 0 <= partition < info.partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {name}:{partition}."
    if replicas is None:
        return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "No partition reassignment is in progress."
    if not replicas:
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."
    ids = sorted(replicas)
    for i, b in enumerate(ids):
        if b != state.node_id:
            return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes broker {b}, but no such broker is registered.")
        if i and ids[i - 1] == b:
            return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes the broker {b} more than once.")
    return 0, None


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    state = ctx.state
    if not cluster_allows(ctx, AclOperation.ALTER):
        code = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        return {"throttle_time_ms": 0, "allow_replication_factor_change": request["allow_replication_factor_change"],
                "error_code": code, "error_message": "Cluster authorization failed.", "responses": [
            {"name": t["name"], "partitions": [{"partition_index": p["partition_index"], "error_code": code,
                                                "error_message": "Cluster authorization failed."} for p in t["partitions"]]}
            for t in request["topics"]]}
    topics = state.logs.topics()
    responses = []
    for t in request["topics"]:
        parts = []
        for p in t["partitions"]:
            err, msg = _check(state, topics, t["name"], p["partition_index"], p["replicas"])
            parts.append({"partition_index": p["partition_index"], "error_code": err, "error_message": msg})
        responses.append({"name": t["name"], "partitions": parts})
    return {"throttle_time_ms": 0, "allow_replication_factor_change": request["allow_replication_factor_change"],
            "error_code": 0, "error_message": None, "responses": responses}
