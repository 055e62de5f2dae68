"""Partition reassignment (seed F, with Kafka's KIP-455 steps).

For each partition listed in /admin/reassign_partitions, with
RS = target + original, adding = target - original, removing = original - target:

1. write RS, adding and removing into /brokers/topics/<t> (unconditional);
2. bump the leader epoch and send LeaderAndIsr to every replica of RS, so the
   adding replicas start fetching (they are NewReplica);
3. wait until target is a subset of the ISR (ISR change notifications, broker
   start-up and failover call `reassignment_progress`);
4. in one conditional write: keep the leader if it is in the target and
   online, else elect the first online target replica in the ISR (a replica
   on an offline log dir is not online, see context.py); the ISR loses
   the removing replicas; LeaderAndIsr with replicas = target; StopReplica
   (delete) to the removing replicas;
5. once that write is in: write the final assignment and take the partition
   out of /admin/reassign_partitions, deleting it when no partition is left.

Deleting a topic calls off its reassignments (see deletion.py).

Steps 1, 2+4 and 5 are separate decisions because 1 and 5 are unconditional
writes that must follow (5) or precede (1) the conditional state write.

Kafka's ZooKeeper-era rules apply to new requests: every target broker must
be registered, and a partition already moving keeps its target until it is
done (a different target for it in the znode is ignored, as before KIP-455).
"""

from __future__ import annotations

from functools import partial
from typing import Callable, Iterable, Mapping, Sequence

from kafkactl.cluster.controller import partition_state_machine as psm
from kafkactl.cluster.controller import replica_state_machine as rsm
from kafkactl.cluster.controller.builder import DecisionBuilder
from kafkactl.cluster.controller.changes import announce
from kafkactl.cluster.controller.context import ControllerContext, Reassignment
from kafkactl.cluster.controller.election import Elected, reassignment_election
from kafkactl.cluster.controller.model import (
    RECOVERED, Decision, DeleteAdminPath, PartitionReplica, ReplicaAssignment, SetReassignments,
    TopicPartition, UpdateTopicAssignment,
)
from kafkactl.cluster.controller.partition_state_machine import PartitionStateName
from kafkactl.cluster.controller.replica_state_machine import ReplicaStateName
from kafkactl.cluster.zk import layout


def on_partition_reassignment(ctx: ControllerContext,
                              targets: Mapping[TopicPartition, Sequence[int]] | None) -> Decision:
    """/admin/reassign_partitions was created or changed; `targets` is its
    content (None or empty when the znode is absent)."""
    admin = {tp: tuple(t) for tp, t in (targets or {}).items()}
    return start_reassignments(ctx, admin, admin=admin)


def resume_reassignments(ctx: ControllerContext) -> Decision:
    """After failover: partitions moving according to their topic znode, and
    those still listed in /admin/reassign_partitions."""
    targets = dict(ctx.reassign_admin)
    for tp, assignment in ctx.assignments.items():
        if assignment.is_being_reassigned:
            targets[tp] = assignment.target
    return start_reassignments(ctx, targets, admin=None)


def start_reassignments(ctx: ControllerContext, targets: Mapping[TopicPartition, tuple[int, ...]],
                        admin: dict[TopicPartition, tuple[int, ...]] | None) -> Decision:
    b = DecisionBuilder(ctx)
    if admin is not None:
        b.ctx.reassign_admin = dict(admin)
    starting, dropped = [], []
    for tp, target in sorted(targets.items()):
        target = tuple(target)
        if tp in b.ctx.reassignments:
            continue
        if rejection(b.ctx, tp, target) is not None or _nothing_to_do(b.ctx.assignments[tp], target):
            dropped.append(tp)
            continue
        _begin(b.ctx, tp, target)
        starting.append(tp)
    for topic in sorted({tp.topic for tp in starting}):
        b.write(UpdateTopicAssignment(topic, b.ctx.topic_assignment(topic)))
    _drop_from_admin(b, dropped)
    moving = partial(move_replicas_decision, tps=frozenset(starting)) if starting else None
    return b.decision(then=moving)


def _nothing_to_do(current: ReplicaAssignment, target: tuple[int, ...]) -> bool:
    return not current.is_being_reassigned and target == current.replicas


def rejection(ctx: ControllerContext, tp: TopicPartition, target: tuple[int, ...]) -> str | None:
    """Why a requested reassignment cannot start, or None."""
    if tp not in ctx.assignments:
        return "unknown topic or partition"
    if ctx.is_queued_for_deletion(tp.topic):
        return "topic is being deleted"
    if ctx.assignments[tp].is_being_reassigned:
        return None          # resumed after failover: it was valid when it started
    if tp not in ctx.leadership:
        return "partition has no leader and ISR yet"
    if not target:
        return "empty replica list"
    if len(set(target)) != len(target):
        return "duplicate replicas"
    dead = [r for r in target if not ctx.is_broker_live(r)]
    if dead:
        return f"brokers {dead} are not live"
    return None


def _begin(ctx: ControllerContext, tp: TopicPartition, target: tuple[int, ...]) -> None:
    assignment = ReplicaAssignment.from_original_and_target(ctx.assignments[tp].original, target)
    ctx.assignments[tp] = assignment
    ctx.reassignments[tp] = Reassignment(target)
    for replica in ctx.partition_replicas(tp):
        if rsm.current_state(ctx.replica_states, replica) is ReplicaStateName.NON_EXISTENT:
            rsm.transition(ctx.replica_states, replica, ReplicaStateName.NEW)


def _step_with_retry(step: Callable[[DecisionBuilder, Iterable[TopicPartition]], None]):
    """(decision, retry) for a per-partition step: the decision finishes the
    reassignments that completed; a retry redoes the step for the partitions
    whose conditional writes failed, and retries itself."""
    def retry(ctx: ControllerContext, tps: frozenset[TopicPartition]) -> Decision:
        b = DecisionBuilder(ctx)
        step(b, tps)
        return b.decision(retry=retry)

    def decide(ctx: ControllerContext, tps: frozenset[TopicPartition]) -> Decision:
        b = DecisionBuilder(ctx)
        step(b, tps)
        return b.decision(retry=retry, then=finish_reassignments)

    return decide, retry


def move_replicas(b: DecisionBuilder, tps: Iterable[TopicPartition]) -> None:
    for tp in sorted(set(tps)):
        reassignment = b.ctx.reassignments.get(tp)
        state = b.ctx.leadership.get(tp)
        if reassignment is None or reassignment.completing or state is None:
            continue
        if not (set(reassignment.target) <= set(state.isr) and _complete(b, tp)):
            _bump_leader_epoch(b, tp)


def _progress(b: DecisionBuilder, tps: Iterable[TopicPartition]) -> None:
    for tp in sorted(set(tps)):
        reassignment = b.ctx.reassignments.get(tp)
        state = b.ctx.leadership.get(tp)
        if reassignment is None or reassignment.completing or state is None:
            continue
        if set(reassignment.target) <= set(state.isr):
            _complete(b, tp)


def _bump_leader_epoch(b: DecisionBuilder, tp: TopicPartition) -> None:
    # Brokers ignore a LeaderAndIsr without a newer leader epoch; the bump
    # makes them take the new replica set (and the adding replicas start).
    state = b.ctx.leadership[tp]
    b.write_next_state(tp, state.leader, state.isr, state.leader_recovery_state)
    announce(b, tp, new_replicas=b.ctx.assignments[tp].adding)


def _complete(b: DecisionBuilder, tp: TopicPartition) -> bool:
    ctx = b.ctx
    state, assignment = ctx.leadership[tp], ctx.assignments[tp]
    target = ctx.reassignments[tp].target
    if state.leader in target and ctx.is_replica_online(state.leader, tp):
        leader, recovery = state.leader, state.leader_recovery_state
    else:
        result = reassignment_election(target, state.isr, ctx.online_replicas(tp))
        if not isinstance(result, Elected):
            return False                      # wait: a target replica must come back first
        leader, recovery = result.leader, RECOVERED
    isr = [r for r in state.isr if r not in assignment.removing]
    b.write_next_state(tp, leader, isr, recovery)
    psm.transition(ctx.partition_states, tp, PartitionStateName.ONLINE)
    ctx.assignments[tp] = ReplicaAssignment(target)
    ctx.reassignments[tp] = Reassignment(target, completing=True)
    for broker_id in assignment.adding:
        if ctx.is_broker_live(broker_id) and not ctx.is_on_offline_dir(broker_id, tp):
            rsm.transition(ctx.replica_states, PartitionReplica(tp, broker_id), ReplicaStateName.ONLINE)
    for broker_id in assignment.removing:
        rsm.delete_now(ctx.replica_states, PartitionReplica(tp, broker_id))
        b.batch.stop_replica(broker_id, tp, delete=True)
    announce(b, tp)
    return True


# Steps 2 or 4 for partitions whose RS was just written.
move_replicas_decision, _ = _step_with_retry(move_replicas)
# Step 4 for the partitions whose target has caught up.
reassignment_progress, _ = _step_with_retry(_progress)


def finish_reassignments(ctx: ControllerContext) -> Decision:
    """Step 5 for every partition whose step 4 is in ZooKeeper."""
    b = DecisionBuilder(ctx)
    done = sorted(tp for tp, r in ctx.reassignments.items() if r.completing)
    if not done:
        return b.decision()
    for tp in done:
        del b.ctx.reassignments[tp]
    for topic in sorted({tp.topic for tp in done}):
        b.write(UpdateTopicAssignment(topic, b.ctx.topic_assignment(topic)))
    _drop_from_admin(b, done)
    return b.decision()


def _drop_from_admin(b: DecisionBuilder, tps: Iterable[TopicPartition]) -> None:
    admin = b.ctx.reassign_admin
    present = [tp for tp in tps if tp in admin]
    if not present:
        return
    for tp in present:
        del admin[tp]
    if admin:
        b.write(SetReassignments(tuple(sorted(admin.items()))))
    else:
        b.write(DeleteAdminPath(layout.REASSIGN_PARTITIONS))


def resume_reassignments_on(ctx: ControllerContext, broker_ids: Iterable[int]) -> Decision:
    """Brokers registered: partitions moving onto them may have caught up."""
    wanted = set(broker_ids)
    tps = [tp for tp, r in ctx.reassignments.items() if wanted.intersection(r.target)]
    return reassignment_progress(ctx, tps)

