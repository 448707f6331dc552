"""DeleteTopics (20), v0-1: close and remove every partition of each topic;
UNKNOWN_TOPIC_OR_PARTITION for topics this broker does not have."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from .common import error_code_of
from .metadata import INTERNAL_TOPICS

API_KEY = ApiKey.DELETE_TOPICS


def handle(request: dict[str, Any], version: int, state: Any) -> dict[str, Any]:
    out = []
    topics = state.logs.topics()
    for name in request["topic_names"]:
        if name not in topics:
            out.append({"name": name, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})
            continue
        if name in INTERNAL_TOPICS:
            out.append({"name": name, "error_code": ErrorCode.INVALID_TOPIC_EXCEPTION})
            continue
        try:
            state.logs.delete_topic(name)
            err = 0
        except Exception as e:  # noqa: BLE001
            err = error_code_of(e)
        out.append({"name": name, "error_code": err})
    return {"throttle_time_ms": 0, "responses": out}
