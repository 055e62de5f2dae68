"""Offset and administrative requests on the groups of one shard (owner
thread only): OffsetCommit, OffsetFetch, DescribeGroups, ListGroups,
DeleteGroups, OffsetDelete, and the periodic expiry of offsets. The rules
are Kafka 2.8's; who may commit and what expires are offsets.py's.

Offsets enter the shard's cache only once written and committed to the
ISR, so an OffsetFetch never returns an offset a failover could lose.
Deletions (DeleteGroups, OffsetDelete, expiry) leave the cache at once and
write tombstones, so the offsets stay deleted after a failover too.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from kafkactl.cluster.coordinator.group import Group
from kafkactl.cluster.coordinator.group_state import GroupState
from kafkactl.cluster.coordinator.offsets import (
    CommittedOffset, TopicPartition, commit_check, expired_offsets, is_removable, partition_error,
    subscribed_topics_of)
from kafkactl.cluster.coordinator.records import (
    NO_EXPIRE_TIMESTAMP, GroupKey, OffsetKey, encode_key, encode_offset_value)
from kafkactl.cluster.coordinator.shard import GroupEntry, GroupShard
from kafkactl.cluster.coordinator.store import commit_error

log = logging.getLogger(__name__)
S = GroupState
NO_OFFSET = -1


@dataclass(frozen=True, slots=True)
class OffsetCommitRequest:
    group_id: str
    member_id: str
    generation_id: int
    group_instance_id: str | None
    # (topic, partition) -> (offset, leader epoch, metadata or None)
    offsets: Mapping[TopicPartition, tuple[int, int, str | None]]
    retention_time_ms: int = -1


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupDescription:
    error: ErrorCode
    group_id: str
    state: str = S.DEAD.value
    protocol_type: str = ""
    protocol: str = ""
    members: tuple[MemberDescription, ...] = ()


# --- OffsetCommit

def commit(shard: GroupShard, request: OffsetCommitRequest, future: Future) -> None:
    """Answers `future` with {(topic, partition): ErrorCode}."""
    group_id = request.group_id
    error = shard.coordination_error(group_id)
    entry = shard.entry(group_id)
    if error is None:
        check = commit_check(entry.group if entry else None, request.member_id, request.generation_id,
                             request.group_instance_id)
        error = check.error
    if error is not None:
        future.set_result({tp: error for tp in request.offsets})
        return
    context = shard.context
    now_ms = context.clock_ms()
    if entry is None:
        entry = shard.add_entry(Group(group_id, state_timestamp_ms=now_ms))
    if check.member_id is not None:
        shard.keep_alive(entry, check.member_id)
    results: dict[TopicPartition, ErrorCode] = {}
    accepted: dict[TopicPartition, CommittedOffset] = {}
    expire_ms = now_ms + request.retention_time_ms if request.retention_time_ms >= 0 else NO_EXPIRE_TIMESTAMP
    for (topic, partition), (offset, leader_epoch, metadata) in request.offsets.items():
        refused = partition_error(context.topic_known(topic, partition), metadata,
                                  context.offset_metadata_max_bytes)
        if refused is not None:
            results[(topic, partition)] = refused
        else:
            accepted[(topic, partition)] = CommittedOffset(offset, metadata or "", now_ms, leader_epoch, expire_ms)
    if not accepted:
        future.set_result(results)
        return
    records = [(encode_key(OffsetKey(group_id, t, p)), encode_offset_value(o.to_value()))
               for (t, p), o in accepted.items()]

    def done(write_error: ErrorCode) -> None:
        shard.owner.submit_waiting(lambda: _committed(shard, entry, accepted, write_error, results, future), 5.0)

    context.writer.write(entry.partition, records, done)


def _committed(shard: GroupShard, entry: GroupEntry, accepted: Mapping[TopicPartition, CommittedOffset],
               write_error: ErrorCode, results: dict[TopicPartition, ErrorCode], future: Future) -> None:
    error = commit_error(write_error)
    if error == ErrorCode.none and shard.entry(entry.group.group_id) is entry:
        entry.offsets.update(accepted)
    results.update({tp: error for tp in accepted})
    future.set_result(results)


# --- OffsetFetch

def fetch(shard: GroupShard, group_id: str, partitions: Iterable[TopicPartition] | None, future: Future) -> None:
    """Answers `future` with (ErrorCode, {(topic, partition): CommittedOffset or None});
    `partitions` None asks for every committed offset of the group."""
    error = shard.coordination_error(group_id)
    if error is not None:
        future.set_result((error, {}))
        return
    entry = shard.entry(group_id)
    offsets = entry.offsets if entry is not None else {}
    if partitions is None:
        future.set_result((ErrorCode.none, dict(offsets)))
    else:
        future.set_result((ErrorCode.none, {tp: offsets.get(tp) for tp in partitions}))


# --- DescribeGroups, ListGroups

def describe(shard: GroupShard, group_id: str, future: Future) -> None:
    error = shard.coordination_error(group_id)
    entry = shard.entry(group_id)
    if error is not None:
        future.set_result(GroupDescription(error, group_id))
    elif entry is None:
        future.set_result(GroupDescription(ErrorCode.none, group_id))
    else:
        future.set_result(_summary(entry.group))


def _summary(group: Group) -> GroupDescription:
    """Kafka's group summary: member metadata and assignments only while Stable."""
    stable = group.state is S.STABLE and group.protocol_name is not None
    protocol = group.protocol_name if stable else ""
    members = tuple(MemberDescription(
        m.member_id, m.group_instance_id, m.client_id, m.client_host,
        m.metadata(protocol) if stable else b"", m.assignment if stable else b"")
        for m in group.members.values())
    return GroupDescription(ErrorCode.none, group.group_id, group.state.value, group.protocol_type or "",
                            protocol or "", members)


def list_groups(shard: GroupShard, future: Future) -> None:
    """Answers `future` with [(group_id, protocol_type, state)] of the served groups."""
    future.set_result([(group_id, entry.group.protocol_type or "", entry.group.state.value)
                       for group_id, entry in shard.entries.items()
                       if entry.partition in shard.installed and entry.group.state is not S.DEAD])


# --- DeleteGroups, OffsetDelete

def delete_group(shard: GroupShard, group_id: str, future: Future) -> None:
    error = shard.coordination_error(group_id)
    entry = shard.entry(group_id)
    if error is None and (entry is None or entry.group.state is S.DEAD):
        error = ErrorCode.group_id_not_found
    if error is None and entry.group.state is not S.EMPTY:
        error = ErrorCode.non_empty_group
    if error is not None:
        future.set_result(error)
        return
    _remove_group(shard, entry, future)


def delete_offsets(shard: GroupShard, group_id: str, partitions: Iterable[TopicPartition], future: Future) -> None:
    """Answers `future` with (group error, {(topic, partition): ErrorCode})."""
    error = shard.coordination_error(group_id)
    entry = shard.entry(group_id)
    if error is None and (entry is None or entry.group.state is S.DEAD):
        error = ErrorCode.group_id_not_found
    if error is not None:
        future.set_result((error, {}))
        return
    group = entry.group
    wanted = list(partitions)
    if group.state is S.EMPTY:
        deletable, results = wanted, {}
    elif group.protocol_type == "consumer":
        subscribed = subscribed_topics_of(group) or frozenset()
        deletable = [tp for tp in wanted if tp[0] not in subscribed]
        results = {tp: ErrorCode.group_subscribed_to_topic for tp in wanted if tp[0] in subscribed}
    else:
        future.set_result((ErrorCode.non_empty_group, {}))
        return
    _delete_offsets(shard, entry, deletable)
    results.update({tp: ErrorCode.none for tp in deletable})
    future.set_result((ErrorCode.none, results))


# --- expiry

def expire_offsets(shard: GroupShard) -> None:
    """Rules 5-8 of offsets.py over every group of the shard; Empty groups
    left without offsets are removed."""
    context = shard.context
    now_ms = context.clock_ms()
    for group_id, entry in list(shard.entries.items()):
        expired = expired_offsets(entry.group, entry.offsets, now_ms, context.offsets_retention_ms)
        if expired:
            log.info("group %s: %d committed offsets expired", group_id, len(expired))
            _delete_offsets(shard, entry, expired)
        if is_removable(entry.group, entry.offsets):
            _remove_group(shard, entry, None)


def _delete_offsets(shard: GroupShard, entry: GroupEntry, partitions: Iterable[TopicPartition]) -> None:
    records = []
    for topic, partition in partitions:
        if entry.offsets.pop((topic, partition), None) is not None:
            records.append((encode_key(OffsetKey(entry.group.group_id, topic, partition)), None))
    if records:
        shard.context.writer.write(entry.partition, records, _log_failure(entry.group.group_id, "offset tombstones"))


def _remove_group(shard: GroupShard, entry: GroupEntry, future: Future | None) -> None:
    group_id = entry.group.group_id
    records = [(encode_key(OffsetKey(group_id, t, p)), None) for t, p in entry.offsets]
    records.append((encode_key(GroupKey(group_id)), None))
    entry.group.transition_to(S.DEAD, shard.context.clock_ms())
    del shard.entries[group_id]
    if future is None:
        shard.context.writer.write(entry.partition, records, _log_failure(group_id, "group tombstones"))
        return

    def done(write_error: ErrorCode) -> None:
        future.set_result(commit_error(write_error))

    shard.context.writer.write(entry.partition, records, done)


def _log_failure(group_id: str, what: str):
    def done(error: ErrorCode) -> None:
        if error != ErrorCode.none:
            log.warning("group %s: writing %s failed: %s", group_id, what, error.name)
    return done
