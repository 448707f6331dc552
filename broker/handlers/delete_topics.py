"""DeleteTopics (20), v0-6 (Kafka 3.9): close and remove every partition of each topic;
UNKNOWN_TOPIC_OR_PARTITION for topics this broker does not have, INVALID_TOPIC_EXCEPTION for
the internal ones. v6 names each topic by name or by id (KIP-516): an unknown id is
UNKNOWN_TOPIC_ID, both at once INVALID_REQUEST (as Kafka); the answer gives both.

Authorization as Kafka's KRaft controller (ControllerApis.deleteTopics): DELETE on the cluster
deletes any topic, else each topic needs DELETE. A topic it may not delete answers
TOPIC_AUTHORIZATION_FAILED, except a name the principal may DESCRIBE that names no topic:
UNKNOWN_TOPIC_OR_PARTITION (whether it exists is no secret to one who may describe it). Named by
id, a topic it may not DESCRIBE is answered without its name."""

from __future__ import annotations

import uuid
from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..errors import error_code_of
from ..request_context import RequestContext
from ..state import BrokerState
from .authz import cluster_allows
from .metadata import INTERNAL_TOPICS

API_KEY = ApiKey.DELETE_TOPICS
AUTHORIZATION = "DELETE on the cluster or on each topic (DESCRIBE tells an unknown name, and names an id)"

ZERO_UUID = uuid.UUID(int=0)


def _delete(state: BrokerState, name: str) -> tuple[int, str | None]:
    if name not in state.logs.partition_counts():
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."
    if name in INTERNAL_TOPICS:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot delete internal topic {name}"
    try:
        state.logs.delete_topic(name)
    except Exception as e:  # noqa: BLE001
        return error_code_of(e), str(e)
    return 0, None


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    state, version = ctx.state, ctx.api_version
    if version < 6:
        wanted = [{"name": n, "topic_id": ZERO_UUID} for n in request["topic_names"]]
    else:
        wanted = request["topics"]
    out = []
    may_delete_all = cluster_allows(ctx, AclOperation.DELETE)
    for t in wanted:
        name, topic_id = t["name"], t["topic_id"] or ZERO_UUID
        resp: dict[str, Any] = {"name": name, "topic_id": topic_id, "error_code": 0, "error_message": None}
        out.append(resp)
        if name is not None and topic_id != ZERO_UUID:
            resp["error_code"] = ErrorCode.INVALID_REQUEST
            resp["error_message"] = "You may not specify both topic name and topic id."
            continue
        if name is None:
            name = state.logs.topic_name(topic_id)
            if name is None:
                resp["error_code"], resp["error_message"] = ErrorCode.UNKNOWN_TOPIC_ID, "This server does not host this topic ID."
                continue
            resp["name"] = name
        else:
            resp["topic_id"] = state.logs.topic_id(name) or ZERO_UUID
        if not may_delete_all and not ctx.authorize(AclOperation.DELETE, ResourceType.TOPIC, name):
            describable = ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, name)
            if t["name"] is None and not describable:
                resp["name"] = None  # named by id and not describable: the name is not told
            else:
                resp["topic_id"] = topic_id  # as asked: whether the topic exists is not told
            if t["name"] is not None and describable and name not in state.logs.partition_counts():
                resp["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                resp["error_message"] = "This server does not host this topic-partition."
            else:
                resp["error_code"], resp["error_message"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."
            continue
        resp["error_code"], resp["error_message"] = _delete(state, name)
    return {"throttle_time_ms": 0, "responses": out}
