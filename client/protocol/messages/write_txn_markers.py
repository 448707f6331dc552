"""WriteTxnMarkers (API key 27): request and response schemas, v0-2 (v1 is flexible, v2 adds
each marker's transaction version, KIP-1228; Kafka 4 dropped v0, which 3.9 served). In Kafka
the transaction coordinator sends it to partition leaders; an admin client sends it to abort a
hanging transaction (``Admin.abortTransaction``, ``kafka-transactions.sh abort``)."""

from __future__ import annotations

from ..schema import Array, Message
from ..schema import Field as F

WriteTxnMarkersRequest = Message("WriteTxnMarkersRequest", 27, "0-2", "1+", [
    F("markers", Array([
        F("producer_id", "int64"),
        F("producer_epoch", "int16"),
        F("transaction_result", "bool"),  # false: ABORT, true: COMMIT
        F("topics", Array([
            F("name", "string"),
            F("partition_indexes", Array("int32")),
        ])),
        F("coordinator_epoch", "int32"),
        F("transaction_version", "int8", "2+", default=0),  # 0/1: transactions V1, 2: V2
    ])),
])
WriteTxnMarkersResponse = Message("WriteTxnMarkersResponse", 27, "0-2", "1+", [
    F("markers", Array([
        F("producer_id", "int64"),
        F("topics", Array([
            F("name", "string"),
            F("partitions", Array([
                F("partition_index", "int32"),
                F("error_code", "int16"),
            ])),
        ])),
    ])),
])
