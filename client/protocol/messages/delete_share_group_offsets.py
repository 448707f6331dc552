"""DeleteShareGroupOffsets (API key 92), v0 (flexible): forget an empty share group's state of
whole topics (``kafka-share-groups.sh --delete-offsets``); errors are per topic. (Kafka's
pre-release schema had partitions in the request and per-partition errors; 4.1 shipped this.)"""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

DeleteShareGroupOffsetsRequest = Message("DeleteShareGroupOffsetsRequest", 92, "0", "0+", [
    F("group_id", "string"),
    F("topics", Array([
        F("topic_name", "string"),
    ])),
])
DeleteShareGroupOffsetsResponse = Message("DeleteShareGroupOffsetsResponse", 92, "0", "0+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+", default=NULL),
    F("responses", Array([
        F("topic_name", "string"),
        F("topic_id", "uuid"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=NULL),
    ])),
])
