"""CreateTopics (19), v0-7 (Kafka 3.9): partitions (or -1 = ``num.partitions``; or the number of manual
assignments), replication factor 1 or -1 (one broker), topic configs, ``validate_only``.
Errors per topic: TOPIC_ALREADY_EXISTS, INVALID_TOPIC_EXCEPTION (an illegal name, or one
colliding with an existing topic's once '.' is made '_': "Topic 'a_b' collides with existing
topic: a.b", validate_only too, as Kafka's controller; ``LogManager.colliding_topic``), INVALID_PARTITIONS,
INVALID_REPLICATION_FACTOR, INVALID_CONFIG, INVALID_REQUEST (a topic listed twice; an internal
topic that does not exist yet: ``__consumer_offsets`` and ``__transaction_state`` are created only
by their coordinators, with their layout, on first use or by Metadata auto-creation — Kafka
refuses its own ``__cluster_metadata`` this way, and would create these two with the client's
partition count, which the coordinator does not follow until a restart).
A created (or validated) topic's answer carries, from v5, its partition count, replication
factor 1 and every topic config with its source (as DescribeConfigs lists them), and from v7 its
topic id (the zero id for ``validate_only``, which creates no id).

Controller mutation quota (KIP-599, handlers/quotas.py): with a ``controller_mutation_rate``
for the client, each topic that passed every check counts its partitions (``validate_only``
too, as in Kafka); from v6 a topic arriving once the quota is exhausted answers
THROTTLING_QUOTA_EXCEEDED "The throttling quota has been exceeded." and is not created, before
v6 every topic is created and the client is throttled; the answer's throttle time is the time
until the quota is back."""

from __future__ import annotations

import logging
from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import CLUSTER_NAME, AclOperation, ResourceType
from ..quota import MutationQuota
from ..request_context import RequestContext
from ..state import BrokerState
from ..storage.errors import StorageError
from ..storage.log_manager import TopicInfo
from .describe_configs import wire_entry
from .metadata import INTERNAL_TOPICS, internal_topic
from .quotas import THROTTLED, mutation_quota
from .topic_creation import INLINE_PARTITIONS, create_reserved, reserve_all

API_KEY = ApiKey.CREATE_TOPICS
AUTHORIZATION = "CREATE on the cluster or on each topic; DESCRIBE_CONFIGS on the topic for its configs"

logger = logging.getLogger(__name__)


def handle(ctx: RequestContext, request: dict[str, Any]) -> Any:
    """The answer, or (for more than ``INLINE_PARTITIONS`` new partitions) a coroutine that
    creates the topics off the loop first (``topic_creation``)."""
    state, version = ctx.state, ctx.api_version
    out = []
    names = [t["name"] for t in request["topics"]]
    to_create: list[tuple[dict[str, Any], int, dict[str, str]]] = []
    authorizing = state.authorizer is not None
    create_any = not authorizing or ctx.authorize(AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME)
    for t in request["topics"]:
        name = t["name"]
        err, msg = 0, None
        result: dict[str, Any] = {"name": name, "topic_id": None, "num_partitions": -1, "replication_factor": -1,
                                  "configs": [], "error_code": 0, "error_message": None}
        out.append(result)
        n = t["num_partitions"]
        if t["assignments"]:
            n = len(t["assignments"])
        elif n == -1:
            n = state.num_partitions
        if names.count(name) > 1:
            err, msg = ErrorCode.INVALID_REQUEST, f"Create topics request from client contains the topic {name} more than once"
        elif not create_any and not ctx.authorize(AclOperation.CREATE, ResourceType.TOPIC, name):
            err, msg = ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."
        elif name in INTERNAL_TOPICS and name in state.logs.partition_counts():
            err, msg = ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
        elif name in INTERNAL_TOPICS:
            err = ErrorCode.INVALID_REQUEST
            msg = (f"Creation of internal topic {name} is prohibited: its coordinator creates it on first use"
                   f" with {internal_topic(state, name).num_partitions} partitions and cleanup.policy=compact.")
        elif t["replication_factor"] not in (-1, 1) and not t["assignments"]:
            err = ErrorCode.INVALID_REPLICATION_FACTOR
            msg = f"Unable to replicate the partition {t['replication_factor']} time(s): The target replication factor of {t['replication_factor']} cannot be reached because only 1 broker(s) are registered."
        elif n <= 0:
            err, msg = ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0."
        else:
            to_create.append((result, n, {c["name"]: c["value"] for c in t["configs"] if c["value"] is not None}))
        _settle(result, err, msg)
        if authorizing and not ctx.authorize(AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, name):
            result["topic_config_error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED  # and no configs told
    validate_only = request["validate_only"]
    quota = mutation_quota(ctx)
    if quota.bounded:
        to_create = _within_quota(state, quota, to_create)
    if not validate_only and sum(n for _, n, _ in to_create) > INLINE_PARTITIONS:
        return _create_off_loop(state, version, to_create, out, quota)
    for result, n, configs in to_create:
        try:
            info = state.logs.create_topic(result["name"], n, configs, validate_only=validate_only)
        except StorageError as e:
            _settle(result, e.error_code, str(e))
        except ValueError as e:
            _settle(result, ErrorCode.INVALID_PARTITIONS, str(e))
        else:
            _created(state, version, result, info)
    return {"throttle_time_ms": quota.throttle_time(), "topics": out}


def _within_quota(state: BrokerState, quota: MutationQuota, to_create: list[tuple[dict[str, Any], int, dict[str, str]]]
                  ) -> list[tuple[dict[str, Any], int, dict[str, str]]]:
    """The topics the client's controller_mutation_rate lets through (handlers/quotas.py), each
    counted for its partitions once it passed every other check, as Kafka's controller counts
    it; the others answer THROTTLING_QUOTA_EXCEEDED."""
    kept = []
    for result, n, configs in to_create:
        try:
            state.logs.create_topic(result["name"], n, configs, validate_only=True)
        except (StorageError, ValueError):
            kept.append((result, n, configs))  # refused below, as without a quota, and not counted
            continue
        if quota.record(n):
            kept.append((result, n, configs))
        else:
            _settle(result, ErrorCode.THROTTLING_QUOTA_EXCEEDED, THROTTLED)
    return kept


async def _create_off_loop(state: BrokerState, version: int, to_create: list[tuple[dict[str, Any], int, dict[str, str]]],
                           out: list[dict[str, Any]], quota: MutationQuota) -> dict[str, Any]:
    reserved, refused = reserve_all(state.logs, [(r["name"], n, c) for r, n, c in to_create])
    by_name = {r["name"]: r for r, _, _ in to_create}
    for name, e in refused.items():
        _settle(by_name[name], e.error_code if isinstance(e, StorageError) else ErrorCode.INVALID_PARTITIONS, str(e))
    errors = await create_reserved(state.logs, reserved)
    for info in reserved:
        failed = errors.get(info.name)
        if failed is not None:
            _settle(by_name[info.name], failed.error_code, str(failed))
        else:
            _created(state, version, by_name[info.name], info)
    return {"throttle_time_ms": quota.throttle_time(), "topics": out}


def _created(state: BrokerState, version: int, result: dict[str, Any], info: TopicInfo) -> None:
    result.update(topic_id=info.topic_id, num_partitions=info.partitions, replication_factor=1)
    if version >= 5 and not result.get("topic_config_error_code"):
        entries = state.dynamic.describe_topic(info.overrides, info.config)
        result["configs"] = [wire_entry(e, False, False) for e in entries]


def _settle(result: dict[str, Any], err: int, msg: str | None) -> None:
    if err:
        logger.info("CreateTopics %s failed: %s", result["name"], msg)
        result.update(error_code=err, error_message=msg)
