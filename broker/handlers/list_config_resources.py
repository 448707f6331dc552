"""ListConfigResources (74), v0-1: the resources whose configs DescribeConfigs can describe,
as Kafka 4.2's broker lists them (``KafkaApis.handleListConfigResources``). v0 is KIP-1000's
ListClientMetricsResources: client-metrics resources only. v1 (KIP-1142) lists the config
resource types asked for, every type v1 knows when none is (TOPIC 2, BROKER 4, BROKER_LOGGER 8,
CLIENT_METRICS 16, GROUP 32); a type outside those fails the request with UNSUPPORTED_VERSION
and no resources. Resources come type by type in Kafka's order (groups, client metrics, broker
loggers, brokers, topics), each type's sorted by name.

What this broker keeps: every topic (the coordinators' internal topics too, as Kafka's metadata
cache lists them) and one broker, this node (``"<node id>"``), which DescribeConfigs describes.
Groups: those with group configs set (broker/group/group_configs.py) and every KIP-848 consumer
group and share group (the groups group configs apply to). It keeps no client-metrics
subscriptions (KIP-714 telemetry is not served) and serves no broker loggers (DescribeConfigs
answers INVALID_REQUEST for those types), so it lists none of them. Kafka differences: Kafka lists one broker-logger resource per broker.

Authorization: DESCRIBE_CONFIGS on the cluster, for every type, as Kafka 4.1 and 4.2 ask
(KAFKA-20144 proposes per-type rules); without it CLUSTER_AUTHORIZATION_FAILED, no resources."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..request_context import RequestContext
from .authz import AclOperation, cluster_allows

API_KEY = ApiKey.LIST_CONFIG_RESOURCES
AUTHORIZATION = "DESCRIBE_CONFIGS on the cluster"

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
#: ListConfigResourcesRequest.supportedResourceTypes(): per request version
SUPPORTED_TYPES = {0: frozenset({CLIENT_METRICS}), 1: frozenset({TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP})}


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"throttle_time_ms": 0, "error_code": 0, "config_resources": []}
    if not cluster_allows(ctx, AclOperation.DESCRIBE_CONFIGS):
        body["error_code"] = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return body
    supported = SUPPORTED_TYPES[min(ctx.api_version, 1)]
    wanted = set(request["resource_types"]) or supported
    if not wanted <= supported:
        body["error_code"] = ErrorCode.UNSUPPORTED_VERSION
        return body
    state = ctx.state
    resources: list[dict[str, Any]] = []
    if GROUP in wanted:
        coordinator = state.groups.coordinator
        groups = set(state.group_configs.groups) | set(state.share_groups.groups)
        groups |= {g for g, entry in coordinator.groups.items() if entry.consumer is not None}
        resources += [{"resource_name": g, "resource_type": GROUP} for g in sorted(groups)]
    # CLIENT_METRICS, BROKER_LOGGER: none kept here (see the module docstring)
    if BROKER in wanted:
        resources.append({"resource_name": str(state.node_id), "resource_type": BROKER})
    if TOPIC in wanted:
        resources += [{"resource_name": name, "resource_type": TOPIC} for name in sorted(state.logs.partition_counts())]
    body["config_resources"] = resources
    return body
