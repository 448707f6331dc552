"""DescribeShareGroupOffsets (API key 90), v0-1 (flexible): each share-partition's start offset
(SPSO) for share groups; ``topics`` null asks for every share-partition the group has. v1
(Kafka 4.2, KIP-1226) adds the share-partition ``lag`` after ``leader_epoch`` (-1: unknown)."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

DescribeShareGroupOffsetsRequest = Message("DescribeShareGroupOffsetsRequest", 90, "0-1", "0+", [
    F("groups", Array([
        F("group_id", "string"),
        F("topics", Array([
            F("topic_name", "string"),
            F("partitions", Array("int32")),
        ]), nullable="0+"),
    ])),
])
DescribeShareGroupOffsetsResponse = Message("DescribeShareGroupOffsetsResponse", 90, "0-1", "0+", [
    F("throttle_time_ms", "int32"),
    F("groups", Array([
        F("group_id", "string"),
        F("topics", Array([
            F("topic_name", "string"),
            F("topic_id", "uuid"),
            F("partitions", Array([
                F("partition_index", "int32"),
                F("start_offset", "int64"),
                F("leader_epoch", "int32"),
                F("lag", "int64", versions="1+", default=-1),
                F("error_code", "int16"),
                F("error_message", "string", nullable="0+", default=NULL),
            ])),
        ])),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=NULL),
    ])),
])
