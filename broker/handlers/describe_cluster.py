"""DescribeCluster (60), v0-2: this broker, as the whole cluster and its controller (never
fenced: v2's ``include_fenced_brokers`` changes nothing, ``is_fenced`` is false).

``cluster_authorized_operations`` (when asked for): every operation on the CLUSTER resource
(no authorizer here), as a bit field of Kafka's AclOperation codes. v1's ``endpoint_type`` must
be 1 (BROKER): asking a broker for its controllers is MISMATCHED_ENDPOINT_TYPE, as in Kafka."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..request_context import RequestContext
from .authz import CLUSTER_NAME, AclOperation, ResourceType, cluster_allows

API_KEY = ApiKey.DESCRIBE_CLUSTER
AUTHORIZATION = "DESCRIBE on the cluster for its authorized operations (0 without it)"

BROKER_ENDPOINT = 1
#: CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
NOT_REQUESTED = -2147483648


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    state = ctx.state
    host, port = state.advertised_endpoint(ctx.session.listener_name)
    body: dict[str, Any] = {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
                            "endpoint_type": BROKER_ENDPOINT, "cluster_id": state.cluster_id,
                            "controller_id": state.node_id,
                            "brokers": [{"broker_id": state.node_id, "host": host, "port": port,
                                         "rack": None, "is_fenced": False}],
                            "cluster_authorized_operations": NOT_REQUESTED}
    if request["endpoint_type"] != BROKER_ENDPOINT:
        body.update(error_code=ErrorCode.MISMATCHED_ENDPOINT_TYPE, brokers=[], controller_id=-1,
                    error_message="The request was sent to an endpoint of type BROKER, but we wanted an endpoint of"
                                  f" type {'CONTROLLER' if request['endpoint_type'] == 2 else request['endpoint_type']}")
    elif request["include_cluster_authorized_operations"]:
        body["cluster_authorized_operations"] = CLUSTER_OPERATIONS
        if ctx.state.authorizer is not None:
            body["cluster_authorized_operations"] = (
                ctx.authorized_operations(ResourceType.CLUSTER, CLUSTER_NAME)
                if cluster_allows(ctx, AclOperation.DESCRIBE) else 0)
    return body
