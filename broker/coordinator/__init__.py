"""What every coordinator shares: the shape is a sans-IO state machine (``broker/group/coordinator.py``,
``broker/txn/coordinator.py``: decisions and in-memory state, no I/O, no event loop) driven by a
runtime (``broker/group/runtime.py``, ``broker/txn/runtime.py``: the records it writes, the
fsyncs it waits for, its timers) over the pieces here:

- ``internal_topic.InternalTopic``: the coordinator's compacted internal topic — created on first
  use with the coordinator's partition count and segment size, appended to, waited on for
  fsync, and adopted at start-up with the count it was created with;
- ``loader.CoordinatorLoader``: replays such a topic at start-up, a damaged batch costing only
  itself;
- ``internal_topic.CoordinatorHost``: the few things of the broker a runtime uses (``BrokerState``
  provides them), so that a runtime never sees the whole broker.
"""
