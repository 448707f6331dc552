"""DeleteRecords (21), v0-2: advance partitions' log start offsets.

Per partition: ``offset`` -1 means the high watermark; the log start offset becomes
``offset`` (it never moves back: a lower offset answers the current one) and
``low_watermark`` is the new log start offset. Segments wholly below it are deleted at once
(their files renamed ``.deleted``, removed after ``file.delete.delay.ms``), and the answer is
sent only once ``log-start-offset-checkpoint`` records the new offsets (fsync'd), so the
deletion survives a crash right after it. Fetches below the new start get
OFFSET_OUT_OF_RANGE; ListOffsets EARLIEST answers it.

Errors per partition: UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION (an internal topic
such as ``__consumer_offsets``), OFFSET_OUT_OF_RANGE (above the high
watermark, or negative other than -1), POLICY_VIOLATION (``cleanup.policy=compact`` without
``delete``, as Kafka)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..errors import error_code_of
from ..request_context import RequestContext
from ..state import BrokerState
from .metadata import INTERNAL_TOPICS

API_KEY = ApiKey.DELETE_RECORDS
AUTHORIZATION = "DELETE on each topic"

logger = logging.getLogger(__name__)

HIGH_WATERMARK = -1


def _delete(state: BrokerState, topic: str, partition: int, offset: int) -> tuple[int, int]:
    """(error code, low watermark) for one partition."""
    log = state.logs.get_log(topic, partition)
    if log is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1
    if topic in INTERNAL_TOPICS:  # Kafka: "Cannot delete records of internal topic"
        return ErrorCode.INVALID_TOPIC_EXCEPTION, -1
    if not log.config.delete_enabled:
        logger.info("DeleteRecords %s-%d: refused, cleanup.policy is %s", topic, partition, log.config.cleanup_policy)
        return ErrorCode.POLICY_VIOLATION, -1
    target = log.high_watermark if offset == HIGH_WATERMARK else offset
    if target < 0:
        return ErrorCode.OFFSET_OUT_OF_RANGE, -1
    try:
        before = log.log_start_offset
        start = log.delete_records_before(target)
        log.delete_segments_below_log_start()
    except Exception as e:  # noqa: BLE001 - every failure becomes a partition error
        logger.info("DeleteRecords %s-%d before %d: %s", topic, partition, offset, e)
        return error_code_of(e), -1
    if start != before:
        state.notify_append(topic, partition)  # fetch sessions answer the new log start offset
    return 0, start


def handle(ctx: RequestContext, request: dict[str, Any]) -> Any:
    state = ctx.state
    topics = []
    changed = False
    for t in request["topics"]:
        parts = []
        allowed = ctx.authorize(AclOperation.DELETE, ResourceType.TOPIC, t["name"])
        for p in t["partitions"]:
            if not allowed:
                parts.append({"partition_index": p["partition_index"], "low_watermark": -1,
                              "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED})
                continue
            err, low = _delete(state, t["name"], p["partition_index"], p["offset"])
            changed = changed or not err
            parts.append({"partition_index": p["partition_index"], "low_watermark": low, "error_code": err})
        topics.append({"name": t["name"], "partitions": parts})
    body = {"throttle_time_ms": 0, "topics": topics}
    if not changed:
        return body

    async def after_checkpoint() -> dict[str, Any]:
        try:
            await asyncio.get_running_loop().run_in_executor(None, state.logs.checkpoint_log_start_offsets)
        except OSError as e:
            logger.error("cannot write the log start offset checkpoint: %s", e)
            for t in topics:
                for p in t["partitions"]:
                    if not p["error_code"]:
                        p["error_code"] = ErrorCode.KAFKA_STORAGE_ERROR
        return body

    return after_checkpoint()
