"""Share groups (KIP-932): queues on Kafka topics. ``group.py`` holds the membership
(ShareGroupHeartbeat), ``partition.py`` one share-partition's record states, ``manager.py``
ShareFetch/ShareAcknowledge with their sessions, locks and durable state."""
