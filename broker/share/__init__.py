"""Share groups (KIP-932): the durable share-partition state of ``__share_group_state``
(state_records.py: its records; persister.py: the sans-IO store that folds them; runtime.py:
the store bound to the broker's internal topic)."""
