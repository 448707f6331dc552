"""ListOffsets (API key 2): request and response schemas, v0-11 (Kafka 4.2; Kafka 4 drops v0,
which Kafka 3.9 still served).

v0: the old-style answer, up to ``max_num_offsets`` offsets per partition
(``old_style_offsets``) instead of one timestamp and offset; tools built on old clients
(Burrow, Sarama with its default version) still send it.
v2+: isolation_level; v4+: current_leader_epoch and the answer's leader_epoch; v6+: flexible;
v7+: MAX_TIMESTAMP (-3); v8+: EARLIEST_LOCAL (-4); v9+: LATEST_TIERED (-5); v10+: timeout_ms,
how long a read from tiered storage may take (KIP-1075); v11+: EARLIEST_PENDING_UPLOAD (-6,
KIP-1023)."""

from __future__ import annotations

from ..schema import Array, Message
from ..schema import Field as F

ListOffsetsRequest = Message("ListOffsetsRequest", 2, "0-11", "6+", [
    # The spec gives no default (0 = broker 0, a follower); a client codec means a consumer (-1).
    F("replica_id", "int32", default=-1),
    F("isolation_level", "int8", "2+"),
    F("topics", Array([
        F("name", "string"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("current_leader_epoch", "int32", "4+", default=-1),
            F("timestamp", "int64"),
            F("max_num_offsets", "int32", "0", default=1),
        ])),
    ])),
    F("timeout_ms", "int32", "10+"),
])
ListOffsetsResponse = Message("ListOffsetsResponse", 2, "0-11", "6+", [
    F("throttle_time_ms", "int32", "2+"),
    F("topics", Array([
        F("name", "string"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("error_code", "int16"),
            F("old_style_offsets", Array("int64"), "0", default=[]),
            F("timestamp", "int64", "1+", default=-1),
            F("offset", "int64", "1+", default=-1),
            F("leader_epoch", "int32", "4+", default=-1),
        ])),
    ])),
])
