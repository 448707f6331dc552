"""Metadata (API key 3): request and response schemas."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

MetadataRequest = Message("MetadataRequest", 3, "0-4", "9+", [
    F("topics", Array([F("name", "string")]), nullable="1+"),
    F("allow_auto_topic_creation", "bool", "4+", default=True),
])
MetadataResponse = Message("MetadataResponse", 3, "0-4", "9+", [
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
        F("name", "string"),
        F("is_internal", "bool", "1+"),
        F("partitions", Array([
            F("error_code", "int16"),
            F("partition_index", "int32"),
            F("leader_id", "int32"),
            F("replica_nodes", Array("int32")),
            F("isr_nodes", Array("int32")),
        ])),
    ])),
])
