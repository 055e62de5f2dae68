"""Committed offsets: who may commit, what a commit may hold, and when an
offset expires, as Apache Kafka 2.8's GroupCoordinator decides (pure).

OffsetCommit (`commit_check`), in this order:
1. No such group: a commit with generation -1 (a consumer that does not use
   group management, e.g. assign() with a group id, or an admin tool
   resetting offsets) creates the group, Empty and without a protocol type;
   any other generation: ILLEGAL_GENERATION.
2. A Dead group: COORDINATOR_NOT_AVAILABLE (it is being removed; the client
   finds its coordinator again). A known group.instance.id presented with
   another member id: FENCED_INSTANCE_ID.
3. An Empty group accepts generation -1 commits from anyone.
4. CompletingRebalance: REBALANCE_IN_PROGRESS (the member has its new
   generation but not yet its assignment). Otherwise the member must be
   known (UNKNOWN_MEMBER_ID) and at the group's generation
   (ILLEGAL_GENERATION). An accepted commit from a member counts as its
   heartbeat. (Commits in PreparingRebalance from the current generation are
   accepted, as Kafka accepts them: the member is finishing its work before
   rejoining.)
Per partition (`partition_error`): a topic partition the cluster does not
have: UNKNOWN_TOPIC_OR_PARTITION; metadata longer than
offset.metadata.max.bytes: OFFSET_METADATA_TOO_LARGE. The other partitions
of the request are committed.

Expiry (`expired_offsets`), every offsets.retention.check.interval.ms: an
offset committed with an explicit expire timestamp (OffsetCommit v1) expires
then; otherwise once offsets.retention.ms has passed since its base time:
5. an Empty group with a protocol type: since the group became Empty (or,
   for groups stored without that timestamp, since the commit);
6. a consumer group with members whose subscription is known: since the
   commit, for topics no member subscribes to (the others never expire
   while the group is alive);
7. a group without a protocol type (offsets only): since the commit;
8. any other group keeps its offsets.
A group left Empty without offsets is removed (Dead, its metadata deleted).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from kafkactl.cluster.coordinator.group import Group
from kafkactl.cluster.coordinator.group_state import GroupState
from kafkactl.cluster.coordinator.records import NO_EXPIRE_TIMESTAMP, NO_LEADER_EPOCH, OffsetValue
from kafkactl.cluster.coordinator.subscription import group_subscription

S = GroupState
NO_GENERATION = -1
NO_STATE_TIMESTAMP = -1
TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    metadata: str
    commit_timestamp_ms: int
    leader_epoch: int = NO_LEADER_EPOCH
    expire_timestamp_ms: int = NO_EXPIRE_TIMESTAMP

    def to_value(self) -> OffsetValue:
        return OffsetValue(self.offset, self.metadata, self.commit_timestamp_ms, self.leader_epoch,
                           self.expire_timestamp_ms)

    @classmethod
    def from_value(cls, value: OffsetValue) -> CommittedOffset:
        return cls(value.offset, value.metadata, value.commit_timestamp_ms, value.leader_epoch,
                   value.expire_timestamp_ms)


@dataclass(frozen=True, slots=True)
class CommitCheck:
    """The outcome of rules 1-4: `error` for every partition, or None to
    commit; `create_group` when the group is new; `member_id` whose session
    the commit renews (None for a generation -1 commit)."""
    error: ErrorCode | None
    create_group: bool = False
    member_id: str | None = None


def commit_check(group: Group | None, member_id: str, generation_id: int,
                 group_instance_id: str | None) -> CommitCheck:
    """Rules 1-4."""
    if group is None:
        if generation_id < 0:
            return CommitCheck(None, create_group=True)
        return CommitCheck(ErrorCode.illegal_generation)
    if group.state is S.DEAD:
        return CommitCheck(ErrorCode.coordinator_not_available)
    if group.is_static_member_fenced(member_id, group_instance_id):
        return CommitCheck(ErrorCode.fenced_instance_id)
    if generation_id < 0 and group.state is S.EMPTY:
        return CommitCheck(None)
    if group.state is S.COMPLETING_REBALANCE:
        return CommitCheck(ErrorCode.rebalance_in_progress)
    if not group.has(member_id):
        return CommitCheck(ErrorCode.unknown_member_id)
    if generation_id != group.generation_id:
        return CommitCheck(ErrorCode.illegal_generation)
    return CommitCheck(None, member_id=member_id)


def partition_error(topic_known: bool, metadata: str | None, offset_metadata_max_bytes: int) -> ErrorCode | None:
    """Per-partition refusals of an accepted commit; None to commit it."""
    if not topic_known:
        return ErrorCode.unknown_topic_or_partition
    if metadata is not None and len(metadata) > offset_metadata_max_bytes:
        return ErrorCode.offset_metadata_too_large
    return None


def expired_offsets(group: Group | None, offsets: Mapping[TopicPartition, CommittedOffset], now_ms: int,
                    retention_ms: int) -> list[TopicPartition]:
    """Rules 5-8: the offsets of `group` (None: offsets without group metadata,
    as rule 7) that expire at `now_ms`."""
    if group is None or not group.protocol_type:
        return _expired(offsets, now_ms, retention_ms, lambda o: o.commit_timestamp_ms)
    if group.state is S.EMPTY:
        since = group.state_timestamp_ms
        return _expired(offsets, now_ms, retention_ms,
                        lambda o: since if since != NO_STATE_TIMESTAMP else o.commit_timestamp_ms)
    subscribed = subscribed_topics_of(group)
    if subscribed is None:
        return []
    kept = {tp: o for tp, o in offsets.items() if tp[0] not in subscribed}
    return _expired(kept, now_ms, retention_ms, lambda o: o.commit_timestamp_ms)


def is_removable(group: Group, offsets: Mapping[TopicPartition, CommittedOffset]) -> bool:
    """An Empty group without offsets is removed after an expiry pass."""
    return group.state is S.EMPTY and not offsets


def _expired(offsets: Mapping[TopicPartition, CommittedOffset], now_ms: int, retention_ms: int,
             base_ms) -> list[TopicPartition]:
    expired = []
    for topic_partition, committed in offsets.items():
        if committed.expire_timestamp_ms != NO_EXPIRE_TIMESTAMP:
            gone = now_ms >= committed.expire_timestamp_ms
        else:
            gone = now_ms - base_ms(committed) >= retention_ms
        if gone:
            expired.append(topic_partition)
    return sorted(expired)


def subscribed_topics_of(group: Group) -> frozenset[str] | None:
    """The topics the group's members subscribe to; None when unknown."""
    protocol = group.protocol_name
    if protocol is None:
        return None
    return group_subscription(group.protocol_type, (m.metadata(protocol) for m in group.members.values()))
