"""DescribeTopicPartitions (API key 75): request and response schemas, v0 (flexible).

What Java's Admin describes topics with (KIP-966): the partitions of the topics named (every
topic when none is), at most ``response_partition_limit`` of them per response, paged with a
cursor (topic, first partition); each partition with its eligible leader replicas."""

from __future__ import annotations

from ..schema import NULL, Array, Message, Struct
from ..schema import Field as F


def _cursor(name: str) -> F:
    return F(name, Struct([
        F("topic_name", "string"),
        F("partition_index", "int32"),
    ]), nullable="0+", default=NULL)


DescribeTopicPartitionsRequest = Message("DescribeTopicPartitionsRequest", 75, "0", "0+", [
    F("topics", Array([
        F("name", "string"),
    ])),
    F("response_partition_limit", "int32", default=2000),
    _cursor("cursor"),
])
DescribeTopicPartitionsResponse = Message("DescribeTopicPartitionsResponse", 75, "0", "0+", [
    F("throttle_time_ms", "int32"),
    F("topics", Array([
        F("error_code", "int16"),
        F("name", "string", nullable="0+", default=NULL),
        F("topic_id", "uuid"),
        F("is_internal", "bool"),
        F("partitions", Array([
            F("error_code", "int16"),
            F("partition_index", "int32"),
            F("leader_id", "int32"),
            F("leader_epoch", "int32", default=-1),
            F("replica_nodes", Array("int32")),
            F("isr_nodes", Array("int32")),
            F("eligible_leader_replicas", Array("int32"), nullable="0+", default=NULL),
            F("last_known_elr", Array("int32"), nullable="0+", default=NULL),
            F("offline_replicas", Array("int32")),
        ])),
        F("topic_authorized_operations", "int32", default=-2147483648),
    ])),
    _cursor("next_cursor"),
])
