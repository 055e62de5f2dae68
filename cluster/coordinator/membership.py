"""The membership decisions of the classic group protocol, as Apache Kafka
2.8's GroupCoordinator takes them (pure: no sockets, threads or disk; the
clock is `now_ms`, member ids come from an injected uuid source).

Each function takes the group (group.py; None when the coordinator has none
of that id), the request's fields and `now_ms`, updates the group and returns
a `Decision`: the reply to this request (None: the request is parked under
`waiting_as` until a later decision answers it), `answers` to requests parked
earlier, `timers` to (re)arm, members `removed`, and whether to `store` the
group's metadata. Timers are hints: a fired timer calls `on_join_deadline` or
`expire_sessions`, which re-read the deadlines kept in the group, so a stale
timer does nothing.

JoinGroup (`join_group`):
1. A session timeout outside group.min/max.session.timeout.ms:
   INVALID_SESSION_TIMEOUT. A member id for a group that does not exist:
   UNKNOWN_MEMBER_ID; an empty member id creates the group (Empty).
2. Past group.max.size: GROUP_MAX_SIZE_REACHED (in PreparingRebalance an
   already rejoined member is accepted, others while fewer than the maximum
   have rejoined; in CompletingRebalance and Stable known members are, new
   ones while the group is smaller than the maximum).
3. A Dead group: COORDINATOR_NOT_AVAILABLE. A protocol type other than the
   group's, or no protocol every member supports: INCONSISTENT_GROUP_PROTOCOL.
4. An empty member id gets `client_id-uuid` (`instance_id-uuid` for a static
   member). A known group.instance.id takes it over (static rejoin, rule 12);
   otherwise with JoinGroup v4+ the id is answered with MEMBER_ID_REQUIRED and
   recorded as pending (KIP-394); before v4 the member joins at once.
5. A pending member id joins. A known instance id with another member id:
   FENCED_INSTANCE_ID; an unknown member id (or unknown instance id):
   UNKNOWN_MEMBER_ID.
6. A joining member is parked until the rebalance completes. A known member
   rejoining in PreparingRebalance updates its protocols; in
   CompletingRebalance or Stable it starts a rebalance if its protocols
   changed (or, in Stable, if it is the leader), else it gets the current
   generation at once (the leader with the members' metadata).
7. A rebalance moves Empty, Stable or CompletingRebalance to
   PreparingRebalance; members parked in SyncGroup get REBALANCE_IN_PROGRESS.
   Its deadline: the largest rebalance timeout of the members; coming out of
   Empty, group.initial.rebalance.delay.ms, re-armed (delay, at most what is
   left of the rebalance timeout) while new members join a generation-0
   group.
8. PreparingRebalance completes when every member and no pending member is
   parked in JoinGroup (not before the initial delay is over), or at its
   deadline: dynamic members that did not rejoin are removed (static ones
   stay); if the leader did not rejoin, the first rejoined member leads; if
   none rejoined, the deadline is re-armed. Then generation + 1, the protocol
   by vote (Group.select_protocol), CompletingRebalance, each member answered
   (the leader with every member's metadata for the protocol, the others
   with none) and its session deadline armed; with no members left: Empty
   (and the group is stored).
SyncGroup (`sync_group`, `assignment_stored`):
9. Dead: COORDINATOR_NOT_AVAILABLE; then FENCED_INSTANCE_ID,
   UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, INCONSISTENT_GROUP_PROTOCOL (a
   given type or name other than the group's) in that order; Empty:
   UNKNOWN_MEMBER_ID; PreparingRebalance: REBALANCE_IN_PROGRESS; Stable: the
   member's assignment at once.
10. CompletingRebalance: the request is parked. The leader's also asks to
   store its assignment (members it left out get empty ones); once stored
   (`assignment_stored`, same generation still completing) the group is
   Stable and every parked member is answered; a failed store answers them
   with the error and starts a rebalance.
Heartbeat (`heartbeat`):
11. Dead: COORDINATOR_NOT_AVAILABLE; FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID,
   ILLEGAL_GENERATION; Empty: UNKNOWN_MEMBER_ID; PreparingRebalance:
   REBALANCE_IN_PROGRESS; CompletingRebalance and Stable: NONE (Kafka 2.3+
   accepts heartbeats between JoinGroup and SyncGroup). Except for the
   errors before the state, it re-arms the session deadline.
Static membership (KIP-345):
12. A known instance id joining with an empty member id gets a new member id
   that replaces the old one (whose parked requests get FENCED_INSTANCE_ID).
   In Stable, if the group's next protocol vote is unchanged, no rebalance:
   it is answered at once with the current generation and the old leader id
   (so it does not assign), and the group is stored. Otherwise (or in
   CompletingRebalance) a rebalance; in PreparingRebalance it waits.
LeaveGroup (`leave_group`, v3+ batched identities):
13. No group: every member UNKNOWN_MEMBER_ID; Dead: COORDINATOR_NOT_AVAILABLE.
   Per member: a known instance id with another member id:
   FENCED_INSTANCE_ID; a pending member is dropped; an unknown member id and
   instance id: UNKNOWN_MEMBER_ID; otherwise the member (by instance id when
   given, so an empty member id removes a static member) is removed.
14. Removing a member answers its parked JoinGroup UNKNOWN_MEMBER_ID; in
   Stable or CompletingRebalance it starts a rebalance; in
   PreparingRebalance the rebalance may complete (to Empty if none are left).
Session expiry (`expire_sessions`):
15. A pending member whose deadline passed is dropped; a member whose
   session deadline passed is removed (rule 14) unless it is parked in
   JoinGroup or SyncGroup and not new. A static member is removed too, which
   starts a rebalance.
"""

from __future__ import annotations

from collections.abc import Callable

from kio.schema.errors import ErrorCode

from kafkactl.cluster.coordinator.group import (
    NEW_MEMBER_JOIN_TIMEOUT_MS, Group, GroupConfig, Member, Protocols)
from kafkactl.cluster.coordinator.group_state import GroupState
from kafkactl.cluster.coordinator.messages import (
    NO_GENERATION, UNKNOWN_MEMBER, Answer, Decision, HeartbeatRequest, JoinedMember, JoinRequest,
    JoinResponse, LeaveResponse, MemberIdentity, MemberLeft, StoreGroup, SyncRequest, SyncResponse,
    Timer, TimerKind)

__all__ = [
    "NO_GENERATION", "UNKNOWN_MEMBER", "Answer", "Decision", "HeartbeatRequest", "JoinedMember",
    "JoinRequest", "JoinResponse", "LeaveResponse", "MemberIdentity", "MemberLeft", "StoreGroup",
    "SyncRequest", "SyncResponse", "Timer", "TimerKind", "assignment_stored", "expire_sessions",
    "heartbeat", "join_group", "keep_alive", "leave_group", "on_join_deadline", "rebalance", "sync_group"]

S = GroupState


# --- JoinGroup

def join_group(group: Group | None, req: JoinRequest, config: GroupConfig, now_ms: int,
               new_uuid: Callable[[], str]) -> Decision:
    """Rules 1-8 and 12."""
    if not config.min_session_timeout_ms <= req.session_timeout_ms <= config.max_session_timeout_ms:
        return Decision(group, JoinResponse(ErrorCode.invalid_session_timeout, req.member_id))
    unknown = req.member_id == UNKNOWN_MEMBER
    if group is None:
        if not unknown:
            return Decision(None, JoinResponse(ErrorCode.unknown_member_id, req.member_id))
        group = Group(req.group_id, state_timestamp_ms=now_ms)
    d = Decision(group)
    if not _accept_joining_member(group, req.member_id, config):
        group.remove(req.member_id)
        d.reply = JoinResponse(ErrorCode.group_max_size_reached, UNKNOWN_MEMBER)
    elif group.state is S.DEAD:
        d.reply = JoinResponse(ErrorCode.coordinator_not_available, req.member_id)
    elif not group.supports_protocols(req.protocol_type, req.protocols):
        d.reply = JoinResponse(ErrorCode.inconsistent_group_protocol, req.member_id)
    elif unknown:
        _join_unknown(group, req, config, now_ms, new_uuid, d)
    else:
        _join_known(group, req, config, now_ms, d)
    if group.state is S.PREPARING_REBALANCE:
        _try_complete_join(group, config, now_ms, d)
    return d._finish()


def _accept_joining_member(group: Group, member_id: str, config: GroupConfig) -> bool:
    member = group.members.get(member_id)
    if group.state in (S.EMPTY, S.DEAD):
        return True
    if group.state is S.PREPARING_REBALANCE:
        return (member is not None and member.awaiting_join) or group.num_awaiting_join() < config.max_size
    return member is not None or len(group.members) < config.max_size


def _join_unknown(group: Group, req: JoinRequest, config: GroupConfig, now_ms: int,
                  new_uuid: Callable[[], str], d: Decision) -> None:
    new_id = (req.group_instance_id if req.group_instance_id is not None else req.client_id) + "-" + new_uuid()
    old_id = group.static_member_id(req.group_instance_id)
    if old_id is not None:
        _replace_static_member(group, old_id, new_id, req, config, now_ms, d)
    elif req.version >= 4 and req.group_instance_id is None:
        deadline = now_ms + req.session_timeout_ms
        group.pending_members[new_id] = deadline
        d.timers.append(Timer(TimerKind.SESSION, new_id, deadline))
        d.reply = JoinResponse(ErrorCode.member_id_required, new_id)
    else:
        _add_member_and_rebalance(group, req, new_id, config, now_ms, d)


def _join_known(group: Group, req: JoinRequest, config: GroupConfig, now_ms: int, d: Decision) -> None:
    member_id = req.member_id
    if member_id in group.pending_members:
        _add_member_and_rebalance(group, req, member_id, config, now_ms, d)
        return
    if group.is_static_member_fenced(member_id, req.group_instance_id):
        d.reply = JoinResponse(ErrorCode.fenced_instance_id, member_id)
        return
    member = group.members.get(member_id)
    if member is None or (req.group_instance_id is not None
                          and group.static_member_id(req.group_instance_id) is None):
        d.reply = JoinResponse(ErrorCode.unknown_member_id, member_id)
        return
    if group.state is S.PREPARING_REBALANCE:
        _update_member_and_rebalance(group, member, req.protocols, config, now_ms, d)
    elif group.state is S.COMPLETING_REBALANCE:
        if member.matches(req.protocols):
            d.reply = _generation_response(group, member_id)
        else:
            _update_member_and_rebalance(group, member, req.protocols, config, now_ms, d)
    elif group.state is S.STABLE:
        if group.is_leader(member_id) or not member.matches(req.protocols):
            _update_member_and_rebalance(group, member, req.protocols, config, now_ms, d)
        else:
            d.reply = _generation_response(group, member_id)
    else:
        d.reply = JoinResponse(ErrorCode.unknown_member_id, member_id)


def _add_member_and_rebalance(group: Group, req: JoinRequest, member_id: str, config: GroupConfig,
                              now_ms: int, d: Decision) -> None:
    member = Member(member_id, req.group_instance_id, req.client_id, req.client_host,
                    req.rebalance_timeout_ms, req.session_timeout_ms, req.protocol_type,
                    tuple(req.protocols), awaiting_join=True, is_new=True)
    if group.state is S.PREPARING_REBALANCE and group.generation_id == 0:
        group.new_member_added = True
    group.add(member)
    _arm_session(member, now_ms + NEW_MEMBER_JOIN_TIMEOUT_MS, d)
    d.waiting_as = member_id
    _maybe_prepare_rebalance(group, config, now_ms, d)


def _update_member_and_rebalance(group: Group, member: Member, protocols: Protocols,
                                 config: GroupConfig, now_ms: int, d: Decision) -> None:
    member.protocols = tuple(protocols)
    member.awaiting_join = True
    d.waiting_as = member.member_id
    _maybe_prepare_rebalance(group, config, now_ms, d)


def _replace_static_member(group: Group, old_id: str, new_id: str, req: JoinRequest,
                           config: GroupConfig, now_ms: int, d: Decision) -> None:
    current_leader = group.leader_id
    old = group.members[old_id]
    if old.awaiting_join:
        d.answers.append(Answer(old_id, JoinResponse(ErrorCode.fenced_instance_id, old_id)))
    if old.awaiting_sync:
        d.answers.append(Answer(old_id, SyncResponse(ErrorCode.fenced_instance_id)))
        old.awaiting_sync = False
    member = group.replace_member_id(old_id, new_id)
    _arm_session(member, now_ms + member.session_timeout_ms, d)
    member.protocols = tuple(req.protocols)
    member.awaiting_join = True
    d.waiting_as = new_id
    if group.state is S.STABLE:
        if group.select_protocol() == group.protocol_name:
            member.awaiting_join = False
            d.waiting_as = None
            d.reply = JoinResponse(ErrorCode.none, new_id, group.generation_id, group.protocol_type,
                                   group.protocol_name, current_leader or "")
            d.store = StoreGroup(group.generation_id, _assignments(group))
        else:
            _maybe_prepare_rebalance(group, config, now_ms, d)
    elif group.state is S.COMPLETING_REBALANCE:
        _prepare_rebalance(group, config, now_ms, d)


def _generation_response(group: Group, member_id: str) -> JoinResponse:
    members: tuple[JoinedMember, ...] = ()
    if group.is_leader(member_id) and group.protocol_name is not None:
        protocol = group.protocol_name
        members = tuple(JoinedMember(m.member_id, m.group_instance_id, m.metadata(protocol))
                        for m in group.members.values())
    return JoinResponse(ErrorCode.none, member_id, group.generation_id, group.protocol_type,
                        group.protocol_name, group.leader_id or "", members)


# --- rebalances

def _maybe_prepare_rebalance(group: Group, config: GroupConfig, now_ms: int, d: Decision) -> None:
    if group.state in (S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY):
        _prepare_rebalance(group, config, now_ms, d)


def _prepare_rebalance(group: Group, config: GroupConfig, now_ms: int, d: Decision) -> None:
    if group.state is S.COMPLETING_REBALANCE:
        _reset_and_propagate_assignment_error(group, ErrorCode.rebalance_in_progress, d)
    timeout = group.rebalance_timeout_ms()
    if group.state is S.EMPTY:
        delay = config.initial_rebalance_delay_ms
        group.initial_delay_active = True
        group.initial_delay_ms = delay
        group.initial_remaining_ms = max(timeout - delay, 0)
        group.new_member_added = False
        _arm_join(group, now_ms + delay, d)
    else:
        group.initial_delay_active = False
        _arm_join(group, now_ms + timeout, d)
    group.transition_to(S.PREPARING_REBALANCE, now_ms)


def _reset_and_propagate_assignment_error(group: Group, error: ErrorCode, d: Decision) -> None:
    for member in group.members.values():
        member.assignment = b""
        if member.awaiting_sync:
            member.awaiting_sync = False
            d.answers.append(Answer(member.member_id, SyncResponse(error)))


def _try_complete_join(group: Group, config: GroupConfig, now_ms: int, d: Decision) -> None:
    if not group.initial_delay_active and group.all_joined():
        _complete_join(group, config, now_ms, d)


def on_join_deadline(group: Group, config: GroupConfig, now_ms: int) -> Decision:
    """The JOIN timer fired (rule 7 and 8): extend the initial delay, or complete."""
    d = Decision(group)
    if (group.state is not S.PREPARING_REBALANCE or group.join_deadline_ms is None
            or now_ms < group.join_deadline_ms):
        return d
    if group.initial_delay_active and group.new_member_added and group.initial_remaining_ms != 0:
        # Kafka's InitialDelayedJoin: the next delay is at most what remains;
        # what remains then shrinks by the delay that just ended.
        group.new_member_added = False
        delay = min(config.initial_rebalance_delay_ms, group.initial_remaining_ms)
        group.initial_remaining_ms = max(group.initial_remaining_ms - group.initial_delay_ms, 0)
        group.initial_delay_ms = delay
        _arm_join(group, now_ms + delay, d)
        return d
    _complete_join(group, config, now_ms, d)
    return d._finish()


def _complete_join(group: Group, config: GroupConfig, now_ms: int, d: Decision) -> None:
    group.initial_delay_active = False
    group.join_deadline_ms = None
    for member in [m for m in group.members.values() if not m.awaiting_join and not m.is_static]:
        group.remove(member.member_id)
        d.removed.append(member.member_id)
    if group.members and not _elect_joined_leader(group):
        _arm_join(group, now_ms + group.rebalance_timeout_ms(), d)
        return
    group.generation_id += 1
    if not group.members:
        group.protocol_name = None
        group.transition_to(S.EMPTY, now_ms)
        d.store = StoreGroup(group.generation_id, {})
        return
    group.protocol_name = group.select_protocol()
    group.transition_to(S.COMPLETING_REBALANCE, now_ms)
    for member in group.members.values():
        if member.awaiting_join:
            d.answers.append(Answer(member.member_id, _generation_response(group, member.member_id)))
        member.awaiting_join = False
        member.is_new = False
        _arm_session(member, now_ms + member.session_timeout_ms, d)


def _elect_joined_leader(group: Group) -> bool:
    leader = group.members.get(group.leader_id or "")
    if leader is None:
        return False
    if leader.awaiting_join:
        return True
    for member in group.members.values():
        if member.awaiting_join:
            group.leader_id = member.member_id
            return True
    return False


# --- SyncGroup

def sync_group(group: Group | None, req: SyncRequest, now_ms: int) -> Decision:
    """Rules 9 and 10."""
    if group is None:
        return Decision(None, SyncResponse(ErrorCode.unknown_member_id))
    d = Decision(group)
    error = _member_error(group, req.member_id, req.group_instance_id, req.generation_id)
    if error is None and ((req.protocol_type is not None and req.protocol_type != group.protocol_type)
                          or (req.protocol_name is not None and req.protocol_name != group.protocol_name)):
        error = ErrorCode.inconsistent_group_protocol
    if error is None and group.state is S.EMPTY:
        error = ErrorCode.unknown_member_id
    if error is None and group.state is S.PREPARING_REBALANCE:
        error = ErrorCode.rebalance_in_progress
    if error is not None:
        d.reply = SyncResponse(error)
        return d
    member = group.members[req.member_id]
    if group.state is S.STABLE:
        d.reply = SyncResponse(ErrorCode.none, member.assignment, group.protocol_type, group.protocol_name)
        _arm_session(member, now_ms + member.session_timeout_ms, d)
        return d
    member.awaiting_sync = True
    d.waiting_as = member.member_id
    if group.is_leader(member.member_id):
        assignments = {member_id: req.assignments.get(member_id, b"") for member_id in group.members}
        d.store = StoreGroup(group.generation_id, assignments)
    return d


def assignment_stored(group: Group, stored: StoreGroup, error: ErrorCode, config: GroupConfig,
                      now_ms: int) -> Decision:
    """The leader's assignment (`stored`, from sync_group's decision) was written, or failed."""
    d = Decision(group)
    if group.state is not S.COMPLETING_REBALANCE or group.generation_id != stored.generation_id:
        return d
    if error is not ErrorCode.none:
        _reset_and_propagate_assignment_error(group, error, d)
        _maybe_prepare_rebalance(group, config, now_ms, d)
        return d
    for member in group.members.values():
        member.assignment = stored.assignments.get(member.member_id, b"")
        if member.awaiting_sync:
            member.awaiting_sync = False
            d.answers.append(Answer(member.member_id, SyncResponse(
                ErrorCode.none, member.assignment, group.protocol_type, group.protocol_name)))
            _arm_session(member, now_ms + member.session_timeout_ms, d)
    group.transition_to(S.STABLE, now_ms)
    return d


# --- Heartbeat

def heartbeat(group: Group | None, req: HeartbeatRequest, now_ms: int) -> Decision:
    """Rule 11."""
    if group is None:
        return Decision(None, ErrorCode.unknown_member_id)
    d = Decision(group)
    error = _member_error(group, req.member_id, req.group_instance_id, req.generation_id)
    if error is not None:
        d.reply = error
    elif group.state is S.EMPTY:
        d.reply = ErrorCode.unknown_member_id
    else:
        member = group.members[req.member_id]
        _arm_session(member, now_ms + member.session_timeout_ms, d)
        d.reply = (ErrorCode.rebalance_in_progress if group.state is S.PREPARING_REBALANCE
                   else ErrorCode.none)
    return d


def _member_error(group: Group, member_id: str, instance_id: str | None,
                  generation_id: int) -> ErrorCode | None:
    if group.state is S.DEAD:
        return ErrorCode.coordinator_not_available
    if group.is_static_member_fenced(member_id, instance_id):
        return ErrorCode.fenced_instance_id
    if not group.has(member_id):
        return ErrorCode.unknown_member_id
    if generation_id != group.generation_id:
        return ErrorCode.illegal_generation
    return None


def keep_alive(group: Group, member_id: str, now_ms: int) -> Decision:
    """An accepted offset commit renews the member's session, as a heartbeat does."""
    d = Decision(group)
    member = group.members.get(member_id)
    if member is not None:
        _arm_session(member, now_ms + member.session_timeout_ms, d)
    return d


def rebalance(group: Group, config: GroupConfig, now_ms: int) -> Decision:
    """A rebalance the coordinator starts itself (seed 003: a subscribed topic
    gained partitions): Stable or CompletingRebalance -> PreparingRebalance;
    members learn it from their next heartbeat (REBALANCE_IN_PROGRESS)."""
    d = Decision(group)
    if group.state in (S.STABLE, S.COMPLETING_REBALANCE):
        _prepare_rebalance(group, config, now_ms, d)
    return d


# --- LeaveGroup and session expiry

def leave_group(group: Group | None, members: tuple[MemberIdentity, ...], config: GroupConfig,
                now_ms: int) -> Decision:
    """Rules 13 and 14."""
    if group is None:
        return Decision(None, LeaveResponse(ErrorCode.none, tuple(
            MemberLeft(m.member_id, m.group_instance_id, ErrorCode.unknown_member_id) for m in members)))
    d = Decision(group)
    if group.state is S.DEAD:
        d.reply = LeaveResponse(ErrorCode.coordinator_not_available)
        return d
    results = []
    for leaving in members:
        member_id, instance_id = leaving.member_id, leaving.group_instance_id
        static_id = group.static_member_id(instance_id)
        if member_id != UNKNOWN_MEMBER and group.is_static_member_fenced(member_id, instance_id):
            error = ErrorCode.fenced_instance_id
        elif member_id in group.pending_members:
            _remove_pending(group, member_id, config, now_ms, d)
            error = ErrorCode.none
        elif not group.has(member_id) and static_id is None:
            error = ErrorCode.unknown_member_id
        else:
            _remove_member_and_update(group, group.members[static_id or member_id], config, now_ms, d)
            error = ErrorCode.none
        results.append(MemberLeft(member_id, instance_id, error))
    d.reply = LeaveResponse(ErrorCode.none, tuple(results))
    return d._finish()


def expire_sessions(group: Group, config: GroupConfig, now_ms: int) -> Decision:
    """Rule 15: the members and pending members whose session deadline passed."""
    d = Decision(group)
    if group.state is S.DEAD:
        return d
    for member_id, deadline in list(group.pending_members.items()):
        if deadline <= now_ms:
            _remove_pending(group, member_id, config, now_ms, d)
    for member in list(group.members.values()):
        if member.session_deadline_ms <= now_ms and not member.satisfied_heartbeat():
            _remove_member_and_update(group, member, config, now_ms, d)
    return d


def _remove_pending(group: Group, member_id: str, config: GroupConfig, now_ms: int, d: Decision) -> None:
    del group.pending_members[member_id]
    d.removed.append(member_id)
    if group.state is S.PREPARING_REBALANCE:
        _try_complete_join(group, config, now_ms, d)


def _remove_member_and_update(group: Group, member: Member, config: GroupConfig, now_ms: int,
                              d: Decision) -> None:
    if member.awaiting_join:
        d.answers.append(Answer(member.member_id, JoinResponse(ErrorCode.unknown_member_id, UNKNOWN_MEMBER)))
    group.remove(member.member_id)
    d.removed.append(member.member_id)
    if group.state in (S.STABLE, S.COMPLETING_REBALANCE):
        _maybe_prepare_rebalance(group, config, now_ms, d)
    if group.state is S.PREPARING_REBALANCE:
        _try_complete_join(group, config, now_ms, d)


# --- helpers

def _arm_session(member: Member, deadline_ms: int, d: Decision) -> None:
    member.session_deadline_ms = deadline_ms
    d.timers.append(Timer(TimerKind.SESSION, member.member_id, deadline_ms))


def _arm_join(group: Group, deadline_ms: int, d: Decision) -> None:
    group.join_deadline_ms = deadline_ms
    d.timers.append(Timer(TimerKind.JOIN, None, deadline_ms))


def _assignments(group: Group) -> dict[str, bytes]:
    return {member_id: m.assignment for member_id, m in group.members.items()}
