"""The group coordinator (seed 003; issue 14): consumer groups' membership,
rebalances and committed offsets, kept on the compacted `__consumer_offsets`.

Built in steps; so far the pure rules:
- placement.py: which `__consumer_offsets` partition (and so which broker,
  its leader) coordinates a group, exactly as Apache Kafka computes it;
- group_state.py: the group states and the transitions between them;
- records.py: the records of `__consumer_offsets` in Kafka's key and value
  schemas (committed offsets, group metadata, tombstones);
- group.py, membership.py, messages.py: a group's members and the classic
  protocol's JoinGroup/SyncGroup/Heartbeat/LeaveGroup/session-expiry
  decisions, as Kafka 2.8 takes them (pure, injected clock).
"""
