"""DeleteTopics (20), v0-6 (Kafka 3.9): close and remove every partition of each topic;
UNKNOWN_TOPIC_OR_PARTITION for topics this broker does not have, INVALID_TOPIC_EXCEPTION for
the internal ones. v6 names each topic by name or by id (KIP-516): an unknown id is
UNKNOWN_TOPIC_ID, both at once INVALID_REQUEST (as Kafka); the answer gives both.

Authorization as Kafka's KRaft controller (ControllerApis.deleteTopics): DELETE on the cluster
deletes any topic, else each topic needs DELETE. A topic it may not delete answers
TOPIC_AUTHORIZATION_FAILED, except a name the principal may DESCRIBE that names no topic:
UNKNOWN_TOPIC_OR_PARTITION (whether it exists is no secret to one who may describe it). Named by
id, a topic it may not DESCRIBE is answered without its name.

The committed offsets every group holds of a deleted topic go with it, as Kafka's group
coordinator removes them when it learns of the deletion (``onPartitionsDeleted``): a tombstone
each in ``__consumer_offsets`` (pending transactional offsets too), so that neither a restart
nor a re-created topic of the same name brings them back, and a group reading the new topic
starts from its ``auto.offset.reset``. The answer waits for the tombstones to be durable (Kafka
writes them after answering; here a crash after the answer cannot resurrect them).

Controller mutation quota (KIP-599, handlers/quotas.py): with a ``controller_mutation_rate`` for
the client, each topic to delete counts its partitions; from v5 one arriving once the quota is
exhausted answers THROTTLING_QUOTA_EXCEEDED and is kept, before v5 it is deleted and the client
throttled."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from client.protocol.api import ApiKey, ErrorCode, error_name

from ..authorizer.acl import AclOperation, ResourceType
from ..errors import error_code_of
from ..request_context import RequestContext
from ..state import BrokerState
from .authz import cluster_allows
from .common import reply_when_ready
from .metadata import INTERNAL_TOPICS
from .quotas import THROTTLED, mutation_quota

API_KEY = ApiKey.DELETE_TOPICS
AUTHORIZATION = "DELETE on the cluster or on each topic (DESCRIBE tells an unknown name, and names an id)"

ZERO_UUID = uuid.UUID(int=0)

logger = logging.getLogger(__name__)


def _delete(state: BrokerState, name: str) -> tuple[int, str | None]:
    if name not in state.logs.partition_counts():
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."
    if name in INTERNAL_TOPICS:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot delete internal topic {name}"
    partitions = state.logs.partition_counts().get(name, 0)
    try:
        state.logs.delete_topic(name)
    except Exception as e:  # noqa: BLE001
        return error_code_of(e), str(e)
    for p in range(partitions):  # long polls and fetch sessions on it answer UNKNOWN_TOPIC_OR_PARTITION
        state.notify_append(name, p)
    return 0, None


def handle(ctx: RequestContext, request: dict[str, Any]) -> Any:
    state, version = ctx.state, ctx.api_version
    if version < 6:
        wanted = [{"name": n, "topic_id": ZERO_UUID} for n in request["topic_names"]]
    else:
        wanted = request["topics"]
    out = []
    may_delete_all = cluster_allows(ctx, AclOperation.DELETE)
    deleted: list[str] = []
    quota = mutation_quota(ctx)
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
        if quota.bounded and name in state.logs.partition_counts() and name not in INTERNAL_TOPICS \
                and not quota.record(state.logs.partition_counts()[name]):
            resp["error_code"], resp["error_message"] = ErrorCode.THROTTLING_QUOTA_EXCEEDED, THROTTLED
            continue
        resp["error_code"], resp["error_message"] = _delete(state, name)
        if not resp["error_code"]:
            deleted.append(name)
    body = {"throttle_time_ms": quota.throttle_time(), "responses": out}
    if not deleted:
        return body
    return reply_when_ready(lambda respond: _remove_offsets(state, deleted, body, respond))


def _remove_offsets(state: BrokerState, topics: list[str], body: dict[str, Any], respond: Any) -> None:
    """Remove the groups' offsets of the deleted ``topics``, then ``respond(body)`` once their
    tombstones are durable (a failed write is logged: the topics are gone whatever happens)."""
    def durable(code: int) -> None:
        if code:
            logger.error("tombstones of the offsets of deleted topics %s not durable: %s", ", ".join(topics),
                         error_name(code))
        respond(body)

    state.groups.coordinator.on_topics_deleted(topics, durable)
