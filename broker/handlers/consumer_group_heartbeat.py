"""ConsumerGroupHeartbeat (68), v0-1: KIP-848 membership, answered once the coordinator's
records are durable (see broker/group/consumer_coordinator.py).

As Kafka 4's KafkaApis, a heartbeat naming topics (SubscribedTopicNames) any of which the
principal may not DESCRIBE is refused with TOPIC_AUTHORIZATION_FAILED before it reaches the
coordinator: with the consumer protocol the error is the whole subscription's, named by no
topic (librdkafka's 0109 expects it on every heartbeat until the subscription changes)."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..request_context import RequestContext
from .authz import may_describe_topic
from .common import reply_when_ready

API_KEY = ApiKey.CONSUMER_GROUP_HEARTBEAT
AUTHORIZATION = "READ on the group; DESCRIBE on every subscribed topic name"


def handle(ctx: RequestContext, request: dict[str, Any]) -> Any:
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request["group_id"]):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "error_message": None,
                "member_id": None, "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}
    names = request.get("subscribed_topic_names")
    if names and not all(may_describe_topic(ctx, n) for n in set(names)):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "error_message": None,
                "member_id": None, "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}
    coordinator = ctx.state.groups.coordinator.consumer
    client_id, client_host, version = ctx.client_id or "", "/" + ctx.client_host, ctx.api_version

    def start(respond: Any) -> None:
        coordinator.heartbeat(request, version, client_id, client_host,
                              lambda body: respond({"throttle_time_ms": 0, **body}))

    return reply_when_ready(start)
