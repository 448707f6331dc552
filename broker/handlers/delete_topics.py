"""DeleteTopics (20), v0-6 (Kafka 3.9): close and remove every partition of each topic;
UNKNOWN_TOPIC_OR_PARTITION for topics this broker does not have, INVALID_TOPIC_EXCEPTION for
the internal ones. v6 names each topic by name or by id (KIP-516): an unknown id is
UNKNOWN_TOPIC_ID, both at once INVALID_REQUEST (as Kafka); the answer gives both."""

from __future__ import annotations

import uuid
from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..errors import error_code_of
from ..request_context import RequestContext
from ..state import BrokerState
from .metadata import INTERNAL_TOPICS

API_KEY = ApiKey.DELETE_TOPICS
AUTHORIZATION = "DELETE on each topic (DESCRIBE too when named by id)"

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
        if not ctx.authorize(AclOperation.DELETE, ResourceType.TOPIC, name):
            if t["name"] is None and not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, name):
                resp["name"] = None  # named by id and not describable: the name is not told
            else:
                resp["topic_id"] = topic_id  # as asked: whether the topic exists is not told
            resp["error_code"], resp["error_message"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."
            continue
        resp["error_code"], resp["error_message"] = _delete(state, name)
    return {"throttle_time_ms": 0, "responses": out}
