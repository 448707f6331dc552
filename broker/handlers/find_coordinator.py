"""FindCoordinator (10), v0-1: one broker, so it coordinates every group.

Advertised mainly because librdkafka gates LZ4 compression on it (rdkafka_feature.c: LZ4
"depends" on FindCoordinator v0, the 0.8.2 marker); without it librdkafka producers send LZ4
batches uncompressed. The group APIs themselves (JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
OffsetCommit, OffsetFetch) are not implemented yet and are absent from ApiVersions, so a group
client learns the coordinator here and then stops with its own "broker does not support"
error. There is no transaction coordinator: key_type 1 gets COORDINATOR_NOT_AVAILABLE, as
InitProducerId answers a transactional id.
"""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

API_KEY = ApiKey.FIND_COORDINATOR

GROUP = 0


def handle(request: dict[str, Any], version: int, state: Any) -> dict[str, Any]:
    if request.get("key_type", GROUP) != GROUP:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE,
                "error_message": "transactions are not supported", "node_id": -1, "host": "", "port": -1}
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
            "node_id": state.node_id, "host": state.host, "port": state.port}
