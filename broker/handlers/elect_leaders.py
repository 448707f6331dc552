"""ElectLeaders (43), v0-2, answered as a one-broker Kafka cluster does: every partition already
has its preferred leader (this broker) and a leader at all, so no election is needed.

Partitions named: ELECTION_NOT_NEEDED each (Kafka's answer; admin tools report "valid replica
already elected"), UNKNOWN_TOPIC_OR_PARTITION for those that do not exist. ``topic_partitions``
null (every partition): an empty result per topic, since Kafka leaves out the partitions that
need no election. An election type other than 0 (preferred) or 1 (unclean): INVALID_REQUEST."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..request_context import RequestContext
from .authz import AclOperation, cluster_allows

API_KEY = ApiKey.ELECT_LEADERS
AUTHORIZATION = "ALTER on the cluster"


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    state = ctx.state
    election_type = request.get("election_type", 0)
    if election_type not in (0, 1):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_REQUEST, "replica_election_results": []}
    if not cluster_allows(ctx, AclOperation.ALTER):
        code = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        return {"throttle_time_ms": 0, "error_code": code, "replica_election_results": [
            {"topic": t["topic"], "partition_result": [{"partition_id": p, "error_code": code, "error_message": None}
                                                       for p in t["partitions"]]}
            for t in request["topic_partitions"] or ()]}
    topics = state.logs.topics()
    results: list[dict[str, Any]] = []
    if request["topic_partitions"] is None:
        results = [{"topic": name, "partition_result": []} for name in topics]
    else:
        for t in request["topic_partitions"]:
            info = topics.get(t["topic"])
            parts = []
            for p in t["partitions"]:
                if info is None:
                    err, msg = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {t['topic']}"
                elif not 0 <= p < info.partitions:
                    err, msg = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {t['topic']}-{p}"
                else:
                    err, msg = ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."
                parts.append({"partition_id": p, "error_code": err, "error_message": msg})
            results.append({"topic": t["topic"], "partition_result": parts})
    return {"throttle_time_ms": 0, "error_code": 0, "replica_election_results": results}
