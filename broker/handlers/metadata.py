"""Metadata (3), v0-4: this broker, and the topics asked for (all when the list is null, or
empty in v0). Unknown topics are created with ``num.partitions`` partitions when
``auto.create.topics.enable`` and the request's ``allow_auto_topic_creation`` (v4+) allow it.
This broker is every partition's leader and the controller (admin clients send CreateTopics
to the controller)."""

from __future__ import annotations

import logging
from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..storage.errors import InvalidTopicError, TopicExistsError
from ..storage.log_manager import validate_topic_name

API_KEY = ApiKey.METADATA

#: topics the broker writes itself: clients may read them, not produce to or delete them
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})

logger = logging.getLogger(__name__)


def _topic(state: Any, name: str, partitions: int) -> dict[str, Any]:
    node = state.node_id
    return {
        "error_code": 0, "name": name, "is_internal": name in INTERNAL_TOPICS,
        "partitions": [{"error_code": 0, "partition_index": p, "leader_id": node,
                        "replica_nodes": [node], "isr_nodes": [node]} for p in range(partitions)],
    }


def handle(request: dict[str, Any], version: int, state: Any) -> dict[str, Any]:
    topics = state.logs.topics()
    wanted = request["topics"]
    if wanted is None or (version == 0 and not wanted):
        names = list(topics)
    else:
        names = [t["name"] for t in wanted]
    allow_create = state.auto_create_topics and request.get("allow_auto_topic_creation", True)
    out = []
    for name in names:
        info = topics.get(name)
        if info is None and allow_create:
            try:
                validate_topic_name(name)
                info = state.logs.create_topic(name, state.num_partitions)
                logger.info("auto-created topic %s with %d partitions", name, state.num_partitions)
            except InvalidTopicError:
                out.append({"error_code": ErrorCode.INVALID_TOPIC_EXCEPTION, "name": name, "partitions": []})
                continue
            except TopicExistsError:
                info = state.logs.topics().get(name)
        if info is None:
            out.append({"error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "name": name, "partitions": []})
        else:
            out.append(_topic(state, name, info.partitions))
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": state.node_id, "host": state.host, "port": state.port, "rack": None}],
        "cluster_id": state.cluster_id,
        "controller_id": state.node_id,
        "topics": out,
    }
