"""DescribeQuorum (API key 55): request and response schemas, v0-2 (flexible from v0).

v1 (KIP-836) adds each replica's last fetch and last caught-up timestamps; v2 (KIP-853) the
error messages, each replica's directory id and the voters' listeners (``nodes``)."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F


def _replica_state() -> Array:
    return Array([
        F("replica_id", "int32"),
        F("replica_directory_id", "uuid", "2+"),
        F("log_end_offset", "int64"),
        F("last_fetch_timestamp", "int64", "1+", default=-1),
        F("last_caught_up_timestamp", "int64", "1+", default=-1),
    ])


DescribeQuorumRequest = Message("DescribeQuorumRequest", 55, "0-2", "0+", [
    F("topics", Array([
        F("topic_name", "string"),
        F("partitions", Array([
            F("partition_index", "int32"),
        ])),
    ])),
])
DescribeQuorumResponse = Message("DescribeQuorumResponse", 55, "0-2", "0+", [
    F("error_code", "int16"),
    F("error_message", "string", "2+", nullable="2+", default=NULL),
    F("topics", Array([
        F("topic_name", "string"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("error_code", "int16"),
            F("error_message", "string", "2+", nullable="2+", default=NULL),
            F("leader_id", "int32"),
            F("leader_epoch", "int32"),
            F("high_watermark", "int64"),
            F("current_voters", _replica_state()),
            F("observers", _replica_state()),
        ])),
    ])),
    F("nodes", Array([
        F("node_id", "int32"),
        F("listeners", Array([
            F("name", "string"),
            F("host", "string"),
            F("port", "uint16"),
        ])),
    ]), "2+"),
])
