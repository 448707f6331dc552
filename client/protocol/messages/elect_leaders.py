"""ElectLeaders (API key 43): request and response schemas. ``election_type``: 0 preferred,
1 unclean (v1+; v0 is preferred only)."""

from __future__ import annotations

from ..schema import Array, Message
from ..schema import Field as F

ElectLeadersRequest = Message("ElectLeadersRequest", 43, "0-2", "2+", [
    F("election_type", "int8", "1+"),
    F("topic_partitions", Array([
        F("topic", "string"),
        F("partitions", Array("int32")),
    ]), nullable="0+"),
    F("timeout_ms", "int32", default=60000),
])
ElectLeadersResponse = Message("ElectLeadersResponse", 43, "0-2", "2+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16", "1+"),
    F("replica_election_results", Array([
        F("topic", "string"),
        F("partition_result", Array([
            F("partition_id", "int32"),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+"),
        ])),
    ])),
])
