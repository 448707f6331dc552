"""The transaction coordinator: Kafka's transactions for a single node.

- ``records.py``: the ``__transaction_state`` record formats and the transactional id ->
  partition mapping;
- ``coordinator.py``: transactional ids, their producer ids and epochs, the state machine
  (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, timeouts; transactions V2,
  KIP-890 part 2, once ``transaction.version`` 2 is finalized), as a sans-IO state machine;
- ``runtime.py``: its writes to ``__transaction_state``, the COMMIT/ABORT markers it writes to
  the partitions, the adds of transactions V2 produces, and the loading at start-up.

The log side (open transactions per partition, the last stable offset, ``.txnindex``) is in
broker/storage (producer_state.py, log.py, transaction_index.py); transactional offsets are
the group coordinator's (broker/group/coordinator.py ``commit_txn_offsets``).
"""
