"""OffsetCommit (8), v0-9: store committed offsets in ``__consumer_offsets``; answered once the
records are fsync'd (see broker/group/coordinator.py for the rules). v1 carries a commit
timestamp per partition, v2-v4 a retention time (the offsets then expire at that time)."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey

from .common import reply_when_ready

API_KEY = ApiKey.OFFSET_COMMIT


def _response(request: dict[str, Any], errors: dict[tuple[str, int], int], default: int) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "topics": [
        {"name": t["name"], "partitions": [
            {"partition_index": p["partition_index"],
             "error_code": errors.get((t["name"], p["partition_index"]), default)} for p in t["partitions"]]}
        for t in request["topics"]]}


def reply_after_commit(request: dict[str, Any], commit: Any) -> Any:
    """Run ``commit(on_durable) -> (error, per-partition errors)`` and answer once its
    records are durable (or at once, with its error or when it wrote nothing)."""
    def start(respond: Any) -> None:
        result: list[dict[tuple[str, int], int]] = []

        def durable(code: int) -> None:
            if result:
                respond(_response(request, {} if code else result[0], code))
            else:  # nothing to write: answered at once
                result.append({})

        code, errors = commit(durable)
        if code:
            return respond(_response(request, {}, code))
        if result:  # durable() already ran (no records)
            return respond(_response(request, errors, 0))
        result.append(errors)

    return reply_when_ready(start)


def handle(request: dict[str, Any], version: int, state: Any) -> Any:
    return reply_after_commit(request, lambda durable: state.groups.coordinator.commit_offsets(request, version,
                                                                                                durable))
