"""AddPartitionsToTxn (API key 24): request and response schemas, v0-3.

Versions 0-3 are the client's (v2 adds PRODUCER_FENCED, v3 is flexible); v4+ batch several
transactions for brokers verifying a produce (KIP-890), an inter-broker use a single node has
no need for, so minibroker does not implement or advertise them. Field names are Kafka's
(``V3AndBelowTransactionalId`` -> ``v3_and_below_transactional_id``)."""

from __future__ import annotations

from ..schema import Array, Message
from ..schema import Field as F

AddPartitionsToTxnRequest = Message("AddPartitionsToTxnRequest", 24, "0-3", "3+", [
    F("v3_and_below_transactional_id", "string"),
    F("v3_and_below_producer_id", "int64"),
    F("v3_and_below_producer_epoch", "int16"),
    F("v3_and_below_topics", Array([
        F("name", "string"),
        F("partitions", Array("int32")),
    ])),
])
AddPartitionsToTxnResponse = Message("AddPartitionsToTxnResponse", 24, "0-3", "3+", [
    F("throttle_time_ms", "int32"),
    F("results_by_topic_v3_and_below", Array([
        F("name", "string"),
        F("results_by_partition", Array([
            F("partition_index", "int32"),
            F("partition_error_code", "int16"),
        ])),
    ])),
])
