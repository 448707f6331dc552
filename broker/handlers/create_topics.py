"""CreateTopics (19), v0-3: partitions (or -1 = ``num.partitions``; or the number of manual
assignments), replication factor 1 or -1 (one broker), topic configs, ``validate_only``.
Errors per topic: TOPIC_ALREADY_EXISTS, INVALID_TOPIC_EXCEPTION, INVALID_PARTITIONS,
INVALID_REPLICATION_FACTOR, INVALID_CONFIG, INVALID_REQUEST (a topic listed twice)."""

from __future__ import annotations

import logging
from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..storage.errors import StorageError

API_KEY = ApiKey.CREATE_TOPICS

logger = logging.getLogger(__name__)


def handle(request: dict[str, Any], version: int, state: Any) -> dict[str, Any]:
    out = []
    names = [t["name"] for t in request["topics"]]
    for t in request["topics"]:
        name = t["name"]
        err, msg = 0, None
        n = t["num_partitions"]
        if t["assignments"]:
            n = len(t["assignments"])
        elif n == -1:
            n = state.num_partitions
        if names.count(name) > 1:
            err, msg = ErrorCode.INVALID_REQUEST, f"Create topics request from client contains the topic {name} more than once"
        elif t["replication_factor"] not in (-1, 1) and not t["assignments"]:
            err = ErrorCode.INVALID_REPLICATION_FACTOR
            msg = f"Unable to replicate the partition {t['replication_factor']} time(s): The target replication factor of {t['replication_factor']} cannot be reached because only 1 broker(s) are registered."
        elif n <= 0:
            err, msg = ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0."
        else:
            configs = {c["name"]: c["value"] for c in t["configs"] if c["value"] is not None}
            try:
                state.logs.create_topic(name, n, configs, validate_only=request["validate_only"])
            except StorageError as e:
                err, msg = e.error_code, str(e)
            except ValueError as e:
                err, msg = ErrorCode.INVALID_PARTITIONS, str(e)
        if err:
            logger.info("CreateTopics %s failed: %s", name, msg)
        out.append({"name": name, "error_code": err, "error_message": msg})
    return {"throttle_time_ms": 0, "topics": out}
