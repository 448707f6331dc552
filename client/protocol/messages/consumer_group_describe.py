"""ConsumerGroupDescribe (API key 69), v0-1 (flexible): KIP-848 consumer groups with their
epochs, each member's current and target assignment. v1 adds each member's type (KIP-1099:
0 classic, 1 consumer, -1 unknown)."""

from __future__ import annotations

from ..schema import NULL, Array, Message, Struct
from ..schema import Field as F


def _assignment(name: str) -> F:
    return F(name, Struct([
        F("topic_partitions", Array([
            F("topic_id", "uuid"),
            F("topic_name", "string"),
            F("partitions", Array("int32")),
        ])),
    ]))


ConsumerGroupDescribeRequest = Message("ConsumerGroupDescribeRequest", 69, "0-1", "0+", [
    F("group_ids", Array("string")),
    F("include_authorized_operations", "bool"),
])
ConsumerGroupDescribeResponse = Message("ConsumerGroupDescribeResponse", 69, "0-1", "0+", [
    F("throttle_time_ms", "int32"),
    F("groups", Array([
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=NULL),
        F("group_id", "string"),
        F("group_state", "string"),
        F("group_epoch", "int32"),
        F("assignment_epoch", "int32"),
        F("assignor_name", "string"),
        F("members", Array([
            F("member_id", "string"),
            F("instance_id", "string", nullable="0+", default=NULL),
            F("rack_id", "string", nullable="0+", default=NULL),
            F("member_epoch", "int32"),
            F("client_id", "string"),
            F("client_host", "string"),
            F("subscribed_topic_names", Array("string")),
            F("subscribed_topic_regex", "string", nullable="0+", default=NULL),
            _assignment("assignment"),
            _assignment("target_assignment"),
            F("member_type", "int8", "1+", default=-1),
        ])),
        F("authorized_operations", "int32", default=-2147483648),
    ])),
])
