"""Log dir event notifications (Kafka's LogDirEventNotification and
onBrokerLogDirFailure): a broker found one of its log dirs failed while it
runs and wrote /log_dir_event_notification/log_dir_event_<seq> naming
itself. A notification does not say which replicas were in that dir; the
broker's answers to LeaderAndIsr do.

Rules:
- every notification read is deleted, whichever broker it names (as Kafka,
  which deletes them before acting on them); one naming a broker that is
  not live changes nothing else: a broker that registers again is sent its
  full LeaderAndIsr anyway, and answers it afresh;
- for each named live broker, every replica on it goes to OnlineReplica,
  which sends the broker a LeaderAndIsr with the partition's current
  leader and ISR (no new leader epoch: a replica that is fine ignores it,
  one on the failed dir answers KAFKA_STORAGE_ERROR for it, and
  offline_dirs.on_leader_and_isr_response takes it offline, electing a new
  leader if it led and shrinking the ISR);
- left out: replicas of topics being deleted (the deletion decides what
  happens to them, as for a dead broker), replicas being deleted, and
  replicas the broker already answered KAFKA_STORAGE_ERROR for since it
  registered (they stay offline: an OnlineReplica there would only be
  answered the same, and the context keeps such replicas out of
  OnlineReplica).
- several notifications naming one broker are one set of requests.

A new controller deletes the notifications it finds (failover.py): its
full LeaderAndIsr to every broker is answered the same way.
"""

from __future__ import annotations

from collections.abc import Iterable

from kafkactl.cluster.controller import replica_state_machine as rsm
from kafkactl.cluster.controller.builder import DecisionBuilder
from kafkactl.cluster.controller.changes import replicas_on
from kafkactl.cluster.controller.context import ControllerContext
from kafkactl.cluster.controller.model import Decision, DeleteNotification
from kafkactl.cluster.controller.replica_state_machine import DELETION_STATES, ReplicaStateName


def on_log_dir_event(ctx: ControllerContext, broker_ids: Iterable[int],
                     notification_paths: Iterable[str] = ()) -> Decision:
    """`broker_ids`: the brokers the notifications name (a malformed one
    names none); `notification_paths`: every notification read, to delete."""
    b = DecisionBuilder(ctx)
    for path in sorted(set(notification_paths)):
        b.write(DeleteNotification(path))
    live = sorted({broker_id for broker_id in broker_ids if broker_id in ctx.live_brokers})
    ctx = b.ctx
    for replica in replicas_on(ctx, live):
        tp, broker_id = replica.topic_partition, replica.broker_id
        if ctx.is_queued_for_deletion(tp.topic) or ctx.is_on_offline_dir(broker_id, tp):
            continue
        state = rsm.current_state(ctx.replica_states, replica)
        if state in DELETION_STATES or not rsm.is_valid_transition(state, ReplicaStateName.ONLINE):
            continue
        rsm.transition(ctx.replica_states, replica, ReplicaStateName.ONLINE)
        if tp in ctx.leadership:
            b.batch.leader_and_isr([broker_id], tp)
    return b.decision()
