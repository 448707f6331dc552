"""DescribeCluster (API key 60): request and response schemas, v0-2 (flexible from v0).

v1+: endpoint_type (KIP-919: brokers or controllers); v2+: include_fenced_brokers and each
broker's is_fenced (KIP-1073)."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

DescribeClusterRequest = Message("DescribeClusterRequest", 60, "0-2", "0+", [
    F("include_cluster_authorized_operations", "bool"),
    F("endpoint_type", "int8", "1+", default=1),
    F("include_fenced_brokers", "bool", "2+"),
])
DescribeClusterResponse = Message("DescribeClusterResponse", 60, "0-2", "0+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+", default=NULL),
    F("endpoint_type", "int8", "1+", default=1),
    F("cluster_id", "string"),
    F("controller_id", "int32", default=-1),
    F("brokers", Array([
        F("broker_id", "int32"),
        F("host", "string"),
        F("port", "int32"),
        F("rack", "string", nullable="0+", default=NULL),
        F("is_fenced", "bool", "2+"),
    ])),
    F("cluster_authorized_operations", "int32", default=-2147483648),
])
