"""ShareGroupDescribe (API key 77), v1 (flexible): share groups with their epochs and each
member's assignment."""

from __future__ import annotations

from ..schema import NULL, Array, Message, Struct
from ..schema import Field as F

ShareGroupDescribeRequest = Message("ShareGroupDescribeRequest", 77, "1", "0+", [
    F("group_ids", Array("string")),
    F("include_authorized_operations", "bool"),
])
ShareGroupDescribeResponse = Message("ShareGroupDescribeResponse", 77, "1", "0+", [
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
            F("rack_id", "string", nullable="0+", default=NULL),
            F("member_epoch", "int32"),
            F("client_id", "string"),
            F("client_host", "string"),
            F("subscribed_topic_names", Array("string")),
            F("assignment", Struct([
                F("topic_partitions", Array([
                    F("topic_id", "uuid"),
                    F("topic_name", "string"),
                    F("partitions", Array("int32")),
                ])),
            ])),
        ])),
        F("authorized_operations", "int32", default=-2147483648),
    ])),
])
