"""DescribeTopicPartitions (75), v0: the partitions of the topics named (every topic when none
is), paged, as Kafka's broker answers it (``DescribeTopicPartitionsRequestHandler`` and
``KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse``); what Java's Admin
``describeTopics`` sends to brokers that have it.

Paging: the topics at or after the cursor's topic (all of them when there is no cursor) are
taken in name order, the cursor's topic from the cursor's partition, the others from partition
0, until the response holds ``max(min(max.request.partition.size.limit,
response_partition_limit), 1)`` partitions. A topic cut short sets ``next_cursor`` to (that
topic, its first partition left out); a limit reached exactly at the end of a topic sets it to
(the next topic to describe, 0) if there is one; else ``next_cursor`` is null. A cursor whose
topic is not among the topics named, or whose partition is negative, fails the request with
INVALID_REQUEST for every topic named.

Each topic: its id, ``is_internal`` (the coordinators' topics), ``topic_authorized_operations``
(every operation on a topic without an authorizer, else those allowed), and per partition this
broker as leader (leader epoch 0), replica and ISR, eligible leader replicas and last known ELR
empty (one replica: ELR never holds one), offline replicas empty; a partition that could not be
loaded has no leader (-1), an empty ISR and this broker offline, with no error code, as Kafka
answers for a replica on a failed log dir. A named topic that does not exist answers
UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an illegal name), after the cursor's
rules: one the limit stopped before is the next cursor whether it exists or not.

Authorization: DESCRIBE on each topic. Named topics not allowed answer TOPIC_AUTHORIZATION_FAILED
(zero topic id, no partitions) after the others; when every topic is asked for, they are left
out. As in Kafka, only the topics looked at before the page ended are checked: one past the
cursor is reported on the page that reaches it."""

from __future__ import annotations

import uuid
from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import ResourceType
from ..request_context import RequestContext
from ..state import BrokerState
from ..storage.errors import InvalidTopicError
from ..storage.log_manager import validate_topic_name
from .authz import INTERNAL_TOPICS, may_describe_topic
from .metadata import LEADER_EPOCH

API_KEY = ApiKey.DESCRIBE_TOPIC_PARTITIONS
AUTHORIZATION = "DESCRIBE on each topic"

ZERO_UUID = uuid.UUID(int=0)
OPERATIONS_OMITTED = -2147483648


def _java_order(name: str) -> bytes:
    """Java's String.compareTo order (UTF-16 code units), which Kafka sorts topic names by."""
    return name.encode("utf-16-be", "surrogatepass")


def _topic(error: int, name: str, topic_id: uuid.UUID = ZERO_UUID, internal: bool = False,
           partitions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"error_code": error, "name": name, "topic_id": topic_id, "is_internal": internal,
            "partitions": partitions or [], "topic_authorized_operations": OPERATIONS_OMITTED}


def _partition(state: BrokerState, name: str, p: int) -> dict[str, Any]:
    node = state.node_id
    if state.logs.is_offline(name, p):
        return {"error_code": 0, "partition_index": p, "leader_id": -1, "leader_epoch": LEADER_EPOCH,
                "replica_nodes": [node], "isr_nodes": [], "eligible_leader_replicas": [], "last_known_elr": [],
                "offline_replicas": [node]}
    return {"error_code": 0, "partition_index": p, "leader_id": node, "leader_epoch": LEADER_EPOCH,
            "replica_nodes": [node], "isr_nodes": [node], "eligible_leader_replicas": [], "last_known_elr": [],
            "offline_replicas": []}


def _invalid(request: dict[str, Any]) -> dict[str, Any]:
    """Kafka's DescribeTopicPartitionsRequest.getErrorResponse for an InvalidRequestException."""
    return {"throttle_time_ms": 0, "next_cursor": None,
            "topics": [_topic(ErrorCode.INVALID_REQUEST, t["name"]) for t in request["topics"]]}


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    state = ctx.state
    logs = state.logs
    counts = logs.partition_counts()
    fetch_all = not request["topics"]
    cursor = request["cursor"]
    cursor_topic = cursor["topic_name"] if cursor is not None else ""
    after = _java_order(cursor_topic)
    names = counts if fetch_all else {t["name"] for t in request["topics"]}
    topics = {name for name in names if _java_order(name) >= after}
    if cursor is not None and ((not fetch_all and cursor_topic not in topics) or cursor["partition_index"] < 0):
        return _invalid(request)
    remaining = max(min(state.config.int("max.request.partition.size.limit"), request["response_partition_limit"]),
                    1)
    answered: list[dict[str, Any]] = []
    denied: list[dict[str, Any]] = []
    next_cursor = None
    for name in sorted(topics, key=_java_order):
        if not may_describe_topic(ctx, name):
            if not fetch_all:  # no topic id: whether it exists is not disclosed
                denied.append(_topic(ErrorCode.TOPIC_AUTHORIZATION_FAILED, name))
            continue
        if remaining == 0:  # the page is full: the next one starts with this topic
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        count = counts.get(name)
        if count is None:
            if not fetch_all:
                try:
                    validate_topic_name(name)
                    error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                except InvalidTopicError:
                    error = ErrorCode.INVALID_TOPIC_EXCEPTION
                answered.append(_topic(error, name, internal=name in INTERNAL_TOPICS))
            continue
        start = cursor["partition_index"] if cursor is not None and name == cursor_topic else 0
        upper = min(count, start + remaining)
        partitions = [_partition(state, name, p) for p in range(start, upper)]
        answered.append(_topic(0, name, logs.topic_id(name) or ZERO_UUID, name in INTERNAL_TOPICS, partitions))
        if upper < count:
            next_cursor = {"topic_name": name, "partition_index": upper}
            break
        remaining -= len(partitions)
    for t in answered:
        t["topic_authorized_operations"] = ctx.authorized_operations(ResourceType.TOPIC, t["name"])
    return {"throttle_time_ms": 0, "topics": answered + denied, "next_cursor": next_cursor}
