"""FindCoordinator (10), v0-5: this broker coordinates every group (key type 0); looking one
up creates ``__consumer_offsets`` if it does not exist yet, as Kafka does. v4+ looks up several
keys at once. There is no transaction coordinator yet: key type 1 gets
COORDINATOR_NOT_AVAILABLE, as InitProducerId answers a transactional id.

librdkafka also gates LZ4 compression on this API (rdkafka_feature.c: LZ4 "depends" on
FindCoordinator v0, the 0.8.2 marker).
"""

from __future__ import annotations

import logging
from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from .common import error_code_of

API_KEY = ApiKey.FIND_COORDINATOR

logger = logging.getLogger(__name__)

GROUP = 0


def _lookup(key: str, key_type: int, state: Any) -> dict[str, Any]:
    def error(code: int, message: str) -> dict[str, Any]:
        return {"key": key, "error_code": int(code), "error_message": message, "node_id": -1, "host": "", "port": -1}

    if key_type != GROUP:
        return error(ErrorCode.COORDINATOR_NOT_AVAILABLE, "transactions are not supported")
    if not key:
        return error(ErrorCode.INVALID_REQUEST, "the group id is empty")
    try:
        state.groups.ensure_topic()
    except Exception as e:  # noqa: BLE001 - the client retries a retriable answer
        logger.error("cannot create __consumer_offsets: %s", e)
        return error(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"cannot create __consumer_offsets: {error_code_of(e)}")
    return {"key": key, "error_code": 0, "error_message": None, "node_id": state.node_id, "host": state.host,
            "port": state.port}


def handle(request: dict[str, Any], version: int, state: Any) -> dict[str, Any]:
    key_type = request.get("key_type", GROUP)
    if version >= 4:
        return {"throttle_time_ms": 0,
                "coordinators": [_lookup(k, key_type, state) for k in request["coordinator_keys"]]}
    found = _lookup(request["key"], key_type, state)
    if version == 0 and found["error_code"] == ErrorCode.INVALID_REQUEST:
        found["error_code"] = int(ErrorCode.INVALID_GROUP_ID)
    return {"throttle_time_ms": 0, **found}
