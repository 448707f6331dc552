"""ListPartitionReassignments (46), v0: no reassignment is ever in progress on one broker, so
the answer lists no topics (Kafka leaves out topics and partitions that are not being
reassigned, and unknown ones)."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..request_context import RequestContext
from .authz import AclOperation, cluster_allows

API_KEY = ApiKey.LIST_PARTITION_REASSIGNMENTS
AUTHORIZATION = "DESCRIBE on the cluster"


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    if not cluster_allows(ctx, AclOperation.DESCRIBE):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "error_message": "Cluster authorization failed.", "topics": []}
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "topics": []}
