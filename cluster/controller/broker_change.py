"""Brokers registering and dying (seed A and E; Kafka's onBrokerStartup and
onBrokerFailure), driven by the children of /brokers/ids.

A broker whose registration changed epoch (it lost its session and registered
again before we noticed) is handled as a failure followed by a start-up: its
old incarnation's leaderships and requests are void.

Both forget the replicas the broker reported on offline log dirs (Kafka
drops replicasOnOfflineDirs of a new or dead broker): a new incarnation
answers its full LeaderAndIsr afresh, with KAFKA_STORAGE_ERROR where a log
dir is still offline.
"""

from __future__ import annotations

from functools import partial
from typing import Iterable, Mapping

from kafkactl.cluster.controller import replica_state_machine as rsm
from kafkactl.cluster.controller.builder import DecisionBuilder, chain
from kafkactl.cluster.controller.changes import (
    handle_offline_replicas, online_or_elect, redo_offline_replicas, redo_online_or_elect, replicas_on,
)
from kafkactl.cluster.controller.context import ControllerContext
from kafkactl.cluster.controller.deletion import resume_deletions_decision
from kafkactl.cluster.controller.model import Decision
from kafkactl.cluster.controller.reassignment import resume_reassignments_on
from kafkactl.cluster.controller.replica_state_machine import ReplicaStateName
from kafkactl.cluster.zk.codecs import BrokerRegistration


def on_broker_change(ctx: ControllerContext, registrations: Mapping[int, BrokerRegistration]) -> Decision:
    """/brokers/ids changed; `registrations` are all registrations now, each
    with its broker_epoch (the znode's czxid)."""
    live = ctx.live_brokers
    dead = [b for b in sorted(live) if b not in registrations]
    bounced = [b for b in sorted(registrations)
               if b in live and registrations[b].broker_epoch != live[b].broker_epoch]
    new = {b: r for b, r in registrations.items() if b not in live or b in bounced}
    failure = partial(on_broker_failure, broker_ids=dead + bounced) if dead or bounced else None
    startup = partial(on_broker_startup, registrations=new) if new else None
    steps = chain(failure, startup)
    return steps(ctx) if steps else Decision(context=ctx)


def on_broker_failure(ctx: ControllerContext, broker_ids: Iterable[int]) -> Decision:
    b = DecisionBuilder(ctx)
    dead = sorted(x for x in set(broker_ids) if x in ctx.live_brokers)
    if not dead:
        return b.decision()
    for broker_id in dead:
        del b.ctx.live_brokers[broker_id]
        b.ctx.shutting_down.discard(broker_id)
    b.ctx.forget_offline_dirs_of(dead)
    affected = b.ctx.partitions_on_brokers(dead)
    _replicas_offline(b.ctx, dead, affected)
    handle_offline_replicas(b, affected)
    b.batch.update_metadata(b.ctx.live_brokers)      # the live broker list changed
    return b.decision(retry=redo_offline_replicas)


def _replicas_offline(ctx: ControllerContext, dead: list[int], partitions: list) -> None:
    states = ctx.replica_states
    deleting = ctx.topics_to_delete
    online, offline = ReplicaStateName.ONLINE, ReplicaStateName.OFFLINE
    for replica in replicas_on(ctx, dead, partitions):
        topic = replica[0][0]
        state = states.get(replica)
        if state is online:
            # Nearly every replica of a dead broker: Online -> Offline is
            # always valid, so skip the state machine's general path.
            states[replica] = offline
        elif topic in deleting and state is ReplicaStateName.DELETION_STARTED:
            # Its StopReplica died with it: retry when the broker is back.
            rsm.transition(states, replica, ReplicaStateName.DELETION_INELIGIBLE)
            ctx.deletion_ineligible.add(topic)
        else:
            rsm.take_offline(states, replica)


def on_broker_startup(ctx: ControllerContext, registrations: Mapping[int, BrokerRegistration]) -> Decision:
    b = DecisionBuilder(ctx)
    new = sorted(registrations)
    existing = sorted(x for x in ctx.live_brokers if x not in registrations)
    for broker_id in new:
        b.ctx.live_brokers[broker_id] = registrations[broker_id]
        b.ctx.shutting_down.discard(broker_id)
    b.ctx.forget_offline_dirs_of(new)
    # Existing brokers only learn the new broker list; new ones get everything.
    b.batch.update_metadata(existing)
    b.batch.update_metadata(new, [tp for tp in b.ctx.all_partitions() if tp in b.ctx.leadership])
    for broker_id in new:
        # Everything it should host, so it can drop what it should not (a
        # replica deleted or moved away while it was gone).
        b.batch.mark_full(broker_id)
    _replicas_online(b, new)
    online_or_elect(b, b.ctx.partitions_without_leader())
    deleting = sorted({tp.topic for tp in b.ctx.partitions_on_brokers(new)} & b.ctx.topics_to_delete)
    then = chain(partial(resume_reassignments_on, broker_ids=new),
                 partial(resume_deletions_decision, eligible_again=deleting))
    return b.decision(retry=redo_online_or_elect, then=then)


def _replicas_online(b: DecisionBuilder, new: list[int]) -> None:
    ctx = b.ctx
    for replica in replicas_on(ctx, new):
        tp = replica.topic_partition
        if ctx.is_queued_for_deletion(tp.topic):
            continue                                  # the deletion resumes for it instead
        rsm.transition(ctx.replica_states, replica, ReplicaStateName.ONLINE)
        if tp in ctx.leadership:
            b.batch.leader_and_isr([replica.broker_id], tp)
