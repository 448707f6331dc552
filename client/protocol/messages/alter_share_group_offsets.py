"""AlterShareGroupOffsets (API key 91), v0 (flexible): set share-partitions' start offsets of an
empty share group (``kafka-share-groups.sh --reset-offsets``)."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

AlterShareGroupOffsetsRequest = Message("AlterShareGroupOffsetsRequest", 91, "0", "0+", [
    F("group_id", "string"),
    F("topics", Array([
        F("topic_name", "string"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("start_offset", "int64"),
        ])),
    ])),
])
AlterShareGroupOffsetsResponse = Message("AlterShareGroupOffsetsResponse", 91, "0", "0+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+", default=NULL),
    F("responses", Array([
        F("topic_name", "string"),
        F("topic_id", "uuid"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=NULL),
        ])),
    ])),
])
