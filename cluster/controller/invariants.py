"""What must hold after every decision (`check_invariants`).

On one context: every ISR is a non-empty subset of the assigned replicas
(adding ones included); a leader is assigned and in the ISR unless it was
elected uncleanly and is still recovering; outside topics being deleted no
partition is led by a broker the controller knows is dead, nor by a replica
on a log dir its broker reported offline, and such a replica is not
OnlineReplica; state machines agree with the leadership they describe; the
bookkeeping refers only to partitions and replicas that exist (replicas on
offline log dirs: live brokers, known partitions).

Against the previous context of the same controller (or of its
predecessor): the controller epoch never goes back; per partition of the
same topic id the leader epoch and the zk version never go back, and the
same leader epoch always has the same leader. Checked step by step, that
makes one leader per partition per leader epoch over the whole history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet, Callable

from kafkactl.cluster.controller.context import ControllerContext
from kafkactl.cluster.controller.model import NO_LEADER, RECOVERING, PartitionReplica, TopicPartition
from kafkactl.cluster.controller.partition_state_machine import PartitionStateName
from kafkactl.cluster.controller.replica_state_machine import DELETION_STATES, ReplicaStateName
from kafkactl.cluster.invariant import invariant


def _require(condition: bool, message: Callable[[], str]) -> None:
    # The message is built only on failure: these checks run after every step.
    if not condition:
        invariant(False, message())


def check_invariants(ctx: ControllerContext, previous: ControllerContext | None = None,
                     retrying: frozenset[TopicPartition] = frozenset(),
                     only_changed: bool = False) -> None:
    """Raise InvariantViolation on the first property that does not hold.
    `retrying`: partitions whose writes failed and wait to be redone; their
    per-partition checks are skipped (see execution.execute).

    With `only_changed` (and a `previous` that passed), only partitions whose
    facts differ from `previous` are checked: what did not change still
    holds. The controller checks this way after every step, so a step that
    moves a few partitions of a 100,000-partition cluster does not pay for
    all of them; the simulation checks everything."""
    _require(ctx.shutting_down <= set(ctx.live_brokers),
             lambda: f"shutting-down brokers {sorted(ctx.shutting_down - set(ctx.live_brokers))} are not live")
    changes = changed_partitions(ctx, previous) if only_changed and previous is not None else None
    changed = None if changes is None else changes.partitions
    # In the contexts' own order, not a set's: the states a step wrote lie in
    # memory in that order, and visiting 10,000 of them at random costs twice
    # as much as the checks themselves (cache misses).
    assignments = ctx.assignments
    if changed is None:
        tps = [tp for tp in assignments if tp not in retrying] if retrying else assignments.keys()
    else:
        tps = [tp for tp in changed if tp in assignments and tp not in retrying]
    # Every replica of a partition has a state: checked per partition in full,
    # and otherwise only where the assignment changed; a replica state that
    # went away is caught by _check_bookkeeping.
    suspects, regressed = _screen_partitions(ctx, previous, tps, None if changes is None else changes.assignments)
    for tp in sorted(suspects):
        _check_partition(ctx, tp)
    _check_bookkeeping(ctx, changes, retrying)
    _check_offline_dirs(ctx, retrying)
    _check_index(ctx, changes)
    if previous is not None:
        # Partitions waiting for a retry were left out of the screen; their
        # epochs must not go back either.
        waiting = retrying & ctx.leadership.keys()
        _check_progress(ctx, previous, sorted(regressed) + sorted(
            waiting if changed is None else waiting & changed))


@dataclass(frozen=True, slots=True)
class Changes:
    # Ordered sets (a dict's keys): iterated in the contexts' order, see check_invariants.
    partitions: AbstractSet[TopicPartition]
    replicas: AbstractSet[PartitionReplica]   # whose state changed, or whose partition's assignment did
    assignments: AbstractSet[TopicPartition] = frozenset()   # whose assignment changed (or topic's deletion began/ended)


def changed_partitions(ctx: ControllerContext, previous: ControllerContext) -> Changes | None:
    """Partitions (and replicas) whose facts differ between the two contexts;
    None when a change concerns every partition. The core replaces values and
    never changes them, so an unchanged partition holds the very same objects."""
    if (ctx.controller_epoch != previous.controller_epoch or ctx.config != previous.config
            or ctx.topic_ids != previous.topic_ids):
        return None
    changed: dict[TopicPartition, None] = {}
    for now, before in ((ctx.leadership, previous.leadership), (ctx.partition_states, previous.partition_states)):
        changed.update(dict.fromkeys(_changed_keys(now, before)))
    reassigned = dict.fromkeys(_changed_keys(ctx.assignments, previous.assignments))
    replicas = dict.fromkeys(_changed_keys(ctx.replica_states, previous.replica_states))
    # A broker that died or came back changes what its partitions may be led by.
    moved = {b for b in ctx.live_brokers.keys() ^ previous.live_brokers.keys()} | {
        b for b, r in ctx.live_brokers.items() if b in previous.live_brokers and previous.live_brokers[b] != r}
    if moved:
        changed.update(dict.fromkeys([tp for tp, state in ctx.leadership.items() if state.leader in moved]))
    # A replica reported on an offline log dir may no longer lead its partition.
    offline_dirs, offline_before = ctx.replicas_on_offline_dirs, previous.replicas_on_offline_dirs
    if offline_dirs != offline_before:
        for broker_id, tps in offline_dirs.items():
            changed.update(dict.fromkeys(sorted(tps - offline_before.get(broker_id, frozenset()))))
    deleting = ctx.topics_to_delete ^ previous.topics_to_delete
    if deleting:
        reassigned.update(dict.fromkeys([tp for tp in ctx.assignments if tp.topic in deleting]))
    for tp in reassigned:
        replicas.update(dict.fromkeys(PartitionReplica(tp, b) for b in sorted({*ctx.replicas(tp), *previous.replicas(tp)})))
    changed.update(reassigned)
    changed.update(dict.fromkeys([r[0] for r in replicas]))
    return Changes(changed.keys(), replicas.keys(), reassigned.keys())


_ABSENT = object()


def _changed_keys(now: dict, before: dict) -> list:
    """Keys whose value is not the very same object in both dicts, or that
    only one of them has."""
    get = before.get
    changed = [key for key, value in now.items() if get(key, _ABSENT) is not value]
    # Keys gone from `now`: only look for them when the counts say there are
    # some (a set difference of 30,000 replica keys costs more than the rest).
    added = sum(1 for key in changed if key not in before) if len(before) > len(now) - len(changed) else 0
    if len(before) > len(now) - added:
        changed.extend(before.keys() - now.keys())
    return changed


def _screen_partitions(ctx: ControllerContext, previous: ControllerContext | None, tps,
                       replicas_changed: set[TopicPartition] | None) -> tuple[list, list]:
    """The partitions of `tps` that may break _check_partition, and those
    whose leadership may have gone back since `previous` (_check_progress).

    One pass with the context's lookups hoisted, because this runs on every
    partition a failover changed. The screen is at least as strict as the
    detailed checks (anything it passes, they pass), which then run on the
    suspects only and say what is wrong: they stay the single statement of
    the invariants. `replicas_changed`: the partitions whose replicas' states
    must be looked up (None: all)."""
    assignments, leadership, partition_states = ctx.assignments, ctx.leadership, ctx.partition_states
    replica_states, topic_ids, deleting, live = ctx.replica_states, ctx.topic_ids, ctx.topics_to_delete, ctx.live_brokers
    offline_dirs = ctx.replicas_on_offline_dirs
    epoch = ctx.controller_epoch
    online, offline, new = PartitionStateName.ONLINE, PartitionStateName.OFFLINE, PartitionStateName.NEW
    before_all = previous.leadership if previous is not None else None
    same_ids = previous is not None and previous.topic_ids == ctx.topic_ids
    # Per distinct replica list (partitions share a handful): its set, or
    # None when it is empty or repeats a broker.
    replica_sets: dict[tuple[int, ...], frozenset[int] | None] = {}
    suspects, regressed = [], []
    # Written with `in` and subscripts rather than .get(): a method call
    # costs more than the lookup it makes, 10,000s of times here.
    for tp in tps:
        assignment = assignments[tp]
        replicas = assignment.replicas
        if replicas in replica_sets:
            replica_set = replica_sets[replicas]
        else:
            replica_set = frozenset(replicas)
            if not replicas or len(replica_set) != len(replicas):
                replica_set = None
            replica_sets[replicas] = replica_set
        topic = tp[0]
        state = leadership[tp] if tp in leadership else None
        # Adding/removing replicas are screened out too: rare, checked in full.
        ok = replica_set is not None and topic in topic_ids and not assignment.adding and not assignment.removing
        if ok and (replicas_changed is None or tp in replicas_changed):
            for broker_id in replicas:
                if (tp, broker_id) not in replica_states:
                    ok = False
        if ok:
            partition_state = partition_states[tp] if tp in partition_states else None
            if state is None:
                ok = topic in deleting or partition_state is new
            else:
                isr, leader = state.isr, state.leader
                size = len(isr)
                # No repeats: compared directly for the usual sizes (a set per partition costs more).
                ok = ((size == 1 or (size == 2 and isr[0] != isr[1]) or (size > 2 and len(set(isr)) == size))
                      and replica_set.issuperset(isr) and state.controller_epoch <= epoch)
                if ok and leader != NO_LEADER:
                    ok = (leader in isr or state.leader_recovery_state == RECOVERING) and leader in replica_set
                if ok and topic not in deleting:
                    has_live_leader = leader != NO_LEADER and leader in live
                    ok = (leader == NO_LEADER or has_live_leader) and (
                        has_live_leader if partition_state is online
                        else partition_state is offline and not has_live_leader)
                    if ok and offline_dirs and leader in offline_dirs:
                        ok = tp not in offline_dirs[leader]
        if not ok:
            suspects.append(tp)
        if state is not None and before_all is not None and tp in before_all:
            before = before_all[tp]
            if before is not state and not (
                    state.zk_version >= before.zk_version and (
                        state.leader_epoch > before.leader_epoch
                        or (state.leader_epoch == before.leader_epoch and state.leader == before.leader))):
                if same_ids or previous.topic_ids.get(topic) == ctx.topic_ids.get(topic):
                    regressed.append(tp)
    return suspects, regressed


def _check_partition(ctx: ControllerContext, tp: TopicPartition) -> None:
    assignment = ctx.assignments[tp]
    replicas = assignment.replicas
    adding, removing = set(assignment.adding), set(assignment.removing)
    _require(tp.topic in ctx.topic_ids, lambda: f"{tp}: partition of an unknown topic")
    _require(bool(replicas) and len(set(replicas)) == len(replicas), lambda: f"{tp}: bad replicas {replicas}")
    _require(adding <= set(replicas) and removing <= set(replicas) and not adding & removing,
             lambda: f"{tp}: adding {assignment.adding} / removing {assignment.removing} do not fit {replicas}")
    for broker_id in replicas:
        _require((tp, broker_id) in ctx.replica_states, lambda: f"{tp}: replica on {broker_id} has no state")
    deleting = ctx.is_queued_for_deletion(tp.topic)
    state = ctx.leadership.get(tp)
    partition_state = ctx.partition_states.get(tp)
    if state is None:
        _require(deleting or partition_state is PartitionStateName.NEW,
                 lambda: f"{tp}: no leader and ISR but {partition_state}")
        return
    isr = state.isr
    _require(bool(isr) and len(set(isr)) == len(isr), lambda: f"{tp}: ISR {isr} is empty or repeats")
    _require(set(isr) <= set(replicas), lambda: f"{tp}: ISR {isr} is not a subset of the replicas {replicas}")
    _require(state.controller_epoch <= ctx.controller_epoch,
             lambda: f"{tp}: state written by controller epoch {state.controller_epoch} > ours")
    if state.leader != NO_LEADER:
        _require(state.leader in isr or state.leader_recovery_state == RECOVERING,
                 lambda: f"{tp}: leader {state.leader} is not in the ISR {isr}")
        _require(state.leader in replicas, lambda: f"{tp}: leader {state.leader} is not a replica {replicas}")
    if deleting:
        return
    _require(state.leader == NO_LEADER or ctx.is_broker_live(state.leader),
             lambda: f"{tp}: led by broker {state.leader}, which is dead")
    _require(not ctx.is_on_offline_dir(state.leader, tp),
             lambda: f"{tp}: led by broker {state.leader}, which reported it on an offline log dir")
    if partition_state is PartitionStateName.ONLINE:
        _require(ctx.has_live_leader(tp), lambda: f"{tp}: Online without a live leader ({state.leader})")
    else:
        _require(partition_state is PartitionStateName.OFFLINE and not ctx.has_live_leader(tp),
                 lambda: f"{tp}: {partition_state} with leader {state.leader}")


def _check_bookkeeping(ctx: ControllerContext, changes: Changes | None = None,
                       retrying: frozenset[TopicPartition] = frozenset()) -> None:
    changed = None if changes is None else changes.partitions
    # Only partitions without an assignment can break this: find those first
    # (usually none among the changed), then look them up.
    unassigned_changed = None if changed is None else changed - ctx.assignments.keys()
    for kind, facts in (("leadership", ctx.leadership), ("partition state", ctx.partition_states)):
        if unassigned_changed is None:
            unassigned = facts.keys() - ctx.assignments.keys()
        else:
            unassigned = {tp for tp in unassigned_changed if tp in facts}
        if unassigned:
            invariant(False, f"{min(unassigned)}: {kind} of an unassigned partition")
    all_states = ctx.replica_states
    get_state, get_assignment, deleting = all_states.get, ctx.assignments.get, ctx.topics_to_delete
    suspects = []
    for replica in all_states if changes is None else changes.replicas:
        state = get_state(replica)
        tp, broker_id = replica
        assignment = get_assignment(tp)
        if state is None:
            # Gone: it must not be a replica of the partition any more.
            if assignment is not None and broker_id in assignment.replicas and tp not in retrying:
                suspects.append(replica)
            continue
        if (assignment is None or broker_id not in assignment.replicas
                or (state in DELETION_STATES and tp[0] not in deleting)):
            suspects.append(replica)
    for replica in sorted(suspects):                     # the same report on every run
        tp = replica.topic_partition
        if replica not in all_states:
            invariant(False, f"{tp}: replica on {replica.broker_id} has no state")
        state = all_states[replica]
        _require(replica.broker_id in ctx.replicas(tp), lambda: f"{replica}: state {state.value} of no replica")
        _require(state not in DELETION_STATES or ctx.is_queued_for_deletion(tp.topic),
                 lambda: f"{replica}: {state.value} but the topic is not being deleted")
    for tp, reassignment in ctx.reassignments.items():
        assignment = ctx.assignments.get(tp)
        _require(assignment is not None, lambda: f"{tp}: reassignment of an unknown partition")
        expected = assignment.replicas if reassignment.completing else assignment.target
        _require(expected == reassignment.target,
                 lambda: f"{tp}: reassignment target {reassignment.target} but assignment {assignment}")
    _require(ctx.deletion_ineligible <= ctx.topics_to_delete,
             lambda: f"topics {sorted(ctx.deletion_ineligible - ctx.topics_to_delete)} ineligible but not deleted")


def _check_offline_dirs(ctx: ControllerContext, retrying: frozenset[TopicPartition]) -> None:
    """Replicas on offline log dirs: of live brokers, of known partitions,
    and not OnlineReplica (outside topics being deleted, whose replicas the
    deletion moves). Checked in full: a handful of entries, nearly always none."""
    for broker_id, tps in ctx.replicas_on_offline_dirs.items():
        _require(broker_id in ctx.live_brokers,
                 lambda: f"broker {broker_id} is not live but its offline log dirs are remembered")
        _require(bool(tps), lambda: f"broker {broker_id}: an empty set of replicas on offline log dirs")
        for tp in tps:
            _require(tp in ctx.assignments, lambda: f"{tp}@{broker_id}: on an offline log dir of an unknown partition")
            if tp in retrying or ctx.is_queued_for_deletion(tp.topic):
                continue
            replica_state = ctx.replica_states.get(PartitionReplica(tp, broker_id))
            _require(replica_state is not ReplicaStateName.ONLINE,
                     lambda: f"{tp}@{broker_id}: OnlineReplica on a log dir its broker reported offline")


def _check_index(ctx: ControllerContext, changes: Changes | None = None) -> None:
    """The per-broker replica index agrees with the assignments: in full, or
    for the partitions whose assignment or replicas changed."""
    assignments = ctx.assignments
    if changes is None:
        expected: dict[int, set[TopicPartition]] = {}
        for tp, assignment in assignments.items():
            for broker_id in assignment.replicas:
                expected.setdefault(broker_id, set()).add(tp)
        for broker_id in set(expected) | set(assignments.brokers()):
            _require(assignments.partitions_on(broker_id) == expected.get(broker_id, set()),
                     lambda: f"the replica index of broker {broker_id} does not match the assignments")
        return
    # The index changes only with the assignments, so only partitions whose
    # assignment changed can have it wrong, and only on the brokers of their
    # replicas before or after (changes.replicas lists both); the full check
    # (the simulation runs it at every step) covers the rest.
    reassigned = changes.assignments
    if not reassigned:
        return
    for replica in changes.replicas:
        tp, broker_id = replica
        if tp not in reassigned:
            continue
        assignment = assignments.get(tp)
        replicas = assignment.replicas if assignment is not None else ()
        _require((tp in assignments.partitions_on(broker_id)) == (broker_id in replicas),
                 lambda: f"{tp}: the replica index of broker {broker_id} does not match {replicas}")


def _check_progress(ctx: ControllerContext, previous: ControllerContext, tps) -> None:
    """The controller epoch, and the leadership of `tps` (those the screen
    flagged), never go back."""
    _require(ctx.controller_epoch >= previous.controller_epoch,
             lambda: f"controller epoch went back: {previous.controller_epoch} -> {ctx.controller_epoch}")
    for tp in tps:
        state = ctx.leadership[tp]
        before = previous.leadership.get(tp)
        if before is None or previous.topic_ids.get(tp.topic) != ctx.topic_ids.get(tp.topic):
            continue
        _require(state.leader_epoch >= before.leader_epoch,
                 lambda: f"{tp}: leader epoch went back: {before.leader_epoch} -> {state.leader_epoch}")
        _require(state.zk_version >= before.zk_version,
                 lambda: f"{tp}: zk version went back: {before.zk_version} -> {state.zk_version}")
        _require(state.leader_epoch != before.leader_epoch or state.leader == before.leader,
                 lambda: f"{tp}: leader epoch {state.leader_epoch} has two leaders, "
                         f"{before.leader} and {state.leader}")
