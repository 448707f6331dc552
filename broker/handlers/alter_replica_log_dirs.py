"""AlterReplicaLogDirs (34), v0-2: move replicas between the broker's log directories.

This broker keeps its partitions in one directory (the first of ``log.dirs``), so there is
nowhere to move a replica to; each partition gets what Kafka answers then, checked in Kafka's
order:

- INVALID_TOPIC_EXCEPTION when the topic's future directory name
  (``<topic>-<partition>.<uuid>-future``) would exceed 255 bytes;
- LOG_DIR_NOT_FOUND for a path (made absolute) that is not the log directory;
- KAFKA_STORAGE_ERROR for an offline partition (its files could not be loaded);
- REPLICA_NOT_AVAILABLE for a partition this broker does not host;
- NONE for a hosted partition: it is already in the requested directory, nothing moves.
"""

from __future__ import annotations

import os
from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..request_context import RequestContext
from ..state import BrokerState
from .authz import AclOperation, cluster_allows

API_KEY = ApiKey.ALTER_REPLICA_LOG_DIRS
AUTHORIZATION = "ALTER on the cluster"

#: ``.<32 hex digits>-future``: what Kafka appends to ``<topic>-<partition>`` while a replica moves
_FUTURE_SUFFIX_LEN = 1 + 32 + len("-future")


def _error(state: BrokerState, destination: str, topic: str, partition: int) -> int:
    if len(f"{topic}-{partition}".encode()) + _FUTURE_SUFFIX_LEN > 255:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    if os.path.abspath(destination) != state.logs.log_dir:
        return ErrorCode.LOG_DIR_NOT_FOUND
    if (topic, partition) in state.logs.offline:
        return ErrorCode.KAFKA_STORAGE_ERROR
    if state.logs.get_log(topic, partition) is None:
        return ErrorCode.REPLICA_NOT_AVAILABLE
    return ErrorCode.NONE


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    state = ctx.state
    allowed = cluster_allows(ctx, AclOperation.ALTER)
    by_topic: dict[str, list[dict[str, int]]] = {}
    for d in request["dirs"]:
        for t in d["topics"]:
            parts = by_topic.setdefault(t["name"], [])
            parts += [{"partition_index": p, "error_code": int(_error(state, d["path"], t["name"], p)) if allowed
                       else int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)}
                      for p in t["partitions"]]
    return {"throttle_time_ms": 0,
            "results": [{"topic_name": name, "partitions": parts} for name, parts in by_topic.items()]}
