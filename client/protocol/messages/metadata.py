"""Metadata (API key 3): request and response schemas, v0-13 (Kafka 4.2).

v4+: allow_auto_topic_creation; v7+: leader_epoch; v8+: authorized operations (cluster ones
only in v8-10); v9+: flexible; v10+: topic ids (by id only from v12, where names may be null);
v13+ (KIP-1102): a top-level error code, REBOOTSTRAP_REQUIRED to tell a client its metadata is
beyond repair (Kafka's own broker does not send it; neither does minibroker's)."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

#: Kafka's default for authorized operations that were not asked for (Integer.MIN_VALUE)
AUTHORIZED_OPERATIONS_OMITTED = -2147483648

MetadataRequest = Message("MetadataRequest", 3, "0-13", "9+", [
    F("topics", Array([
        F("topic_id", "uuid", "10+"),
        F("name", "string", nullable="10+"),
    ]), nullable="1+"),
    F("allow_auto_topic_creation", "bool", "4+", default=True),
    F("include_cluster_authorized_operations", "bool", "8-10"),
    F("include_topic_authorized_operations", "bool", "8+"),
])
MetadataResponse = Message("MetadataResponse", 3, "0-13", "9+", [
    F("throttle_time_ms", "int32", "3+"),
    F("brokers", Array([
        F("node_id", "int32"),
        F("host", "string"),
        F("port", "int32"),
        F("rack", "string", "1+", nullable="1+", default=NULL),
    ])),
    F("cluster_id", "string", "2+", nullable="2+", default=NULL),
    F("controller_id", "int32", "1+", default=-1),
    F("topics", Array([
        F("error_code", "int16"),
        F("name", "string", nullable="12+"),
        F("topic_id", "uuid", "10+"),
        F("is_internal", "bool", "1+"),
        F("partitions", Array([
            F("error_code", "int16"),
            F("partition_index", "int32"),
            F("leader_id", "int32"),
            F("leader_epoch", "int32", "7+", default=-1),
            F("replica_nodes", Array("int32")),
            F("isr_nodes", Array("int32")),
            F("offline_replicas", Array("int32"), "5+"),
        ])),
        F("topic_authorized_operations", "int32", "8+", default=AUTHORIZED_OPERATIONS_OMITTED),
    ])),
    F("cluster_authorized_operations", "int32", "8-10", default=AUTHORIZED_OPERATIONS_OMITTED),
    F("error_code", "int16", "13+"),
])
