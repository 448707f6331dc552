"""The group coordinator: Kafka's classic consumer-group protocol and committed offsets.

- ``records.py``: the ``__consumer_offsets`` record formats and the group -> partition mapping;
- ``group.py``: one group's data (members, generation, protocol, offsets) and its small rules;
- ``coordinator.py``: the state machine (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, offsets,
  timers), sans-IO;
- ``runtime.py``: the coordinator bound to the broker's event loop and logs, and the loading
  of ``__consumer_offsets`` at start-up.
"""
