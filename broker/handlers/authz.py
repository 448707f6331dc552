"""The authorization checks several handlers share, in Kafka's terms (``AuthHelper``): each is
a question to ``RequestContext.authorize``, which answers True at once without an authorizer.

Every handler module names its checks in ``AUTHORIZATION`` (a line of text, "none" for the
APIs Kafka answers before or without authorization: ApiVersions, SaslHandshake,
SaslAuthenticate); tests/broker/test_authorization.py asserts that every handler has one and
that each handler with checks asks ``ctx.authorize``.

The coordinators' internal topics (``__consumer_offsets``, ``__transaction_state``) are
read only by principals with CLUSTER_ACTION on the cluster (super users have it): a READ ACL on
the topic, even a ``*`` one, does not open them. Kafka asks for READ on the topic like any other,
which a ``User:*`` READ on ``*`` grants; the stricter rule keeps every group's offsets and every
transaction's state from consumers that were only meant to read "all topics".
"""

from __future__ import annotations

from client.protocol.api import ErrorCode

from ..authorizer.acl import CLUSTER_NAME, AclOperation, ResourceType
from ..request_context import RequestContext

#: topics the broker writes itself (the coordinators'): clients may read them (see above), not
#: produce to or delete them
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})

__all__ = ["INTERNAL_TOPICS", "cluster_allows", "may_read_topic", "may_describe_topic", "config_denied", "CLUSTER_NAME", "AclOperation", "ResourceType"]


def cluster_allows(ctx: RequestContext, operation: AclOperation) -> bool:
    """``operation`` on the cluster resource (``kafka-cluster``)."""
    return ctx.authorize(operation, ResourceType.CLUSTER, CLUSTER_NAME)


def may_read_topic(ctx: RequestContext, topic: str) -> bool:
    """READ on the topic; CLUSTER_ACTION on the cluster for an internal topic (see above)."""
    if topic in INTERNAL_TOPICS:
        return ctx.authorize(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)
    return ctx.authorize(AclOperation.READ, ResourceType.TOPIC, topic)


def may_describe_topic(ctx: RequestContext, topic: str) -> bool:
    """DESCRIBE on the topic (READ, WRITE, DELETE and ALTER imply it)."""
    return ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, topic)


#: config resource type (DescribeConfigs, AlterConfigs) -> the ACL resource that guards it
#: (TOPIC 2 the topic, BROKER 4 / BROKER_LOGGER 8 / CLIENT_METRICS 16 the cluster, GROUP 32 the group)
_CONFIG_RESOURCES = {2: ResourceType.TOPIC, 4: ResourceType.CLUSTER, 8: ResourceType.CLUSTER,
                     16: ResourceType.CLUSTER, 32: ResourceType.GROUP}
_CONFIG_DENIED = {ResourceType.TOPIC: (ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
                  ResourceType.CLUSTER: (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."),
                  ResourceType.GROUP: (ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")}


def config_denied(ctx: RequestContext, operation: AclOperation, config_type: int,
                  name: str) -> tuple[int, str] | None:
    """None if ``operation`` (DESCRIBE_CONFIGS, ALTER_CONFIGS) is allowed on the config
    resource, else its error (code, message) as Kafka's ConfigHelper answers; an unknown
    resource type is left to the handler's own check."""
    rtype = _CONFIG_RESOURCES.get(config_type)
    if rtype is None:
        return None
    if ctx.authorize(operation, rtype, CLUSTER_NAME if rtype == ResourceType.CLUSTER else name):
        return None
    code, message = _CONFIG_DENIED[rtype]
    return int(code), message
