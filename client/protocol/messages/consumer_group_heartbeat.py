"""ConsumerGroupHeartbeat (API key 68), v0-1 (flexible): KIP-848's consumer-group membership.

A member joins with epoch 0, heartbeats with its current epoch (sending only the fields that
changed since its last heartbeat; null means unchanged) and leaves with -1 (-2: a static
member leaving for a restart). v1 adds ``subscribed_topic_regex`` and requires the client to
generate its member id (KIP-1082). The response carries the member's epoch and, when it
changed or the request was a full one, its assignment (topic ids)."""

from __future__ import annotations

from ..schema import NULL, Array, Message, Struct
from ..schema import Field as F


def _topic_partitions() -> Array:
    return Array([
        F("topic_id", "uuid"),
        F("partitions", Array("int32")),
    ])


ConsumerGroupHeartbeatRequest = Message("ConsumerGroupHeartbeatRequest", 68, "0-1", "0+", [
    F("group_id", "string"),
    F("member_id", "string"),
    F("member_epoch", "int32"),
    F("instance_id", "string", nullable="0+", default=NULL),
    F("rack_id", "string", nullable="0+", default=NULL),
    F("rebalance_timeout_ms", "int32", default=-1),
    F("subscribed_topic_names", Array("string"), nullable="0+", default=NULL),
    F("subscribed_topic_regex", "string", "1+", nullable="1+", default=NULL),
    F("server_assignor", "string", nullable="0+", default=NULL),
    F("topic_partitions", _topic_partitions(), nullable="0+", default=NULL),
])
ConsumerGroupHeartbeatResponse = Message("ConsumerGroupHeartbeatResponse", 68, "0-1", "0+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+", default=NULL),
    F("member_id", "string", nullable="0+", default=NULL),
    F("member_epoch", "int32"),
    F("heartbeat_interval_ms", "int32"),
    F("assignment", Struct([
        F("topic_partitions", _topic_partitions()),
    ]), nullable="0+", default=NULL),
])
