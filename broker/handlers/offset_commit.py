"""OffsetCommit (8), v0-10: store committed offsets in ``__consumer_offsets``; answered once the
records are fsync'd (see broker/group/coordinator.py for the rules). v1 carries a commit
timestamp per partition, v2-v4 a retention time (the offsets then expire at that time).

v10 names each topic by ``topic_id`` (KIP-848's topic ids), in the request and the response.
The ids are resolved first, as Kafka 4.1+'s ``handleOffsetCommitRequest`` does: an id that
names no topic answers UNKNOWN_TOPIC_ID for its partitions (before the topic ACLs, which
protect names), a known one is then handled exactly as its name (authorized by name; its
partitions checked). What is written to ``__consumer_offsets`` is keyed by the topic's name,
at every version, as Kafka's records are. The group checks are the same at every version:
a classic group's generation and member (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, ...), and,
from v9, GROUP_ID_NOT_FOUND for a commit with a generation to a group that does not exist.

Partitions of a topic that does not exist, or beyond its partition count, get
UNKNOWN_TOPIC_OR_PARTITION and are not written, whatever happens to the others: Kafka's broker
(``KafkaApis.handleOffsetCommitRequest``, 3.9 and 4.0 alike) filters them out before the group
coordinator sees the request, for a simple commit (generation -1, no member) and a classic
group member's alike (TxnOffsetCommit too); the partitions that exist then meet the
coordinator's checks (a stale generation: ILLEGAL_GENERATION for them only). A request naming
only such partitions is answered at once, never reaching the coordinator."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..request_context import RequestContext
from ..state import BrokerState
from .common import reply_when_ready

API_KEY = ApiKey.OFFSET_COMMIT
AUTHORIZATION = "READ on the group; READ on each topic"

#: (topic, partition) -> error code
Errors = dict[tuple[str, int], int]


def _response(request: dict[str, Any], errors: Errors, default: int) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "topics": [
        {"name": t["name"], "topic_id": t.get("topic_id"), "partitions": [
            {"partition_index": p["partition_index"],
             "error_code": errors.get((t["name"], p["partition_index"]), default)} for p in t["partitions"]]}
        for t in request["topics"]]}


def resolve_topic_ids(request: dict[str, Any], state: BrokerState) -> tuple[dict[str, Any], dict[str, Any], Errors]:
    """v10: (the request with each topic's name filled in, "" for an id that names no topic;
    the request with only the known topics; UNKNOWN_TOPIC_ID for each partition of the others,
    keyed by the name "", which no topic has)."""
    every, known = [], []
    errors: Errors = {}
    code = int(ErrorCode.UNKNOWN_TOPIC_ID)
    for t in request["topics"]:
        name = state.logs.topic_name(t["topic_id"])
        if name is None:
            every.append({**t, "name": ""})
            for p in t["partitions"]:
                errors[("", p["partition_index"])] = code
        else:
            every.append({**t, "name": name})
            known.append(every[-1])
    return {**request, "topics": every}, {**request, "topics": known}, errors


def split_unknown(request: dict[str, Any], state: BrokerState) -> tuple[dict[str, Any], Errors]:
    """(the request without the partitions that do not exist, UNKNOWN_TOPIC_OR_PARTITION for
    each of those); the request itself when every partition exists."""
    counts = state.logs.partition_counts()
    unknown: Errors = {}
    for t in request["topics"]:
        n = counts.get(t["name"], 0)
        for p in t["partitions"]:
            if not 0 <= p["partition_index"] < n:
                unknown[(t["name"], p["partition_index"])] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if not unknown:
        return request, unknown
    topics = []
    for t in request["topics"]:
        parts = [p for p in t["partitions"] if (t["name"], p["partition_index"]) not in unknown]
        if parts:
            topics.append({**t, "partitions": parts})
    return {**request, "topics": topics}, unknown


def reply_after_commit(request: dict[str, Any], commit: Any, unknown: Errors | None = None) -> Any:
    """Run ``commit(on_durable) -> (error, per-partition errors)`` and answer once its
    records are durable (or at once, with its error or when it wrote nothing). ``unknown``:
    errors of partitions left out of the commit, answered whatever the commit's outcome."""
    fixed = unknown or {}

    def start(respond: Any) -> None:
        result: list[Errors] = []

        def durable(code: int) -> None:
            if result:
                respond(_response(request, {**({} if code else result[0]), **fixed}, code))
            else:  # nothing to write: answered at once
                result.append({})

        code, errors = commit(durable)
        if code:
            return respond(_response(request, fixed, code))
        if result:  # durable() already ran (no records)
            return respond(_response(request, {**errors, **fixed}, 0))
        result.append(errors)

    return reply_when_ready(start)


def split_denied(request: dict[str, Any], ctx: RequestContext) -> tuple[dict[str, Any], Errors]:
    """(the request without the topics the principal may not READ, TOPIC_AUTHORIZATION_FAILED
    for each of their partitions), as Kafka's offset commits check topics; the request itself
    when every topic is allowed."""
    denied: Errors = {}
    allowed = []
    code = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    for t in request["topics"]:
        if ctx.authorize(AclOperation.READ, ResourceType.TOPIC, t["name"]):
            allowed.append(t)
        else:
            for p in t["partitions"]:
                denied[(t["name"], p["partition_index"])] = code
    if not denied:
        return request, denied
    return {**request, "topics": allowed}, denied


def handle(ctx: RequestContext, request: dict[str, Any]) -> Any:
    state, version = ctx.state, ctx.api_version
    if state.authorizer is not None and not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request["group_id"]):
        return _response(request, {}, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    failed: Errors = {}
    request_all = request
    if version >= 10:  # topics by id: named first; unknown ids are answered, never committed
        request_all, request, failed = resolve_topic_ids(request, state)
    if state.authorizer is not None:
        request, denied = split_denied(request, ctx)
        failed.update(denied)
    known, unknown = split_unknown(request, state)
    unknown.update(failed)
    if not known["topics"]:
        return _response(request_all, unknown, 0)
    return reply_after_commit(request_all, lambda durable: state.groups.coordinator.offsets.commit_offsets(
        known, version, durable), unknown)
