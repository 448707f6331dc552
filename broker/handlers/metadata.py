"""Metadata (3), v0-13: this broker, and the topics asked for (all when the list
is null, or empty in v0). Unknown topics are created with ``num.partitions`` partitions when
``auto.create.topics.enable`` and the request's ``allow_auto_topic_creation`` (v4+) allow it.
``__consumer_offsets`` and ``__transaction_state`` are created as Kafka's AutoTopicCreationManager
creates them: by their coordinator, with its layout (``offsets.topic.num.partitions`` /
``transaction.state.log.num.partitions`` partitions, ``cleanup.policy=compact``), never with
``num.partitions``. This broker is every partition's leader and the controller (admin clients send CreateTopics
to the controller).

Newer fields, as a single Kafka broker without an authorizer answers them: leader_epoch (v7+)
0, the only epoch a partition has here; offline_replicas (v5+) empty but for a partition
that could not be loaded at start-up (LEADER_NOT_AVAILABLE, leader -1, this node offline: as
Kafka reports a partition whose only replica's log dir failed); topic ids (v10+);
authorized operations (v8+, when asked for) every operation Kafka defines on a topic / the
cluster, since nothing is denied without an authorizer (Integer.MIN_VALUE when not asked).
v12+ may name topics by id only: an unknown id gets UNKNOWN_TOPIC_ID with a null name (never
auto-created). v10-11 must name topics: an id there is INVALID_REQUEST, as in Kafka. v13's
top-level error code is 0: Kafka's broker never asks a client to re-bootstrap (KIP-1102's
REBOOTSTRAP_REQUIRED is for proxies and managed services in front of it).

A name Kafka's ``Topic.validate`` refuses answers INVALID_TOPIC_EXCEPTION (Kafka's broker checks
it before asking the controller). A name colliding with an existing topic's once '.' is made
'_' (``a_b`` next to ``a.b``, see ``LogManager.colliding_topic``) is not created and answers
UNKNOWN_TOPIC_OR_PARTITION, as Kafka (KRaft, 3.9 and 4.x) answers every topic it auto-creates:
its AutoTopicCreationManager sends CreateTopics to the controller without waiting, and the
controller's INVALID_TOPIC_EXCEPTION reaches only its log, so the client keeps seeing an
unknown topic (a producer's records to it time out).

Authorization (with an authorizer, as Kafka's ``getTopicMetadata``): DESCRIBE on each topic.
Topics not allowed are left out of an all-topics answer; named (existing or not) they answer
TOPIC_AUTHORIZATION_FAILED (by id: with the id and a null name). Auto-creating a topic needs
CREATE on the cluster or on the topic, else TOPIC_AUTHORIZATION_FAILED and nothing created.
Authorized operations, when asked: the topic's allowed operations; the cluster's when DESCRIBE
on it is allowed, else 0."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from client.protocol.api import ApiKey, ErrorCode
from client.protocol.messages.metadata import AUTHORIZED_OPERATIONS_OMITTED

from ..authorizer.acl import CLUSTER_NAME, AclOperation, ResourceType
from ..coordinator.internal_topic import InternalTopic
from ..request_context import RequestContext
from ..state import BrokerState
from ..storage.errors import InvalidTopicError, StorageError, TopicExistsError
from ..storage.log_manager import validate_topic_name
from .authz import INTERNAL_TOPICS as INTERNAL_TOPICS
from .describe_cluster import CLUSTER_OPERATIONS
from .topic_creation import INLINE_PARTITIONS, create_reserved, reserve_all, total_partitions

API_KEY = ApiKey.METADATA

#: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11
AUTHORIZATION = "DESCRIBE on each topic; CREATE on the cluster or the topic to auto-create"
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
_DESCRIBE, _TOPIC = AclOperation.DESCRIBE, ResourceType.TOPIC
#: the leader epoch of every partition: one broker, never a leader change
LEADER_EPOCH = 0
ZERO_UUID = uuid.UUID(int=0)

logger = logging.getLogger(__name__)


def _partition(state: BrokerState, name: str, p: int, node: int) -> dict[str, Any]:
    if state.logs.is_offline(name, p):  # its only replica could not be loaded: no leader, as Kafka says it
        return {"error_code": ErrorCode.LEADER_NOT_AVAILABLE, "partition_index": p, "leader_id": -1,
                "leader_epoch": LEADER_EPOCH, "replica_nodes": [node], "isr_nodes": [], "offline_replicas": [node]}
    return {"error_code": 0, "partition_index": p, "leader_id": node, "leader_epoch": LEADER_EPOCH,
            "replica_nodes": [node], "isr_nodes": [node], "offline_replicas": []}


def internal_topic(state: BrokerState, name: str) -> InternalTopic:
    """The internal topic ``name`` of the coordinator that owns it (its ``ensure`` creates the
    topic with the coordinator's layout)."""
    return state.groups.topic if name == "__consumer_offsets" else state.txn.topic


def _topic(state: BrokerState, name: str, partitions: int, topic_id: uuid.UUID | None, ops: int) -> dict[str, Any]:
    node = state.node_id
    return {
        "error_code": 0, "name": name, "topic_id": topic_id or ZERO_UUID, "is_internal": name in INTERNAL_TOPICS,
        "partitions": [_partition(state, name, p, node) for p in range(partitions)],
        "topic_authorized_operations": ops,
    }


def _error(code: int, name: str | None, topic_id: uuid.UUID = ZERO_UUID) -> dict[str, Any]:
    return {"error_code": code, "name": name, "topic_id": topic_id, "partitions": [],
            "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}


def handle(ctx: RequestContext, request: dict[str, Any]) -> Any:
    """The answer, or (when many topics are to be auto-created) a coroutine that creates them
    off the loop first (``topic_creation``)."""
    state, version = ctx.state, ctx.api_version
    logs = state.logs
    counts = logs.partition_counts()  # a topic's partitions, without building every topic's config
    wanted = request["topics"]
    all_topics = wanted is None or (version == 0 and not wanted)
    if all_topics:
        wanted = [{"name": name, "topic_id": ZERO_UUID} for name in sorted(counts)]
    allow_create = state.auto_create_topics and request["allow_auto_topic_creation"]
    invalid: set[str] = set()
    denied: set[str] = set()
    if state.authorizer is not None:
        wanted = _authorize(ctx, wanted, all_topics, allow_create, counts, denied)
    if allow_create:
        new: list[tuple[str, int, dict[str, str]]] = []
        for t in wanted:
            name = t["name"]
            if name is None or (t["topic_id"] or ZERO_UUID) != ZERO_UUID or name in counts or name in denied:
                continue
            if name in INTERNAL_TOPICS:
                try:
                    internal_topic(state, name).ensure()
                except StorageError as e:
                    logger.error("cannot create %s: %s", name, e)
                continue
            try:
                validate_topic_name(name)
            except InvalidTopicError:
                invalid.add(name)
                continue
            new.append((name, state.num_partitions, {}))
        if new:
            new = list({n: (n, p, c) for n, p, c in new}.values())  # a name listed twice is created once
            if total_partitions(new) > INLINE_PARTITIONS:
                return _create_then_answer(request, ctx, wanted, new, invalid, denied)
            for name, partitions, _ in new:
                try:
                    logs.create_topic(name, partitions)
                    logger.info("auto-created topic %s with %d partitions", name, partitions)
                except TopicExistsError:
                    pass
                except InvalidTopicError as e:  # a name colliding with a topic's ('a_b' / 'a.b')
                    state.log_limiter.info(f"auto-creation of {name}", "INVALID_TOPIC_EXCEPTION",
                                           "cannot auto-create topic %s: %s", name, e, logger=logger)
                except StorageError as e:
                    logger.error("cannot auto-create topic %s: %s", name, e)
    return _answer(request, ctx, wanted, invalid, denied)


def _authorize(ctx: RequestContext, wanted: list[dict[str, Any]], all_topics: bool, allow_create: bool,
               counts: dict[str, int], denied: set[str]) -> list[dict[str, Any]]:
    """Kafka's ``getTopicMetadata`` checks: the topics the principal may not DESCRIBE are left
    out of an all-topics answer, else added to ``denied`` (answered TOPIC_AUTHORIZATION_FAILED
    whether they exist or not); a topic to auto-create needs CREATE on the cluster or on the
    topic, else it is ``denied`` too. Returns the topics to answer."""
    if all_topics:
        return [t for t in wanted if ctx.authorize(_DESCRIBE, _TOPIC, t["name"])]
    create_all: bool | None = None
    for t in wanted:
        name = t["name"]
        if (t["topic_id"] or ZERO_UUID) != ZERO_UUID or name is None:
            name = ctx.state.logs.topic_name(t["topic_id"])
            if name is not None and not ctx.authorize(_DESCRIBE, _TOPIC, name):
                denied.add(name)
            continue
        if not ctx.authorize(_DESCRIBE, _TOPIC, name):
            denied.add(name)
        elif allow_create and name not in counts:
            if create_all is None:
                create_all = ctx.authorize(AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME)
            if not create_all and not ctx.authorize(AclOperation.CREATE, ResourceType.TOPIC, name):
                denied.add(name)
    return wanted


async def _create_then_answer(request: dict[str, Any], ctx: RequestContext, wanted: list[dict[str, Any]],
                              new: list[tuple[str, int, dict[str, str]]], invalid: set[str],
                              denied: set[str]) -> dict[str, Any]:
    state = ctx.state
    reserved, refused = reserve_all(state.logs, new)
    refused = {name: e for name, e in refused.items() if not isinstance(e, TopicExistsError)}
    colliding = [name for name, e in refused.items() if isinstance(e, InvalidTopicError)]
    if colliding:  # names colliding with existing topics ('a_b' / 'a.b'): answered as unknown
        logger.info("cannot auto-create %d topics colliding with existing ones (%s%s): %s", len(colliding),
                    colliding[0], " ..." if len(colliding) > 1 else "", refused[colliding[0]])
        refused = {name: e for name, e in refused.items() if not isinstance(e, InvalidTopicError)}
    if refused:  # one line, however many (thousands past the open files budget)
        name, e = next(iter(refused.items()))
        logger.error("cannot auto-create %d topics (%s%s): %s", len(refused), name,
                     " ..." if len(refused) > 1 else "", e)
    results = await create_reserved(state.logs, reserved)
    failed = sum(1 for e in results.values() if e is not None)
    logger.info("auto-created %d topics with %d partitions each%s", len(results) - failed, state.num_partitions,
                f" ({failed} failed)" if failed else "")
    return _answer(request, ctx, wanted, invalid, denied)


def _answer(request: dict[str, Any], ctx: RequestContext, wanted: list[dict[str, Any]],
            invalid: set[str], denied: set[str]) -> dict[str, Any]:
    """The answer; the broker's endpoint is the one the request's listener advertises."""
    state, version = ctx.state, ctx.api_version
    logs = state.logs
    counts = logs.partition_counts()
    ask_ops = request["include_topic_authorized_operations"]
    ops = TOPIC_OPERATIONS if ask_ops else AUTHORIZED_OPERATIONS_OMITTED
    per_topic_ops = ask_ops and state.authorizer is not None
    out = []
    for t in wanted:
        name, topic_id = t["name"], t["topic_id"] or ZERO_UUID
        if topic_id != ZERO_UUID or name is None:
            if version < 12:
                out.append(_error(ErrorCode.INVALID_REQUEST, name, topic_id))
                continue
            name = logs.topic_name(topic_id)
            if name is None:
                out.append(_error(ErrorCode.UNKNOWN_TOPIC_ID, None, topic_id))
                continue
            if name in denied:  # a topic id is not secret (Kafka): the name is
                out.append(_error(ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, topic_id))
                continue
        partitions = counts.get(name)
        if name in denied:
            out.append(_error(ErrorCode.TOPIC_AUTHORIZATION_FAILED, name))
        elif name in invalid:
            out.append(_error(ErrorCode.INVALID_TOPIC_EXCEPTION, name))
        elif partitions is None:
            out.append(_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name))
        else:
            out.append(_topic(state, name, partitions, logs.topic_id(name),
                              ctx.authorized_operations(ResourceType.TOPIC, name) if per_topic_ops else ops))
    host, port = state.advertised_endpoint(ctx.session.listener_name)
    cluster_ops = AUTHORIZED_OPERATIONS_OMITTED
    if request["include_cluster_authorized_operations"]:
        cluster_ops = CLUSTER_OPERATIONS
        if state.authorizer is not None:
            cluster_ops = (ctx.authorized_operations(ResourceType.CLUSTER, CLUSTER_NAME)
                           if ctx.authorize(_DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME) else 0)
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": state.node_id, "host": host, "port": port, "rack": None}],
        "cluster_id": state.cluster_id,
        "controller_id": state.node_id,
        "topics": out,
        "cluster_authorized_operations": cluster_ops,
    }
