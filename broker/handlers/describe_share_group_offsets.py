"""DescribeShareGroupOffsets (90), v0-1: each share-partition's start offset (and, v1, its lag:
KIP-1226) for share groups (see broker/share/offsets.py). A group that does not exist answers
GROUP_ID_NOT_FOUND; a share-partition with no state yet start offset -1 and no error; an unknown
topic UNKNOWN_TOPIC_OR_PARTITION per partition. ``topics`` null: every share-partition of the
group, those on topics it may not DESCRIBE left out."""

from __future__ import annotations

import uuid
from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..request_context import RequestContext
from ..share.offsets import describe_offsets
from .authz import may_describe_topic

API_KEY = ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS
AUTHORIZATION = "DESCRIBE on each group; DESCRIBE on each topic (others left out or TOPIC_AUTHORIZATION_FAILED)"

_ZERO = uuid.UUID(int=0)


def _group(ctx: RequestContext, g: dict[str, Any]) -> dict[str, Any]:
    group_id = g["group_id"]
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return {"group_id": group_id, "topics": [], "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED,
                "error_message": None}
    wanted = None if g["topics"] is None else [(t["topic_name"], list(t["partitions"])) for t in g["topics"]]
    denied: set[str] = set()
    if wanted is not None and ctx.state.authorizer is not None:
        denied = {t for t, _ in wanted if not may_describe_topic(ctx, t)}
    code, message, found = describe_offsets(ctx.state, group_id,
                                            None if wanted is None else [w for w in wanted if w[0] not in denied])
    if code:
        return {"group_id": group_id, "topics": [], "error_code": code, "error_message": message}
    topics = []
    for name, tid, parts in found:
        if wanted is None and ctx.state.authorizer is not None and not may_describe_topic(ctx, name):
            continue
        topics.append({"topic_name": name, "topic_id": tid, "partitions": [
            {"partition_index": p, "start_offset": o.start_offset, "leader_epoch": o.leader_epoch, "lag": o.lag,
             "error_code": o.error_code, "error_message": o.error_message} for p, o in parts]})
    if wanted is not None:  # in the order asked, the denied ones in place
        by_name = {t["topic_name"]: t for t in topics}
        topics = []
        for name, parts in wanted:
            if name in denied:
                topics.append({"topic_name": name, "topic_id": ctx.state.logs.topic_id(name) or _ZERO, "partitions": [
                    {"partition_index": p, "start_offset": -1, "leader_epoch": -1, "lag": -1,
                     "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "error_message": None} for p in parts]})
            elif name in by_name:
                topics.append(by_name.pop(name))
    return {"group_id": group_id, "topics": topics, "error_code": 0, "error_message": None}


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "groups": [_group(ctx, g) for g in request["groups"]]}

