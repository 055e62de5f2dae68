"""Loading a `__consumer_offsets` partition: its records replayed into the
groups and committed offsets it holds (pure: the records come in, in log
order; the coordinator's shell reads them from the log).

1. The last record of a key wins; a tombstone (null value) deletes the key:
   an offset key its offset, a group key the group's metadata.
2. A group is restored from its last metadata record: its generation,
   protocol type and name, leader and members (each with its subscription
   for the group's protocol and its assignment). A group with members is
   Stable, one without is Empty, as Kafka loads them; every member's session
   starts afresh at `now_ms` (it keeps heartbeating to the new coordinator,
   or expires a session timeout from now).
3. A group with offsets and no metadata (offsets committed outside group
   management) is Empty and has no protocol type.
4. A record that does not parse is skipped and counted, never raised: one
   bad record must not keep a partition's groups from loading.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kafkactl.cluster.coordinator.group import Group, Member
from kafkactl.cluster.coordinator.group_state import GroupState
from kafkactl.cluster.coordinator.offsets import NO_STATE_TIMESTAMP, CommittedOffset, TopicPartition
from kafkactl.cluster.coordinator.records import (
    GroupKey, GroupValue, OffsetKey, RecordFormatError, decode_group_value, decode_key, decode_offset_value)


@dataclass(slots=True)
class LoadedPartition:
    groups: dict[str, GroupValue] = field(default_factory=dict)
    offsets: dict[str, dict[TopicPartition, CommittedOffset]] = field(default_factory=dict)
    skipped: int = 0

    def group_ids(self) -> set[str]:
        return set(self.groups) | set(self.offsets)


def replay(records: Iterable[tuple[bytes | None, bytes | None]]) -> LoadedPartition:
    """Rules 1 and 4 over (key, value) records in log order."""
    loaded = LoadedPartition()
    for key_bytes, value_bytes in records:
        try:
            _apply(loaded, key_bytes, value_bytes)
        except RecordFormatError:
            loaded.skipped += 1
    return loaded


def _apply(loaded: LoadedPartition, key_bytes: bytes | None, value_bytes: bytes | None) -> None:
    if key_bytes is None:
        raise RecordFormatError("a __consumer_offsets record without a key")
    key = decode_key(key_bytes)
    if isinstance(key, OffsetKey):
        offsets = loaded.offsets.setdefault(key.group, {})
        if value_bytes is None:
            offsets.pop((key.topic, key.partition), None)
            if not offsets:
                del loaded.offsets[key.group]
        else:
            offsets[(key.topic, key.partition)] = CommittedOffset.from_value(decode_offset_value(value_bytes))
    elif isinstance(key, GroupKey):
        if value_bytes is None:
            loaded.groups.pop(key.group, None)
        else:
            loaded.groups[key.group] = decode_group_value(value_bytes)


def restore_group(group_id: str, value: GroupValue | None, now_ms: int) -> Group:
    """Rules 2 and 3."""
    if value is None:
        return Group(group_id, state_timestamp_ms=NO_STATE_TIMESTAMP)
    group = Group(group_id, generation_id=value.generation, protocol_type=value.protocol_type or None,
                  protocol_name=value.protocol, state_timestamp_ms=value.current_state_timestamp_ms)
    for stored in value.members:
        protocols = ((value.protocol, stored.subscription),) if value.protocol is not None else ()
        member = Member(stored.member_id, stored.group_instance_id, stored.client_id, stored.client_host,
                        stored.rebalance_timeout_ms, stored.session_timeout_ms, value.protocol_type,
                        protocols, assignment=stored.assignment,
                        session_deadline_ms=now_ms + stored.session_timeout_ms)
        group.add(member)
    group.leader_id = value.leader if value.leader in group.members else group.leader_id
    group.state = GroupState.STABLE if group.members else GroupState.EMPTY
    return group
