"""The records of ``__transaction_state``, byte for byte as Kafka writes them, and the
transactional id -> partition mapping.

``__transaction_state`` is Kafka's transaction log: an internal compacted topic
(``transaction.state.log.num.partitions`` = 50 partitions) holding the last state of every
transactional id. Transactional id ``t`` lives in partition
``abs(javaHashCode(t)) % 50``, the mapping ``__consumer_offsets`` uses for groups.

Key and value are an ``int16`` version followed by the message in Kafka's classic encoding
(``string`` = int16 length + UTF-8)::

    TransactionLogKey v0:   transactional_id string

    TransactionLogValue v0: producer_id int64 | producer_epoch int16 | timeout_ms int32 |
                            status int8 | partitions: int32 count (-1 = null), each
                            (topic string | int32 count, each partition int32) |
                            last_update_timestamp_ms int64 | start_timestamp_ms int64
                        v1: the same, flexible (compact strings and arrays, tag buffers),
                            with tagged fields 0 previous_producer_id, 1 next_producer_id
                            (int64, default -1) and 2 client_transaction_version (int16)

minibroker writes the version Kafka 4 writes for the finalized ``transaction.version``
(TransactionVersion.transactionLogValueVersion): v0 at level 0 (what Kafka 3.9 writes), v1 from
level 1, whose tagged fields are written when not their default (-1, -1, 0), as Kafka's
generated code does: the producer id before the last change, the one a transactions V2
transaction switches to when its epoch runs out, and the transaction version of the client
that made the change. Both are read whatever the level. A null value (tombstone) removes an
expired transactional id.

Status codes (``TransactionState``): 0 Empty, 1 Ongoing, 2 PrepareCommit, 3 PrepareAbort,
4 CompleteCommit, 5 CompleteAbort, 6 Dead, 7 PrepareEpochFence. Kafka writes the partition
set for Ongoing, PrepareCommit and PrepareAbort, and an empty set otherwise.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

from client.protocol.primitives import DecodeError, Reader
from client.protocol.schema import Array, Message
from client.protocol.schema import Field as F

from ..group.records import partition_for

__all__ = [
    "TRANSACTION_STATE", "TxnState", "TxnLogValue", "partition_for", "encode_txn_key", "encode_txn_value",
    "decode_txn_key", "decode_txn_value",
]

TRANSACTION_STATE = "__transaction_state"
TXN_KEY_VERSION = 0
TXN_VALUE_VERSION = 0  # the version written at transaction.version 0
NO_PRODUCER_ID = -1


class TxnState(enum.IntEnum):
    """Kafka's TransactionState, with its status codes and names."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """The name DescribeTransactions and Kafka's tools show (``PrepareCommit``)."""
        return "".join(part.capitalize() for part in self.name.split("_"))


# No API key: record schemas, not requests.
_KEY = Message("TransactionLogKey", -1, "0", "none", [F("transactional_id", "string")])
_VALUE = Message("TransactionLogValue", -1, "0-1", "1+", [
    F("producer_id", "int64"),
    F("previous_producer_id", "int64", "1+", default=-1, tag=0),
    F("next_producer_id", "int64", "1+", default=-1, tag=1),
    F("producer_epoch", "int16"),
    F("transaction_timeout_ms", "int32"),
    F("transaction_status", "int8"),
    F("transaction_partitions", Array([
        F("topic", "string"),
        F("partition_ids", Array("int32")),
    ]), nullable="0+"),
    F("transaction_last_update_timestamp_ms", "int64"),
    F("transaction_start_timestamp_ms", "int64"),
    F("client_transaction_version", "int16", "1+", default=0, tag=2),
])


class TxnLogValue(NamedTuple):
    """One transactional id's state as stored: ``partitions`` sorted (topic, partition) pairs."""

    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: tuple[tuple[str, int], ...]
    last_update_timestamp_ms: int
    start_timestamp_ms: int
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    client_transaction_version: int = 0


def encode_txn_key(transactional_id: str) -> bytes:
    w = _KEY.encode({"transactional_id": transactional_id}, TXN_KEY_VERSION)
    return TXN_KEY_VERSION.to_bytes(2, "big") + bytes(w.buf)


def encode_txn_value(v: TxnLogValue, version: int = TXN_VALUE_VERSION) -> bytes:
    """``v`` as a TransactionLogValue of ``version`` (0: the fields of v1's tags are not kept)."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(v.partitions):
        by_topic.setdefault(topic, []).append(partition)
    w = _VALUE.encode({
        "producer_id": v.producer_id, "producer_epoch": v.producer_epoch,
        "transaction_timeout_ms": v.timeout_ms, "transaction_status": int(v.state),
        "transaction_partitions": [{"topic": t, "partition_ids": ps} for t, ps in by_topic.items()],
        "transaction_last_update_timestamp_ms": v.last_update_timestamp_ms,
        "transaction_start_timestamp_ms": v.start_timestamp_ms,
        "previous_producer_id": v.previous_producer_id, "next_producer_id": v.next_producer_id,
        "client_transaction_version": v.client_transaction_version,
    }, version)
    return version.to_bytes(2, "big") + bytes(w.buf)


def decode_txn_key(data: bytes | memoryview) -> str:
    r = Reader(data)
    version = r.int16()
    if version != TXN_KEY_VERSION:
        raise DecodeError(f"TransactionLogKey version {version} is unknown")
    return str(_KEY.decode(r, version)["transactional_id"])


def decode_txn_value(data: bytes | memoryview) -> TxnLogValue:
    r = Reader(data)
    version = r.int16()
    lo, hi = _VALUE.valid
    if not lo <= version <= hi:
        raise DecodeError(f"TransactionLogValue version {version} is unknown")
    v = _VALUE.decode(r, version)
    try:
        state = TxnState(v["transaction_status"])
    except ValueError:
        raise DecodeError(f"unknown transaction status {v['transaction_status']}") from None
    parts = tuple(sorted((t["topic"], p) for t in v["transaction_partitions"] or () for p in t["partition_ids"]))
    return TxnLogValue(v["producer_id"], v["producer_epoch"], v["transaction_timeout_ms"], state, parts,
                       v["transaction_last_update_timestamp_ms"], v["transaction_start_timestamp_ms"],
                       v["previous_producer_id"], v["next_producer_id"], v["client_transaction_version"])
