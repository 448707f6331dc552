"""TxnOffsetCommit (API key 28): request and response schemas, v0-5 (v2 adds the leader
epoch, v3 the member id, instance id and generation and is flexible, v4 adds
TRANSACTION_ABORTABLE, v5 is v4 on the wire: with transactions V2 it also adds the group's
offsets partition to the transaction, what AddOffsetsToTxn did before)."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

TxnOffsetCommitRequest = Message("TxnOffsetCommitRequest", 28, "0-5", "3+", [
    F("transactional_id", "string"),
    F("group_id", "string"),
    F("producer_id", "int64"),
    F("producer_epoch", "int16"),
    F("generation_id", "int32", "3+", default=-1),
    F("member_id", "string", "3+", default=""),
    F("group_instance_id", "string", "3+", nullable="3+", default=NULL),
    F("topics", Array([
        F("name", "string"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("committed_offset", "int64"),
            F("committed_leader_epoch", "int32", "2+", default=-1),
            F("committed_metadata", "string", nullable="0+"),
        ])),
    ])),
])
TxnOffsetCommitResponse = Message("TxnOffsetCommitResponse", 28, "0-5", "3+", [
    F("throttle_time_ms", "int32"),
    F("topics", Array([
        F("name", "string"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("error_code", "int16"),
        ])),
    ])),
])
