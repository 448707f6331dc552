"""DescribeClientQuotas (48), v0-1 (KIP-546; ``kafka-configs.sh --describe --entity-type
users|clients|ips``): the quota configs of the entities a filter matches, as Kafka's KRaft
broker answers from its metadata image (broker/quota/store.py has the filter's rules and
errors). A refused filter answers its error code and Kafka's message, entries null; otherwise
each matching entity with its values, its types in Kafka's order (``client-id`` before
``user``), a default entity's name null.

Authorization: DESCRIBE_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED "Cluster
authorization failed." and entries null."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..quota import QuotaRequestError
from ..quota.store import listed_entity
from ..request_context import RequestContext
from .authz import AclOperation, cluster_allows

API_KEY = ApiKey.DESCRIBE_CLIENT_QUOTAS
AUTHORIZATION = "DESCRIBE_CONFIGS on the cluster"


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    if not cluster_allows(ctx, AclOperation.DESCRIBE_CONFIGS):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "error_message": "Cluster authorization failed.", "entries": None}
    try:
        found = ctx.state.client_quotas.describe(request["components"], request["strict"])
    except QuotaRequestError as e:
        return {"throttle_time_ms": 0, "error_code": e.code, "error_message": e.message, "entries": None}
    entries = [{"entity": [{"entity_type": t, "entity_name": n} for t, n in listed_entity(entity)],
                "values": [{"key": k, "value": v} for k, v in values.items()]}
               for entity, values in found]
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "entries": entries}
