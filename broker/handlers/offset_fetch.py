"""OffsetFetch (9), v0-9: committed offsets of a group (v8+: of several groups). An unknown
group or partition answers offset -1 with no error; ``topics`` null (v2+) asks for every
committed offset of the group. A group still loading answers COORDINATOR_LOAD_IN_PROGRESS:
per partition in v0-1, for the whole response in v2-7, per group in v8+.

``require_stable`` (v7+) asks for UNSTABLE_OFFSET_COMMIT (per partition, offset -1) where a
transactional commit (TxnOffsetCommit) is pending: its transaction has not ended yet. Without
it, the last committed offset is answered.
``member_id``/``member_epoch`` (v9) only apply to KIP-848 consumer groups; minibroker's groups
are classic, for which Kafka does not check them either."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..request_context import RequestContext
from ..state import BrokerState

API_KEY = ApiKey.OFFSET_FETCH


def _fetch(state: BrokerState, group_id: str, topics: list[dict[str, Any]] | None,
           require_stable: bool = False) -> tuple[int, list[dict[str, Any]]]:
    wanted = None if topics is None else [(t["name"], list(t["partition_indexes"])) for t in topics]
    code, found = state.groups.coordinator.offsets.fetch_offsets(group_id, wanted)
    if code and wanted is not None:
        found = [(t, [(p, None) for p in parts]) for t, parts in wanted]
    out: list[dict[str, Any]] = []
    for topic, parts in found:
        out.append({"name": topic, "partitions": [
            {"partition_index": p, "committed_offset": om.offset if om is not None else -1,
             "committed_leader_epoch": om.leader_epoch if om is not None else -1,
             "metadata": om.metadata if om is not None else "", "error_code": 0} for p, om in parts]})
    if require_stable and not code:
        coordinator = state.groups.coordinator
        for t in out:
            for p in t["partitions"]:
                if coordinator.offsets.has_pending_offset(group_id, t["name"], p["partition_index"]):
                    p.update(committed_offset=-1, committed_leader_epoch=-1, metadata="",
                             error_code=ErrorCode.UNSTABLE_OFFSET_COMMIT)
    return code, out


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    state, version = ctx.state, ctx.api_version
    if version >= 8:
        groups = []
        for g in request["groups"]:
            code, topics = _fetch(state, g["group_id"], g["topics"], request["require_stable"])
            groups.append({"group_id": g["group_id"], "topics": topics if not code else [], "error_code": code})
        return {"throttle_time_ms": 0, "groups": groups}
    code, topics = _fetch(state, request["group_id"], request["topics"], request.get("require_stable", False))
    if code and version < 2:
        for t in topics:
            for p in t["partitions"]:
                p["error_code"] = code
        code = 0
    return {"throttle_time_ms": 0, "topics": topics if not code else [], "error_code": code}
