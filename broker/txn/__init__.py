"""The transaction coordinator: Kafka's transactions for a single node.

- ``records.py``: the ``__transaction_state`` record formats and the transactional id ->
  partition mapping;
- ``coordinator.py``: transactional ids, their producer ids and epochs, the state machine
  (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, timeouts), the COMMIT/ABORT
  markers it writes to the partitions, and the loading of ``__transaction_state`` at start-up.

The log side (open transactions per partition, the last stable offset, ``.txnindex``) is in
broker/storage (producer_state.py, log.py, transaction_index.py); transactional offsets are
the group coordinator's (broker/group/coordinator.py ``commit_txn_offsets``).
"""
