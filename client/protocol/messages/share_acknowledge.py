"""ShareAcknowledge (API key 79), v1-2 (flexible): acknowledgements of acquired records
(0 Gap, 1 Accept, 2 Release, 3 Reject; v2: 4 Renew, with ``is_renew_ack``) without fetching,
in the member's share session. v2's response adds the acquisition lock timeout."""

from __future__ import annotations

from ..schema import NULL, Array, Message, Struct
from ..schema import Field as F

ShareAcknowledgeRequest = Message("ShareAcknowledgeRequest", 79, "1-2", "0+", [
    F("group_id", "string", nullable="0+", default=NULL),
    F("member_id", "string", nullable="0+"),
    F("share_session_epoch", "int32"),
    F("is_renew_ack", "bool", "2+", default=False),
    F("topics", Array([
        F("topic_id", "uuid"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("acknowledgement_batches", Array([
                F("first_offset", "int64"),
                F("last_offset", "int64"),
                F("acknowledge_types", Array("int8")),
            ])),
        ])),
    ])),
])
ShareAcknowledgeResponse = Message("ShareAcknowledgeResponse", 79, "1-2", "0+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+", default=NULL),
    F("acquisition_lock_timeout_ms", "int32", "2+"),
    F("responses", Array([
        F("topic_id", "uuid"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=NULL),
            F("current_leader", Struct([
                F("leader_id", "int32"),
                F("leader_epoch", "int32"),
            ])),
        ])),
    ])),
    F("node_endpoints", Array([
        F("node_id", "int32"),
        F("host", "string"),
        F("port", "int32"),
        F("rack", "string", nullable="0+", default=NULL),
    ])),
])
