"""CreatePartitions (37), v0-3: grow a topic's partition count (never shrink).

Per topic: UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS (the count is not an increase),
INVALID_REPLICA_ASSIGNMENT (manual assignments: one per new partition, each exactly this
broker, as the topic's existing partitions have one replica), POLICY_VIOLATION (past the open
files budget: ``fd_budget``), INVALID_REQUEST (a topic listed
twice; growing ``__consumer_offsets`` or ``__transaction_state``, whose coordinators place groups
and transactional ids by the partition count — Kafka accepts it and silently moves every key
at the next restart). ``validate_only`` checks everything and changes nothing. New partitions appear in
Metadata at once: producers and consumers pick them up at their next metadata refresh.

Controller mutation quota (KIP-599, handlers/quotas.py): with a ``controller_mutation_rate``
for the client, a growth that passed every check counts its new partitions (``validate_only``
too); from v3 one arriving once the quota is exhausted answers THROTTLING_QUOTA_EXCEEDED, before
v3 it is made and the client throttled."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..quota import MutationQuota
from ..request_context import RequestContext
from ..state import BrokerState
from ..storage.errors import StorageError
from .metadata import INTERNAL_TOPICS
from .quotas import THROTTLED, mutation_quota
from .topic_creation import CHUNK_PARTITIONS, INLINE_PARTITIONS

API_KEY = ApiKey.CREATE_PARTITIONS
AUTHORIZATION = "ALTER on each topic"

logger = logging.getLogger(__name__)


def _check_assignments(assignments: list[dict[str, Any]] | None, current: int, count: int, node: int) -> str | None:
    """Kafka's checks of manual assignments on a one-broker cluster; the error message or None."""
    if assignments is None:
        return None
    if len(assignments) != count - current:
        return (f"Attempted to add {count - current} additional partition(s), but only {len(assignments)}"
                " assignment(s) were specified.")
    for a in assignments:
        ids = sorted(a["broker_ids"])
        if not ids:
            return "The manual partition assignment includes an empty replica list."
        for i, b in enumerate(ids):
            if b != node:
                return f"The manual partition assignment includes broker {b}, but no such broker is registered."
            if i and ids[i - 1] == b:
                return f"The manual partition assignment includes the broker {b} more than once."
    return None


def handle(ctx: RequestContext, request: dict[str, Any]) -> Any:
    state = ctx.state
    names = [t["name"] for t in request["topics"]]
    results = []
    grows: list[tuple[str, int, int]] = []  # (topic, current, count) to grow off the loop
    quota = mutation_quota(ctx)
    for t in request["topics"]:
        name, count = t["name"], t["count"]
        err, msg = 0, None
        current = state.logs.topic(name)
        if names.count(name) > 1:
            err, msg = ErrorCode.INVALID_REQUEST, "Duplicate topic in request."
        elif not ctx.authorize(AclOperation.ALTER, ResourceType.TOPIC, name):
            err, msg = ErrorCode.TOPIC_AUTHORIZATION_FAILED, "The topic authorization is failed."
        elif current is None:
            err, msg = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist."
        elif name in INTERNAL_TOPICS and count != current.partitions:
            err = ErrorCode.INVALID_REQUEST
            msg = (f"Cannot add partitions to internal topic {name}: its coordinator places every key by"
                   f" the topic's partition count ({current.partitions}).")
        elif count > current.partitions and (
                problem := _check_assignments(t["assignments"], current.partitions, count, state.node_id)):
            err, msg = ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem
        elif count > current.partitions and not quota.record(count - current.partitions):
            err, msg = ErrorCode.THROTTLING_QUOTA_EXCEEDED, THROTTLED
        elif not request["validate_only"] and count - current.partitions > INLINE_PARTITIONS:
            try:
                grows.append((name, state.logs.begin_partitions(name, count), count))
            except StorageError as e:
                err, msg = e.error_code, str(e)
        else:
            try:
                state.logs.create_partitions(name, count, validate_only=request["validate_only"])
            except StorageError as e:
                err, msg = e.error_code, str(e)
        if err:
            logger.info("CreatePartitions %s to %d failed: %s", name, count, msg)
        results.append({"name": name, "error_code": err, "error_message": msg})
    if grows:
        return _grow_off_loop(state, grows, {r["name"]: r for r in results}, results, quota)
    return {"throttle_time_ms": quota.throttle_time(), "results": results}


async def _grow_off_loop(state: BrokerState, grows: list[tuple[str, int, int]], by_name: dict[str, dict[str, Any]],
                         results: list[dict[str, Any]], quota: MutationQuota) -> dict[str, Any]:
    """Make the new partitions of each topic ``CHUNK_PARTITIONS`` at a time in a worker thread,
    adding each chunk on the loop as it is made (they appear in Metadata as they come)."""
    loop = asyncio.get_running_loop()
    logs = state.logs
    for name, current, count in grows:
        made = current
        try:
            for start in range(current, count, CHUNK_PARTITIONS):
                chunk = range(start, min(start + CHUNK_PARTITIONS, count))
                logs.add_partition_logs(name, await loop.run_in_executor(None, logs.make_partition_logs, name, chunk))
                made = chunk.stop
        except StorageError as e:
            by_name[name].update(error_code=e.error_code, error_message=str(e))
            logger.info("CreatePartitions %s to %d failed after %d: %s", name, count, made, e)
        finally:
            logs.end_partitions(name, made)
    return {"throttle_time_ms": quota.throttle_time(), "results": results}
