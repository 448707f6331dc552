"""CreateTopics (19), v0-7 (Kafka 3.9): partitions (or -1 = ``num.partitions``; or the number of manual
assignments), replication factor 1 or -1 (one broker), topic configs, ``validate_only``.
Errors per topic: TOPIC_ALREADY_EXISTS, INVALID_TOPIC_EXCEPTION, INVALID_PARTITIONS,
INVALID_REPLICATION_FACTOR, INVALID_CONFIG, INVALID_REQUEST (a topic listed twice; an internal
topic that does not exist yet: ``__consumer_offsets`` and ``__transaction_state`` are created only
by their coordinators, with their layout, on first use or by Metadata auto-creation — Kafka
refuses its own ``__cluster_metadata`` this way, and would create these two with the client's
partition count, which the coordinator does not follow until a restart).
A created (or validated) topic's answer carries, from v5, its partition count, replication
factor 1 and every topic config with its source (as DescribeConfigs lists them), and from v7 its
topic id (the zero id for ``validate_only``, which creates no id)."""

from __future__ import annotations

import logging
from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..storage.errors import StorageError
from .describe_configs import wire_entry
from .metadata import INTERNAL_TOPICS, internal_coordinator

API_KEY = ApiKey.CREATE_TOPICS

logger = logging.getLogger(__name__)


def handle(request: dict[str, Any], version: int, state: Any) -> dict[str, Any]:
    out = []
    names = [t["name"] for t in request["topics"]]
    for t in request["topics"]:
        name = t["name"]
        err, msg = 0, None
        result: dict[str, Any] = {"name": name, "topic_id": None, "num_partitions": -1, "replication_factor": -1,
                                  "configs": []}
        n = t["num_partitions"]
        if t["assignments"]:
            n = len(t["assignments"])
        elif n == -1:
            n = state.num_partitions
        if names.count(name) > 1:
            err, msg = ErrorCode.INVALID_REQUEST, f"Create topics request from client contains the topic {name} more than once"
        elif name in INTERNAL_TOPICS and name in state.logs.partition_counts():
            err, msg = ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
        elif name in INTERNAL_TOPICS:
            err = ErrorCode.INVALID_REQUEST
            msg = (f"Creation of internal topic {name} is prohibited: its coordinator creates it on first use"
                   f" with {internal_coordinator(state, name).num_partitions} partitions and cleanup.policy=compact.")
        elif t["replication_factor"] not in (-1, 1) and not t["assignments"]:
            err = ErrorCode.INVALID_REPLICATION_FACTOR
            msg = f"Unable to replicate the partition {t['replication_factor']} time(s): The target replication factor of {t['replication_factor']} cannot be reached because only 1 broker(s) are registered."
        elif n <= 0:
            err, msg = ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0."
        else:
            configs = {c["name"]: c["value"] for c in t["configs"] if c["value"] is not None}
            try:
                info = state.logs.create_topic(name, n, configs, validate_only=request["validate_only"])
            except StorageError as e:
                err, msg = e.error_code, str(e)
            except ValueError as e:
                err, msg = ErrorCode.INVALID_PARTITIONS, str(e)
            else:
                result.update(topic_id=info.topic_id, num_partitions=info.partitions, replication_factor=1)
                if version >= 5:
                    entries = state.dynamic.describe_topic(info.overrides, info.config)
                    result["configs"] = [wire_entry(e, False, False) for e in entries]
        if err:
            logger.info("CreateTopics %s failed: %s", name, msg)
        result.update(error_code=err, error_message=msg)
        out.append(result)
    return {"throttle_time_ms": 0, "topics": out}
