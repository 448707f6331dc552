"""AlterPartitionReassignments (API key 45): request and response schemas (flexible from v0).
A partition's ``replicas`` null cancels its reassignment. v1 (KIP-860):
``allow_replication_factor_change``, echoed in the response."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

AlterPartitionReassignmentsRequest = Message("AlterPartitionReassignmentsRequest", 45, "0-1", "0+", [
    F("timeout_ms", "int32", default=60000),
    F("allow_replication_factor_change", "bool", "1+", default=True),
    F("topics", Array([
        F("name", "string"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("replicas", Array("int32"), nullable="0+", default=NULL),
        ])),
    ])),
])
AlterPartitionReassignmentsResponse = Message("AlterPartitionReassignmentsResponse", 45, "0-1", "0+", [
    F("throttle_time_ms", "int32"),
    F("allow_replication_factor_change", "bool", "1+", default=True),
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+"),
    F("responses", Array([
        F("name", "string"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+"),
        ])),
    ])),
])
