"""ListOffsets (2), v1-2: -2 = log start offset, -1 = log end offset (= high watermark = last
stable offset here), -3 = offset of the max timestamp, otherwise the first offset whose record
timestamp >= the target (timestamp and offset -1 when there is none)."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from .common import error_code_of

API_KEY = ApiKey.LIST_OFFSETS


def handle(request: dict[str, Any], version: int, state: Any) -> dict[str, Any]:
    topics = []
    for t in request["topics"]:
        parts = []
        for p in t["partitions"]:
            resp = {"partition_index": p["partition_index"], "error_code": 0, "timestamp": -1, "offset": -1}
            log = state.logs.get_log(t["name"], p["partition_index"])
            if log is None:
                resp["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                try:
                    found = log.offset_for_timestamp(p["timestamp"])
                except Exception as e:  # noqa: BLE001
                    resp["error_code"] = error_code_of(e)
                else:
                    if found is not None:
                        resp["timestamp"], resp["offset"] = found.timestamp, found.offset
            parts.append(resp)
        topics.append({"name": t["name"], "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}
