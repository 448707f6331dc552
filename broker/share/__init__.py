"""Share groups (KIP-932): queues on Kafka topics. group.py: the membership
(ShareGroupHeartbeat, the simple assignor); partition.py: one share-partition's record states;
manager.py: ShareFetch and ShareAcknowledge with their share sessions and acquisition locks;
the durable share-partition state of ``__share_group_state`` (state_records.py: its records;
persister.py: the sans-IO store that folds them; runtime.py: the store bound to the broker's
internal topic)."""
