"""AddPartitionsToTxn (API key 24): request and response schemas, v0-5.

Versions 0-3 are the client's (v2 adds PRODUCER_FENCED, v3 is flexible): one transaction.
v4+ batch several transactions, each with ``verify_only`` (check that the partitions are in
the transaction rather than add them) and answer per transaction with a top-level error code:
Kafka's partition leaders send them to the transaction coordinator (KIP-890), to verify a
transactional produce or, for a transactions V2 producer, to add its partition. v5 adds
TRANSACTION_ABORTABLE. Field names are Kafka's (``V3AndBelowTransactionalId`` ->
``v3_and_below_transactional_id``)."""

from __future__ import annotations

from ..schema import Array, Message
from ..schema import Field as F

_TOPIC = [
    F("name", "string"),
    F("partitions", Array("int32")),
]
_TOPIC_RESULT = [
    F("name", "string"),
    F("results_by_partition", Array([
        F("partition_index", "int32"),
        F("partition_error_code", "int16"),
    ])),
]

AddPartitionsToTxnRequest = Message("AddPartitionsToTxnRequest", 24, "0-5", "3+", [
    F("transactions", Array([
        F("transactional_id", "string", "4+"),
        F("producer_id", "int64", "4+"),
        F("producer_epoch", "int16", "4+"),
        F("verify_only", "bool", "4+", default=False),
        F("topics", Array(_TOPIC), "4+"),
    ]), "4+"),
    F("v3_and_below_transactional_id", "string", "0-3"),
    F("v3_and_below_producer_id", "int64", "0-3"),
    F("v3_and_below_producer_epoch", "int16", "0-3"),
    F("v3_and_below_topics", Array(_TOPIC), "0-3"),
])
AddPartitionsToTxnResponse = Message("AddPartitionsToTxnResponse", 24, "0-5", "3+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16", "4+"),
    F("results_by_transaction", Array([
        F("transactional_id", "string", "4+"),
        F("topic_results", Array(_TOPIC_RESULT), "4+"),
    ]), "4+"),
    F("results_by_topic_v3_and_below", Array(_TOPIC_RESULT), "0-3"),
])
