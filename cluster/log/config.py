"""Per-log settings, resolved from broker defaults and topic overrides.

The broker config (`log.segment.bytes`, ...) gives the defaults; a topic's
`/config/topics/<t>` entry (`segment.bytes`, ...) overrides them. The log
package only ever sees this resolved, validated value.

cleanup.policy is kept normalised: "delete", "compact" or "compact,delete".
"delete" deletes whole old segments by retention.ms and retention.bytes;
"compact" keeps the latest record per key (compaction.py) and turns that
deletion off; both do both.
"""

from dataclasses import dataclass

# Kafka's "no limit" sentinel for message counts (Long.MAX_VALUE).
NO_LIMIT = 2**63 - 1

DELETE = "delete"
COMPACT = "compact"
CLEANUP_POLICIES = (DELETE, COMPACT)


def normalise_cleanup_policy(raw: str) -> str:
    """Kafka's cleanup.policy, a list (ValidList.in("compact", "delete")):
    comma-separated, spaces around items allowed, no empty item, repeats
    harmless. Returns "delete", "compact" or "compact,delete"; ValueError
    for anything else."""
    parts = {part.strip() for part in raw.split(",")}
    if not parts <= set(CLEANUP_POLICIES):
        raise ValueError("expected delete, compact or both, comma-separated")
    return ",".join(p for p in (COMPACT, DELETE) if p in parts)


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
    cleanup_policy: str = DELETE                     # cleanup.policy, normalised
    delete_retention_ms: int = 24 * 3600 * 1000      # delete.retention.ms: how long tombstones stay
    min_compaction_lag_ms: int = 0                   # min.compaction.lag.ms
    max_compaction_lag_ms: int = NO_LIMIT            # max.compaction.lag.ms
    min_cleanable_dirty_ratio: float = 0.5           # min.cleanable.dirty.ratio

    @property
    def compact(self) -> bool:
        return COMPACT in self.cleanup_policy.split(",")

    @property
    def delete(self) -> bool:
        return DELETE in self.cleanup_policy.split(",")
