"""Per-log settings, resolved from broker defaults and topic overrides.

The broker config (`log.segment.bytes`, ...) gives the defaults; a topic's
`/config/topics/<t>` entry (`segment.bytes`, ...) overrides them. The log
package only ever sees this resolved, validated value.
"""

from dataclasses import dataclass

# Kafka's "no limit" sentinel for message counts (Long.MAX_VALUE).
NO_LIMIT = 2**63 - 1


@dataclass(frozen=True, slots=True)
class LogConfig:
    segment_bytes: int = 1024 * 1024 * 1024          # segment.bytes
    segment_ms: int = 7 * 24 * 3600 * 1000           # segment.ms (log.roll.ms)
    retention_ms: int = 7 * 24 * 3600 * 1000         # retention.ms, -1 = forever
    retention_bytes: int = -1                        # retention.bytes, -1 = no limit
    flush_messages: int = NO_LIMIT                   # flush.messages
    flush_ms: int = NO_LIMIT                         # flush.ms
    index_interval_bytes: int = 4096                 # index.interval.bytes
    segment_index_bytes: int = 10 * 1024 * 1024      # segment.index.bytes
    max_message_bytes: int = 1048588                 # max.message.bytes
    file_delete_delay_ms: int = 60000                # file.delete.delay.ms
    min_insync_replicas: int = 1                     # min.insync.replicas
    unclean_leader_election_enable: bool = False     # unclean.leader.election.enable
    message_timestamp_type: str = "CreateTime"       # message.timestamp.type
