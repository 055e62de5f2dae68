"""What must hold after every decision (`check_invariants`).

On one context: every ISR is a non-empty subset of the assigned replicas
(adding ones included); a leader is assigned and in the ISR unless it was
elected uncleanly and is still recovering; outside topics being deleted no
partition is led by a broker the controller knows is dead; state machines
agree with the leadership they describe; the bookkeeping refers only to
partitions and replicas that exist.

Against the previous context of the same controller (or of its
predecessor): the controller epoch never goes back; per partition of the
same topic id the leader epoch and the zk version never go back, and the
same leader epoch always has the same leader. Checked step by step, that
makes one leader per partition per leader epoch over the whole history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from kafkactl.cluster.controller.context import ControllerContext
from kafkactl.cluster.controller.model import NO_LEADER, RECOVERING, PartitionReplica, TopicPartition
from kafkactl.cluster.controller.partition_state_machine import PartitionStateName
from kafkactl.cluster.controller.replica_state_machine import DELETION_STATES
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
    for tp in (ctx.all_partitions() if changed is None else sorted(changed & ctx.assignments.keys())):
        if tp not in retrying:
            _check_partition(ctx, tp)
    _check_bookkeeping(ctx, changes)
    if previous is not None:
        _check_progress(ctx, previous, changed)


@dataclass(frozen=True, slots=True)
class Changes:
    partitions: set[TopicPartition]
    replicas: set[PartitionReplica]   # whose state changed, or whose partition's assignment did


def changed_partitions(ctx: ControllerContext, previous: ControllerContext) -> Changes | None:
    """Partitions (and replicas) whose facts differ between the two contexts;
    None when a change concerns every partition. The core replaces values and
    never changes them, so an unchanged partition holds the very same objects."""
    if (ctx.controller_epoch != previous.controller_epoch or ctx.config != previous.config
            or ctx.topic_ids != previous.topic_ids):
        return None
    changed: set[TopicPartition] = set()
    for now, before in ((ctx.leadership, previous.leadership), (ctx.partition_states, previous.partition_states)):
        changed.update(tp for tp, value in now.items() if before.get(tp) is not value)
        changed.update(before.keys() - now.keys())
    reassigned = {tp for tp, value in ctx.assignments.items() if previous.assignments.get(tp) is not value}
    reassigned.update(previous.assignments.keys() - ctx.assignments.keys())
    now_replicas, before_replicas = ctx.replica_states, previous.replica_states
    replicas = {r for r, state in now_replicas.items() if before_replicas.get(r) is not state}
    replicas.update(before_replicas.keys() - now_replicas.keys())
    # A broker that died or came back changes what its partitions may be led by.
    moved = {b for b in ctx.live_brokers.keys() ^ previous.live_brokers.keys()} | {
        b for b, r in ctx.live_brokers.items() if b in previous.live_brokers and previous.live_brokers[b] != r}
    if moved:
        changed.update(tp for tp, state in ctx.leadership.items() if state.leader in moved)
    deleting = ctx.topics_to_delete ^ previous.topics_to_delete
    if deleting:
        reassigned.update(tp for tp in ctx.assignments if tp.topic in deleting)
    for tp in reassigned:
        replicas.update(PartitionReplica(tp, b) for b in {*ctx.replicas(tp), *previous.replicas(tp)})
    changed.update(reassigned)
    changed.update(r.topic_partition for r in replicas)
    return Changes(changed, replicas)


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
    if partition_state is PartitionStateName.ONLINE:
        _require(ctx.has_live_leader(tp), lambda: f"{tp}: Online without a live leader ({state.leader})")
    else:
        _require(partition_state is PartitionStateName.OFFLINE and not ctx.has_live_leader(tp),
                 lambda: f"{tp}: {partition_state} with leader {state.leader}")


def _check_bookkeeping(ctx: ControllerContext, changes: Changes | None = None) -> None:
    changed = None if changes is None else changes.partitions
    for tp in ctx.leadership if changed is None else changed & ctx.leadership.keys():
        _require(tp in ctx.assignments, lambda: f"{tp}: leadership of an unassigned partition")
    for tp in ctx.partition_states if changed is None else changed & ctx.partition_states.keys():
        _require(tp in ctx.assignments, lambda: f"{tp}: partition state of an unassigned partition")
    replica_states = ctx.replica_states.items() if changes is None else [
        (r, ctx.replica_states[r]) for r in changes.replicas if r in ctx.replica_states]
    for replica, state in replica_states:
        tp = replica.topic_partition
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


def _check_progress(ctx: ControllerContext, previous: ControllerContext,
                    changed: set[TopicPartition] | None = None) -> None:
    _require(ctx.controller_epoch >= previous.controller_epoch,
             lambda: f"controller epoch went back: {previous.controller_epoch} -> {ctx.controller_epoch}")
    for tp in ctx.leadership if changed is None else changed & ctx.leadership.keys():
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
