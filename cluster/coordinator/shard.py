"""The groups one owner thread owns (owner.py), and the membership requests
applied to them: every method here runs on that thread only.

The pure decisions (membership.py) say what changes; this applies a
`Decision`: answers the request (a Future the handler waits on) or parks it,
answers requests parked earlier, arms timers on the owner, and writes the
group's metadata (store.py) when asked, feeding the outcome back to the
decisions (`assignment_stored`).

Whether this broker coordinates a group is decided here too, so that it is
consistent with the loads and unloads that the same thread applies in
order: a group of a partition being loaded is answered
COORDINATOR_LOAD_IN_PROGRESS, one of a partition this broker does not lead
NOT_COORDINATOR (`coordination_error`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from kafkactl.cluster.coordinator import membership
from kafkactl.cluster.coordinator.group import Group, GroupConfig
from kafkactl.cluster.coordinator.group_state import GroupState
from kafkactl.cluster.coordinator.loading import LoadedPartition, restore_group
from kafkactl.cluster.coordinator.messages import (
    Decision, HeartbeatRequest, JoinRequest, JoinResponse, LeaveResponse, MemberIdentity, StoreGroup,
    SyncRequest, SyncResponse, TimerKind)
from kafkactl.cluster.coordinator.offsets import CommittedOffset, TopicPartition, subscribed_topics_of
from kafkactl.cluster.coordinator.owner import OwnerThread
from kafkactl.cluster.coordinator.records import GroupKey, encode_group_value, encode_key
from kafkactl.cluster.coordinator.store import RecordWriter, group_error

log = logging.getLogger(__name__)
S = GroupState
JOIN = "join"
SYNC = "sync"


@dataclass(slots=True)
class GroupEntry:
    partition: int
    group: Group
    offsets: dict[TopicPartition, CommittedOffset] = field(default_factory=dict)
    joins: dict[str, Future] = field(default_factory=dict)    # parked JoinGroup, by member id
    syncs: dict[str, Future] = field(default_factory=dict)    # parked SyncGroup, by member id
    # Partition counts of the subscribed topics when the group last became
    # Stable (seed 003: a growth starts a rebalance); None while not Stable.
    partition_counts: dict[str, int] | None = None


@dataclass(frozen=True, slots=True)
class CoordinatorContext:
    """What every shard shares: settings, the clock, ids, the writer, and the
    coordinator's view of which partitions are being loaded."""
    config: GroupConfig
    clock_ms: Callable[[], int]
    new_uuid: Callable[[], str]
    writer: RecordWriter
    partition_for: Callable[[str], int]
    is_loading: Callable[[int], bool]
    offset_metadata_max_bytes: int
    offsets_retention_ms: int
    topic_known: Callable[[str, int], bool]
    partition_count: Callable[[str], int | None]


class GroupShard:
    def __init__(self, owner: OwnerThread, context: CoordinatorContext) -> None:
        self.owner = owner
        self.context = context
        self.entries: dict[str, GroupEntry] = {}
        self.installed: set[int] = set()

    # --- coordination

    def coordination_error(self, group_id: str) -> ErrorCode | None:
        partition = self.context.partition_for(group_id)
        if partition in self.installed:
            return None
        if self.context.is_loading(partition):
            return ErrorCode.coordinator_load_in_progress
        return ErrorCode.not_coordinator

    def install(self, partition: int, loaded: LoadedPartition, group_ids: Iterable[str]) -> None:
        """A loaded partition's groups (those of this shard) become served."""
        now_ms = self.context.clock_ms()
        for group_id in group_ids:
            group = restore_group(group_id, loaded.groups.get(group_id), now_ms)
            entry = GroupEntry(partition, group, dict(loaded.offsets.get(group_id, {})))
            self.entries[group_id] = entry
            for member in group.members.values():
                self._arm(group_id, TimerKind.SESSION, member.session_deadline_ms)
            if group.state is S.STABLE:
                self._note_partition_counts(entry)
        self.installed.add(partition)

    def unload(self, partition: int) -> None:
        """This broker stopped leading `partition`: its groups go; their parked
        requests hear NOT_COORDINATOR, so clients find the new coordinator."""
        self.installed.discard(partition)
        for group_id in [g for g, e in self.entries.items() if e.partition == partition]:
            entry = self.entries.pop(group_id)
            for future in entry.joins.values():
                _answer(future, JoinResponse(ErrorCode.not_coordinator, ""))
            for future in entry.syncs.values():
                _answer(future, SyncResponse(ErrorCode.not_coordinator))

    def entry(self, group_id: str) -> GroupEntry | None:
        return self.entries.get(group_id)

    def add_entry(self, group: Group) -> GroupEntry:
        entry = GroupEntry(self.context.partition_for(group.group_id), group)
        self.entries[group.group_id] = entry
        return entry

    # --- membership requests

    def join(self, request: JoinRequest, future: Future) -> None:
        error = self.coordination_error(request.group_id)
        if error is not None:
            _answer(future, JoinResponse(error, request.member_id))
            return
        entry = self.entries.get(request.group_id)
        context = self.context
        decision = membership.join_group(entry.group if entry else None, request, context.config,
                                         context.clock_ms(), context.new_uuid)
        if entry is None and decision.group is not None:
            entry = self.add_entry(decision.group)
        self._apply(request.group_id, entry, decision, future, parked=JOIN)

    def sync(self, request: SyncRequest, future: Future) -> None:
        error = self.coordination_error(request.group_id)
        if error is not None:
            _answer(future, SyncResponse(error))
            return
        entry = self.entries.get(request.group_id)
        decision = membership.sync_group(entry.group if entry else None, request, self.context.clock_ms())
        self._apply(request.group_id, entry, decision, future, parked=SYNC)

    def heartbeat(self, request: HeartbeatRequest, future: Future) -> None:
        error = self.coordination_error(request.group_id)
        if error is not None:
            _answer(future, error)
            return
        entry = self.entries.get(request.group_id)
        decision = membership.heartbeat(entry.group if entry else None, request, self.context.clock_ms())
        self._apply(request.group_id, entry, decision, future)

    def leave(self, group_id: str, members: tuple[MemberIdentity, ...], future: Future) -> None:
        error = self.coordination_error(group_id)
        if error is not None:
            _answer(future, LeaveResponse(error))
            return
        entry = self.entries.get(group_id)
        decision = membership.leave_group(entry.group if entry else None, members, self.context.config,
                                          self.context.clock_ms())
        self._apply(group_id, entry, decision, future)

    def keep_alive(self, entry: GroupEntry, member_id: str) -> None:
        self._apply(entry.group.group_id, entry,
                    membership.keep_alive(entry.group, member_id, self.context.clock_ms()), None)

    def check_partition_growth(self) -> None:
        """Seed 003: a Stable group whose subscribed topics gained partitions
        since it became Stable rebalances now, without waiting for its leader
        to notice in its own metadata."""
        for group_id, entry in list(self.entries.items()):
            if entry.group.state is not S.STABLE or not entry.partition_counts:
                continue   # not Stable, or no subscribed topic known
            grown = [t for t, count in entry.partition_counts.items()
                     if (self.context.partition_count(t) or 0) > count]
            if grown:
                log.info("group %s: subscribed topics %s gained partitions; rebalancing", group_id, grown)
                decision = membership.rebalance(entry.group, self.context.config, self.context.clock_ms())
                self._apply(group_id, entry, decision, None)

    # --- applying decisions

    def _apply(self, group_id: str, entry: GroupEntry | None, decision: Decision, future: Future | None,
               parked: str | None = None) -> None:
        """`parked`: JOIN or SYNC, where `future` waits if the decision parks it."""
        if entry is not None:
            for answer in decision.answers:
                waiting = entry.joins if isinstance(answer.response, JoinResponse) else entry.syncs
                pending = waiting.pop(answer.member_id, None)
                if pending is not None:
                    _answer(pending, answer.response)
            for member_id in decision.removed:
                for kind in (JOIN, SYNC):
                    pending = _parked(entry, kind).pop(member_id, None)
                    if pending is not None:   # removed without an answer: never leave a client hanging
                        _answer(pending, _unknown_member(kind))
            for timer in decision.timers:
                self._arm(group_id, timer.kind, timer.deadline_ms)
        if future is not None:
            if decision.reply is not None:
                _answer(future, decision.reply)
            elif decision.waiting_as is not None and entry is not None and parked is not None:
                waiting = _parked(entry, parked)
                previous = waiting.pop(decision.waiting_as, None)
                if previous is not None:   # a client re-sent: the older request is superseded
                    _answer(previous, _unknown_member(parked))
                waiting[decision.waiting_as] = future
        if entry is not None:
            if entry.group.state is S.STABLE and entry.partition_counts is None:
                self._note_partition_counts(entry)
            elif entry.group.state is not S.STABLE:
                entry.partition_counts = None
            if decision.store is not None:
                self._store_group(entry, decision.store)

    def _arm(self, group_id: str, kind: TimerKind, deadline_ms: int) -> None:
        self.owner.at(deadline_ms, lambda: self._timer(group_id, kind))

    def _timer(self, group_id: str, kind: TimerKind) -> None:
        entry = self.entries.get(group_id)
        if entry is None:
            return
        config, now_ms = self.context.config, self.context.clock_ms()
        if kind is TimerKind.JOIN:
            decision = membership.on_join_deadline(entry.group, config, now_ms)
        else:
            decision = membership.expire_sessions(entry.group, config, now_ms)
        self._apply(group_id, entry, decision, None)

    def _store_group(self, entry: GroupEntry, stored: StoreGroup) -> None:
        group = entry.group
        value = group.to_group_value()
        value = dataclasses.replace(value, members=tuple(
            dataclasses.replace(m, assignment=stored.assignments.get(m.member_id, m.assignment))
            for m in value.members))
        record = (encode_key(GroupKey(group.group_id)), encode_group_value(value))
        group_id = group.group_id

        def done(error: ErrorCode) -> None:
            self.owner.submit_waiting(lambda: self._group_stored(group_id, entry, stored, error), timeout_s=5.0)

        self.context.writer.write(entry.partition, [record], done)

    def _group_stored(self, group_id: str, entry: GroupEntry, stored: StoreGroup, error: ErrorCode) -> None:
        if self.entries.get(group_id) is not entry:
            return   # unloaded (its parked requests were answered then) or replaced
        if error != ErrorCode.none:
            log.warning("group %s: storing generation %s failed: %s", group_id, stored.generation_id, error.name)
        decision = membership.assignment_stored(entry.group, stored, group_error(error), self.context.config,
                                                self.context.clock_ms())
        self._apply(group_id, entry, decision, None)

    def _note_partition_counts(self, entry: GroupEntry) -> None:
        # A subscribed topic that does not exist counts 0: its creation is a growth too.
        topics = subscribed_topics_of(entry.group)
        entry.partition_counts = {t: self.context.partition_count(t) or 0 for t in topics or ()}


def _answer(future: Future, response) -> None:
    if not future.done():
        future.set_result(response)


def _parked(entry: GroupEntry, kind: str) -> dict[str, Future]:
    return entry.joins if kind == JOIN else entry.syncs


def _unknown_member(kind: str):
    return JoinResponse(ErrorCode.unknown_member_id, "") if kind == JOIN else SyncResponse(ErrorCode.unknown_member_id)
