"""ListPartitionReassignments (46), v0: no reassignment is ever in progress on one broker, so
the answer lists no topics (Kafka leaves out topics and partitions that are not being
reassigned, and unknown ones)."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey

from ..request_context import RequestContext

API_KEY = ApiKey.LIST_PARTITION_REASSIGNMENTS


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "topics": []}
