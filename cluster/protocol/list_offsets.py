"""ListOffsets' special values, as Kafka defines them: one place for the
broker's handler (broker/handlers/list_offsets.py) and the tools that ask
brokers for offsets (admin/broker_queries.py, admin/reassignment.py)."""

# replica_id: Kafka's "debugging consumer". Any replica answers it, leader or
# follower, from its own log (latest = its log end offset).
DEBUGGING_REPLICA_ID = -2

# timestamp: not a time but which offset is asked for.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
