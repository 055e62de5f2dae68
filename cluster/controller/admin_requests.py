"""The Admin API's requests to the controller, decided as Kafka 2.8's
KafkaController decides them in ZooKeeper mode (pure; the event thread runs
them, controller.py). Each returns per-partition results, (error, message)
with Kafka's error codes, and what to carry out.

ElectLeaders (processReplicaLeaderElection, AdminClientTriggered):
- a partition the controller does not know: UNKNOWN_TOPIC_OR_PARTITION;
  of a topic queued for deletion: INVALID_TOPIC_EXCEPTION;
- PREFERRED: ELECTION_NOT_NEEDED when the first assigned replica leads;
  otherwise it takes over when online and in the ISR, else
  PREFERRED_LEADER_NOT_AVAILABLE (with the reason). Partitions being
  reassigned are left alone, as `kafkactl elect` and the rebalance do here
  (preferred.py), and answered PREFERRED_LEADER_NOT_AVAILABLE;
- UNCLEAN: ELECTION_NOT_NEEDED when a live broker leads; otherwise the
  offline election with unclean allowed whatever the topic's config says (a
  live ISR replica first, else the first live assigned replica), else
  ELIGIBLE_LEADERS_NOT_AVAILABLE;
- a partition elected: NONE with its new leader (the handler then waits for
  the metadata to show it, Kafka's DelayedElectLeader).

AlterPartitionReassignments (processApiPartitionReassignment, KIP-455):
- a target that is empty, has duplicates or negative ids, or adds a broker
  that is not registered: INVALID_REPLICA_ASSIGNMENT. Stricter than Kafka:
  every target broker must be registered (this controller starts no move
  onto a dead broker, reassignment.py);
- a null target (cancel) for a partition not being reassigned:
  NO_REASSIGNMENT_IN_PROGRESS; an unknown partition or one of a topic
  queued for deletion: UNKNOWN_TOPIC_OR_PARTITION;
- a partition not moving starts moving to its target (reassignment.py's
  steps); a partition moving gets the new target: the full replica set is
  recomputed from its original replicas (cancel: the target is the original
  replicas), replicas no longer in it leave the ISR first and are stopped and
  deleted, as Kafka's onPartitionReassignment does with `unneededReplicas`. A
  leader that would be removed is replaced by the first online replica of the
  new set in the ISR; when there is none the change is refused
  (INVALID_REPLICA_ASSIGNMENT) rather than leaving the partition leaderless;
- an accepted partition leaves /admin/reassign_partitions first, before
  anything else is written (Kafka's maybeRemoveFromZkReassignment): the
  latest request wins, as in Kafka, also over a controller failover. Left
  for last, a controller killed after the topic znode took the request
  (say, a cancel: back on its original replicas) but before the admin
  znode lost the partition left a new controller the old target to start
  again: the cancelled move resumed;
- a request takes effect, for a new controller, when the topic znode holds
  its full replica set (or its final replicas); killed before that, the
  move the topic znode shows (if any) goes on and the client, who got no
  answer, may ask again. A move starts by that write; a new target writes
  it only after the replicas it drops have left the ISR and the leader has
  been told the new replica set with a new leader epoch (`retarget`), so
  that no ISR in ZooKeeper ever names a replica its topic znode does not;
- the answer is what was carried out: a partition whose change could not
  go through after all (its ISR shrank between the check and the write)
  is refused, not answered NONE.

ListPartitionReassignments: the partitions being reassigned (all, or those
asked that are), with their full replica set, adding and removing replicas.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import partial

from kio.schema.errors import ErrorCode

from kafkactl.cluster.controller import partition_state_machine as psm
from kafkactl.cluster.controller import replica_state_machine as rsm
from kafkactl.cluster.controller.builder import DecisionBuilder, chain
from kafkactl.cluster.controller.changes import announce, sorted_unique
from kafkactl.cluster.controller.context import ControllerContext, Reassignment
from kafkactl.cluster.controller.election import Elected, offline_election, preferred_election, reassignment_election
from kafkactl.cluster.controller.model import (
    NO_LEADER, Decision, PartitionReplica, ReplicaAssignment, TopicPartition, UpdateTopicAssignment,
)
from kafkactl.cluster.controller.partition_state_machine import PartitionStateName
from kafkactl.cluster.controller.preferred import elect_preferred
from kafkactl.cluster.controller.reassignment import _drop_from_admin, move_replicas_decision, start_reassignments
from kafkactl.cluster.controller.replica_state_machine import ReplicaStateName

Result = tuple[ErrorCode, str | None]
NONE: Result = (ErrorCode.none, None)
UNKNOWN: Result = (ErrorCode.unknown_topic_or_partition, "The partition does not exist.")


# --- ElectLeaders

def election_candidates(ctx: ControllerContext, partitions: Iterable[TopicPartition] | None,
                        unclean: bool) -> tuple[dict[TopicPartition, Result], list[TopicPartition]]:
    """(results of the partitions settled without an election, those to elect);
    `partitions` None: every partition."""
    settled: dict[TopicPartition, Result] = {}
    electable = []
    for tp in sorted_unique(ctx.all_partitions() if partitions is None else partitions):
        if tp not in ctx.assignments:
            settled[tp] = UNKNOWN
        elif ctx.is_queued_for_deletion(tp.topic):
            settled[tp] = (ErrorCode.invalid_topic_exception, "The topic is being deleted")
        elif not _needs_election(ctx, tp, unclean):
            settled[tp] = (ErrorCode.election_not_needed, None)
        else:
            electable.append(tp)
    return settled, electable


def _needs_election(ctx: ControllerContext, tp: TopicPartition, unclean: bool) -> bool:
    state = ctx.leadership.get(tp)
    leader = NO_LEADER if state is None else state.leader
    if unclean:
        return leader == NO_LEADER or not ctx.is_broker_live(leader)
    return leader != ctx.replicas(tp)[0]


def elect(ctx: ControllerContext, tps: frozenset[TopicPartition], unclean: bool) -> Decision:
    """Elect `tps` (retried on the fresh state when a conditional write fails)."""
    b = DecisionBuilder(ctx)
    if not unclean:
        elect_preferred(b, tps)
    else:
        online = ctx.online_brokers()
        for tp in sorted_unique(tps):
            state = b.ctx.leadership.get(tp)
            if state is None or not _needs_election(b.ctx, tp, True):
                continue
            result = offline_election(b.ctx.replicas(tp), state.isr, b.ctx.online_replicas(tp, online), True)
            if isinstance(result, Elected):
                b.write_next_state(tp, result.leader, result.isr, result.leader_recovery_state)
                psm.transition(b.ctx.partition_states, tp, PartitionStateName.ONLINE)
                announce(b, tp)
    return b.decision(retry=partial(elect, unclean=unclean))


def election_results(ctx: ControllerContext, tps: Iterable[TopicPartition],
                     unclean: bool) -> dict[TopicPartition, tuple[ErrorCode, str | None, int]]:
    """After `elect`: (error, message, leader) of each partition asked."""
    results = {}
    for tp in tps:
        state = ctx.leadership.get(tp)
        if tp not in ctx.assignments:
            results[tp] = (*UNKNOWN, NO_LEADER)
        elif state is not None and not _needs_election(ctx, tp, unclean):
            results[tp] = (ErrorCode.none, None, state.leader)
        else:
            results[tp] = (*_not_elected(ctx, tp, unclean), NO_LEADER)
    return results


def _not_elected(ctx: ControllerContext, tp: TopicPartition, unclean: bool) -> Result:
    state = ctx.leadership.get(tp)
    error = ErrorCode.eligible_leaders_not_available if unclean else ErrorCode.preferred_leader_not_available
    if state is None:
        return error, f"partition {tp.topic}-{tp.partition} has no leader and ISR yet"
    if not unclean and ctx.is_being_reassigned(tp):
        return error, f"partition {tp.topic}-{tp.partition} is being reassigned"
    live = ctx.online_replicas(tp)
    result = (offline_election(ctx.replicas(tp), state.isr, live, True) if unclean
              else preferred_election(ctx.replicas(tp), state.isr, live))
    reason = getattr(result, "reason", "the election did not go through")
    return error, f"Failed to elect leader for partition {tp.topic}-{tp.partition}: {reason}"


# --- AlterPartitionReassignments

def reassignment_requests(ctx: ControllerContext, requests: Mapping[TopicPartition, Sequence[int] | None]):
    """(results, partitions to start moving: target, moving partitions to
    retarget: target); only the accepted ones are in the two maps."""
    results: dict[TopicPartition, Result] = {}
    starts: dict[TopicPartition, tuple[int, ...]] = {}
    retargets: dict[TopicPartition, tuple[int, ...]] = {}
    for tp, target in sorted(requests.items()):
        refusal = None if target is None else _invalid_target(ctx, tp, tuple(target))
        moving = tp in ctx.reassignments
        if refusal is not None:
            results[tp] = refusal
        elif target is None and not moving:
            results[tp] = (ErrorCode.no_reassignment_in_progress, None)
        elif tp not in ctx.assignments or ctx.is_queued_for_deletion(tp.topic):
            results[tp] = UNKNOWN
        elif not moving and tp not in ctx.leadership:
            # reassignment.py starts no move without a leader and ISR to
            # grow: refused here, not answered NONE and then dropped.
            results[tp] = (ErrorCode.leader_not_available, f"partition {tp} has no leader and ISR yet")
        elif moving:
            wanted = ctx.assignments[tp].original if target is None else tuple(target)
            refusal = _leader_refusal(ctx, tp, wanted)
            results[tp] = refusal or NONE
            if refusal is None and wanted != ctx.reassignments[tp].target:
                retargets[tp] = wanted
        else:
            results[tp] = NONE
            starts[tp] = tuple(target)
    return results, starts, retargets


def _invalid_target(ctx: ControllerContext, tp: TopicPartition, target: tuple[int, ...]) -> Result | None:
    if not target:
        return ErrorCode.invalid_replica_assignment, "Empty replica list specified in partition reassignment."
    if len(set(target)) != len(target):
        return (ErrorCode.invalid_replica_assignment,
                f"Duplicate replica ids in partition reassignment replica list: {list(target)}")
    if any(r < 0 for r in target):
        return ErrorCode.invalid_replica_assignment, f"Invalid broker id in replica list: {list(target)}"
    dead = [r for r in target if not ctx.is_broker_live(r)]
    if dead:
        return (ErrorCode.invalid_replica_assignment,
                f"Replica assignment has brokers that are not alive. Replica list: {list(target)}, "
                f"live broker list: {sorted(ctx.live_brokers)}")
    return None


def _retargeted(ctx: ControllerContext, tp: TopicPartition, target: tuple[int, ...]):
    """(new assignment, replicas no longer in it) of a moving partition."""
    old = ctx.assignments[tp]
    new = ReplicaAssignment.from_original_and_target(old.original, target)
    return new, [r for r in old.replicas if r not in new.replicas]


def _leader_refusal(ctx: ControllerContext, tp: TopicPartition, target: tuple[int, ...]) -> Result | None:
    state = ctx.leadership.get(tp)
    if state is None:
        return None
    new, unneeded = _retargeted(ctx, tp, target)
    isr = [r for r in state.isr if r not in unneeded]
    if state.leader in unneeded:
        if isinstance(reassignment_election(new.replicas, isr, ctx.online_replicas(tp)), Elected):
            return None
        return (ErrorCode.invalid_replica_assignment,
                f"the new replica list {list(target)} removes the leader {state.leader} and no other replica "
                f"of it is online and in the ISR {list(state.isr)}")
    if not isr:
        return (ErrorCode.invalid_replica_assignment,
                f"the new replica list {list(target)} removes every replica of the ISR {list(state.isr)}")
    return None


def retarget(ctx: ControllerContext, retargets: Mapping[TopicPartition, tuple[int, ...]]) -> Decision:
    """First step for moving partitions given a new target, one conditional
    state write each: the replicas leaving drop out of the ISR (and lose the
    leadership), the leader epoch moves, and the LeaderAndIsr tells the
    replicas staying the new replica set. The write is made even when no
    replica leaving is in the ISR: a leader still counting them could add
    one back to the ISR after the topic znode stopped listing it (its write
    is conditional on the zk version it knows and stops at a newer leader
    epoch; this write moves both), and an ISR outside the replicas in
    ZooKeeper is a state no controller takes (the invariants halt it; a new
    controller loads it and halts too). Only the second step drops the
    replicas leaving from the topic znode."""
    leaving = {tp: tuple(_retargeted(ctx, tp, target)[1]) for tp, target in retargets.items()
               if tp in ctx.assignments}
    b = DecisionBuilder(ctx)
    _switch_targets(b, retargets)
    redo = partial(_redo_switch_targets, retargets=dict(retargets))
    return b.decision(retry=redo, then=partial(_retarget_assignments, retargets=dict(retargets), leaving=leaving))


def _redo_switch_targets(ctx: ControllerContext, tps: frozenset[TopicPartition], retargets) -> Decision:
    b = DecisionBuilder(ctx)
    _switch_targets(b, {tp: retargets[tp] for tp in tps if tp in retargets})
    return b.decision(retry=partial(_redo_switch_targets, retargets=retargets))


def _switch_targets(b: DecisionBuilder, retargets: Mapping[TopicPartition, tuple[int, ...]]) -> None:
    ctx = b.ctx
    for tp, target in sorted(retargets.items()):
        state = ctx.leadership.get(tp)
        moving = ctx.reassignments.get(tp)
        if state is None or moving is None or moving.target == target:
            continue
        old = ctx.assignments[tp]
        new, unneeded = _retargeted(ctx, tp, target)
        isr = [r for r in state.isr if r not in unneeded]
        leader, recovery = state.leader, state.leader_recovery_state
        if leader in unneeded:
            result = reassignment_election(new.replicas, isr, ctx.online_replicas(tp))
            if not isinstance(result, Elected):
                continue        # refused before; the state changed since: answered as refused
            leader = result.leader
        if not isr:
            continue
        ctx.assignments[tp] = new
        ctx.reassignments[tp] = Reassignment(target)
        for broker_id in unneeded:
            rsm.delete_now(ctx.replica_states, PartitionReplica(tp, broker_id))
        for replica in ctx.partition_replicas(tp):
            if rsm.current_state(ctx.replica_states, replica) is ReplicaStateName.NON_EXISTENT:
                rsm.transition(ctx.replica_states, replica, ReplicaStateName.NEW)
        b.write_next_state(tp, leader, isr, recovery)
        # Brokers new to the set hear of it once the topic znode lists them
        # (the next step's epoch bump starts them).
        announce(b, tp, exclude=[r for r in new.replicas if r not in old.replicas])


def _retarget_assignments(ctx: ControllerContext, retargets: Mapping[TopicPartition, tuple[int, ...]],
                          leaving: Mapping[TopicPartition, tuple[int, ...]]) -> Decision:
    """Second step, for the partitions whose first step went through: the
    topic znodes take the new full replica sets, the replicas leaving are
    stopped and deleted; then reassignment.py's steps move the partitions
    (or finish at once when the target is in the ISR)."""
    b = DecisionBuilder(ctx)
    done = [tp for tp, target in sorted(retargets.items())
            if tp in b.ctx.reassignments and b.ctx.reassignments[tp].target == target]
    for tp in done:
        for broker_id in leaving.get(tp, ()):
            if b.ctx.is_broker_live(broker_id):
                b.batch.stop_replica(broker_id, tp, delete=True)
    for topic in sorted({tp.topic for tp in done}):
        b.write(UpdateTopicAssignment(topic, b.ctx.topic_assignment(topic)))
    moving = partial(move_replicas_decision, tps=frozenset(done)) if done else None
    return b.decision(then=moving)


def alter_reassignments(ctx: ControllerContext, results: Mapping[TopicPartition, Result],
                        starts: Mapping[TopicPartition, tuple[int, ...]],
                        retargets: Mapping[TopicPartition, tuple[int, ...]]) -> Decision:
    """Carry out an AlterPartitionReassignments (`reassignment_requests`'
    answers and maps): every partition accepted leaves
    /admin/reassign_partitions, also one already moving to the target asked
    for (an older listing there must not take over later); then the moving
    ones get their new targets, then the others start moving. Each step is
    in ZooKeeper before the next (module doc: what a new controller makes of
    each point in between)."""
    b = DecisionBuilder(ctx)
    _drop_from_admin(b, [tp for tp, result in results.items() if result == NONE and tp in ctx.reassign_admin])
    then = chain(partial(retarget, retargets=dict(retargets)) if retargets else None,
                 partial(start_reassignments, targets=dict(starts), admin=None) if starts else None)
    return b.decision(then=then)


def reassignment_results(ctx: ControllerContext, results: Mapping[TopicPartition, Result],
                         starts: Mapping[TopicPartition, tuple[int, ...]],
                         retargets: Mapping[TopicPartition, tuple[int, ...]]) -> dict[TopicPartition, Result]:
    """The answers once `alter_reassignments` was carried out (`ctx`: after
    it): an accepted partition that is neither moving to its target nor
    there already did not take the change."""
    answers = dict(results)
    for tp, target in (*starts.items(), *retargets.items()):
        moving = ctx.reassignments.get(tp)
        assignment = ctx.assignments.get(tp)
        if moving is not None and moving.target == target:
            continue
        if moving is None and assignment is not None and assignment.replicas == target:
            continue
        answers[tp] = (_leader_refusal(ctx, tp, target) if tp in ctx.reassignments else None) or (
            ErrorCode.invalid_replica_assignment,
            f"the partition's leader or ISR changed while the change to {list(target)} was made; ask again")
    return answers


# --- ListPartitionReassignments

def ongoing_reassignments(ctx: ControllerContext, partitions: Iterable[TopicPartition] | None
                          ) -> dict[TopicPartition, ReplicaAssignment]:
    """The partitions being reassigned, of `partitions` (None: all)."""
    wanted = ctx.reassignments if partitions is None else partitions
    return {tp: ctx.assignments[tp] for tp in sorted_unique(wanted)
            if tp in ctx.reassignments and tp in ctx.assignments}
