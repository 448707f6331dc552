"""DescribeLogDirs (35), v0-4 (Kafka 4.2's maximum): the data directory and the size of each partition in it (the
sum of its segment files), as ``kafka-log-dirs.sh --describe`` shows them.

``topics`` null: every partition; otherwise the partitions named (unknown ones are left out, as
Kafka does). ``offset_lag`` is 0 (the log end offset is the high watermark on one replica),
``is_future_key`` false (no replica moves between directories). v3+: a top-level error code;
v4+: the directory's total and usable bytes (statvfs)."""

from __future__ import annotations

import os
from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..request_context import RequestContext
from .authz import AclOperation, cluster_allows

API_KEY = ApiKey.DESCRIBE_LOG_DIRS
AUTHORIZATION = "DESCRIBE on the cluster"


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    state = ctx.state
    if not cluster_allows(ctx, AclOperation.DESCRIBE):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "results": []}
    logs = state.logs.logs
    if request["topics"] is None:
        wanted = sorted(logs)
    else:
        wanted = sorted({(t["topic"], p) for t in request["topics"] for p in t["partitions"] if (t["topic"], p) in logs})
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for topic, partition in wanted:
        log = logs.get((topic, partition))
        if log is None:
            continue
        by_topic.setdefault(topic, []).append({"partition_index": partition, "partition_size": log.size,
                                               "offset_lag": 0, "is_future_key": False})
    result: dict[str, Any] = {"error_code": 0, "log_dir": state.logs.log_dir,
                              "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
                              "total_bytes": -1, "usable_bytes": -1}
    try:
        st = os.statvfs(state.logs.log_dir)
        result["total_bytes"] = st.f_blocks * st.f_frsize
        result["usable_bytes"] = st.f_bavail * st.f_frsize
    except OSError:
        result["error_code"] = ErrorCode.KAFKA_STORAGE_ERROR
    return {"throttle_time_ms": 0, "error_code": 0, "results": [result]}
