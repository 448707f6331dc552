"""OffsetFetch (9), v0-10: committed offsets of a group (v8+: of several groups). An unknown
group or partition answers offset -1 with no error; ``topics`` null (v2+) asks for every
committed offset of the group. A group still loading answers COORDINATOR_LOAD_IN_PROGRESS:
per partition in v0-1, for the whole response in v2-7, per group in v8+.

``require_stable`` (v7+) asks for UNSTABLE_OFFSET_COMMIT (per partition, offset -1) where a
transactional commit (TxnOffsetCommit) is pending: its transaction has not ended yet. Without
it, the last committed offset is answered.
``member_id``/``member_epoch`` (v9+) are checked for KIP-848 consumer groups as Kafka does: a
member named must exist (UNKNOWN_MEMBER_ID) at the epoch sent (STALE_MEMBER_EPOCH), answered
as the group's error; classic groups do not check them (Kafka does not either).

v10 asks and answers by ``topic_id`` (KIP-848's topic ids; the offsets stay keyed by name in
``__consumer_offsets``), as Kafka 4.1+'s ``fetchOffsetsForGroup`` does: each id is resolved
first; an id that names no topic answers UNKNOWN_TOPIC_ID for its partitions (offset -1;
listed after the group's other topics, before any topic ACL check), a known one is then
answered as its name would be (TOPIC_AUTHORIZATION_FAILED without DESCRIBE, offset -1 and no
error where nothing is committed). ``topics`` null (every committed offset of the group)
answers each topic with its id; a topic that no longer exists has none and is left out, as
Kafka's ``fetchAllOffsetsForGroup`` leaves out what it cannot name by id."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..request_context import RequestContext
from ..state import BrokerState
from .authz import may_describe_topic

API_KEY = ApiKey.OFFSET_FETCH
AUTHORIZATION = "DESCRIBE on each group; DESCRIBE on each topic (others left out or TOPIC_AUTHORIZATION_FAILED)"


def _fetch(ctx: RequestContext, group_id: str, topics: list[dict[str, Any]] | None,
           require_stable: bool = False) -> tuple[int, list[dict[str, Any]]]:
    state = ctx.state
    wanted = None if topics is None else [(t["name"], list(t["partition_indexes"])) for t in topics]
    if state.authorizer is not None:
        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            return int(ErrorCode.GROUP_AUTHORIZATION_FAILED), [
                {"name": t, "partitions": [{"partition_index": p, "committed_offset": -1, "committed_leader_epoch": -1,
                                            "metadata": "", "error_code": 0} for p in parts]}
                for t, parts in wanted or ()]
        out = _fetch_allowed(state, group_id, wanted, require_stable)
        if topics is None:  # all the group's topics: the ones it may not describe are left out
            return out[0], [t for t in out[1] if may_describe_topic(ctx, t["name"])]
        for t in out[1]:
            if not may_describe_topic(ctx, t["name"]):
                for p in t["partitions"]:
                    p.update(committed_offset=-1, committed_leader_epoch=-1, metadata="",
                             error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        return out
    return _fetch_allowed(state, group_id, wanted, require_stable)


def _fetch_allowed(state: BrokerState, group_id: str, wanted: list[tuple[str, list[int]]] | None,
                   require_stable: bool) -> tuple[int, list[dict[str, Any]]]:
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


def _fetch_by_id(ctx: RequestContext, group_id: str, topics: list[dict[str, Any]] | None,
                 require_stable: bool) -> tuple[int, list[dict[str, Any]]]:
    """v10: ``_fetch`` with the topics named by id, and answered by id."""
    logs = ctx.state.logs
    if topics is None:
        code, out = _fetch(ctx, group_id, None, require_stable)
        kept = []
        for t in out:
            t["topic_id"] = logs.topic_id(t["name"])
            if t["topic_id"] is not None:
                kept.append(t)
        return code, kept
    named: list[dict[str, Any]] = []
    unknown: list[dict[str, Any]] = []
    for t in topics:
        name = logs.topic_name(t["topic_id"])
        if name is None:
            unknown.append({"name": "", "topic_id": t["topic_id"], "partitions": [
                {"partition_index": p, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
                 "error_code": ErrorCode.UNKNOWN_TOPIC_ID} for p in t["partition_indexes"]]})
        else:
            named.append({"name": name, "topic_id": t["topic_id"], "partition_indexes": t["partition_indexes"]})
    code, out = _fetch(ctx, group_id, named, require_stable)
    for t, asked in zip(out, named):  # _fetch answers the topics asked, in their order
        t["topic_id"] = asked["topic_id"]
    return code, out + unknown


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    version = ctx.api_version
    if version >= 8:
        fetch = _fetch_by_id if version >= 10 else _fetch
        groups = []
        for g in request["groups"]:
            code = 0
            if version >= 9 and ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, g["group_id"]):
                code = ctx.state.groups.coordinator.offsets.check_fetching_member(
                    g["group_id"], g.get("member_id"), g.get("member_epoch", -1))
            if code:
                groups.append({"group_id": g["group_id"], "topics": [], "error_code": code})
                continue
            code, topics = fetch(ctx, g["group_id"], g["topics"], request["require_stable"])
            groups.append({"group_id": g["group_id"], "topics": topics if not code else [], "error_code": code})
        return {"throttle_time_ms": 0, "groups": groups}
    code, topics = _fetch(ctx, request["group_id"], request["topics"], request.get("require_stable", False))
    if code and version < 2:
        for t in topics:
            for p in t["partitions"]:
                p["error_code"] = code
        code = 0
    return {"throttle_time_ms": 0, "topics": topics if not code else [], "error_code": code}
