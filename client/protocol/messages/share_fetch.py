"""ShareFetch (API key 78), v1-2 (flexible): records acquired for a member of a share group,
with acknowledgements of earlier ones piggy-backed. ``share_session_epoch`` 0 opens a share
session, -1 closes it, otherwise it counts the session's requests. The response carries the
log's batches and, per partition, the offset ranges this member acquired with their delivery
counts. v2 adds ``share_acquire_mode`` (0 batch-optimized, 1 record-limit) and the Renew
acknowledge type (4) (KIP-1206, KIP-1222). v0 was Kafka 4.0's early access, removed in 4.1."""

from __future__ import annotations

from ..schema import NULL, Array, Message, Struct
from ..schema import Field as F


def _ack_batches() -> F:
    return F("acknowledgement_batches", Array([
        F("first_offset", "int64"),
        F("last_offset", "int64"),
        F("acknowledge_types", Array("int8")),
    ]))


ShareFetchRequest = Message("ShareFetchRequest", 78, "1-2", "0+", [
    F("group_id", "string", nullable="0+", default=NULL),
    F("member_id", "string", nullable="0+"),
    F("share_session_epoch", "int32"),
    F("max_wait_ms", "int32"),
    F("min_bytes", "int32"),
    F("max_bytes", "int32", default=0x7FFFFFFF),
    F("max_records", "int32", "1+"),
    F("batch_size", "int32", "1+"),
    F("share_acquire_mode", "int8", "2+"),
    F("topics", Array([
        F("topic_id", "uuid"),
        F("partitions", Array([
            F("partition_index", "int32"),
            _ack_batches(),
        ])),
    ])),
    F("forgotten_topics_data", Array([
        F("topic_id", "uuid"),
        F("partitions", Array("int32")),
    ])),
])


def _leader() -> F:
    return F("current_leader", Struct([
        F("leader_id", "int32"),
        F("leader_epoch", "int32"),
    ]))


def _node_endpoints() -> F:
    return F("node_endpoints", Array([
        F("node_id", "int32"),
        F("host", "string"),
        F("port", "int32"),
        F("rack", "string", nullable="0+", default=NULL),
    ]))


ShareFetchResponse = Message("ShareFetchResponse", 78, "1-2", "0+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+", default=NULL),
    F("acquisition_lock_timeout_ms", "int32"),
    F("responses", Array([
        F("topic_id", "uuid"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=NULL),
            F("acknowledge_error_code", "int16"),
            F("acknowledge_error_message", "string", nullable="0+", default=NULL),
            _leader(),
            F("records", "records", nullable="0+"),
            F("acquired_records", Array([
                F("first_offset", "int64"),
                F("last_offset", "int64"),
                F("delivery_count", "int16"),
            ])),
        ])),
    ])),
    _node_endpoints(),
])
