"""``dump-log --transaction-log-decoder``: ``__transaction_state`` records as Kafka's
DumpLogSegments prints them (its transaction log parser), one string for the key and one for
the payload::

    key: transaction_metadata::transactionalId=tx-1 payload: producerId:1000,producerEpoch:0,
      state=Ongoing,partitions=[orders-0,orders-1],txnLastUpdateTimestamp=1700000000000,
      txnTimeoutMs=60000                                            (one line in the output)

``state`` is Kafka's TransactionState name (``Empty``, ``Ongoing``, ``PrepareCommit``,
``PrepareAbort``, ``CompleteCommit``, ``CompleteAbort``, ``Dead``, ``PrepareEpochFence``);
``partitions`` are ``<topic>-<partition>``, sorted (Kafka prints a hash set's order), and, as
in Kafka, empty for the Empty state whatever the record holds. A tombstone's payload is
``<DELETE>``; a key of an unknown version prints ``key: unknown::version=<v>`` and no payload.
Where Kafka's tool stops with an exception (a missing key, a value of an unknown version, bytes
that do not parse) the line says so and the dump goes on.
"""

from __future__ import annotations

from client.protocol.primitives import DecodeError

from ..txn.records import TXN_KEY_VERSION, TxnState, decode_txn_key, decode_txn_value

__all__ = ["describe_transaction_log_record"]


def describe_transaction_log_record(key: bytes | None, value: bytes | None, offset: int) -> str:
    """The `` key: ... payload: ...`` part of a record line (module docstring)."""
    if key is None:
        return (f" key: Failed to decode message at offset {offset} using transaction log decoder"
                " (message had a missing key)")
    try:
        if len(key) >= 2:
            version = int.from_bytes(key[:2], "big", signed=True)
            if version != TXN_KEY_VERSION:
                return f" key: unknown::version={version}"
        line = f" key: transaction_metadata::transactionalId={decode_txn_key(key)}"
        if value is None:
            return line + " payload: <DELETE>"
        v = decode_txn_value(value)
        partitions = () if v.state == TxnState.EMPTY else v.partitions
        return line + (f" payload: producerId:{v.producer_id},producerEpoch:{v.producer_epoch},"
                       f"state={v.state.kafka_name},partitions=[{','.join(f'{t}-{p}' for t, p in partitions)}],"
                       f"txnLastUpdateTimestamp={v.last_update_timestamp_ms},txnTimeoutMs={v.timeout_ms}")
    except (DecodeError, ValueError) as e:
        return f" key: Error at offset {offset}, skipping. {e}"
